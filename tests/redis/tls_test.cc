// TLS (rediss://) end to end: certificates made at test time
// (support/tls_certs.h), private redis-servers with a TLS port on
// 127.0.0.1, and the public API. Every bad setup must fail within the
// connect timeout with an error that names its cause; faults (kill -9 and
// restart, SIGSTOP) through TLS behave as over TCP.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "redis/endpoint.h"
#include "support/redis_cluster.h"
#include "support/redis_server.h"
#include "support/tls_certs.h"
#include "testing/redis_test.h"
#include "testing/wait.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"

namespace tokenlease {
namespace {

using support::RedisServer;
using support::RedisServerOptions;
using support::TempTlsFiles;
using support::TlsFiles;
using ::testing::HasSubstr;
using ::testing::Not;
using ::tokenlease::testing::LogLines;
using ::tokenlease::testing::WaitUntil;

// --- URLs and options, no server ------------------------------------------

TEST(TlsUrlTest, RedissFormsParseAsTls) {
  for (const char* url : {"rediss://127.0.0.1:6380", "rediss://u:p@localhost/2",
                          "rediss+cluster://127.0.0.1:7000,127.0.0.1:7001",
                          "rediss+sentinel://127.0.0.1:26379/mymaster"}) {
    auto ep = internal::ParseRedisUrl(url);
    ASSERT_TRUE(ep.ok()) << url << ": " << ep.status();
    EXPECT_TRUE(ep->tls) << url;
    EXPECT_TRUE(absl::StartsWith(ep->Describe(), "rediss")) << ep->Describe();
  }
  auto plain = internal::ParseRedisUrl("redis://127.0.0.1:6379");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->tls);
  EXPECT_FALSE(internal::ParseRedisUrl("redisss://h:1").ok());
  EXPECT_FALSE(internal::ParseRedisUrl("rediss+unix:///tmp/s").ok());
}

TEST(TlsUrlTest, OptionsThatCannotWorkAreRefusedByValidate) {
  RedisOptions o;
  o.url = "redis://127.0.0.1:6379";
  o.tls.ca_file = "/tmp/ca.pem";
  absl::Status s = o.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("rediss://"));

  o.url = "rediss://127.0.0.1:6379";
  EXPECT_TRUE(o.Validate().ok());
  o.tls.cert_file = "/tmp/client.pem";  // without its key
  s = o.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("key_file"));

  o.tls = {};
  o.tls.server_name = "bad name";
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
}

