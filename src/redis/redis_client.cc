#include "redis/redis_client.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "redis/health_monitor.h"
#include "redis/scripts.h"

namespace tokenlease::internal {
namespace {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

timeval ToTimeval(int64_t ns) {
  ns = std::max<int64_t>(ns, 0);
  timeval tv;
  tv.tv_sec = ns / 1'000'000'000;
  tv.tv_usec = (ns % 1'000'000'000) / 1000;
  return tv;
}

// hiredis copies the socket error into ac->errstr only after some callbacks.
const char* ErrorText(const redisAsyncContext* ac, const char* fallback) {
  if (ac->errstr != nullptr && ac->errstr[0] != '\0') return ac->errstr;
  if (ac->c.errstr[0] != '\0') return ac->c.errstr;
  return fallback;
}

void EnableLibeventThreads() {
  // Lets other threads event_active() the loop's wake event.
  static std::once_flag once;
  std::call_once(once, [] { evthread_use_pthreads(); });
}

}  // namespace

struct RedisClient::Command {
  enum class State : uint8_t { kQueued, kWaiting, kInFlight };
  std::vector<std::string> argv;
  LuaScript script;
  bool is_script = false;
  bool sent_as_eval = false;
  bool append_since = false;  // SubmitScript's append_since
  ReplyCallback done;
  int64_t timeout_ns = 0;
  int64_t deadline_ns = 0;  // steady clock
  int64_t sent_ns = 0;      // steady clock: last written to a connection
  State state = State::kQueued;
  // `done` has run (timed out or failed) but hiredis still holds the command
  // as privdata: it is freed when hiredis calls back (reply or NULL).
  bool completed = false;
  event* timer = nullptr;
  Loop* loop = nullptr;
  Connection* conn = nullptr;
  std::list<Command*>::iterator waiting_it;
};

struct RedisClient::Connection {
  redisAsyncContext* ac = nullptr;
  enum class State : uint8_t {
    kConnecting,
    kReady,
    kClosed
  } state = State::kConnecting;
  int handshake_left = 0;
  // hiredis has freed the context or is about to: never touch `ac` again.
  bool hiredis_done = false;
  std::string close_reason;
  event* connect_timer = nullptr;
  event* close_event = nullptr;  // deferred teardown (out of hiredis frames)
  Loop* loop = nullptr;
};

// Everything only the client thread touches.
class RedisClient::Loop {
 public:
  explicit Loop(RedisClient* client)
      : client_(client), health_(client->options_), rng_(SteadyNowNs()) {
    EnableLibeventThreads();
    base_ = event_base_new();
    wake_ = event_new(base_, -1, 0, &Loop::OnWakeCb, this);
    health_timer_ =
        event_new(base_, -1, EV_PERSIST, &Loop::OnHealthTimerCb, this);
    reconnect_timer_ = evtimer_new(base_, &Loop::OnReconnectCb, this);
    grace_timer_ = evtimer_new(base_, &Loop::OnGraceCb, this);
    finish_ = event_new(base_, -1, 0, &Loop::OnFinishCb, this);
  }

  ~Loop() {
    for (auto& c : conns_) FreeConnectionEvents(c.get());
    event_free(wake_);
    event_free(health_timer_);
    event_free(reconnect_timer_);
    event_free(grace_timer_);
    event_free(finish_);
    event_base_free(base_);
  }

  bool ok() const {
    return base_ && wake_ && health_timer_ && reconnect_timer_ &&
           grace_timer_ && finish_;
  }
  event* wake_event() const { return wake_; }
  // For timers of other threads (Every): libevent's locking is on
  // (EnableLibeventThreads), so they may add and delete events on it.
  event_base* base() const { return base_; }

  void Run() {
    // A quarter of down_after (1 to 50 ms): a stall is noticed within
    // 1.25 x down_after.
    const int64_t period =
        std::clamp<int64_t>(absl::ToInt64Nanoseconds(options().down_after) / 4,
                            1'000'000, 50'000'000);
    const timeval tv = ToTimeval(period);
    evtimer_add(health_timer_, &tv);
    StartConnect();
    event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY);
  }

 private:
  const RedisOptions& options() const { return client_->options_; }
  std::string Where() const { return client_->endpoint_.Describe(); }

  // --- Intake -----------------------------------------------------------

  static void OnWakeCb(evutil_socket_t, short, void* arg) {
    static_cast<Loop*>(arg)->OnWake();
  }

