// RedisClient's caller side: the submit queue, waking the client thread,
// periodic tasks and statistics. The client thread is client_loop.h's.
#include "redis/redis_client.h"

#include <event2/event.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "redis/caller_lanes.h"
#include "redis/client_loop.h"
#include "redis/client_time.h"
#include "redis/tls.h"

namespace tokenlease::internal {

RedisClient::RedisClient(const RedisOptions& options, RedisEndpoint endpoint)
    : options_(options),
      endpoint_(std::move(endpoint)),
      cluster_(endpoint_.topology == RedisEndpoint::Topology::kCluster),
      queue_(options.max_pending) {
  if (cluster_) {
    slot_health_ = std::make_unique<std::atomic<uint8_t>[]>(kClusterSlots);
    slot_node_ = std::make_unique<std::atomic<int16_t>[]>(kClusterSlots);
    for (int s = 0; s < kClusterSlots; ++s) {
      // relaxed: before the client thread starts (its start publishes).
      slot_health_[s].store(static_cast<uint8_t>(RedisHealth::kDegraded),
                            std::memory_order_relaxed);
      slot_node_[s].store(-1, std::memory_order_relaxed);
    }
  }
}

absl::StatusOr<std::unique_ptr<RedisClient>> RedisClient::Create(
    const RedisOptions& options, RedisEndpoint endpoint) {
  std::shared_ptr<const TlsContext> tls;
  if (endpoint.tls) {
    absl::StatusOr<std::shared_ptr<const TlsContext>> made =
        TlsContext::Create(options.tls);
    if (!made.ok()) return made.status();
    tls = *std::move(made);
  }
  std::unique_ptr<RedisClient> client(
      new RedisClient(options, std::move(endpoint)));
  client->tls_ = std::move(tls);
  // Lanes: a single server's address is fixed, and no WAIT follows the
  // writes (RedisOptions::caller_lanes says why the others have none).
  const RedisEndpoint& ep = client->endpoint_;
  if (options.caller_lanes > 0 && options.durable_replicas == 0 &&
      ep.topology == RedisEndpoint::Topology::kSingle) {
    client->lanes_ = std::make_unique<CallerLanes>(options, ep, client->tls_);
  }
  client->loop_ = std::make_unique<Loop>(client.get());
  if (!client->loop_->ok()) {
    return absl::InternalError("libevent: cannot create the event loop");
  }
  client->thread_ = std::thread([c = client.get()] { c->loop_->Run(); });
  return client;
}

std::string RedisClient::LastConnectError() const {
  std::lock_guard<std::mutex> lock(connect_error_mu_);
  return connect_error_;
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
    absl::Duration timeout, bool append_since, int route_slot) {
  auto* cmd = new Command;
  cmd->slot = route_slot;
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
                                       bool append_since, int route_slot) {
  return Enqueue(NewScriptCommand(script, std::move(args), std::move(done),
                                  timeout, append_since, route_slot),
                 /*wake=*/true);
}

std::optional<absl::StatusOr<RedisReply>> RedisClient::CallOnLane(
    const LuaScript& script, const std::vector<std::string>& args,
    absl::Duration timeout, bool append_since) {
  // Not while the health is in doubt: the client thread's path feeds the
  // health judgement (a lane's errors do not), and decides at once while
  // Redis is down. relaxed, every load here: hints (either path decides
  // correctly).
  if (lanes_ == nullptr || health() != RedisHealth::kHealthy ||
      blocking_calls_.load(std::memory_order_relaxed) > options_.caller_lanes) {
    return std::nullopt;
  }
  const int64_t wait_for =
      lanes_wait_for_reply_.load(std::memory_order_relaxed);
  if (wait_for >= 0) {
    if (static_cast<int64_t>(
            counters_.replies.load(std::memory_order_relaxed)) <= wait_for) {
      return std::nullopt;
    }
    lanes_wait_for_reply_.store(-1, std::memory_order_relaxed);
  }
  const uint64_t errors_before = lanes_->errors();
  std::optional<absl::StatusOr<RedisReply>> result = lanes_->Call(
      script, args,
      timeout > absl::ZeroDuration() ? timeout : options_.command_timeout,
      append_since);
  if (lanes_->errors() != errors_before) {
    lanes_wait_for_reply_.store(
        static_cast<int64_t>(counters_.replies.load(std::memory_order_relaxed)),
        std::memory_order_relaxed);
  }
  return result;
}

void RedisClient::AskForSlotMap() {
  if (!cluster_) return;
  // relaxed: a request flag; the wake-up's acq_rel exchange orders it
  // before the loop's next drain, which takes it.
  map_wanted_.store(true, std::memory_order_relaxed);
  Wake();
}

absl::Status RedisClient::Batch::SubmitScript(
    const LuaScript& script, std::vector<std::string> args, ReplyCallback done,
    absl::Duration timeout, bool append_since, int route_slot) {
  absl::Status s = client_->Enqueue(
      client_->NewScriptCommand(script, std::move(args), std::move(done),
                                timeout, append_since, route_slot),
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
  s.moved = counters_.moved.load(std::memory_order_relaxed);
  s.asked = counters_.asked.load(std::memory_order_relaxed);
  s.topology_refreshes =
      counters_.topology_refreshes.load(std::memory_order_relaxed);
  s.sentinel_queries =
      counters_.sentinel_queries.load(std::memory_order_relaxed);
  s.role_refusals = counters_.role_refusals.load(std::memory_order_relaxed);
  s.durability_waits =
      counters_.durability_waits.load(std::memory_order_relaxed);
  s.not_durable = counters_.not_durable.load(std::memory_order_relaxed);
  s.nodes = cluster_ ? counters_.nodes.load(std::memory_order_relaxed) : 1;
  s.nodes_down = counters_.nodes_down.load(std::memory_order_relaxed);
  s.state_since_us = state_since_us_.load(std::memory_order_relaxed);
  s.health = health();
  if (lanes_ != nullptr) lanes_->Fill(&s);
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
