// The benchmarks' Redis and its transports (bench_redis.h).
#include "bench/bench_redis.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tokenlease_bench {

namespace support = tokenlease::support;

bool ParseRedisFlag(absl::string_view arg, BenchRedisFlags& flags,
                    std::string* error) {
  if (arg == "--tls") {
    flags.transports = {"tls"};
    flags.transports_given = true;
  } else if (absl::ConsumePrefix(&arg, "--transport=")) {
    flags.transports = absl::StrSplit(arg, ',');
    flags.transports_given = true;
    for (const std::string& t : flags.transports) {
      if (t != "tcp" && t != "tls") {
        *error = absl::StrCat("bad --transport entry '", t,
                              "'; it must be tcp or tls");
      }
    }
  } else if (absl::ConsumePrefix(&arg, "--url=")) {
    flags.url = std::string(arg);
  } else if (absl::ConsumePrefix(&arg, "--tls_ca_file=")) {
    flags.tls.ca_file = std::string(arg);
  } else if (absl::ConsumePrefix(&arg, "--tls_cert_file=")) {
    flags.tls.cert_file = std::string(arg);
  } else if (absl::ConsumePrefix(&arg, "--tls_key_file=")) {
    flags.tls.key_file = std::string(arg);
  } else {
    return false;
  }
  return true;
}

absl::StatusOr<std::unique_ptr<BenchRedis>> BenchRedis::Start(
    BenchRedisFlags flags, const std::string& name) {
  if (const char* env = std::getenv("TOKENLEASE_BENCH_REDIS_URL");
      flags.url.empty() && env != nullptr) {
    flags.url = env;
  }
  std::unique_ptr<BenchRedis> redis(new BenchRedis());
  const bool files =
      !(flags.tls.ca_file + flags.tls.cert_file + flags.tls.key_file).empty();
  if (!flags.url.empty()) {
    const bool tls = absl::StartsWith(flags.url, "rediss");
    if (flags.transports_given || (files && !tls)) {
      return absl::InvalidArgumentError(
          "with a URL its scheme is the transport: drop --transport and "
          "--tls (rediss:// for TLS, with --tls_*_file)");
    }
    redis->transports_.push_back(
        {tls ? "tls" : "tcp", flags.url,
         tls ? flags.tls : tokenlease::RedisTlsOptions{}});
    return redis;
  }
  if (files) {
    return absl::InvalidArgumentError(
        "--tls_*_file go with a rediss:// --url; the private server's "
        "certificates are made for the run");
  }
  support::RedisServerOptions options{.name = name};
  tokenlease::RedisTlsOptions client;
  if (absl::c_linear_search(flags.transports, "tls")) {
    absl::StatusOr<std::unique_ptr<support::TempTlsFiles>> certs =
        support::TempTlsFiles::Make(name + "-tls");
    if (!certs.ok()) return certs.status();
    redis->certs_ = *std::move(certs);
    const support::TlsFiles& f = redis->certs_->files();
    options.tls = support::TlsServerOptionsFor(f, /*require_client_cert=*/true);
    client.ca_file = f.ca_file;
    client.cert_file = f.client_cert;
    client.key_file = f.client_key;
  }
  absl::StatusOr<std::unique_ptr<support::RedisServer>> server =
      support::StartRedisServer(std::move(options));
  if (!server.ok()) return server.status();
  redis->server_ = *std::move(server);
  for (const std::string& t : flags.transports) {
    redis->transports_.push_back(
        t == "tls" ? Transport{t, redis->server_->tls_url(), client}
                   : Transport{t, redis->server_->url(), {}});
  }
  return redis;
}

}  // namespace tokenlease_bench