  void OnWake() {
    // acq_rel: a producer whose exchange(true) this reads published its
    // push before it; clearing first means a later push wakes us again.
    client_->wake_pending_.exchange(false, std::memory_order_acq_rel);
    Purge();
    const uint64_t sent_before = sent_;
    while (Command* cmd = client_->queue_.TryPop()) Accept(cmd);
    // Everything sent in this turn leaves in one write.
    if (sent_ != sent_before) CountFlush();
    // acquire: pairs with the destructor's release store.
    if (client_->stopping_.load(std::memory_order_acquire) && !draining_) {
      draining_ = true;
      const timeval tv =
          ToTimeval(absl::ToInt64Nanoseconds(options().shutdown_grace));
      evtimer_add(grace_timer_, &tv);
    }
    if (draining_) CheckDrained();
  }

  void Accept(Command* cmd) {
    ++outstanding_;
    const int64_t left = cmd->deadline_ns - SteadyNowNs();
    if (left <= 0) {
      Fail(cmd, absl::DeadlineExceededError(absl::StrCat(
                    "redis command not sent: its ", cmd->timeout_ns / 1000000,
                    " ms deadline passed in the submit queue")));
      return;
    }
    cmd->loop = this;
    cmd->timer = evtimer_new(base_, &Loop::OnCommandTimerCb, cmd);
    const timeval tv = ToTimeval(left);
    evtimer_add(cmd->timer, &tv);
    if (current_ != nullptr && current_->state == Connection::State::kReady &&
        Send(current_, cmd)) {
      return;
    }
    cmd->state = Command::State::kWaiting;
    waiting_.push_back(cmd);
    cmd->waiting_it = std::prev(waiting_.end());
  }

  // --- Sending and replies ----------------------------------------------

  bool Send(Connection* conn, Command* cmd) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    argv.reserve(cmd->argv.size() + 2);
    lens.reserve(cmd->argv.size() + 2);
    if (cmd->is_script) {
      if (cmd->sent_as_eval) {
        argv.push_back("EVAL");
        lens.push_back(4);
        argv.push_back(cmd->script.body.data());
        lens.push_back(cmd->script.body.size());
      } else {
        argv.push_back("EVALSHA");
        lens.push_back(7);
        argv.push_back(cmd->script.sha1.data());
        lens.push_back(cmd->script.sha1.size());
      }
    }
    for (const auto& a : cmd->argv) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    // The time of the server this is written to (read in its handshake).
    const std::string since =
        cmd->append_since ? absl::StrCat(since_us_) : std::string();
    if (cmd->append_since) {
      argv.push_back(since.data());
      lens.push_back(since.size());
    }
    if (redisAsyncCommandArgv(conn->ac, &Loop::OnReplyCb, cmd,
                              static_cast<int>(argv.size()), argv.data(),
                              lens.data()) != REDIS_OK) {
      return false;  // the context is closing; the caller keeps the command
    }
    cmd->state = Command::State::kInFlight;
    cmd->conn = conn;
    cmd->sent_ns = SteadyNowNs();
    if (conn == current_) health_.OnSent(cmd->sent_ns);
    ++sent_;
    // relaxed: statistics.
    client_->counters_.commands_sent.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  static void OnReplyCb(redisAsyncContext* ac, void* r, void* privdata) {
    auto* conn = static_cast<Connection*>(ac->data);
    conn->loop->OnReply(conn, ac, static_cast<redisReply*>(r),
                        static_cast<Command*>(privdata));
  }

  void OnReply(Connection* conn, redisAsyncContext* ac, redisReply* r,
               Command* cmd) {
    if (cmd->completed) {  // timed out earlier; hiredis is done with it now
      if (r != nullptr) {
        // relaxed: statistics.
        client_->counters_.late_replies.fetch_add(1, std::memory_order_relaxed);
        NoteReply(conn, cmd, RecordRoundTrip(cmd));
      }
      delete cmd;
      return;
    }
    if (r == nullptr) {
      const std::string why = !conn->close_reason.empty()
                                  ? conn->close_reason
                                  : ErrorText(ac, "connection closed");
      Fail(cmd, absl::UnavailableError(absl::StrCat(
                    "connection to ", Where(), " lost before the reply (", why,
                    "); the command may or may not have run")));
      return;
    }
    client_->counters_.replies.fetch_add(1, std::memory_order_relaxed);
    NoteReply(conn, cmd, RecordRoundTrip(cmd));
    RedisReply reply = CopyReply(r);
    if (cmd->is_script && !cmd->sent_as_eval &&
        reply.ErrorStartsWith("NOSCRIPT") && !conn->hiredis_done) {
      // NOSCRIPT: the script did not run, so sending its body is safe.
      cmd->sent_as_eval = true;
      client_->counters_.script_reloads.fetch_add(1, std::memory_order_relaxed);
      if (Send(conn, cmd)) {
        CountFlush();
        return;
      }
    }
    Finish(cmd, std::move(reply));
  }

