// The launcher (redis_server.h) against real redis-server processes: what
// it starts, how it fails, and that nothing it starts outlives it.
#include "support/redis_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "redis/reply.h"
#include "support/sync_redis.h"
#include "support/tls_certs.h"

namespace tokenlease::support {
namespace {

using ::testing::HasSubstr;

// True once `pid` is gone or a zombie (its parent has not reaped it yet).
bool Dead(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() &&
         line[paren + 2] == 'Z';
}

// Waits (<= 10 s) for `pid` to die.
bool DiesSoon(pid_t pid) {
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (!Dead(pid)) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// One command on a fresh connection to `server`; its reply as text.
std::string Command(const RedisServer& server,
                    const std::vector<std::string>& args) {
  absl::StatusOr<SyncRedis> redis = server.Connect();
  if (!redis.ok()) return std::string(redis.status().message());
  absl::StatusOr<internal::RedisReply> r = redis->Run(args);
  return r.ok() ? r->DebugString() : std::string(r.status().message());
}

TEST(RedisServerTest, APlainServerOnLoopbackWithoutPersistence) {
  std::string dir;
  pid_t pid = -1;
  {
    RedisServer server;
    EXPECT_FALSE(server.running());
    ASSERT_TRUE(server.Start().ok());
    EXPECT_TRUE(server.running());
    EXPECT_GT(server.port(), 0);
    pid = server.pid();
    EXPECT_GT(pid, 0);
    EXPECT_EQ(server.url(), absl::StrCat("redis://127.0.0.1:", server.port()));
    EXPECT_EQ(server.socket_path(), "");
    dir = server.dir();
    EXPECT_TRUE(std::filesystem::is_directory(dir));
    EXPECT_EQ(Command(server, {"PING"}), "PONG");
    EXPECT_EQ(Command(server, {"CONFIG", "GET", "bind"}), "[bind, 127.0.0.1]");
    EXPECT_EQ(Command(server, {"CONFIG", "GET", "save"}), "[save, ]");
    EXPECT_EQ(Command(server, {"CONFIG", "GET", "appendonly"}),
              "[appendonly, no]");
    EXPECT_EQ(
        Command(server, {"CONFIG", "GET", "dir"}),
        absl::StrCat("[dir, ", std::filesystem::canonical(dir).string(), "]"));
    // DEBUG from loopback: the tests' DEBUG SLEEP fault.
    EXPECT_EQ(Command(server, {"DEBUG", "SLEEP", "0"}), "OK");
    EXPECT_EQ(server.Start().code(), absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_TRUE(Dead(pid));
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(RedisServerTest, StopEndsTheProcessAndKeepsTheDirectoryForARestart) {
  RedisServer server;
  ASSERT_TRUE(server.Start().ok());
  const pid_t pid = server.pid();
  const int port = server.port();
  server.Stop();
  EXPECT_FALSE(server.running());
  EXPECT_EQ(server.pid(), -1);
  EXPECT_TRUE(Dead(pid));
  EXPECT_TRUE(std::filesystem::is_directory(server.dir()));
  server.Stop();  // again: nothing
  ASSERT_TRUE(server.Restart().ok());
  EXPECT_EQ(server.port(), port);
  EXPECT_NE(server.pid(), pid);
  EXPECT_EQ(Command(server, {"PING"}), "PONG");
}

TEST(RedisServerTest, PasswordAndAclUser) {
  auto server = StartRedisServer({.password = "s3 \"cret\"",
                                  .acl_user = "limiter",
                                  .acl_password = "p@ss"});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(Command(**server, {"PING"}), "PONG");  // Connect logs in
  absl::StatusOr<SyncRedis> anonymous =
      SyncRedis::ConnectPort((*server)->port());
  ASSERT_TRUE(anonymous.ok()) << anonymous.status();
  absl::StatusOr<internal::RedisReply> r = anonymous->Run({"PING"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ErrorStartsWith("NOAUTH")) << r->DebugString();
  absl::StatusOr<SyncRedis> user = SyncRedis::Connect(
      absl::StrCat("redis://limiter:p%40ss@127.0.0.1:", (*server)->port()));
  ASSERT_TRUE(user.ok()) << user.status();
  r = user->Run({"ACL", "WHOAMI"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->str, "limiter");
  // A password the caller changed: Connect uses the new one.
  EXPECT_EQ(Command(**server, {"CONFIG", "SET", "requirepass", "new"}), "OK");
  (*server)->set_password("new");
  EXPECT_EQ(Command(**server, {"PING"}), "PONG");
}

TEST(RedisServerTest, UnixSocket) {
  auto server = StartRedisServer({.unix_socket = true});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->socket_path(), (*server)->dir() + "/redis.sock");
  absl::StatusOr<SyncRedis> redis =
      SyncRedis::Connect("unix://" + (*server)->socket_path());
  ASSERT_TRUE(redis.ok()) << redis.status();
  absl::StatusOr<internal::RedisReply> r = redis->Run({"PING"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->str, "PONG");
}

TEST(RedisServerTest, OnlyAPersistentServerKeepsItsDataThroughKill) {
  for (const bool persistent : {false, true}) {
    SCOPED_TRACE(persistent ? "persistent" : "not persistent");
    RedisServer server({.persistent = persistent});
    ASSERT_TRUE(server.Start().ok());
    ASSERT_EQ(Command(server, {"SET", "k", "v"}), "OK");
    const pid_t pid = server.pid();
    server.Kill();
    EXPECT_TRUE(Dead(pid));
    EXPECT_FALSE(server.running());
    ASSERT_TRUE(server.Restart().ok());
    EXPECT_EQ(Command(server, {"GET", "k"}), persistent ? "v" : "(nil)");
  }
}

TEST(RedisServerTest, APausedServerAnswersNothingUntilResumed) {
  RedisServer server;
  ASSERT_TRUE(server.Start().ok());
  absl::StatusOr<SyncRedis> redis = server.Connect(absl::Milliseconds(300));
  ASSERT_TRUE(redis.ok()) << redis.status();
  server.Pause();
  absl::StatusOr<internal::RedisReply> r = redis->Run({"PING"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  server.Resume();
  EXPECT_EQ(Command(server, {"PING"}), "PONG");
  // Stop resumes a paused server first: SIGTERM must reach it.
  server.Pause();
  const pid_t pid = server.pid();
  server.Stop();
  EXPECT_TRUE(Dead(pid));
}

TEST(RedisServerTest, ConfigLinesAndExtraArguments) {
  auto server =
      StartRedisServer({.config_lines = {"maxmemory 12345678"},
                        .extra_args = {"--maxmemory-policy", "allkeys-lru"}});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(Command(**server, {"CONFIG", "GET", "maxmemory"}),
            "[maxmemory, 12345678]");
  EXPECT_EQ(Command(**server, {"CONFIG", "GET", "maxmemory-policy"}),
            "[maxmemory-policy, allkeys-lru]");
}

TEST(RedisServerTest, APlainServerHasNoTlsPort) {
  RedisServer server;
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.tls_port(), 0);
  EXPECT_EQ(server.tls_url(), "");
  EXPECT_EQ(Command(server, {"CONFIG", "GET", "tls-port"}), "[tls-port, 0]");
}

TEST(RedisServerTest, TlsPortAnswersBesidesThePlaintextOneAndSurvivesRestart) {
  absl::StatusOr<std::unique_ptr<TempTlsFiles>> certs = TempTlsFiles::Make();
  ASSERT_TRUE(certs.ok()) << certs.status();
  const TlsFiles& f = (*certs)->files();
  RedisServer server({.tls = TlsServerOptionsFor(f)});
  ASSERT_TRUE(server.Start().ok());
  const int port = server.port();
  const int tls_port = server.tls_port();
  EXPECT_GT(tls_port, 0);
  EXPECT_NE(tls_port, port);
  EXPECT_EQ(server.tls_url(), absl::StrCat("rediss://127.0.0.1:", tls_port));
  EXPECT_EQ(server.url(), absl::StrCat("redis://127.0.0.1:", port));
  // The plaintext port stays, for the launcher and the tests' admin.
  EXPECT_EQ(Command(server, {"PING"}), "PONG");
  EXPECT_EQ(Command(server, {"CONFIG", "GET", "tls-port"}),
            absl::StrCat("[tls-port, ", tls_port, "]"));
  EXPECT_EQ(Command(server, {"CONFIG", "GET", "tls-auth-clients"}),
            "[tls-auth-clients, no]");
  // With or without a client certificate.
  absl::StatusOr<std::string> pong = TlsPing(tls_port, f, false);
  EXPECT_TRUE(pong.ok() && *pong == "PONG") << pong.status();
  pong = TlsPing(tls_port, f, true);
  EXPECT_TRUE(pong.ok() && *pong == "PONG") << pong.status();
  // Plaintext on the TLS port is no Redis conversation.
  absl::StatusOr<SyncRedis> plain =
      SyncRedis::ConnectPort(tls_port, absl::Milliseconds(500));
  if (plain.ok()) {
    EXPECT_FALSE(plain->Run({"PING"}).ok());
  }

  const pid_t pid = server.pid();
  server.Kill();
  EXPECT_TRUE(Dead(pid));
  EXPECT_FALSE(TlsPing(tls_port, f, false).ok());
  ASSERT_TRUE(server.Restart().ok());
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(server.tls_port(), tls_port);
  pong = TlsPing(tls_port, f, false);
  EXPECT_TRUE(pong.ok() && *pong == "PONG") << pong.status();
  server.Stop();
  ASSERT_TRUE(server.Restart().ok());
  EXPECT_EQ(server.tls_port(), tls_port);
  pong = TlsPing(tls_port, f, true);
  EXPECT_TRUE(pong.ok() && *pong == "PONG") << pong.status();
}

TEST(RedisServerTest, TlsRequiringClientCertsRefusesAClientWithoutOne) {
  absl::StatusOr<std::unique_ptr<TempTlsFiles>> certs = TempTlsFiles::Make();
  ASSERT_TRUE(certs.ok()) << certs.status();
  const TlsFiles& f = (*certs)->files();
  auto server = StartRedisServer(
      {.password = "pw",
       .tls = TlsServerOptionsFor(f, /*require_client_cert=*/true)});
  ASSERT_TRUE(server.ok()) << server.status();
  const int tls_port = (*server)->tls_port();
  EXPECT_EQ(Command(**server, {"CONFIG", "GET", "tls-auth-clients"}),
            "[tls-auth-clients, yes]");
  absl::StatusOr<std::string> refused = TlsPing(tls_port, f, false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable)
      << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("certificate required"));
  // With the client certificate: in, then the password as on plaintext.
  absl::StatusOr<std::string> noauth = TlsPing(tls_port, f, true);
  ASSERT_TRUE(noauth.ok()) << noauth.status();
  EXPECT_THAT(*noauth, HasSubstr("NOAUTH"));
  absl::StatusOr<std::vector<internal::RedisReply>> replies =
      TlsCommands(tls_port, {{"AUTH", "pw"}, {"PING"}},
                  {.ca_file = f.ca_file,
                   .cert_file = f.client_cert,
                   .key_file = f.client_key});
  ASSERT_TRUE(replies.ok()) << replies.status();
  EXPECT_EQ(replies->back().str, "PONG");
  // A certificate of the wrong kind (the server's own, serverAuth only) is
  // refused as a client certificate.
  absl::StatusOr<std::vector<internal::RedisReply>> wrong_kind =
      TlsCommands(tls_port, {{"PING"}},
                  {.ca_file = f.ca_file,
                   .cert_file = f.server_cert,
                   .key_file = f.server_key});
  EXPECT_EQ(wrong_kind.status().code(), absl::StatusCode::kUnavailable);
}

TEST(RedisServerTest, AGivenTlsPort) {
  absl::StatusOr<std::unique_ptr<TempTlsFiles>> certs = TempTlsFiles::Make();
  ASSERT_TRUE(certs.ok()) << certs.status();
  const TlsFiles& f = (*certs)->files();
  RedisServer first({.tls = TlsServerOptionsFor(f)});
  ASSERT_TRUE(first.Start().ok());
  const int tls_port = first.tls_port();
  first.Stop();
  RedisTlsServerOptions tls = TlsServerOptionsFor(f);
  tls.port = tls_port;
  RedisServer second({.tls = tls});
  ASSERT_TRUE(second.Start().ok());
  EXPECT_EQ(second.tls_port(), tls_port);
  EXPECT_TRUE(TlsPing(tls_port, f, false).ok());
  // Taken now: the plaintext port is free, so the start is retried on other
  // plaintext ports, and still fails, saying which TLS port.
  RedisServer third({.tls = tls, .start_timeout = absl::Seconds(5)});
  const absl::Status s = third.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("TLS port ", tls_port)));
}

TEST(RedisServerTest, AServerThatExitsAtStartSaysWhyFromItsOutput) {
  RedisServer server({.config_lines = {"maxmemory notanumber"}});
  const absl::Status s = server.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("argument must be a memory value"));
  EXPECT_FALSE(server.running());
}

TEST(RedisServerTest, NotInstalledSaysHowToInstall) {
  RedisServer server({.binary = "tokenlease-no-such-redis-server"});
  const absl::Status s = server.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("apt-get install redis-server"));
  EXPECT_EQ(FindOnPath("tokenlease-no-such-redis-server"), "");
  EXPECT_NE(FindOnPath("redis-server"), "");
  EXPECT_EQ(FindOnPath("/bin/sh"), "/bin/sh");
}

TEST(RedisServerTest, ACancelledStartLeavesNoProcess) {
  RedisServer server({.cancelled = [] { return true; }});
  const absl::Status s = server.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_FALSE(server.running());
  // The forked server was killed and reaped: this process has no child.
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(RedisServerTest, AGivenPort) {
  RedisServer first;
  ASSERT_TRUE(first.Start().ok());
  const int port = first.port();
  first.Stop();
  RedisServer second({.port = port});
  ASSERT_TRUE(second.Start().ok());
  EXPECT_EQ(second.port(), port);
  // The port is taken now: one attempt, and it says so.
  RedisServer third({.port = port, .start_timeout = absl::Seconds(5)});
  EXPECT_EQ(third.Start().code(), absl::StatusCode::kUnavailable);
}

// A process group of its own, but the caller's session: Linux schedules
// each session as one group (autogroup), where a mostly idle server waits
// for a CPU behind a busy group.
TEST(RedisServerTest, OwnProcessGroupInTheCallersSession) {
  RedisServer own({.own_process_group = true});
  RedisServer shared;
  ASSERT_TRUE(own.Start().ok());
  ASSERT_TRUE(shared.Start().ok());
  EXPECT_EQ(getpgid(own.pid()), own.pid());
  EXPECT_EQ(getsid(own.pid()), getsid(0));
  EXPECT_EQ(getpgid(shared.pid()), getpgid(0));
  EXPECT_EQ(getsid(shared.pid()), getsid(0));
}

TEST(RedisServerTest, AServerDiesWithTheProcessThatStartedIt) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A process that starts a server and dies without stopping it.
    close(fds[0]);
    RedisServer* leaked = new RedisServer;
    std::string line = "0 -";
    if (leaked->Start().ok()) {
      line = absl::StrCat(leaked->pid(), " ", leaked->dir());
    }
    (void)!write(fds[1], line.data(), line.size());
    _exit(0);
  }
  close(fds[1]);
  char buf[512];
  const ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  ASSERT_GT(n, 0);
  buf[n] = '\0';
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  int pid = 0;
  char dir[500] = {};
  ASSERT_EQ(std::sscanf(buf, "%d %499s", &pid, dir), 2);
  ASSERT_GT(pid, 0) << "the child could not start its server";
  EXPECT_TRUE(DiesSoon(pid));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace tokenlease::support
