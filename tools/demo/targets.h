// The decision maker of an instance process, whatever --mode: a local
// Limiter with limit/N (nothing shared), a LeasedLimiter, or a
// DirectLimiter (both sharing the limit through Redis). Every use of the
// library's limiter API (Create, TryAcquire, stats(), the options) is in
// targets.cc, so that an API change is met there alone.
#ifndef TOKENLEASE_TOOLS_DEMO_TARGETS_H_
#define TOKENLEASE_TOOLS_DEMO_TARGETS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "demo/flags.h"
#include "demo/protocol.h"
#include "demo/workload.h"
#include "tokenlease/leased.h"
#include "tokenlease/redis.h"
#include "tokenlease/spec.h"

namespace tokenlease::tools {

class Target {
 public:
  // The target of --mode. `prefix` namespaces this run's Redis keys; `keys`
  // must outlive the target.
  static absl::StatusOr<std::unique_ptr<Target>> Create(
      const DemoOptions& o, const std::string& prefix, const KeySet& keys);
  ~Target();

  // Decides one request for key `key_index` of the key set: true if
  // admitted (every mode decides; a Redis that cannot is the failure
  // mode's). Called from every load thread.
  bool Decide(size_t key_index);
  // Keys the limiter holds in memory (0 in direct mode), Redis commands
  // sent so far (a caller lane's included) and the connection's health (0
  // and kNone in local mode).
  int64_t Keys();
  int64_t CommandsSent();
  Health CurrentHealth();
  // The connection's health transitions since the last call, oldest first.
  std::vector<HealthEvent> TakeHealthEvents();
  // Ends the run, after the load threads: "M" lines of the limiter's
  // counters as the run ended (PrometheusWriter; none in local mode), then
  // shuts the limiter down (leased mode returns its leases) and sets
  // *commands to the commands sent including the shutdown's.
  std::string Stop(int64_t* commands);

 private:
  struct Impl;
  explicit Target(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The limit of one local-mode instance: --algorithm with limit/N per second
// (burst --burst/N, at least 1).
LimitSpec LocalSpec(const DemoOptions& o);

// The LeaseOptions of leased mode (--lease_ttl_ms, ..., --cluster_low_water).
LeaseOptions MakeLeaseOptions(const DemoOptions& o);

// --tls_ca_file, --tls_cert_file and --tls_key_file (the run's own with
// --tls) as the TLS settings of a rediss:// URL.
RedisTlsOptions TlsOptions(const DemoOptions& o);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_TARGETS_H_
