#include "leased/reconciler.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "redis/script_call.h"

namespace tokenlease::internal {

Reconciler::Reconciler(LeaseBook* book, LeaseRegistry* registry,
                       LeaseTransport* transport, Clock* clock,
                       const LeaseOptions& options, std::string key_prefix,
                       size_t queue_capacity)
    : book_(book),
      registry_(registry),
      transport_(transport),
      clock_(clock),
      tick_ns_(absl::ToInt64Nanoseconds(options.tick)),
      batch_window_ns_(absl::ToInt64Nanoseconds(options.batch_window)),
      charge_delay_ns_(absl::ToInt64Nanoseconds(options.charge_delay)),
      group_by_slot_(options.group_batches_by_slot || transport->GroupsCalls()),
      key_prefix_(std::move(key_prefix)),
      evict_every_ns_(
          std::max(tick_ns_, absl::ToInt64Nanoseconds(options.idle_evict) / 4)),
      requests_(queue_capacity),
      charges_(queue_capacity),
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
  // Real time: the tick only paces wake-ups; each step decides on clock_.
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
  // Real time: a bound on the caller's wait, not a reconciler decision.
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
  // Real time, as ReturnAll's: a bound on the caller's wait.
  timeout = std::clamp(timeout, absl::ZeroDuration(), absl::Hours(24));
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  std::unique_lock<std::mutex> lock(mu_);
  // A step that starts after this point sees every request made before it.
  const uint64_t target = steps_started_ + 1;
  wake_ = true;
  ++flush_waiters_;  // no batch waits for its window meanwhile
  cv_.notify_one();
  const bool idle = done_cv_.wait_until(
      lock, deadline, [&] { return idle_after_step_ >= target; });
  --flush_waiters_;
  if (!idle) {
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
  if (step_hook_) step_hook_(now);
  book_->BeginStep(now);
  // Before the retries and expiries below: a recovery lets keys that backed
  // off ask again in this step.
  if (transport_->Down()) {
    book_->OutageBegan();
  } else {
    book_->Recovered(now);
  }
  LeaseCalls calls;
  const int64_t applied = ApplyReplies(now, &calls);
  bool return_all, force;
  {
    std::lock_guard<std::mutex> lock(mu_);
    return_all = return_all_;
    force = return_all_ || return_all_waiters_ > 0 || flush_waiters_ > 0 ||
            std::exchange(flush_, false);
  }
  // Pacing decides what to send: on clock_, as the book (tests control it).
  book_->RetryCharges(now, &calls);
  TakeCharges(now, force, &calls);
  // relaxed: a hint that a charge request was dropped (queue full); the
  // sweep finds every key with uncharged admissions.
  if (charge_sweep_.exchange(false, std::memory_order_relaxed)) {
    registry_->ForEach([&](LeaseEntry* e) {
      if (!(e->flags.load(std::memory_order_acquire) & kChargeQueued)) {
        book_->ChargeUnqueued(e, &calls);
      }
    });
  }
  want_.assign(deferred_.begin(), deferred_.end());
  deferred_.clear();
  while (LeaseEntry* e = requests_.TryPop()) want_.push_back(e);
  book_->Expire(now, &calls, &want_);
  book_->SweepSlices(now);

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
  registry_->FreeRetiredTables();  // left by inserts on deciding threads
  Enqueue(std::move(calls));
  Dispatch(now, force);
  // Everything submitted in this step leaves in one pipelined write.
  transport_->Flush();
  // Upkeep off the decision path, after the calls have left: spare entry
  // blocks for new keys, and room in the registry's tables for them.
  book_->RefillSpares();
  registry_->GrowAhead();
  // release: see outstanding_ (the follow-ups are counted by now).
  outstanding_.fetch_sub(applied, std::memory_order_release);
  if (return_all && all_returned) {
    book_->ReturnedAll(now);  // grants in flight are returned on arrival
    std::lock_guard<std::mutex> lock(mu_);
    return_all_ = false;
  }
  const bool idle = Idle();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (idle) idle_after_step_ = steps_started_;
  }
  if (step_end_hook_) step_end_hook_(now);
}