// Files that cannot be used fail Create, naming the field and the file,
// never the key's content.
TEST(TlsUrlTest, BadFilesFailCreateWithTheFieldAndTheFile) {
  absl::StatusOr<std::unique_ptr<TempTlsFiles>> certs = TempTlsFiles::Make();
  ASSERT_TRUE(certs.ok()) << certs.status();
  const TlsFiles& f = (*certs)->files();
  struct Case {
    RedisTlsOptions tls;
    std::string expected;
  };
  // The files of a case (assigned, not designated: GCC warns about the
  // fields a designated initializer leaves out).
  auto files = [](std::string ca, std::string cert = "", std::string key = "") {
    RedisTlsOptions tls;
    tls.ca_file = std::move(ca);
    tls.cert_file = std::move(cert);
    tls.key_file = std::move(key);
    return tls;
  };
  std::vector<Case> cases = {
      {files(f.dir + "/missing.pem"), "ca_file"},
      // A key is not a CA certificate.
      {files(f.server_key), "ca_file"},
      {files(f.ca_file, f.client_key, f.client_key), "cert_file"},
      // The server's key does not belong to the client's certificate.
      {files(f.ca_file, f.client_cert, f.server_key), "does not match"},
  };
  for (const Case& c : cases) {
    RedisOptions o;
    o.url = "rediss://127.0.0.1:1";
    o.tls = c.tls;
    auto conn = RedisConnection::Create(o);
    ASSERT_FALSE(conn.ok()) << c.expected;
    EXPECT_EQ(conn.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(conn.status().message(), HasSubstr(c.expected));
    EXPECT_THAT(conn.status().message(), Not(HasSubstr("PRIVATE KEY")));
  }
}

// --- Against servers --------------------------------------------------------

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TempTlsFiles>> certs = TempTlsFiles::Make();
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *std::move(certs);
  }

  const TlsFiles& files() const { return certs_->files(); }

  // A private server with a TLS port presenting `cert`/`key` (default: the
  // good server certificate).
  std::unique_ptr<RedisServer> StartServer(bool require_client_cert = false,
                                           std::string cert = "",
                                           std::string key = "") {
    RedisServerOptions o;
    o.tls = support::TlsServerOptionsFor(files(), require_client_cert);
    if (!cert.empty()) {
      o.tls->cert_file = cert;
      o.tls->key_file = key;
    }
    auto server = support::StartRedisServer(std::move(o));
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  RedisOptions Options(const std::string& url, bool client_cert = false) {
    RedisOptions o;
    o.url = url;
    o.tls.ca_file = files().ca_file;
    if (client_cert) {
      o.tls.cert_file = files().client_cert;
      o.tls.key_file = files().client_key;
    }
    o.connect_timeout = absl::Milliseconds(500);
    o.log = log_->Sink();
    return o;
  }

  std::unique_ptr<DirectLimiter> Direct(std::shared_ptr<RedisConnection> conn,
                                        LimitSpec spec) {
    DirectLimiterOptions o;
    o.connection = std::move(conn);
    o.key_prefix = "tls:";
    o.timeout = absl::Seconds(5);
    auto l = DirectLimiter::Create(std::move(spec), o);
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? *std::move(l) : nullptr;
  }

  // A connection with `options` must fail to connect, within about its
  // connect timeout, logging a reason that holds `cause`; it stays down.
  void ExpectRefused(RedisOptions options, const std::string& cause) {
    options.log = log_->Sink();
    options.reconnect_min_backoff = absl::Milliseconds(50);
    options.reconnect_max_backoff = absl::Milliseconds(200);
    const absl::Time start = absl::Now();
    auto conn = RedisConnection::Create(options);
    ASSERT_TRUE(conn.ok()) << conn.status();
    auto logged = [&] {
      for (const std::string& line : log_->lines()) {
        if (absl::StrContains(line, cause)) return true;
      }
      return false;
    };
    // The first attempt ends within the connect timeout; a second of
    // slack for a loaded machine.
    const bool seen =
        WaitUntil(logged, options.connect_timeout + absl::Seconds(1));
    const absl::Duration took = absl::Now() - start;
    std::string lines;
    for (const std::string& l : log_->lines()) absl::StrAppend(&lines, l, "\n");
    EXPECT_TRUE(seen) << "no line with \"" << cause << "\" within " << took
                      << "; the log:\n"
                      << lines;
    EXPECT_FALSE((*conn)->connected());
    EXPECT_EQ((*conn)->stats().connects, 0u);
    EXPECT_GE((*conn)->stats().connect_failures, 1u);
    EXPECT_THAT(lines, Not(HasSubstr("PRIVATE KEY")));
  }

  // What the connections logged, one line each: for failure messages.
  std::string LogText() const {
    std::string text;
    for (const std::string& l : log_->lines()) absl::StrAppend(&text, l, "\n");
    return text;
  }

  std::unique_ptr<LogLines> log_ = std::make_unique<LogLines>();
  std::unique_ptr<TempTlsFiles> certs_;
};

TEST_F(TlsTest, DirectAndLeasedDecisionsOverTls) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto conn =
      testing::ConnectFast(server->tls_url(), Options(server->tls_url()));
  ASSERT_NE(conn, nullptr);
  auto direct = Direct(conn, LimitSpec::TokenBucket(5, absl::Hours(1)));
  ASSERT_NE(direct, nullptr);
  int allowed = 0;
  for (int i = 0; i < 8; ++i) {
    const Decision d = direct->TryAcquire("user");
    EXPECT_NE(d.source, DecisionSource::kFailClosed);
    allowed += d.allowed;
  }
  EXPECT_EQ(allowed, 5);

  LeasedLimiterOptions lo;
  lo.connection = conn;
  lo.key_prefix = "tls-leased:";
  auto leased =
      LeasedLimiter::Create(LimitSpec::TokenBucket(100, absl::Hours(1)), lo);
  ASSERT_TRUE(leased.ok()) << leased.status();
  int leased_allowed = 0;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 10; ++i) {
      leased_allowed += (*leased)->TryAcquire("hot").allowed;
    }
    ASSERT_TRUE((*leased)->Sync(absl::Seconds(5)).ok());
  }
  ASSERT_TRUE((*leased)->ReturnAll(absl::Seconds(5)).ok());
  EXPECT_LE(leased_allowed, 100);
  EXPECT_GE(leased_allowed, 90);
  EXPECT_EQ(conn->health(), RedisHealth::kHealthy);
  EXPECT_TRUE(absl::StartsWith(conn->endpoint(), "rediss://"));
}