  // A sign of life (`now`: when the reply came): feeds the health monitor,
  // and publishes a recovery at once (limiters resume leasing without
  // waiting for the periodic check).
  void NoteReply(Connection* conn, Command* cmd, int64_t now) {
    if (conn != current_) return;
    health_.OnReply(now, now - cmd->sent_ns);
    if (client_->health() != RedisHealth::kHealthy) UpdateHealth(now);
  }

  // Adds the round trip of `cmd`, whose reply came now, to the histogram
  // (RedisStats::round_trip); returns now.
  int64_t RecordRoundTrip(const Command* cmd) {
    const int64_t now = SteadyNowNs();
    const int64_t ns = std::max<int64_t>(0, now - cmd->sent_ns);
    RoundTripCounters& h = client_->round_trip_;
    // Relaxed load and store, not fetch_add: only this thread writes the
    // histogram (a single writer needs no locked instruction), and stats()
    // reads each cell with a relaxed load (a statistic publishes nothing).
    std::atomic<uint64_t>& bucket = h.buckets[LatencyHistogram::BucketOf(ns)];
    bucket.store(bucket.load(std::memory_order_relaxed) + 1,
                 std::memory_order_relaxed);
    h.sum_ns.store(
        h.sum_ns.load(std::memory_order_relaxed) + static_cast<uint64_t>(ns),
        std::memory_order_relaxed);
    return now;
  }

  void CountFlush() {
    // relaxed: statistics.
    client_->counters_.flushes.fetch_add(1, std::memory_order_relaxed);
  }

  // --- Completion ---------------------------------------------------------

  void ReleaseTimer(Command* cmd) {
    if (cmd->timer != nullptr) {
      event_free(cmd->timer);
      cmd->timer = nullptr;
    }
  }

  void Complete(Command* cmd, absl::StatusOr<RedisReply> result) {
    ReleaseTimer(cmd);
    cmd->completed = true;
    --outstanding_;
    ReplyCallback done = std::move(cmd->done);
    done(std::move(result));
    if (draining_) CheckDrained();
  }

  // Completes a command hiredis no longer holds, and frees it.
  void Finish(Command* cmd, absl::StatusOr<RedisReply> result) {
    Complete(cmd, std::move(result));
    delete cmd;
  }
  void Fail(Command* cmd, absl::Status status) {
    Finish(cmd, std::move(status));
  }

  static void OnCommandTimerCb(evutil_socket_t, short, void* arg) {
    auto* cmd = static_cast<Command*>(arg);
    cmd->loop->OnCommandTimer(cmd);
  }

  void OnCommandTimer(Command* cmd) {
    client_->counters_.timeouts.fetch_add(1, std::memory_order_relaxed);
    const std::string ms = absl::StrCat(cmd->timeout_ns / 1000000, " ms");
    if (cmd->state == Command::State::kWaiting) {
      waiting_.erase(cmd->waiting_it);
      Fail(cmd, absl::DeadlineExceededError(absl::StrCat(
                    "redis command not sent within ", ms, ": no connection to ",
                    Where(), last_error_.empty() ? "" : " (last error: ",
                    last_error_, last_error_.empty() ? "" : ")")));
      return;
    }
    // In flight: the caller is answered now; hiredis keeps the command
    // until its late reply (discarded) or the connection's end. The
    // connection stays: a slow Redis is not helped by a reconnect, and a
    // dead one is reset by the health check (dead_after).
    const int64_t now = SteadyNowNs();
    if (cmd->conn == current_) health_.OnTimeout(now);
    Complete(cmd, absl::DeadlineExceededError(absl::StrCat(
                      "no reply from ", Where(), " within ", ms,
                      "; the command may still run (its late reply is "
                      "discarded)")));
    UpdateHealth(now, /*may_reset=*/true);
  }

  // --- Health ---------------------------------------------------------------

  static void OnHealthTimerCb(evutil_socket_t, short, void* arg) {
    auto* loop = static_cast<Loop*>(arg);
    loop->UpdateHealth(SteadyNowNs(), /*may_reset=*/true);
  }

