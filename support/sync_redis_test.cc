// The synchronous client (sync_redis.h) against a real redis-server: URL
// forms and login, binary-safe commands, replies, bounded waits; TLS
// (rediss://) against a server's TLS port, with test certificates made at
// test time (tls_certs.h): verified, mutual, and every bad setup named.
#include "support/sync_redis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "support/redis_info.h"
#include "support/redis_server.h"
#include "support/tls_certs.h"
#include "tokenlease/redis.h"

namespace tokenlease::support {
namespace {

using internal::RedisReply;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPassword[] = "pw-4711";

// A status's message as a std::string, which gMock prints as text.
std::string Message(const absl::Status& s) { return std::string(s.message()); }

// The reply of a command that must get one.
RedisReply Must(absl::StatusOr<RedisReply> r) {
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : RedisReply{};
}

class SyncRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = StartRedisServer({.password = kPassword});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  // A URL of the server with the password, then `suffix` ("/3").
  std::string Url(const std::string& suffix = "") const {
    return absl::StrCat("redis://:", kPassword, "@127.0.0.1:", server_->port(),
                        suffix);
  }

  std::unique_ptr<RedisServer> server_;
};

TEST_F(SyncRedisTest, ConnectsByUrlLogsInAndSelectsTheDatabase) {
  absl::StatusOr<SyncRedis> db3 = SyncRedis::Connect(Url("/3"));
  ASSERT_TRUE(db3.ok()) << db3.status();
  EXPECT_EQ(db3->endpoint(),
            absl::StrCat("redis://127.0.0.1:", server_->port(), "/3"));
  EXPECT_EQ(Must(db3->Run({"SET", "x", "1"})).str, "OK");
  absl::StatusOr<SyncRedis> db0 = SyncRedis::Connect(Url());
  ASSERT_TRUE(db0.ok()) << db0.status();
  EXPECT_EQ(Must(db0->Run({"GET", "x"})).type, RedisReply::Type::kNil);
  EXPECT_EQ(Must(db3->Run({"GET", "x"})).str, "1");
}

TEST_F(SyncRedisTest, ARefusedLoginIsUnavailableAndHidesThePassword) {
  const std::string url =
      absl::StrCat("redis://:wrong-secret@127.0.0.1:", server_->port());
  absl::StatusOr<SyncRedis> redis = SyncRedis::Connect(url);
  ASSERT_FALSE(redis.ok());
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(redis.status()), HasSubstr("refused AUTH"));
  EXPECT_THAT(Message(redis.status()), Not(HasSubstr("wrong-secret")));
}

TEST_F(SyncRedisTest, ABadUrlIsInvalidArgument) {
  EXPECT_EQ(SyncRedis::Connect("http://127.0.0.1:1").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SyncRedisTest, NoServerIsUnavailable) {
  const int port = server_->port();
  server_->Stop();
  absl::StatusOr<SyncRedis> redis = SyncRedis::ConnectPort(port);
  ASSERT_FALSE(redis.ok());
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(redis.status()), HasSubstr("cannot connect"));
}

TEST_F(SyncRedisTest, ArgumentsAndRepliesAreBinarySafe) {
  absl::StatusOr<SyncRedis> redis = server_->Connect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  const std::string key("k\0\r\n ", 5);
  const std::string value("\0\xff\r\n\"v", 6);
  EXPECT_EQ(Must(redis->Run({"SET", key, value})).str, "OK");
  const RedisReply r = Must(redis->Run({"GET", key}));
  EXPECT_EQ(r.type, RedisReply::Type::kString);
  EXPECT_EQ(r.str, value);
}