TEST_F(TlsTest, MutualTlsWithAClientCertificate) {
  auto server = StartServer(/*require_client_cert=*/true);
  ASSERT_NE(server, nullptr);
  auto conn =
      testing::ConnectFast(server->tls_url(), Options(server->tls_url(), true));
  ASSERT_NE(conn, nullptr);
  auto direct = Direct(conn, LimitSpec::TokenBucket(2, absl::Hours(1)));
  ASSERT_NE(direct, nullptr);
  EXPECT_TRUE(direct->TryAcquire("k").allowed) << LogText();
  EXPECT_TRUE(direct->TryAcquire("k").allowed);
  EXPECT_FALSE(direct->TryAcquire("k").allowed);
}

TEST_F(TlsTest, AServerThatRequiresACertificateRefusesAClientWithout) {
  auto server = StartServer(/*require_client_cert=*/true);
  ASSERT_NE(server, nullptr);
  // The server's alert names it, or (when the reset overtakes the alert)
  // the hint does: either way "client certificate".
  ExpectRefused(Options(server->tls_url()), "client certificate");
}

TEST_F(TlsTest, AServerSignedByAnotherCaIsNotTrusted) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  RedisOptions o = Options(server->tls_url());
  o.tls.ca_file = files().other_ca_file;
  ExpectRefused(o, "certificate is not trusted");
}

// A call made while the connection cannot be made fails at once, by the
// failure mode, and its logged error names the TLS cause.
TEST_F(TlsTest, DirectCallsWhileRefusedNameTheCause) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  RedisOptions o = Options(server->tls_url());
  o.tls.ca_file = files().other_ca_file;
  auto conn = testing::ConnectFast(server->tls_url(), o);
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return conn->health() == RedisHealth::kDown; },
                        absl::Seconds(5)));
  // The reason is recorded with the log line that follows the failure.
  ASSERT_TRUE(WaitUntil(
      [&] { return absl::StrContains(LogText(), "no connection: TLS"); },
      absl::Seconds(5)));
  auto direct = Direct(conn, LimitSpec::TokenBucket(5, absl::Hours(1)));
  ASSERT_NE(direct, nullptr);
  const Decision d = direct->TryAcquire("k");
  EXPECT_EQ(d.source, DecisionSource::kFailClosed);
  const std::vector<std::string> logged = log_->NoDecision();
  ASSERT_FALSE(logged.empty()) << LogText();
  EXPECT_THAT(logged.back(), HasSubstr("certificate is not trusted"));
}

TEST_F(TlsTest, ACertificateForAnotherNameIsRefused) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  // The certificate names 127.0.0.1 and localhost, not this.
  RedisOptions o = Options(server->tls_url());
  o.tls.server_name = "redis.example";
  ExpectRefused(o, "does not name redis.example");
  // A server whose certificate names another host, reached by address.
  auto other = StartServer(false, files().other_name_server_cert,
                           files().other_name_server_key);
  ASSERT_NE(other, nullptr);
  ExpectRefused(Options(other->tls_url()), "does not name 127.0.0.1");
  // The name it holds, sent as server_name, is accepted.
  RedisOptions named = Options(other->tls_url());
  named.tls.server_name = "wrong.example";
  auto conn = testing::ConnectFast(other->tls_url(), named);
  ASSERT_NE(conn, nullptr);
  auto direct = Direct(conn, LimitSpec::TokenBucket(1, absl::Hours(1)));
  ASSERT_NE(direct, nullptr);
  EXPECT_EQ(direct->TryAcquire("k").source, DecisionSource::kDirect);
}