  // Judges the health now, resets a dead connection (`may_reset`: only from
  // our own events, never inside a hiredis callback), and publishes a
  // change (atomic, counters, callback, log line).
  void UpdateHealth(int64_t now, bool may_reset = false) {
    if (stopped_) return;
    HealthMonitor::Verdict v = health_.Judge(now);
    if (may_reset && v.reset && current_ != nullptr &&
        current_->state == Connection::State::kReady) {
      // relaxed: statistics.
      client_->counters_.resets.fetch_add(1, std::memory_order_relaxed);
      Log(absl::StrCat("resetting the connection: ", v.reason));
      Teardown(current_, v.reason);
      v = health_.Judge(now);
    }
    const RedisHealth before = client_->health();
    if (v.health == before) return;
    // relaxed: a hint for limiters (RedisClient::health).
    client_->health_.store(static_cast<uint8_t>(v.health),
                           std::memory_order_relaxed);
    if (v.health == RedisHealth::kHealthy) {
      client_->counters_.healthy.fetch_add(1, std::memory_order_relaxed);
    } else if (v.health == RedisHealth::kDegraded) {
      client_->counters_.degraded.fetch_add(1, std::memory_order_relaxed);
    } else if (v.health == RedisHealth::kDown) {
      client_->counters_.down.fetch_add(1, std::memory_order_relaxed);
    }
    Log(absl::StrCat(RedisHealthName(before), " -> ", RedisHealthName(v.health),
                     ": ", v.reason));
    if (options().on_health_change) {
      options().on_health_change(RedisHealthEvent{before, v.health, v.reason});
    }
  }

  void Log(const std::string& line) {
    if (options().log)
      options().log(absl::StrCat("redis ", Where(), ": ", line));
  }

  // --- Connections ----------------------------------------------------------

  void StartConnect() {
    if (stopped_) return;
    auto owned = std::make_unique<Connection>();
    Connection* conn = owned.get();
    conn->loop = this;
    const RedisEndpoint& ep = client_->endpoint_;
    redisAsyncContext* ac =
        ep.socket_path.empty()
            ? redisAsyncConnect(client_->address_.c_str(), ep.port)
            : redisAsyncConnectUnix(ep.socket_path.c_str());
    if (ac == nullptr || ac->err) {
      last_error_ = ac ? ac->errstr : "out of memory";
      if (ac) redisAsyncFree(ac);
      client_->counters_.connect_failures.fetch_add(1,
                                                    std::memory_order_relaxed);
      ScheduleReconnect();
      return;
    }
    if (redisLibeventAttach(ac, base_) != REDIS_OK) {
      // Only fails if the context already has an event adapter (a hiredis
      // misuse): give up this attempt, retry after the backoff.
      last_error_ = "cannot attach the connection to the event loop";
      redisAsyncFree(ac);
      client_->counters_.connect_failures.fetch_add(1,
                                                    std::memory_order_relaxed);
      ScheduleReconnect();
      return;
    }
    conn->ac = ac;
    ac->data = conn;
    // A corrupt array header must not allocate gigabytes (reply.h).
    LimitReplyArrays(ac->c.reader);
    redisAsyncSetConnectCallback(ac, &Loop::OnConnectCb);
    redisAsyncSetDisconnectCallback(ac, &Loop::OnDisconnectCb);
    conn->connect_timer = evtimer_new(base_, &Loop::OnConnectTimerCb, conn);
    conn->close_event = event_new(base_, -1, 0, &Loop::OnCloseEventCb, conn);
    const timeval tv =
        ToTimeval(absl::ToInt64Nanoseconds(options().connect_timeout));
    evtimer_add(conn->connect_timer, &tv);
    // AUTH and SELECT are buffered by hiredis and written once connected.
    if (!ep.password.empty()) {
      ++conn->handshake_left;
      if (ep.user.empty()) {
        redisAsyncCommand(ac, &Loop::OnHandshakeCb, conn, "AUTH %b",
                          ep.password.data(), ep.password.size());
      } else {
        redisAsyncCommand(ac, &Loop::OnHandshakeCb, conn, "AUTH %b %b",
                          ep.user.data(), ep.user.size(), ep.password.data(),
                          ep.password.size());
      }
    }
    if (ep.db != 0) {
      ++conn->handshake_left;
      redisAsyncCommand(ac, &Loop::OnHandshakeCb, conn, "SELECT %d", ep.db);
    }
    // Last: a TCP accept (a frozen server's kernel accepts too) is not a
    // working Redis; its answer to PING is.
    ++conn->handshake_left;
    redisAsyncCommand(ac, &Loop::OnHandshakeCb, conn, "PING");
    // The data-loss marker (since.lua), before any call of this
    // connection: its calls carry the time it gives (append_since).
    ++conn->handshake_left;
    redisAsyncCommand(ac, &Loop::OnSinceCb, conn, "EVAL %b 1 %s 1",
                      kSinceScript.body.data(), kSinceScript.body.size(),
                      kSinceKey);
    current_ = conn;
    conns_.push_back(std::move(owned));
  }

