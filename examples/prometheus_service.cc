// prometheus_service: a service exposing its limiters' metrics to Prometheus.
//
// Two limits share one Redis connection: "api", 100 requests per second per
// API key in leased mode, and "login", 5 attempts per minute per user in
// direct mode. GET /metrics on 127.0.0.1:<port> answers the Prometheus text
// (format 0.0.4) of both, built by tokenlease::PrometheusWriter at each
// scrape; docs/metrics.md says what every series means and what to alert on.
// The HTTP part is a minimal HTTP/1.0 responder on plain sockets.
//
// Run by hand: build/release/examples/prometheus_service redis://127.0.0.1:6379
// [--port=9464], then: curl http://127.0.0.1:9464/metrics
// With --self_test (as ctest runs it) it listens on a free port, scrapes
// itself once over a real socket and exits 0 only if the response is a 200
// with the Prometheus content type and the decision counts it made.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "tokenlease/tokenlease.h"

namespace {

struct Limits {
  std::unique_ptr<tokenlease::LeasedLimiter> api;
  std::unique_ptr<tokenlease::DirectLimiter> login;
};

// The body of one scrape: fresh snapshots, one writer per scrape.
std::string MetricsText(const Limits& limits) {
  tokenlease::PrometheusWriter w;
  // The connection's series once: both limits share it.
  absl::Status s = w.Add("api", limits.api->stats());
  if (s.ok()) s = w.Add("login", limits.login->stats(), false);
  return s.ok() ? w.Text() : absl::StrCat("# error: ", s.ToString(), "\n");
}

bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Answers one connection: reads the request line, writes the response.
void Serve(int fd, const Limits& limits) {
  std::string request;
  char buf[1024];
  while (!absl::StrContains(request, "\r\n\r\n") && request.size() < 8192) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    request.append(buf, static_cast<size_t>(n));
  }
  const bool metrics = absl::StartsWith(request, "GET /metrics ");
  const std::string body = metrics ? MetricsText(limits) : "not found\n";
  WriteAll(fd,
           absl::StrCat(
               metrics ? "HTTP/1.0 200 OK" : "HTTP/1.0 404 Not Found",
               "\r\nContent-Type: ",
               metrics ? std::string(tokenlease::PrometheusWriter::kContentType)
                       : "text/plain",
               "\r\nContent-Length: ", body.size(), "\r\n\r\n", body));
  close(fd);
}

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// A socket listening on 127.0.0.1:`port` (0: any free port, then set).
int Listen(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  sockaddr_in addr = Loopback(*port);
  socklen_t len = sizeof(addr);
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
      bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("listen on 127.0.0.1");
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// GET /metrics from 127.0.0.1:`port`; the whole response ("" on error).
std::string Scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in addr = Loopback(port);
  std::string response;
  if (fd >= 0 &&
      connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) ==
          0 &&
      WriteAll(fd, "GET /metrics HTTP/1.0\r\n\r\n")) {
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) {
      response.append(buf, static_cast<size_t>(n));
    }
  }
  if (fd >= 0) close(fd);
  return response;
}

