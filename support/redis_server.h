// The one launcher of private redis-server processes, for the tests, the
// tools (`tokenlease bench`, `tokenlease demo`) and the benchmarks.
//
// A server listens on 127.0.0.1 only, on a free port (or the one asked
// for), runs in a temporary directory of its own (its redis.conf, its log,
// its data; removed by the destructor), keeps nothing on disk unless asked,
// allows DEBUG from loopback (DEBUG SLEEP is a fault the tests use), and is
// stopped by the destructor, also when the caller fails. It is killed with
// the thread that started it (PR_SET_PDEATHSIG) if that thread or its
// process dies first: start it from the thread that lives as long as it
// (the main thread of a program, the test's own thread). Every wait is
// bounded. Faults are real signals: Pause() is SIGSTOP, Kill() is SIGKILL.
//
//   absl::StatusOr<std::unique_ptr<RedisServer>> server =
//       StartRedisServer({.password = "secret"});
//   if (!server.ok()) return server.status();   // NotFound: not installed
//   absl::StatusOr<SyncRedis> redis = (*server)->Connect();
//
// TLS: with `tls` set, the server also listens on a second port of
// 127.0.0.1, its TLS port (tls_port(), tls_url(); chosen as `port` is, kept
// across Restart), with the certificates given (support/tls_certs.h makes
// a set at test time). The plaintext port stays: the launcher's ready
// check (PING), Connect() and the tests' admin commands use it, so a TLS
// server needs nothing of the client under test to start or to be
// inspected.
//
//   absl::StatusOr<std::unique_ptr<TempTlsFiles>> certs = TempTlsFiles::Make();
//   auto server = StartRedisServer(
//       {.tls = TlsServerOptionsFor((*certs)->files())});
//   std::string url = (*server)->tls_url();  // rediss://127.0.0.1:<port>
//
// Extending it (Redis Cluster, Sentinel): every setting goes through the
// redis.conf the launcher writes, so `config_lines` reaches any directive
// ("cluster-enabled yes", "tls-replication yes") and `extra_args` anything
// that only the command line takes ("--sentinel", after the file). The
// Redis Cluster and Sentinel launchers (redis_cluster.h) are built that
// way, reusing RedisServer as is.
#ifndef TOKENLEASE_SUPPORT_REDIS_SERVER_H_
#define TOKENLEASE_SUPPORT_REDIS_SERVER_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "support/sync_redis.h"

namespace tokenlease::support {

// The TLS side of a server (RedisServerOptions::tls): the redis.conf
// directives tls-port, tls-cert-file, tls-key-file, tls-ca-cert-file,
// tls-auth-clients and tls-client-cert-file / tls-client-key-file. Paths
// are used as given (make them absolute: the server runs in its own
// directory). TlsServerOptionsFor (support/tls_certs.h) fills it from a
// set of test certificates.
struct RedisTlsServerOptions {
  // The certificate and key the server presents (PEM).
  std::string cert_file{};
  std::string key_file{};
  // The CA certificates (PEM) client certificates are verified against,
  // and the servers this one connects to itself (its primary, the cluster
  // bus, the sentinels' links).
  std::string ca_file{};
  // tls-auth-clients yes: a client without a certificate that ca_file
  // verifies is refused (under TLS 1.3 the client sees it at its first
  // read, after its handshake succeeded). Default no: any client may
  // connect, one that presents a certificate must present a valid one.
  bool require_client_cert = false;
  // The certificate and key the server presents when it connects to
  // another as a client (replication, cluster bus, sentinel links), which
  // must allow clientAuth when the other requires client certificates.
  // Empty: cert_file and key_file.
  std::string client_cert_file{};
  std::string client_key_file{};
  // The TLS port; 0: a free one picked as `port` is (RedisServerOptions).
  int port = 0;
};

// How to start a server. Every field has a default that makes a plain
// private server; designated initializers name the rest:
// StartRedisServer({.unix_socket = true, .own_process_group = true}).
struct RedisServerOptions {
  // requirepass (the "default" user's password); empty: none.
  std::string password{};
  // An extra ACL user with full access ("user <name> on >password ~* &*
  // +@all"); empty: none.
  std::string acl_user{};
  std::string acl_password{};
  // Also listen on a unix socket (mode 700) in the server's directory.
  bool unix_socket = false;
  // An append-only file written with fsync on every write, kept across
  // Kill and Restart: a kill -9 loses nothing. Default: no persistence at
  // all (no RDB snapshots, no AOF).
  bool persistent = false;
  // Runs the server in a process group of its own (setpgid), out of reach
  // of a Ctrl-C at the terminal, which goes to the foreground process
  // group: a tool that handles Ctrl-C itself still has its server to
  // finish with. Not a session of its own: Linux schedules each session as
  // one group (autogroup), and a mostly idle server alone in its group
  // waited 0.2-0.9 s for a CPU beside a busy one (kernel 6.18, 2 cores).
  bool own_process_group = false;
  // The port; 0: a free one the kernel picks (retried on a few ports if
  // another process takes it first).
  int port = 0;
  // Also listen with TLS on a port of its own (RedisTlsServerOptions);
  // nullopt: plaintext only.
  std::optional<RedisTlsServerOptions> tls{};
  // More redis.conf lines, after the launcher's own (a later directive
  // wins): "maxmemory 10mb", "cluster-enabled yes". Values with spaces
  // must be quoted as redis.conf quotes them.
  std::vector<std::string> config_lines{};
  // Command-line arguments after the config file: "--sentinel".
  std::vector<std::string> extra_args{};
  // A command that runs the server, before it: {"valgrind",
  // "--tool=callgrind", ...}. Empty: redis-server runs itself.
  std::vector<std::string> wrapper{};
  // The program, looked up on PATH unless it holds a '/'. Empty: the
  // environment variable TOKENLEASE_REDIS_SERVER if set (the Valkey matrix
  // of scripts/test.sh sets it to valkey-server), else "redis-server".
  std::string binary{};
  // The start of the temporary directory's name (under TMPDIR or /tmp),
  // to tell whose server a leftover directory was.
  std::string name = "tokenlease-redis";
  // How long a start (or restart) waits for the server to answer PING.
  absl::Duration start_timeout = absl::Seconds(10);
  // How long Stop waits after SIGTERM before SIGKILL.
  absl::Duration stop_timeout = absl::Seconds(5);
  // Checked every poll while waiting for the server to answer (about 20
  // ms): true stops the wait, and the server, with Cancelled. A tool's
  // Ctrl-C flag. Empty: never cancelled.
  std::function<bool()> cancelled{};
};

// One redis-server process. Not thread-safe; not copyable.
class RedisServer {
 public:
  // Takes the options; starts nothing (Start does).
  explicit RedisServer(RedisServerOptions options = {});
  // Stops the server (Stop) and removes its directory.
  virtual ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts the server and waits (at most start_timeout per port tried)
  // until it answers PING (and INFO names its process: not another server
  // that holds the port). NotFound, saying how to install it, if the
  // program is not on PATH; Cancelled when `cancelled` said so;
  // Unavailable, with the last line of its log, if it exited (a few free
  // ports, and TLS ports, are tried first, unless both were given);
  // DeadlineExceeded if it never answered;
  // FailedPrecondition if it is already running. A server that did not
  // start is not left running.
  absl::Status Start();
  // SIGTERM (after SIGCONT if paused), then SIGKILL after stop_timeout;
  // waits for the process. Nothing if it is not running.
  void Stop();
  // SIGKILL, and waits for the process: the kill -9 fault.
  void Kill();
  // Starts it again on the same port, TLS port and socket, with the same
  // directory (after Kill or Stop; stops it first if it runs), and waits
  // until it answers PING. Retried for about 2 s while the old ports are
  // released.
  absl::Status Restart();
  // SIGSTOP / SIGCONT: a server that is alive but answers nothing.
  void Pause();
  void Resume();