  static void OnConnectCb(const redisAsyncContext* ac, int status) {
    auto* conn = static_cast<Connection*>(ac->data);
    conn->loop->OnConnect(conn, ac, status);
  }

  void OnConnect(Connection* conn, const redisAsyncContext* ac, int status) {
    if (status != REDIS_OK) {
      // hiredis frees the context right after this callback and calls no
      // disconnect callback.
      last_error_ = ErrorText(ac, "connect failed");
      MarkClosed(conn);
      conn->ac = nullptr;
      client_->counters_.connect_failures.fetch_add(1,
                                                    std::memory_order_relaxed);
      ScheduleReconnect();
      return;
    }
  }

  static void OnHandshakeCb(redisAsyncContext* ac, void* r, void* privdata) {
    auto* conn = static_cast<Connection*>(privdata);
    conn->loop->OnHandshake(conn, ac, static_cast<redisReply*>(r));
  }

  void OnHandshake(Connection* conn, redisAsyncContext*, redisReply* r) {
    if (conn->hiredis_done || r == nullptr) return;  // being torn down
    // A teardown is already asked for: AUTH's WRONGPASS is the reason, not
    // the NOAUTH of the PING that came in the same read.
    if (!conn->close_reason.empty()) return;
    if (r->type == REDIS_REPLY_ERROR) {
      last_error_ = absl::StrCat("login failed: ", std::string(r->str, r->len));
      client_->counters_.connect_failures.fetch_add(1,
                                                    std::memory_order_relaxed);
      RequestTeardown(conn, last_error_);
      return;
    }
    if (--conn->handshake_left == 0) MarkReady(conn);
  }

  static void OnSinceCb(redisAsyncContext* /*ac*/, void* r, void* privdata) {
    auto* conn = static_cast<Connection*>(privdata);
    conn->loop->OnSince(conn, static_cast<redisReply*>(r));
  }

  // The marker's reply. An error (a read-only replica, OOM, a marker of
  // another type) does not fail the login: the time is then unknown (-1),
  // and a limit that starts empty after a data loss cannot here.
  void OnSince(Connection* conn, redisReply* r) {
    if (conn->hiredis_done || r == nullptr) return;  // being torn down
    if (!conn->close_reason.empty()) return;
    int64_t since = -1;
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
      since = r->integer;
    } else if (r->type == REDIS_REPLY_ERROR) {
      Log(absl::StrCat("the data-loss marker '", kSinceKey,
                       "' cannot be read: ", std::string(r->str, r->len)));
    }
    if (since >= 0 && known_since_us_ >= 0 && since != known_since_us_) {
      // relaxed: statistics.
      client_->counters_.data_losses.fetch_add(1, std::memory_order_relaxed);
      Log(absl::StrCat(
          "Redis lost its data: its tokenlease state began again at ",
          absl::FormatTime(absl::FromUnixMicros(since), absl::UTCTimeZone()),
          " (it began at ",
          absl::FormatTime(absl::FromUnixMicros(known_since_us_),
                           absl::UTCTimeZone()),
          ")"));
    }
    since_us_ = since;
    if (since >= 0) known_since_us_ = since;
    // relaxed: a value on its own (stats()).
    client_->state_since_us_.store(since, std::memory_order_relaxed);
    if (--conn->handshake_left == 0) MarkReady(conn);
  }

  void MarkReady(Connection* conn) {
    conn->state = Connection::State::kReady;
    FreeTimer(&conn->connect_timer);
    backoff_attempt_ = 0;
    last_error_.clear();
    logged_error_.clear();
    // relaxed: monitoring.
    client_->connected_.store(true, std::memory_order_relaxed);
    client_->counters_.connects.fetch_add(1, std::memory_order_relaxed);
    health_.OnReady(SteadyNowNs());
    // Everything that waited goes out in one pipelined write.
    const uint64_t sent_before = sent_;
    while (!waiting_.empty() && conn == current_) {
      Command* cmd = waiting_.front();
      if (!Send(conn, cmd)) break;
      waiting_.pop_front();
    }
    if (sent_ != sent_before) CountFlush();
    UpdateHealth(SteadyNowNs());
  }

  static void OnConnectTimerCb(evutil_socket_t, short, void* arg) {
    auto* conn = static_cast<Connection*>(arg);
    Loop* loop = conn->loop;
    loop->last_error_ =
        absl::StrCat("connect and login did not finish within ",
                     absl::FormatDuration(loop->options().connect_timeout));
    loop->client_->counters_.connect_failures.fetch_add(
        1, std::memory_order_relaxed);
    loop->Teardown(conn, loop->last_error_);
  }

