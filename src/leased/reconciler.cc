#include "leased/reconciler.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tokenlease::internal {

Reconciler::Reconciler(LeaseBook* book, LeaseRegistry* registry,
                       LeaseTransport* transport, Clock* clock,
                       const LeaseOptions& options, size_t queue_capacity)
    : book_(book),
      registry_(registry),
      transport_(transport),
      clock_(clock),
      tick_ns_(absl::ToInt64Nanoseconds(options.tick)),
      evict_every_ns_(
          std::max(tick_ns_, absl::ToInt64Nanoseconds(options.idle_evict) / 4)),
      requests_(queue_capacity),
      sink_(std::make_shared<ReplySink>()) {
  sink_->owner = this;
}

Reconciler::~Reconciler() { Stop(absl::ZeroDuration()); }

void Reconciler::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Reconciler::Stop(absl::Duration timeout) {
  if (!thread_.joinable()) return;
  if (timeout > absl::ZeroDuration()) ReturnAll(timeout).IgnoreError();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // Late replies (after a timeout) find no owner and are dropped.
  std::lock_guard<std::mutex> lock(sink_->mu);
  sink_->owner = nullptr;
}

void Reconciler::Wake() {
  // acq_rel: pairs with the reconciler's clearing exchange in Run(), as in
  // the Redis client: a request pushed before a `true` we read is seen by
  // the step that follows the clearing.
  if (!wake_pending_.exchange(true, std::memory_order_acq_rel)) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      wake_ = true;
    }
    cv_.notify_one();
  }
}

void Reconciler::Run() {
  const auto tick = std::chrono::nanoseconds(tick_ns_);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, tick, [this] { return wake_ || stop_; });
      if (stop_) return;
      wake_ = false;
      ++steps_started_;
    }
    wake_pending_.exchange(false, std::memory_order_acq_rel);
    Step();
    done_cv_.notify_all();
  }
}

absl::Status Reconciler::ReturnAll(absl::Duration timeout) {
  // Clamped: steady_clock::now() + an infinite duration would overflow.
  timeout = std::clamp(timeout, absl::ZeroDuration(), absl::Hours(24));
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  std::unique_lock<std::mutex> lock(mu_);
  return_all_ = true;
  ++return_all_waiters_;
  wake_ = true;
  cv_.notify_one();
  const bool done = done_cv_.wait_until(lock, deadline, [this] {
    // acquire: pairs with the decrement after a reply was applied.
    return !return_all_ && outstanding_.load(std::memory_order_acquire) == 0;
  });
  --return_all_waiters_;
  if (!done) {
    const bool not_taken = return_all_;
    // While return_all_ is set every lease request is refused: the last
    // waiter to give up stops that (a lease still caught mid-decision is
    // retried through its expiry anyway).
    if (return_all_waiters_ == 0) return_all_ = false;
    const int64_t unanswered = outstanding_.load(std::memory_order_acquire);
    return absl::DeadlineExceededError(absl::StrCat(
        "returning leases: after ", absl::FormatDuration(timeout), ", ",
        unanswered, " Redis calls still unanswered",
        unanswered > 0 ? " (is Redis reachable?)" : "",
        not_taken ? "; a key's balance was still mid-decision" : "",
        "; retry with a longer timeout"));
  }
  return absl::OkStatus();
}

absl::Status Reconciler::Sync(absl::Duration timeout) {
  timeout = std::clamp(timeout, absl::ZeroDuration(), absl::Hours(24));
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  std::unique_lock<std::mutex> lock(mu_);
  // A step that starts after this point sees every request made before it.
  const uint64_t target = steps_started_ + 1;
  wake_ = true;
  cv_.notify_one();
  if (!done_cv_.wait_until(lock, deadline,
                           [&] { return idle_after_step_ >= target; })) {
    return absl::DeadlineExceededError(absl::StrCat(
        "the reconciler did not become idle within ",
        absl::FormatDuration(timeout), ": ",
        outstanding_.load(std::memory_order_acquire),
        " Redis calls unanswered (is Redis reachable?), or decisions kept "
        "asking for new leases"));
  }
  return absl::OkStatus();
}