TEST_F(SyncRedisTest, AnErrorReplyIsAReply) {
  absl::StatusOr<SyncRedis> redis = server_->Connect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  const RedisReply r = Must(redis->Run({"NOSUCHCOMMAND"}));
  EXPECT_TRUE(r.ErrorStartsWith("ERR")) << r.DebugString();
  EXPECT_EQ(redis->Run({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Must(redis->Run({"PING"})).str, "PONG");  // still usable
}

TEST_F(SyncRedisTest, Eval) {
  absl::StatusOr<SyncRedis> redis = server_->Connect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  const RedisReply r =
      Must(redis->Eval("return {KEYS[1], ARGV[1], 7}", {"1", "key", "arg"}));
  EXPECT_EQ(r.DebugString(), "[key, arg, 7]");
}

TEST_F(SyncRedisTest, Info) {
  absl::StatusOr<SyncRedis> redis = server_->Connect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  ASSERT_EQ(Must(redis->Eval("return 1", {"0"})).integer, 1);
  absl::StatusOr<std::string> info = redis->Info("commandstats");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(ScriptCalls(*info), 1);
  info = redis->Info("server");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_NE(InfoText(*info, "redis_version"), "");
  EXPECT_EQ(InfoField(*info, "tcp_port"), server_->port());
}

TEST_F(SyncRedisTest, EveryCommandWaitsAtMostTheTimeout) {
  absl::StatusOr<SyncRedis> redis =
      SyncRedis::Connect(Url(), absl::Milliseconds(200));
  ASSERT_TRUE(redis.ok()) << redis.status();
  server_->Pause();
  const absl::Time start = absl::Now();
  const absl::StatusOr<RedisReply> r = redis->Run({"PING"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(r.status()), HasSubstr("did not answer PING"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  server_->Resume();
  // A connection that failed stays failed.
  EXPECT_EQ(redis->Run({"PING"}).status().code(),
            absl::StatusCode::kUnavailable);
}

// A server with a TLS port (and the password), certificates shared by the
// suite.
class SyncRedisTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<TempTlsFiles>> certs = TempTlsFiles::Make();
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = certs->release();
  }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(certs_, nullptr);
    Start(/*require_client_cert=*/false);
  }
  void Start(bool require_client_cert) {
    auto server = StartRedisServer(
        {.password = kPassword,
         .tls = TlsServerOptionsFor(files(), require_client_cert)});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  static const TlsFiles& files() { return certs_->files(); }
  // The server's TLS URL with the password, then `suffix`.
  std::string Url(const std::string& suffix = "",
                  const std::string& host = "127.0.0.1") const {
    return absl::StrCat("rediss://:", kPassword, "@", host, ":",
                        server_->tls_port(), suffix);
  }
  // Verified against the test CA.
  static RedisTlsOptions Trusting() {
    RedisTlsOptions tls;
    tls.ca_file = files().ca_file;
    return tls;
  }
  static RedisTlsOptions WithClientCert() {
    RedisTlsOptions tls = Trusting();
    tls.cert_file = files().client_cert;
    tls.key_file = files().client_key;
    return tls;
  }
  // Connect's result, and that it took less than `bound`.
  static absl::StatusOr<SyncRedis> ConnectWithin(absl::Duration bound,
                                                 const std::string& url,
                                                 absl::Duration timeout,
                                                 const RedisTlsOptions& tls) {
    const absl::Time start = absl::Now();
    absl::StatusOr<SyncRedis> r = SyncRedis::Connect(url, timeout, tls);
    EXPECT_LT(absl::Now() - start, bound) << r.status();
    return r;
  }

  static TempTlsFiles* certs_;
  std::unique_ptr<RedisServer> server_;
};

TempTlsFiles* SyncRedisTlsTest::certs_ = nullptr;

TEST_F(SyncRedisTlsTest, ConnectsVerifiedByTheCaLogsInAndSelects) {
  absl::StatusOr<SyncRedis> redis =
      SyncRedis::Connect(Url("/2"), kDefaultRedisTimeout, Trusting());
  ASSERT_TRUE(redis.ok()) << redis.status();
  EXPECT_EQ(redis->endpoint(),
            absl::StrCat("rediss://127.0.0.1:", server_->tls_port(), "/2"));
  EXPECT_EQ(Must(redis->Run({"SET", "over-tls", "1"})).str, "OK");
  // The plaintext port sees it in database 2.
  absl::StatusOr<SyncRedis> plain = SyncRedis::Connect(absl::StrCat(
      "redis://:", kPassword, "@127.0.0.1:", server_->port(), "/2"));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(Must(plain->Run({"GET", "over-tls"})).str, "1");
  // A host name is checked against the certificate's DNS names.
  redis = SyncRedis::Connect(Url("", "localhost"), kDefaultRedisTimeout,
                             Trusting());
  ASSERT_TRUE(redis.ok()) << redis.status();
  EXPECT_EQ(Must(redis->Run({"PING"})).str, "PONG");
}

TEST_F(SyncRedisTlsTest, MutualTls) {
  server_.reset();
  Start(/*require_client_cert=*/true);
  absl::StatusOr<SyncRedis> redis =
      SyncRedis::Connect(Url(), kDefaultRedisTimeout, WithClientCert());
  ASSERT_TRUE(redis.ok()) << redis.status();
  EXPECT_EQ(Must(redis->Run({"PING"})).str, "PONG");
  // Without a certificate the server refuses: Connect fails and says so,
  // also without a login to send.
  for (const std::string& url :
       {Url(), absl::StrCat("rediss://127.0.0.1:", server_->tls_port())}) {
    redis = ConnectWithin(absl::Seconds(5), url, absl::Seconds(2), Trusting());
    ASSERT_FALSE(redis.ok());
    EXPECT_EQ(redis.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(Message(redis.status()), HasSubstr("client certificate"));
    EXPECT_THAT(Message(redis.status()), Not(HasSubstr(kPassword)));
  }
}

TEST_F(SyncRedisTlsTest, AWrongCaIsNotTrustedAndSaysSoInTime) {
  RedisTlsOptions tls;
  tls.ca_file = files().other_ca_file;
  absl::StatusOr<SyncRedis> redis =
      ConnectWithin(absl::Seconds(2), Url(), absl::Seconds(1), tls);
  ASSERT_FALSE(redis.ok());
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(redis.status()),
              HasSubstr("the server's certificate is not trusted"));
  EXPECT_THAT(
      Message(redis.status()),
      HasSubstr(absl::StrCat("rediss://127.0.0.1:", server_->tls_port())));
  EXPECT_THAT(Message(redis.status()), Not(HasSubstr(kPassword)));
}

TEST_F(SyncRedisTlsTest, ACertificateForAnotherNameIsRefused) {
  RedisTlsOptions tls = Trusting();
  tls.server_name = "wrong.example";
  absl::StatusOr<SyncRedis> redis =
      ConnectWithin(absl::Seconds(2), Url(), absl::Seconds(1), tls);
  ASSERT_FALSE(redis.ok());
  EXPECT_THAT(Message(redis.status()),
              HasSubstr("does not name wrong.example"));
  // The name the certificate holds works through server_name too.
  tls.server_name = "localhost";
  redis = SyncRedis::Connect(Url(), kDefaultRedisTimeout, tls);
  EXPECT_TRUE(redis.ok()) << redis.status();
}

TEST_F(SyncRedisTlsTest, WithoutVerificationAnyCertificateIsAccepted) {
  RedisTlsOptions tls;
  tls.ca_file = files().other_ca_file;
  tls.verify_peer = false;
  absl::StatusOr<SyncRedis> redis =
      SyncRedis::Connect(Url(), kDefaultRedisTimeout, tls);
  ASSERT_TRUE(redis.ok()) << redis.status();
  EXPECT_EQ(Must(redis->Run({"PING"})).str, "PONG");
}

TEST_F(SyncRedisTlsTest, APlaintextPortIsBoundedAndSuspectedOfNotSpeakingTls) {
  // A plaintext Redis reads a ClientHello as the start of an inline
  // command and waits for its end: the handshake runs into the timeout.
  absl::StatusOr<SyncRedis> redis = ConnectWithin(
      absl::Seconds(3), absl::StrCat("rediss://127.0.0.1:", server_->port()),
      absl::Milliseconds(500), Trusting());
  ASSERT_FALSE(redis.ok());
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(redis.status()),
              HasSubstr("did not finish within 500ms (a server that is not "
                        "speaking TLS"));
}

TEST_F(SyncRedisTlsTest, AFrozenServerFailsTheHandshakeWithinTheTimeout) {
  server_->Pause();
  absl::StatusOr<SyncRedis> redis = ConnectWithin(
      absl::Seconds(3), Url(), absl::Milliseconds(300), Trusting());
  server_->Resume();
  ASSERT_FALSE(redis.ok());
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(redis.status()),
              HasSubstr("the TLS handshake did not finish within 300ms"));
}

TEST_F(SyncRedisTlsTest, SettingsThatCannotBeUsedAreInvalidArgument) {
  // TLS settings with a plain URL, as RedisOptions::Validate refuses them.
  absl::StatusOr<SyncRedis> redis =
      SyncRedis::Connect(absl::StrCat("redis://127.0.0.1:", server_->port()),
                         kDefaultRedisTimeout, Trusting());
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(redis.status()), HasSubstr("not a TLS URL"));
  RedisTlsOptions insecure;
  insecure.verify_peer = false;
  EXPECT_EQ(SyncRedis::ConnectPort(server_->port()).status().code(),
            absl::StatusCode::kOk);
  internal::RedisEndpoint plain;
  plain.host = "127.0.0.1";
  plain.port = server_->port();
  EXPECT_EQ(
      SyncRedis::Connect(plain, kDefaultRedisTimeout, insecure).status().code(),
      absl::StatusCode::kInvalidArgument);
  // A certificate without its key.
  RedisTlsOptions half = Trusting();
  half.cert_file = files().client_cert;
  redis = SyncRedis::Connect(Url(), kDefaultRedisTimeout, half);
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(redis.status()), HasSubstr("go together"));
  // A file that is not there: named, before anything is connected.
  RedisTlsOptions missing;
  missing.ca_file = files().dir + "/no-such-ca.pem";
  redis = SyncRedis::Connect(Url(), kDefaultRedisTimeout, missing);
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(redis.status()), HasSubstr("no-such-ca.pem"));
  // A key is named by its path, never shown.
  RedisTlsOptions swapped = Trusting();
  swapped.cert_file = files().client_key;
  swapped.key_file = files().client_cert;
  redis = SyncRedis::Connect(Url(), kDefaultRedisTimeout, swapped);
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(redis.status()), Not(HasSubstr("PRIVATE KEY")));
}

}  // namespace
}  // namespace tokenlease::support