// Sums the tokenlease_decisions_total samples of `limit` with `result`.
uint64_t Decisions(absl::string_view text, absl::string_view limit,
                   absl::string_view result) {
  const std::string prefix =
      absl::StrCat("tokenlease_decisions_total{limit=\"", limit, "\",");
  const std::string suffix = absl::StrCat("result=\"", result, "\"}");
  uint64_t sum = 0, value = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t space = line.rfind(' ');
    if (absl::StartsWith(line, prefix) && space != line.npos &&
        absl::EndsWith(line.substr(0, space), suffix) &&
        absl::SimpleAtoi(line.substr(space + 1), &value)) {
      if (value > 0)
        std::printf("  %.*s\n", static_cast<int>(line.size()), line.data());
      sum += value;
    }
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  tokenlease::RedisOptions redis;
  int port = 9464;
  bool self_test = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--self_test") {
      self_test = true;
    } else if (absl::ConsumePrefix(&arg, "--port=")) {
      if (!absl::SimpleAtoi(arg, &port) || port < 0 || port > 65535) {
        std::fprintf(stderr, "bad --port: %s\n", argv[i]);
        return 2;
      }
    } else {
      redis.url = std::string(arg);
    }
  }
  if (self_test) port = 0;

  // One connection (one client thread) for both limiters.
  absl::StatusOr<std::shared_ptr<tokenlease::RedisConnection>> connection =
      tokenlease::RedisConnection::Create(redis);
  if (!connection.ok()) {
    std::fprintf(stderr, "cannot connect: %s\n",
                 connection.status().ToString().c_str());
    return 1;
  }
  tokenlease::LeasedLimiterOptions api_options;
  api_options.connection = *connection;
  api_options.key_prefix = "api:";
  tokenlease::DirectLimiterOptions login_options;
  login_options.connection = *connection;
  login_options.key_prefix = "login:";
  auto api = tokenlease::LeasedLimiter::Create(
      tokenlease::LimitSpec::TokenBucket(100, absl::Seconds(1)), api_options);
  auto login = tokenlease::DirectLimiter::Create(
      tokenlease::LimitSpec::TokenBucket(5, absl::Minutes(1)), login_options);
  if (!api.ok() || !login.ok()) {
    std::fprintf(stderr, "cannot create the limiters: %s\n",
                 (api.ok() ? login.status() : api.status()).ToString().c_str());
    return 1;
  }
  const Limits limits{*std::move(api), *std::move(login)};

  // Some traffic, tallied here to check the scrape against: 5 rounds of 200
  // requests, letting leases arrive between rounds (Sync) as they would
  // between real requests.
  uint64_t api_admitted = 0, login_admitted = 0;
  for (int i = 0; i < 1000; ++i) {
    api_admitted += limits.api->TryAcquire(absl::StrCat("key:", i % 4)).allowed;
    if (i % 200 == 199) {
      if (absl::Status s = limits.api->Sync(absl::Seconds(5)); !s.ok()) {
        std::fprintf(stderr, "Sync: %s\n", s.ToString().c_str());
        return 1;
      }
    }
  }
  for (int i = 0; i < 6; ++i) {
    const tokenlease::Decision d = limits.login->TryAcquire("alice");
    if (d.source != tokenlease::DecisionSource::kDirect) {
      std::fprintf(stderr, "login: no decision from Redis (%s %s)\n",
                   d.allowed ? "admitted" : "denied",
                   tokenlease::DecisionSourceName(d.source));
      return 1;
    }
    login_admitted += d.allowed;
  }

  const int listener = Listen(&port);
  if (listener < 0) return 1;
  if (!self_test) {
    std::printf("serving http://127.0.0.1:%d/metrics\n", port);
    std::fflush(stdout);
    for (;;) {
      const int fd = accept(listener, nullptr, nullptr);
      if (fd >= 0) Serve(fd, limits);
    }
  }
  // Self test: serve one request on a thread, scrape it from here.
  std::thread server([&] {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd >= 0) Serve(fd, limits);
  });
  const std::string response = Scrape(port);
  shutdown(listener, SHUT_RDWR);  // wakes accept() if the scrape never came
  server.join();
  close(listener);

  const std::pair<absl::string_view, absl::string_view> response_parts =
      absl::StrSplit(response, absl::MaxSplits("\r\n\r\n", 1));
  const auto& [head, body] = response_parts;
  std::printf("scraped 127.0.0.1:%d/metrics: %zu bytes\n%.*s\n", port,
              response.size(), static_cast<int>(head.size()), head.data());
  bool ok =
      absl::StartsWith(head, "HTTP/1.0 200 OK\r\n") &&
      absl::StrContains(head, "Content-Type: text/plain; version=0.0.4") &&
      absl::StrContains(body, "# TYPE tokenlease_decisions_total counter\n") &&
      absl::StrContains(body,
                        "tokenlease_redis_commands_total{limit=\"api\"}") &&
      !absl::StrContains(body,
                         "tokenlease_redis_commands_total{limit=\"login\"}");
  ok &= Decisions(body, "api", "admitted") == api_admitted;
  ok &= Decisions(body, "api", "denied") == 1000 - api_admitted;
  ok &= Decisions(body, "login", "admitted") == login_admitted &&
        login_admitted == 5;
  ok &= Decisions(body, "login", "denied") == 1;
  std::printf("api: %llu of 1000 admitted, login: %llu of 6\n%s\n",
              static_cast<unsigned long long>(api_admitted),
              static_cast<unsigned long long>(login_admitted),
              ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