void Reconciler::Step() {
  const int64_t now = clock_->NowNanos();
  book_->BeginStep(now);
  LeaseCalls calls;
  const int64_t applied = ApplyReplies(now, &calls);
  // Queued calls first (they are older), then the book's new ones.
  SendQueued();
  book_->RetryCharges(&calls);
  want_.assign(deferred_.begin(), deferred_.end());
  deferred_.clear();
  while (LeaseEntry* e = requests_.TryPop()) want_.push_back(e);
  book_->Expire(now, &calls, &want_);

  bool return_all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    return_all = return_all_;
  }
  // A key caught with a negative balance is retried on the next step, and
  // the ReturnAll waiter keeps waiting for it (within its deadline).
  bool all_returned = true;
  if (return_all) {
    registry_->ForEach([&](LeaseEntry* e) {
      if (!book_->ReturnLease(e, now, &calls)) all_returned = false;
    });
  }
  for (LeaseEntry* e : want_) {
    if (return_all) {
      book_->Decline(e, &calls);  // returning everything: no new lease
    } else if (HasRoom(calls.size())) {
      book_->Lease(e, now, &calls);
    } else {
      deferred_.push_back(e);  // still flagged: not asked twice
    }
  }
  if (now >= next_evict_ns_) {
    registry_->Reclaim(now);  // retires idle keys, frees (buries) old ones
    next_evict_ns_ = now + evict_every_ns_;
  }
  book_->DrainGraveyard(&calls);
  Send(std::move(calls));
  // Everything submitted in this step leaves in one pipelined write.
  transport_->Flush();
  // release: see outstanding_ (the follow-ups are counted by now).
  outstanding_.fetch_sub(applied, std::memory_order_release);
  if (return_all && all_returned) {
    book_->ReturnedAll(now);  // grants in flight are returned on arrival
    std::lock_guard<std::mutex> lock(mu_);
    return_all_ = false;
  }
  const bool idle = Idle();
  std::lock_guard<std::mutex> lock(mu_);
  if (idle) idle_after_step_ = steps_started_;
}

bool Reconciler::Idle() {
  std::lock_guard<std::mutex> lock(sink_->mu);
  return sink_->items.empty() && requests_.Empty() && deferred_.empty() &&
         queued_.empty() && calls_in_flight_ == 0 && !book_->HasRetries() &&
         !book_->HasGraveyard();
}

int64_t Reconciler::ApplyReplies(int64_t now, LeaseCalls* out) {
  std::vector<ReplySink::Item> items;
  {
    std::lock_guard<std::mutex> lock(sink_->mu);
    items.swap(sink_->items);
  }
  for (ReplySink::Item& item : items) {
    book_->Apply(item.call, item.reply, now, out);
    --calls_in_flight_;
  }
  return static_cast<int64_t>(items.size());
}

void Reconciler::Send(LeaseCalls calls) {
  for (LeaseCall& call : calls) {
    // relaxed: see outstanding_.
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    if (queued_.empty() && calls_in_flight_ < kMaxCallsInFlight) {
      Submit(std::move(call));
    } else {
      queued_.push_back(std::move(call));
    }
  }
}

void Reconciler::SendQueued() {
  while (!queued_.empty() && calls_in_flight_ < kMaxCallsInFlight) {
    LeaseCall call = std::move(queued_.front());
    queued_.pop_front();
    Submit(std::move(call));
  }
}

void Reconciler::Submit(LeaseCall call) {
  ++calls_in_flight_;
  std::vector<std::string> args = std::move(call.args);
  const LuaScript& script = call.script();
  std::shared_ptr<ReplySink> sink = sink_;
  absl::Status queued = transport_->Submit(
      script, std::move(args), [sink, call](absl::StatusOr<RedisReply> reply) {
        std::lock_guard<std::mutex> lock(sink->mu);
        if (sink->owner == nullptr) return;
        sink->items.push_back(ReplySink::Item{call, std::move(reply)});
        sink->owner->Wake();
      });
  if (!queued.ok()) {
    // Not sent (queue full, shutting down): applied as a failed call.
    std::lock_guard<std::mutex> lock(sink_->mu);
    sink_->items.push_back(ReplySink::Item{std::move(call), queued});
  }
}

}  // namespace tokenlease::internal