  static void OnCloseEventCb(evutil_socket_t, short, void* arg) {
    auto* conn = static_cast<Connection*>(arg);
    conn->loop->Teardown(conn, conn->close_reason);
  }

  // From inside a hiredis callback: tear down on the next loop iteration.
  void RequestTeardown(Connection* conn, std::string reason) {
    if (conn->hiredis_done) return;
    conn->close_reason = std::move(reason);
    event_active(conn->close_event, 0, 0);
  }

  static void OnDisconnectCb(const redisAsyncContext* ac, int) {
    auto* conn = static_cast<Connection*>(ac->data);
    Loop* loop = conn->loop;
    if (!conn->hiredis_done) {  // lost, not closed by us
      loop->last_error_ = ErrorText(ac, "server closed the connection");
      loop->MarkClosed(conn);
      loop->ScheduleReconnect();
    }
    conn->ac = nullptr;
  }

  // hiredis is done with (or is freeing) conn's context.
  void MarkClosed(Connection* conn) {
    conn->hiredis_done = true;
    conn->state = Connection::State::kClosed;
    FreeTimer(&conn->connect_timer);
    if (current_ == conn) {
      current_ = nullptr;
      client_->connected_.store(false, std::memory_order_relaxed);
      health_.OnClosed(!conn->close_reason.empty() ? conn->close_reason
                       : !last_error_.empty()      ? last_error_
                                                   : "connection closed");
      // From a hiredis callback too: publishing only stores an atomic and
      // calls the user's quick callback; a reset happens only from our own
      // events (the connection is gone here anyway).
      UpdateHealth(SteadyNowNs());
    }
  }

  // Frees conn's context from one of our own event callbacks (never from a
  // hiredis callback). hiredis answers every pending command with NULL
  // (they fail with Unavailable), then calls the disconnect callback.
  void Teardown(Connection* conn, const std::string& reason) {
    if (conn->hiredis_done) return;
    if (conn->close_reason.empty()) conn->close_reason = reason;
    redisAsyncContext* ac = conn->ac;
    MarkClosed(conn);
    redisAsyncFree(ac);
    conn->ac = nullptr;
    ScheduleReconnect();
  }

  void ScheduleReconnect() {
    if (stopped_) return;
    // Why the server cannot be used, once per reason (a refused AUTH after
    // a password change must reach the operator; an outage must not flood
    // the log with one line per attempt).
    if (!last_error_.empty() && last_error_ != logged_error_) {
      Log(absl::StrCat("no connection: ", last_error_,
                       " (retrying with backoff)"));
      logged_error_ = last_error_;
    }
    if (evtimer_pending(reconnect_timer_, nullptr)) return;
    const int64_t min_ns =
        absl::ToInt64Nanoseconds(options().reconnect_min_backoff);
    const int64_t max_ns =
        absl::ToInt64Nanoseconds(options().reconnect_max_backoff);
    int64_t delay = min_ns;
    for (int i = 0; i < backoff_attempt_ && delay < max_ns; ++i) delay *= 2;
    delay = std::min(delay, max_ns);
    ++backoff_attempt_;
    // Jitter: uniform in [delay/2, delay], so instances that lost the same
    // server do not reconnect in lockstep.
    std::uniform_int_distribution<int64_t> dist(delay / 2, delay);
    const timeval tv = ToTimeval(dist(rng_));
    evtimer_add(reconnect_timer_, &tv);
  }

  static void OnReconnectCb(evutil_socket_t, short, void* arg) {
    auto* loop = static_cast<Loop*>(arg);
    loop->Purge();
    if (loop->current_ == nullptr) loop->StartConnect();
  }

  void FreeTimer(event** ev) {
    if (*ev != nullptr) {
      event_free(*ev);
      *ev = nullptr;
    }
  }

  void FreeConnectionEvents(Connection* conn) {
    FreeTimer(&conn->connect_timer);
    FreeTimer(&conn->close_event);
  }