  // True between a successful Start/Restart and Stop/Kill.
  bool running() const { return pid_ > 0; }
  // Where it listens on 127.0.0.1 (0 before Start).
  int port() const { return port_; }
  // Where it listens with TLS on 127.0.0.1: 0 without `tls` or before
  // Start; kept across Restart.
  int tls_port() const { return tls_port_; }
  // "rediss://127.0.0.1:<tls_port>", without credentials; "" without
  // `tls`.
  std::string tls_url() const;
  // The process (-1 when not running): for banners and signals.
  pid_t pid() const { return pid_; }
  // "redis://127.0.0.1:<port>", without credentials.
  std::string url() const;
  // The unix socket's path; "" without unix_socket.
  const std::string& socket_path() const { return socket_path_; }
  // The server's own directory ("" before Start): redis.conf, redis.log,
  // redis.out (what it printed before its log was open), its data.
  const std::string& dir() const { return dir_; }
  // The last non-empty line of the server's log (or of what it printed);
  // "(no log)" if there is none: to say why it failed.
  std::string LastLogLine() const;

  // A new synchronous connection to it, logged in as the default user with
  // the current password.
  absl::StatusOr<SyncRedis> Connect(
      absl::Duration timeout = kDefaultRedisTimeout) const;
  // The password Connect, the ready check and Restart use from now on: the
  // caller has changed the server's own (CONFIG SET requirepass) or will.
  void set_password(std::string password) {
    options_.password = std::move(password);
  }
  // The options it runs with (the password as set_password left it).
  const RedisServerOptions& options() const { return options_; }

 private:
  // Writes redis.conf, forks and execs the server on port_, and waits
  // until it answers.
  absl::Status Launch();
  absl::Status WaitUntilReady();
  absl::Status WriteConfig() const;

  RedisServerOptions options_;
  std::string binary_;  // the program's path, found by Start
  std::string dir_;
  std::string socket_path_;
  int port_ = 0;
  int tls_port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

// A started server (RedisServer::Start) with `options`, or why not.
// `Server`: RedisServer or a class derived from it (the tests' adds
// shortcuts).
template <typename Server = RedisServer>
absl::StatusOr<std::unique_ptr<Server>> StartRedisServer(
    RedisServerOptions options = {}) {
  auto server = std::make_unique<Server>(std::move(options));
  if (absl::Status s = server->Start(); !s.ok()) return s;
  return server;
}

// `s` as one redis.conf argument: double-quoted, with the escapes redis
// reads there (sdssplitargs), so a password or path may hold any byte.
// For config_lines that carry such values ("masterauth " + ConfQuote(pw)).
std::string ConfQuote(std::string_view s);

// The path of the program `name` on PATH (or `name` itself if it holds a
// '/' and is executable); "" if there is none.
std::string FindOnPath(const std::string& name);

}  // namespace tokenlease::support

#endif  // TOKENLEASE_SUPPORT_REDIS_SERVER_H_