TEST_F(TlsTest, AnExpiredCertificateIsRefused) {
  auto server = StartServer(false, files().expired_server_cert,
                            files().expired_server_key);
  ASSERT_NE(server, nullptr);
  ExpectRefused(Options(server->tls_url()), "has expired");
}

TEST_F(TlsTest, ATlsClientAtAPlaintextPortFailsInTime) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::string url = absl::StrCat("rediss://127.0.0.1:", server->port());
  // Either the server's error reply breaks the handshake ("not speaking
  // TLS") or nothing comes back (the handshake timeout): both say TLS.
  RedisOptions o = Options(url);
  ExpectRefused(o, "TLS");
  bool named = false;
  for (const std::string& line : log_->lines()) {
    named |= absl::StrContains(line, "not speaking TLS") ||
             absl::StrContains(line, "TLS handshake did not finish");
  }
  EXPECT_TRUE(named);
}

TEST_F(TlsTest, APlaintextClientAtATlsPortFailsInTime) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  RedisOptions o;
  o.url = absl::StrCat("redis://127.0.0.1:", server->tls_port());
  o.connect_timeout = absl::Milliseconds(500);
  ExpectRefused(o, "rediss://");
}

TEST_F(TlsTest, VerificationOffAcceptsAnyCertificateAndSaysSoOnce) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  RedisOptions o = Options(server->tls_url());
  o.tls.ca_file = files().other_ca_file;
  o.tls.verify_peer = false;
  auto conn = testing::ConnectFast(server->tls_url(), o);
  ASSERT_NE(conn, nullptr);
  auto direct = Direct(conn, LimitSpec::TokenBucket(1, absl::Hours(1)));
  ASSERT_NE(direct, nullptr);
  EXPECT_EQ(direct->TryAcquire("k").source, DecisionSource::kDirect);
  int said = 0;
  for (const std::string& line : log_->lines()) {
    said += absl::StrContains(line, "verification is off");
  }
  EXPECT_EQ(said, 1);
}

// kill -9 and restart under load: leasing resumes over a new handshake.
TEST_F(TlsTest, KilledAndRestartedUnderLoadLeasingResumes) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto conn =
      testing::ConnectFast(server->tls_url(), Options(server->tls_url()));
  ASSERT_NE(conn, nullptr);
  LeasedLimiterOptions lo;
  lo.connection = conn;
  lo.key_prefix = "tls-kill:";
  lo.failure_mode = FailureMode::kFailClosed;
  auto leased = LeasedLimiter::Create(
      LimitSpec::TokenBucket(1'000'000, absl::Seconds(1)), lo);
  ASSERT_TRUE(leased.ok()) << leased.status();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> leased_decisions{0};
  std::thread load([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      // Admitted from Redis's tokens (a lease, or local credit charged to
      // Redis afterwards), not by the failure mode.
      const Decision d = (*leased)->TryAcquire("hot");
      if (d.allowed && (d.source == DecisionSource::kLease ||
                        d.source == DecisionSource::kLocalCredit)) {
        leased_decisions.fetch_add(1, std::memory_order_relaxed);
      }
      std::this_thread::yield();
    }
  });
  auto leasing = [&] {
    const int64_t before = leased_decisions.load();
    absl::SleepFor(absl::Milliseconds(20));
    return leased_decisions.load() > before + 10;
  };
  EXPECT_TRUE(WaitUntil(leasing, absl::Seconds(10))) << LogText();
  server->Kill();
  EXPECT_TRUE(WaitUntil([&] { return conn->health() == RedisHealth::kDown; },
                        absl::Seconds(5)));
  const uint64_t replies_before = conn->stats().replies;
  const uint64_t granted_before = (*leased)->stats().lease.leases_granted;
  ASSERT_TRUE(server->Restart().ok());
  EXPECT_TRUE(WaitUntil(
      [&] { return conn->health() != RedisHealth::kDown && leasing(); },
      absl::Seconds(10)));
  // The restarted server grants leases again (the decisions above may
  // still be paid from a lease or local credit taken before the kill).
  EXPECT_TRUE(WaitUntil(
      [&] { return (*leased)->stats().lease.leases_granted > granted_before; },
      absl::Seconds(10)));
  stop = true;
  load.join();
  EXPECT_GE(conn->stats().connects, 2u);
  EXPECT_GT(conn->stats().replies, replies_before);
}