bool Reconciler::Idle() {
  std::lock_guard<std::mutex> lock(sink_->mu);
  return sink_->items.empty() && requests_.Empty() && charges_.Empty() &&
         deferred_.empty() && charge_wait_.empty() && queued_.empty() &&
         queued_charges_.empty() && calls_in_flight_ == 0 &&
         !book_->HasRetries() && !book_->HasGraveyard();
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

void Reconciler::TakeCharges(int64_t now_ns, bool force, LeaseCalls* out) {
  // The clock stepped back (it need not be monotonic): no time has passed,
  // so no key waits longer than charge_delay from now. min() with one
  // bound keeps charge_wait_ sorted, and the back is its latest.
  if (!charge_wait_.empty() &&
      charge_wait_.back().ready_ns > now_ns + charge_delay_ns_) {
    for (ChargeWait& w : charge_wait_) {
      w.ready_ns = std::min(w.ready_ns, now_ns + charge_delay_ns_);
    }
  }
  // A key stays queued (kChargeQueued) for charge_delay, so that what it
  // admits meanwhile joins the same charge.
  while (LeaseEntry* e = charges_.TryPop()) {
    charge_wait_.push_back({e, now_ns + charge_delay_ns_});
  }
  while (!charge_wait_.empty() &&
         (force || charge_wait_.front().ready_ns <= now_ns)) {
    book_->ChargeQueued(charge_wait_.front().entry, out);
    charge_wait_.pop_front();
  }
}

void Reconciler::Enqueue(LeaseCalls calls) {
  if (calls.empty()) return;
  for (LeaseCall& call : calls) {
    // relaxed: see outstanding_.
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    // Charges queue behind leases and returns: under a flood of new keys
    // they must not delay the leases of hot keys (the bound does not
    // depend on how late a charge is; the credit is bounded).
    // A charge made with its key's lease request stays ahead of it.
    (call.kind == LeaseCall::Kind::kCharge && call.background ? queued_charges_
                                                              : queued_)
        .push_back(std::move(call));
  }
}

void Reconciler::Dispatch(int64_t now_ns, bool force) {
  // The clock stepped back: no time has passed since the last partial batch
  // (the window counts from now, not from a time still ahead).
  last_partial_ns_ = std::min(last_partial_ns_, now_ns);
  // A partial batch leaves when something waits for it (ReturnAll, Sync,
  // a call whose leave_by has come), or when no partial batch left in the
  // last window: a lone request leaves at this step, a stream fills
  // batches, at most one partial batch per window (per group when calls
  // are grouped). Full batches always leave.
  const bool window_over = now_ns - last_partial_ns_ >= batch_window_ns_;
  if (group_by_slot_) {
    DispatchGroups(now_ns, force, window_over);
    return;
  }
  // Charges never have a deadline.
  const bool due =
      force || std::any_of(queued_.begin(), queued_.end(),
                           [&](const LeaseCall& c) { return Due(c, now_ns); });
  bool partial_ok = due || window_over;
  while (Queued() > 0 && calls_in_flight_ < kMaxCallsInFlight) {
    const size_t room =
        static_cast<size_t>(kMaxCallsInFlight - calls_in_flight_);
    const size_t n =
        std::min({Queued(), static_cast<size_t>(kMaxBatchItems), room});
    if (n < static_cast<size_t>(kMaxBatchItems) && !partial_ok) break;
    const size_t sent = SubmitBatch(n);
    if (sent < static_cast<size_t>(kMaxBatchItems)) {
      last_partial_ns_ = now_ns;
      partial_ok = due;
    }
  }
}

bool Reconciler::Due(const LeaseCall& c, int64_t now_ns) const {
  // A deadline more than a window ahead (the book never sets one) was set
  // before the clock stepped back: it is due.
  return c.leave_by_ns != kNoDeadline &&
         (now_ns >= c.leave_by_ns || c.leave_by_ns - now_ns > batch_window_ns_);
}

int64_t Reconciler::GroupOf(const LeaseCall& c) const {
  return transport_->GroupsCalls()
             ? transport_->CallGroup(c.entry->name())
             : HashSlot(LimitKeyTag(key_prefix_, c.entry->name()));
}

// Grouped calls (a cluster's nodes, or hash slots): every group's full
// batches; partial ones of every group when `force`, of a group that holds
// a call whose deadline has come, else once a window (`partial_ok`): for a
// cluster's nodes one partial batch, of the group of the oldest call, so
// that three nodes make as few calls as one (each node's batch gathers its
// calls over several windows, and no call waits more than one window per
// node); for hash slots one per slot.
void Reconciler::DispatchGroups(int64_t now_ns, bool force, bool partial_ok) {
  struct Group {
    int64_t id;
    size_t count;
    bool due;  // holds a call whose leave_by has come
  };
  std::vector<Group> groups;                  // in order of first call
  std::unordered_map<int64_t, size_t> index;  // group -> groups[i]
  for (std::deque<LeaseCall>* q : {&queued_, &queued_charges_}) {
    for (const LeaseCall& c : *q) {
      const auto [it, added] = index.try_emplace(GroupOf(c), groups.size());
      if (added) groups.push_back({it->first, 0, false});
      Group& g = groups[it->second];
      ++g.count;
      g.due = g.due || Due(c, now_ns);
    }
  }
  for (Group& g : groups) {
    while (g.count > 0 && calls_in_flight_ < kMaxCallsInFlight) {
      const size_t room =
          static_cast<size_t>(kMaxCallsInFlight - calls_in_flight_);
      const size_t n =
          std::min({g.count, static_cast<size_t>(kMaxBatchItems), room});
      const bool partial = n < static_cast<size_t>(kMaxBatchItems);
      if (partial && !force && !g.due && !partial_ok) break;
      const size_t sent = SubmitBatch(n, g.id);
      if (sent == 0) break;  // the group moved (a new map) since counted
      g.count -= std::min(g.count, sent);
      if (partial) {
        last_partial_ns_ = now_ns;
        // A cluster's few nodes take turns, one partial batch a window; the
        // many slots of group_batches_by_slot would wait thousands of
        // windows that way, so each gets its partial batch in this one.
        partial_ok = partial_ok && !transport_->GroupsCalls();
      }
    }
  }
}

size_t Reconciler::SubmitBatch(size_t n, std::optional<int64_t> group) {
  std::vector<LeaseCall> calls;
  calls.reserve(n);
  if (!group_by_slot_) {
    for (std::deque<LeaseCall>* q : {&queued_, &queued_charges_}) {
      while (calls.size() < n && !q->empty()) {
        calls.push_back(std::move(q->front()));
        q->pop_front();
      }
    }
  } else {
    // One group per call: a hash slot (group_batches_by_slot), or what the
    // transport groups by (Redis Cluster: the node). The oldest lease's or
    // return's (else charge's) group, and the calls of that group after
    // it, in order (a key's calls keep their order: all of them have its
    // group).
    if (!group.has_value()) {
      group =
          GroupOf(queued_.empty() ? queued_charges_.front() : queued_.front());
    }
    for (std::deque<LeaseCall>* q : {&queued_, &queued_charges_}) {
      std::deque<LeaseCall> rest;
      while (!q->empty()) {
        LeaseCall& c = q->front();
        if (calls.size() < n && GroupOf(c) == *group) {
          calls.push_back(std::move(c));
        } else {
          rest.push_back(std::move(c));
        }
        q->pop_front();
      }
      q->swap(rest);
    }
  }
  // None of `group` left: a new slot map moved its keys to another node
  // between DispatchGroups' count and now (a call needs at least one item).
  if (calls.empty()) return 0;
  std::vector<BatchItem> items;
  items.reserve(calls.size());
  for (LeaseCall& c : calls) items.push_back(std::move(c.item));
  calls_in_flight_ += static_cast<int64_t>(calls.size());
  batch_calls_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a count
  std::shared_ptr<ReplySink> sink = sink_;
  const size_t sent = calls.size();
  auto shared_calls =
      std::make_shared<std::vector<LeaseCall>>(std::move(calls));
  absl::Status queued = transport_->SubmitBatch(
      items, [sink, shared_calls](BatchReplies replies) {
        std::lock_guard<std::mutex> lock(sink->mu);
        if (sink->owner == nullptr) return;
        for (size_t i = 0; i < shared_calls->size(); ++i) {
          sink->items.push_back(ReplySink::Item{std::move((*shared_calls)[i]),
                                                std::move(replies[i])});
        }
        sink->owner->Wake();
      });
  if (!queued.ok()) {
    // Not sent (queue full, shutting down): applied as failed calls.
    std::lock_guard<std::mutex> lock(sink_->mu);
    for (LeaseCall& c : *shared_calls) {
      sink_->items.push_back(ReplySink::Item{std::move(c), queued});
    }
  }
  return sent;
}

}  // namespace tokenlease::internal
