// The Redis of a benchmark run (direct_bench, lease_bench) and the
// transports it is reached by, so that one run compares plaintext and TLS
// on the same server: a URL given (--url or TOKENLEASE_BENCH_REDIS_URL; a
// rediss:// one with --tls_ca_file, --tls_cert_file, --tls_key_file), or a
// private redis-server (support/redis_server.h) that listens on a
// plaintext port and, with --transport=tls (or tcp,tls), also on a TLS
// port that requires client certificates (mutual TLS), with certificates
// made for the run (support/tls_certs.h).
//
//   BenchRedisFlags flags;
//   for (...) if (!ParseRedisFlag(argv[i], flags, &error)) ...
//   absl::StatusOr<std::unique_ptr<BenchRedis>> redis =
//       BenchRedis::Start(flags);
//   for (const Transport& t : (*redis)->transports()) {
//     options.redis.url = t.url;
//     options.redis.tls = t.tls;
//   }
#ifndef TOKENLEASE_BENCH_BENCH_REDIS_H_
#define TOKENLEASE_BENCH_BENCH_REDIS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "support/redis_server.h"
#include "support/tls_certs.h"
#include "tokenlease/redis.h"

namespace tokenlease_bench {

// One way to the run's Redis.
struct Transport {
  std::string name;  // "tcp" or "tls"
  std::string url;
  tokenlease::RedisTlsOptions tls;  // set for rediss:// URLs only
};

// The flags ParseRedisFlag reads.
struct BenchRedisFlags {
  std::string url;  // "": a private server (TOKENLEASE_BENCH_REDIS_URL)
  std::vector<std::string> transports = {"tcp"};
  bool transports_given = false;
  tokenlease::RedisTlsOptions tls;  // --tls_*_file, for a rediss:// URL
};

// The usage text of the flags below.
inline constexpr char kRedisFlagsUsage[] =
    "[--url=redis[s]://HOST:PORT] [--transport=tcp|tls|tcp,tls] [--tls] "
    "[--tls_ca_file=F --tls_cert_file=F --tls_key_file=F]";

// Reads `arg` if it is one of the flags of kRedisFlagsUsage (--tls is
// --transport=tls): true if it was one, with *error set if its value is
// not accepted.
bool ParseRedisFlag(absl::string_view arg, BenchRedisFlags& flags,
                    std::string* error);

class BenchRedis {
 public:
  // The URL of `flags` (else TOKENLEASE_BENCH_REDIS_URL) as its one
  // transport, named after its scheme; else a private server (its name
  // starting with `name`) reached by each of flags.transports, in their
  // order. InvalidArgument for --transport with a URL, or TLS files
  // without a rediss:// URL; the server's and the certificates' errors.
  static absl::StatusOr<std::unique_ptr<BenchRedis>> Start(
      BenchRedisFlags flags, const std::string& name = "tokenlease-bench");

  const std::vector<Transport>& transports() const { return transports_; }
  // The private server; nullptr with a URL.
  const tokenlease::support::RedisServer* server() const {
    return server_.get();
  }

 private:
  BenchRedis() = default;
  std::unique_ptr<tokenlease::support::TempTlsFiles> certs_;
  std::unique_ptr<tokenlease::support::RedisServer> server_;
  std::vector<Transport> transports_;
};

}  // namespace tokenlease_bench

#endif  // TOKENLEASE_BENCH_BENCH_REDIS_H_
