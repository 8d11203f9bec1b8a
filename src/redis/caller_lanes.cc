// Caller lanes: see caller_lanes.h.
#include "redis/caller_lanes.h"

#include <hiredis/hiredis.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <random>

#include "absl/cleanup/cleanup.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "redis/client_time.h"
#include "redis/redis_client.h"
#include "redis/scripts.h"
#include "redis/tls.h"

namespace tokenlease::internal {

// One synchronous connection. `busy` is its owner's flag: whoever set it
// (CallerLanes::Call) alone touches the other fields until it clears it.
struct alignas(64) CallerLanes::Lane {
  std::atomic<bool> busy{false};
  redisContext* c = nullptr;  // nullptr: closed
  int64_t since_us = -1;      // the data-loss marker's time read at login
  int64_t timeout_ns = -1;    // the socket timeout set now
  int64_t last_reply_ns = 0;  // steady clock: the last reply read
};

// A lane that had a reply this recently is not checked for a close by the
// server before the next write (a syscall on the hot path): a server that
// went away since fails that one call (decided by the failure mode), as it
// fails a call in flight on the client thread.
constexpr int64_t kTrustRecentNs = 10'000'000;

CallerLanes::CallerLanes(const RedisOptions& options,
                         const RedisEndpoint& endpoint,
                         std::shared_ptr<const TlsContext> tls)
    : options_(options),
      endpoint_(endpoint),
      tls_(std::move(tls)),
      lanes_(new Lane[options.caller_lanes]),
      count_(options.caller_lanes) {}

CallerLanes::~CallerLanes() {
  for (int i = 0; i < count_; ++i) Close(&lanes_[i]);
}

void CallerLanes::Close(Lane* lane) {
  if (lane->c == nullptr) return;
  redisFree(lane->c);  // frees the TLS session with it
  lane->c = nullptr;
  lane->timeout_ns = -1;
  // relaxed: statistics.
  open_.fetch_sub(1, std::memory_order_relaxed);
}

void CallerLanes::Pause() {
  // relaxed, both: the pause is a hint (a caller that sees it late takes a
  // lane once more; each lane's own state is guarded by its flag).
  const int attempt = backoff_attempt_.fetch_add(1, std::memory_order_relaxed);
  const int64_t min_ns =
      absl::ToInt64Nanoseconds(options_.reconnect_min_backoff);
  const int64_t max_ns =
      absl::ToInt64Nanoseconds(options_.reconnect_max_backoff);
  const int64_t d = std::min(max_ns, min_ns << std::min(attempt, 20));
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const int64_t wait =
      std::uniform_int_distribution<int64_t>(d / 2, std::max(d / 2, d))(rng);
  paused_until_ns_.store(SteadyNowNs() + wait, std::memory_order_relaxed);
  errors_.fetch_add(1, std::memory_order_relaxed);
}

bool CallerLanes::Connect(Lane* lane, std::string* why) {
  const int64_t deadline =
      SteadyNowNs() + absl::ToInt64Nanoseconds(options_.connect_timeout);
  // Each step gets what is left of connect_timeout.
  auto left = [&] {
    return ToTimeval(std::max<int64_t>(deadline - SteadyNowNs(), 1000));
  };
  redisContext* c =
      endpoint_.socket_path.empty()
          ? redisConnectWithTimeout(endpoint_.address.c_str(), endpoint_.port,
                                    left())
          : redisConnectUnixWithTimeout(endpoint_.socket_path.c_str(), left());
  if (c == nullptr || c->err) {
    *why = c != nullptr ? c->errstr : "out of memory";
    if (c != nullptr) redisFree(c);
    return false;
  }
  lane->c = c;  // Close frees it from here on
  // relaxed: statistics.
  open_.fetch_add(1, std::memory_order_relaxed);
  LimitReplyArrays(c->reader);  // as every connection (reply.h)
  if (redisSetTimeout(c, left()) != REDIS_OK) {
    *why = c->errstr;
    return false;
  }
  if (tls_ != nullptr) {
    absl::StatusOr<ssl_st*> ssl = tls_->Attach(c, endpoint_.host);
    if (!ssl.ok()) {
      *why = std::string(ssl.status().message());
      return false;
    }
  }
  // The client thread's login (client_connect.cc), one step at a time.
  auto step = [&](std::vector<std::string> argv, int64_t* since) {
    redisSetTimeout(c, left());
    std::vector<const char*> p;
    std::vector<size_t> n;
    for (const std::string& a : argv) {
      p.push_back(a.data());
      n.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(p.size()), p.data(), n.data()));
    if (r == nullptr) {
      *why = c->errstr;
      return false;
    }
    const bool ok = r->type != REDIS_REPLY_ERROR;
    if (!ok) *why = absl::StrCat("login failed: ", std::string(r->str, r->len));
    // The marker: an error leaves the time unknown (-1), as on the client
    // thread, and does not fail the login.
    if (since != nullptr) {
      *since =
          r->type == REDIS_REPLY_INTEGER && r->integer >= 0 ? r->integer : -1;
    }
    freeReplyObject(r);
    return ok || since != nullptr;
  };
  const RedisEndpoint& ep = endpoint_;
  if (!ep.password.empty() &&
      !step(ep.user.empty()
                ? std::vector<std::string>{"AUTH", ep.password}
                : std::vector<std::string>{"AUTH", ep.user, ep.password},
            nullptr)) {
    return false;
  }
  if (ep.db != 0 && !step({"SELECT", absl::StrCat(ep.db)}, nullptr)) {
    return false;
  }
  if (!step({"PING"}, nullptr)) return false;
  if (!step({"EVAL", std::string(kSinceScript.body), "1", kSinceKey, "1"},
            &lane->since_us)) {
    return false;
  }
  connects_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool CallerLanes::Ready(Lane* lane, int64_t now) {
  if (lane->c != nullptr) {
    if (now - lane->last_reply_ns < kTrustRecentNs) return true;
    // An idle Redis connection never has anything to read: readable means
    // the server closed it (a restart, an idle timeout) or sent junk.
    // Noticed here, before the write, the call is not lost.
    char byte;
    const ssize_t n = recv(lane->c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    Close(lane);
  }
  std::string why;
  if (Connect(lane, &why)) return true;
  Close(lane);
  Pause();
  return false;
}

std::optional<absl::StatusOr<RedisReply>> CallerLanes::Call(
    const LuaScript& script, const std::vector<std::string>& args,
    absl::Duration timeout, bool append_since) {
  // relaxed: a hint (see Pause).
  const int64_t now = SteadyNowNs();
  if (now < paused_until_ns_.load(std::memory_order_relaxed)) {
    return std::nullopt;
  }
  Lane* lane = nullptr;
  for (int i = 0; i < count_ && lane == nullptr; ++i) {
    // relaxed peek: a busy lane is skipped without writing its line.
    if (lanes_[i].busy.load(std::memory_order_relaxed)) continue;
    // acquire: pairs with the release below; this thread sees what the
    // lane's previous holder did to it.
    if (!lanes_[i].busy.exchange(true, std::memory_order_acquire)) {
      lane = &lanes_[i];
    }
  }
  if (lane == nullptr) return std::nullopt;
  // release: hands the lane's state to its next holder.
  absl::Cleanup release = [lane] {
    lane->busy.store(false, std::memory_order_release);
  };
  if (!Ready(lane, now)) return std::nullopt;
  const int64_t timeout_ns = absl::ToInt64Nanoseconds(timeout);
  if (lane->timeout_ns != timeout_ns) {
    if (redisSetTimeout(lane->c, ToTimeval(timeout_ns)) != REDIS_OK) {
      Close(lane);
      Pause();
      return std::nullopt;  // nothing was sent
    }
    lane->timeout_ns = timeout_ns;
  }
  absl::InlinedVector<const char*, 24> argv;
  absl::InlinedVector<size_t, 24> lens;
  argv.push_back("EVALSHA");
  lens.push_back(7);
  argv.push_back(script.sha1.data());
  lens.push_back(script.sha1.size());
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  // The time of the server this lane is logged in to.
  const std::string since =
      append_since ? absl::StrCat(lane->since_us) : std::string();
  if (append_since) {
    argv.push_back(since.data());
    lens.push_back(since.size());
  }
  calls_.fetch_add(1, std::memory_order_relaxed);
  const int64_t start = SteadyNowNs();
  auto* r = static_cast<redisReply*>(redisCommandArgv(
      lane->c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (r != nullptr && r->type == REDIS_REPLY_ERROR &&
      std::string_view(r->str, r->len).starts_with("NOSCRIPT")) {
    // The script did not run: sending its body is safe (as on the client
    // thread, which counts it the same way).
    freeReplyObject(r);
    reloads_.fetch_add(1, std::memory_order_relaxed);
    argv[0] = "EVAL";
    lens[0] = 4;
    argv[1] = script.body.data();
    lens[1] = script.body.size();
    r = static_cast<redisReply*>(redisCommandArgv(
        lane->c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  }
  if (r == nullptr) {
    // The socket timeout is per read: a call that took about its timeout
    // timed out, anything else broke the connection.
    const bool timed_out =
        lane->c->err == REDIS_ERR_TIMEOUT ||
        SteadyNowNs() - start >= timeout_ns - timeout_ns / 10;
    absl::Status error =
        timed_out ? absl::DeadlineExceededError(absl::StrCat(
                        "no reply from ", endpoint_.Describe(), " within ",
                        absl::FormatDuration(timeout),
                        " on a caller lane (RedisOptions::caller_lanes); the "
                        "command may or may not have run"))
                  : absl::UnavailableError(absl::StrCat(
                        "caller lane to ", endpoint_.Describe(),
                        " lost before the reply (", lane->c->errstr,
                        "); the command may or may not have run"));
    Close(lane);
    Pause();
    return error;
  }
  RedisReply reply = CopyReply(r);
  freeReplyObject(r);
  lane->last_reply_ns = SteadyNowNs();
  // relaxed: the backoff's exponent is a hint (see Pause); the load keeps
  // the common case from writing a shared line.
  if (backoff_attempt_.load(std::memory_order_relaxed) != 0) {
    backoff_attempt_.store(0, std::memory_order_relaxed);
  }
  return reply;
}

void CallerLanes::Fill(RedisStats* s) const {
  // relaxed: statistics.
  s->lane_calls = calls_.load(std::memory_order_relaxed);
  s->lane_connects = connects_.load(std::memory_order_relaxed);
  s->lane_errors = errors_.load(std::memory_order_relaxed);
  s->lanes_open = open_.load(std::memory_order_relaxed);
  s->script_reloads += reloads_.load(std::memory_order_relaxed);
}

}  // namespace tokenlease::internal