  // Deletes connections hiredis is done with. Runs only from our own event
  // callbacks, so no hiredis frame still references them.
  void Purge() {
    for (auto it = conns_.begin(); it != conns_.end();) {
      if ((*it)->hiredis_done && (*it)->ac == nullptr) {
        FreeConnectionEvents(it->get());
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // --- Shutdown -------------------------------------------------------------

  void CheckDrained() {
    if (outstanding_ == 0 && waiting_.empty()) event_active(finish_, 0, 0);
  }

  static void OnGraceCb(evutil_socket_t, short, void* arg) {
    static_cast<Loop*>(arg)->Stop();
  }
  static void OnFinishCb(evutil_socket_t, short, void* arg) {
    static_cast<Loop*>(arg)->Stop();
  }

  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    while (Command* cmd = client_->queue_.TryPop()) {
      ++outstanding_;
      Fail(cmd, absl::CancelledError(
                    "redis client shut down before the command was sent"));
    }
    while (!waiting_.empty()) {
      Command* cmd = waiting_.front();
      waiting_.pop_front();
      Fail(cmd, absl::CancelledError(
                    "redis client shut down before the command was sent"));
    }
    for (auto& c : conns_) {
      Teardown(c.get(), "the redis client shut down");
    }
    event_del(reconnect_timer_);
    event_del(grace_timer_);
    event_del(health_timer_);
    event_base_loopbreak(base_);
  }

  RedisClient* client_;
  HealthMonitor health_;
  event_base* base_ = nullptr;
  event* wake_ = nullptr;
  event* health_timer_ = nullptr;
  event* reconnect_timer_ = nullptr;
  event* grace_timer_ = nullptr;
  event* finish_ = nullptr;
  std::list<Command*> waiting_;
  std::vector<std::unique_ptr<Connection>> conns_;
  Connection* current_ = nullptr;
  std::string last_error_;
  std::string logged_error_;  // the last last_error_ logged
  int backoff_attempt_ = 0;
  // The marker's time on the current server (since.lua; -1: unknown).
  int64_t since_us_ = -1;
  int64_t known_since_us_ = -1;  // the last time read (data_losses)
  int64_t outstanding_ = 0;      // accepted commands whose `done` has not run
  uint64_t sent_ = 0;
  bool draining_ = false;
  bool stopped_ = false;
  std::mt19937_64 rng_;
};

// --- RedisClient
// --------------------------------------------------------------

RedisClient::RedisClient(const RedisOptions& options, RedisEndpoint endpoint,
                         std::string address)
    : options_(options),
      endpoint_(std::move(endpoint)),
      address_(std::move(address)),
      queue_(options.max_pending) {}

absl::StatusOr<std::unique_ptr<RedisClient>> RedisClient::Create(
    const RedisOptions& options, RedisEndpoint endpoint, std::string address) {
  std::unique_ptr<RedisClient> client(
      new RedisClient(options, std::move(endpoint), std::move(address)));
  client->loop_ = std::make_unique<Loop>(client.get());
  if (!client->loop_->ok()) {
    return absl::InternalError("libevent: cannot create the event loop");
  }
  client->thread_ = std::thread([c = client.get()] { c->loop_->Run(); });
  return client;
}

RedisClient::~RedisClient() {
  if (std::this_thread::get_id() == thread_.get_id()) {
    // The last reference was dropped inside one of this client's callbacks:
    // the thread cannot join itself, and the loop would run on freed
    // memory. Fail loudly instead of undefined behaviour.
    std::fprintf(stderr,
                 "tokenlease: a RedisConnection (or the limiter owning it) "
                 "was destroyed from inside one of its own callbacks; keep a "
                 "reference until the callback has returned\n");
    std::abort();
  }
  // release: the loop's acquire load sees every earlier submit's effects.
  stopping_.store(true, std::memory_order_release);
  event_active(loop_->wake_event(), EV_READ, 0);
  thread_.join();
  // A Submit that raced with the stop may have queued after the loop's last
  // drain: answer it here.
  while (Command* cmd = queue_.TryPop()) {
    if (cmd->done) {
      cmd->done(absl::CancelledError(
          "redis client shut down before the command was sent"));
    }
    delete cmd;
  }
  loop_.reset();
}

absl::Status RedisClient::Submit(std::vector<std::string> argv,
                                 ReplyCallback done, absl::Duration timeout) {
  auto* cmd = new Command;
  cmd->argv = std::move(argv);
  cmd->done = std::move(done);
  cmd->timeout_ns = absl::ToInt64Nanoseconds(
      timeout > absl::ZeroDuration() ? timeout : options_.command_timeout);
  return Enqueue(cmd, /*wake=*/true);
}

RedisClient::Command* RedisClient::NewScriptCommand(
    const LuaScript& script, std::vector<std::string> args, ReplyCallback done,
    absl::Duration timeout, bool append_since) {
  auto* cmd = new Command;
  cmd->argv = std::move(args);
  cmd->script = script;
  cmd->is_script = true;
  cmd->append_since = append_since;
  cmd->done = std::move(done);
  cmd->timeout_ns = absl::ToInt64Nanoseconds(
      timeout > absl::ZeroDuration() ? timeout : options_.command_timeout);
  return cmd;
}

absl::Status RedisClient::SubmitScript(const LuaScript& script,
                                       std::vector<std::string> args,
                                       ReplyCallback done,
                                       absl::Duration timeout,
                                       bool append_since) {
  return Enqueue(NewScriptCommand(script, std::move(args), std::move(done),
                                  timeout, append_since),
                 /*wake=*/true);
}

absl::Status RedisClient::Batch::SubmitScript(const LuaScript& script,
                                              std::vector<std::string> args,
                                              ReplyCallback done,
                                              absl::Duration timeout,
                                              bool append_since) {
  absl::Status s = client_->Enqueue(
      client_->NewScriptCommand(script, std::move(args), std::move(done),
                                timeout, append_since),
      /*wake=*/false);
  if (s.ok()) ++queued_;
  return s;
}

absl::Status RedisClient::Enqueue(Command* cmd, bool wake) {
  cmd->deadline_ns = SteadyNowNs() + cmd->timeout_ns;
  // acquire: pairs with the destructor's release store.
  if (stopping_.load(std::memory_order_acquire)) {
    delete cmd;
    return absl::CancelledError("the redis client is shutting down");
  }
  if (!queue_.TryPush(cmd)) {
    delete cmd;
    return absl::ResourceExhaustedError(
        absl::StrCat("redis submit queue is full (", queue_.capacity(),
                     " commands not yet picked up by the client thread); raise "
                     "RedisOptions::max_pending or submit fewer commands"));
  }
  if (wake) Wake();
  return absl::OkStatus();
}

void RedisClient::Wake() {
  // acq_rel: see Loop::OnWake; only the producer that flips false -> true
  // pays for event_active.
  if (!wake_pending_.exchange(true, std::memory_order_acq_rel)) {
    event_active(loop_->wake_event(), EV_READ, 0);
  }
}

void RedisClient::Periodic::Run(int, short, void* arg) {
  static_cast<Periodic*>(arg)->task_();
}

RedisClient::Periodic::~Periodic() {
  if (ev_ == nullptr) return;  // never added (Every failed)
  // event_del from another thread waits for a run in progress to end
  // (libevent's EVENT_DEL_AUTOBLOCK, with thread support on): after it, the
  // task neither runs nor will run.
  event_del(ev_);
  event_free(ev_);
}

absl::StatusOr<std::unique_ptr<RedisClient::Periodic>> RedisClient::Every(
    absl::Duration interval, absl::AnyInvocable<void()> task) {
  std::unique_ptr<Periodic> p(new Periodic(std::move(task)));
  p->ev_ = event_new(loop_->base(), -1, EV_PERSIST, &Periodic::Run, p.get());
  if (p->ev_ == nullptr) {
    return absl::InternalError("libevent: cannot create a timer");
  }
  const timeval tv = ToTimeval(absl::ToInt64Nanoseconds(interval));
  if (event_add(p->ev_, &tv) != 0) {
    event_free(p->ev_);
    p->ev_ = nullptr;
    return absl::InternalError("libevent: cannot add a timer");
  }
  return p;
}

RedisStats RedisClient::stats() const {
  RedisStats s;
  // relaxed: statistics.
  s.commands_sent = counters_.commands_sent.load(std::memory_order_relaxed);
  s.replies = counters_.replies.load(std::memory_order_relaxed);
  s.timeouts = counters_.timeouts.load(std::memory_order_relaxed);
  s.connects = counters_.connects.load(std::memory_order_relaxed);
  s.connect_failures =
      counters_.connect_failures.load(std::memory_order_relaxed);
  s.script_reloads = counters_.script_reloads.load(std::memory_order_relaxed);
  s.flushes = counters_.flushes.load(std::memory_order_relaxed);
  s.late_replies = counters_.late_replies.load(std::memory_order_relaxed);
  s.resets = counters_.resets.load(std::memory_order_relaxed);
  s.healthy = counters_.healthy.load(std::memory_order_relaxed);
  s.degraded = counters_.degraded.load(std::memory_order_relaxed);
  s.down = counters_.down.load(std::memory_order_relaxed);
  s.data_losses = counters_.data_losses.load(std::memory_order_relaxed);
  s.state_since_us = state_since_us_.load(std::memory_order_relaxed);
  s.health = health();
  // relaxed: statistics (see RecordRoundTrip). Read after the counters, so
  // a reply counted above is in the histogram too.
  for (int i = 0; i <= LatencyHistogram::kBuckets; ++i) {
    s.round_trip.buckets[i] =
        round_trip_.buckets[i].load(std::memory_order_relaxed);
  }
  s.round_trip.sum_nanos = round_trip_.sum_ns.load(std::memory_order_relaxed);
  return s;
}

}  // namespace tokenlease::internal
