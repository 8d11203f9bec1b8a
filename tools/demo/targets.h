// The decision makers of an instance process, one per --mode: a local
// Limiter with limit/N (nothing shared), a LeasedLimiter, or a DirectLimiter
// (both sharing the limit through Redis). Only the public API is used.
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
#include "tokenlease/spec.h"

namespace tokenlease::tools {

// Decides the requests of one instance, whatever the mode. Decide() is
// called from every load thread at once.
class Target {
 public:
  virtual ~Target() = default;
  // Decides one request for key `key_index` of the key set: 1 admitted, 0
  // denied, -1 no decision (an error).
  virtual int Decide(size_t key_index) = 0;
  // Keys the limiter holds in memory now (0 for direct mode).
  virtual int64_t Keys() = 0;
  // Redis commands sent so far (0 for local mode).
  virtual int64_t CommandsSent() = 0;
  // The health of the Redis connection now (kNone for local mode).
  virtual Health CurrentHealth() { return Health::kNone; }
  // The connection's health transitions since the last call, oldest first.
  virtual std::vector<HealthEvent> TakeHealthEvents() { return {}; }
  // Ends the run: keeps the counters as the run ended, then shuts the
  // limiter down (leased mode returns its leases). After the load threads.
  virtual void Stop() = 0;
  // The counters for the "C" line; after Stop().
  virtual FinalStats Final() = 0;
};

// The limit of one local-mode instance: --algorithm with limit/N per second
// (burst --burst/N, at least 1).
LimitSpec LocalSpec(const DemoOptions& o);

// The lease options of leased mode, from the --lease_* flags.
LeaseOptions MakeLeaseOptions(const DemoOptions& o);

// Creates the target of --mode. `prefix` namespaces the Redis keys of this
// run; `keys` must outlive the target.
absl::StatusOr<std::unique_ptr<Target>> MakeTarget(const DemoOptions& o,
                                                   const std::string& prefix,
                                                   const KeySet& keys);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_TARGETS_H_