// SIGSTOP: a TLS connection to a frozen server goes down and comes back.
TEST_F(TlsTest, AFrozenServerIsDownThenBack) {
  auto server = StartServer(/*require_client_cert=*/true);
  ASSERT_NE(server, nullptr);
  auto conn =
      testing::ConnectFast(server->tls_url(), Options(server->tls_url(), true));
  ASSERT_NE(conn, nullptr);
  DirectLimiterOptions o;
  o.connection = conn;
  o.key_prefix = "tls-stop:";
  o.timeout = absl::Milliseconds(200);
  o.failure_mode = FailureMode::kFailClosed;
  auto direct =
      DirectLimiter::Create(LimitSpec::TokenBucket(1000, absl::Hours(1)), o);
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_EQ((*direct)->TryAcquire("k").source, DecisionSource::kDirect);
  server->Pause();
  EXPECT_TRUE(WaitUntil(
      [&] {
        return (*direct)->TryAcquire("k").source == DecisionSource::kFailClosed;
      },
      absl::Seconds(5)));
  server->Resume();
  EXPECT_TRUE(WaitUntil(
      [&] {
        return (*direct)->TryAcquire("k").source == DecisionSource::kDirect;
      },
      absl::Seconds(10)));
}

// --- Cluster and Sentinel over TLS -------------------------------------------

TEST_F(TlsTest, ARedisClusterOverTls) {
  absl::StatusOr<std::unique_ptr<support::RedisCluster>> cluster =
      support::RedisCluster::Start(
          {.primaries = 3,
           .replicas_per_primary = 0,
           .tls = support::TlsServerOptionsFor(files(), true)});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string url = (*cluster)->tls_url();
  ASSERT_TRUE(absl::StartsWith(url, "rediss+cluster://")) << url;
  RedisOptions o = Options(url, /*client_cert=*/true);
  auto conn = testing::ConnectFast(url, o);
  ASSERT_NE(conn, nullptr);
  auto direct = Direct(conn, LimitSpec::TokenBucket(3, absl::Hours(1)));
  ASSERT_NE(direct, nullptr);
  // Keys on every node: each holds its limit exactly.
  for (int i = 0; i < 30; ++i) {
    const std::string key = absl::StrCat("user-", i);
    int allowed = 0;
    for (int j = 0; j < 4; ++j) {
      const Decision d = direct->TryAcquire(key);
      EXPECT_EQ(d.source, DecisionSource::kDirect) << key;
      allowed += d.allowed;
    }
    EXPECT_EQ(allowed, 3) << key;
  }
  EXPECT_EQ(conn->stats().nodes, 3);
  EXPECT_EQ(conn->stats().nodes_down, 0);
}

TEST_F(TlsTest, ASentinelSetOverTls) {
  absl::StatusOr<std::unique_ptr<support::RedisSentinelSet>> set =
      support::RedisSentinelSet::Start(
          {.tls = support::TlsServerOptionsFor(files(), true)});
  ASSERT_TRUE(set.ok()) << set.status();
  const std::string url = (*set)->tls_url();
  ASSERT_TRUE(absl::StartsWith(url, "rediss+sentinel://")) << url;
  RedisOptions o = Options(url, /*client_cert=*/true);
  auto conn = testing::ConnectFast(url, o);
  ASSERT_NE(conn, nullptr);
  auto direct = Direct(conn, LimitSpec::TokenBucket(2, absl::Hours(1)));
  ASSERT_NE(direct, nullptr);
  EXPECT_TRUE(direct->TryAcquire("k").allowed) << LogText();
  EXPECT_TRUE(direct->TryAcquire("k").allowed);
  const Decision third = direct->TryAcquire("k");
  EXPECT_FALSE(third.allowed);
  EXPECT_EQ(third.source, DecisionSource::kDirect);
  EXPECT_GE(conn->stats().sentinel_queries, 1u);
}

}  // namespace
}  // namespace tokenlease
