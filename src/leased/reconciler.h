// The reconciler: one thread per LeasedLimiter that drives its lease book
// (lease_book.h). It owns only the thread and its wake-ups, the hand-over
// of refill requests from the decision path (a bounded MPSC queue) and of
// replies from the transport's thread, flow control (a cap on calls in
// flight: keys asking beyond it wait, and the book's other calls queue),
// the transport of the book's calls (lease_transport.h; one pipelined
// write per step), ReturnAll and Sync, and idle-key eviction.
#ifndef TOKENLEASE_SRC_LEASED_RECONCILER_H_
#define TOKENLEASE_SRC_LEASED_RECONCILER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "base/mpsc_queue.h"
#include "base/sharded_registry.h"
#include "leased/lease_book.h"
#include "leased/lease_entry.h"
#include "leased/lease_slices.h"
#include "leased/lease_transport.h"
#include "tokenlease/clock.h"
#include "tokenlease/leased.h"

namespace tokenlease::internal {

using LeaseRegistry = ShardedRegistry<LeaseEntry>;

class Reconciler {
 public:
  // Calls (batch items) in flight at most. At 5 to 30 us of script per
  // item, 256 are at most ~8 ms of Redis time per instance: far below any
  // sane command timeout, so an overloaded Redis slows leasing down instead
  // of timing out (and resetting) every connection.
  static constexpr int64_t kMaxCallsInFlight = 256;

  // `book`, `registry`, `transport` and `clock` must outlive the
  // reconciler. `clock` times every decision of a step (expiries, cached
  // refusals, the batch window, the charge delay, eviction); real time only
  // paces the thread's wake-ups and bounds ReturnAll's and Sync's waits.
  // `registry` is reclaimed only from this thread
  // (Growth::kRefusesWhenFull).
  // `key_prefix` gives the hash slots of keys (options.
  // group_batches_by_slot).
  Reconciler(LeaseBook* book, LeaseRegistry* registry,
             LeaseTransport* transport, Clock* clock,
             const LeaseOptions& options, std::string key_prefix,
             size_t queue_capacity);
  ~Reconciler();  // Stop() if still running

  // Runs `hook` on the reconciler's thread at the start of every step,
  // with the step's time (instance discovery). Before Start() only.
  void SetStepHook(absl::AnyInvocable<void(int64_t now_ns)> hook) {
    step_hook_ = std::move(hook);
  }
  // Runs `hook` on the reconciler's thread at the end of every step, after
  // the step's calls have left, with the step's time (the stats callback).
  // Before Start() only.
  void SetStepEndHook(absl::AnyInvocable<void(int64_t now_ns)> hook) {
    step_end_hook_ = std::move(hook);
  }
  void Start();
  // Returns every lease and charges every unleased admission, waits for
  // Redis (up to `timeout`), then stops the thread.
  void Stop(absl::Duration timeout);

  // Decision path, any thread: ask for a refill of `e` (once until it is
  // answered; no-op while Redis's refusal is cached). Never blocks and
  // makes no system call: the request waits for the reconciler's next tick
  // (a wake-up would cost the deciding thread a futex call; WakeNow() is
  // for callers that wait anyway).
  void RequestRefill(LeaseEntry* e) {
    // relaxed: a hint; the fetch_or below decides.
    const uint32_t f = e->flags.load(std::memory_order_relaxed);
    if (!(f & kManyThreads)) NoteRefiller(e);
    if (f & (kRefillQueued | kDenied)) return;
    // acq_rel: exactly one caller wins the flag and enqueues. A retired
    // key is never queued (its entry is freed after the grace period, not
    // after the queue): the decision is denied, and the next lookup finds
    // the key's successor.
    const uint32_t before =
        e->flags.fetch_or(kRefillQueued, std::memory_order_acq_rel);
    if (before & kRefillQueued) return;
    if (before & kRetired) [[unlikely]] {
      // Undo this call's own bit: a retired entry revived for a handle
      // must be able to ask again.
      e->flags.fetch_and(~kRefillQueued, std::memory_order_acq_rel);
      return;
    }
    if (!requests_.TryPush(e)) {
      // Full: drop the request; the next decision on the key asks again.
      e->flags.fetch_and(~kRefillQueued, std::memory_order_relaxed);
    }
  }

  // Decision path, any thread: `e` admitted tokens from its local credit
  // (LeaseEntry::unsynced); queue it for a charge, once until the
  // reconciler takes it. Never blocks, no system call: charges wait for the
  // next batch (LeaseOptions::batch_window).
  void RequestCharge(LeaseEntry* e) {
    // relaxed: a hint; the fetch_or below decides.
    if (e->flags.load(std::memory_order_relaxed) & kChargeQueued) return;
    // acq_rel: exactly one caller wins the flag and enqueues.
    const uint32_t before =
        e->flags.fetch_or(kChargeQueued, std::memory_order_acq_rel);
    if (before & kChargeQueued) return;
    if ((before & kRetired) || !charges_.TryPush(e)) [[unlikely]] {
      // Retired: the entry's uncharged tokens are charged when it is freed
      // (LeaseBook::Bury). Queue full: the next step sweeps every key.
      e->flags.fetch_and(~kChargeQueued, std::memory_order_acq_rel);
      if (!(before & kRetired)) {
        // relaxed: a hint read by the reconciler's next step.
        charge_sweep_.store(true, std::memory_order_relaxed);
      }
    }
  }

  // Runs a step now instead of at the next tick, and sends what it asks
  // for without waiting for a fuller batch: for a decision that waits for
  // its lease anyway (ColdKeyPolicy::kWait).
  void WakeNow() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      flush_ = true;
    }
    Wake();
  }

  // Batch calls sent so far (each carries 1 .. kMaxBatchItems calls).
  uint64_t batch_calls() const {
    return batch_calls_.load(std::memory_order_relaxed);  // relaxed: a count
  }

  // True while a ReturnAll call is waiting (for tests: a step that starts
  // after this returned true declines new leases).
  bool ReturningAll() {
    std::lock_guard<std::mutex> lock(mu_);
    return return_all_waiters_ > 0;
  }

  // Returns every lease now; waits up to `timeout` for the confirmations.
  absl::Status ReturnAll(absl::Duration timeout);
  // Waits (up to `timeout`) until a step that started after the call ends
  // idle: nothing asked for, deferred, queued, in flight or waiting to be
  // applied. So every refill asked for before the call, and every call it
  // led to, has been answered and applied. A synchronisation point for
  // tests (no polling); while decisions keep asking for new leases the
  // reconciler may not become idle before the deadline.
  absl::Status Sync(absl::Duration timeout);

 private:
  // Replies arrive on the client thread and are applied on this one.
  struct ReplySink {
    struct Item {
      LeaseCall call;  // without its arguments
      absl::StatusOr<RedisReply> reply;
    };
    std::mutex mu;
    std::vector<Item> items;
    Reconciler* owner = nullptr;  // null once the reconciler stopped
  };

  void Run();
  void Wake();
  void Step();
  // Applies the replies that arrived; the book's follow-up calls go to
  // `out`. Returns how many were applied (outstanding_ is decremented
  // only once the follow-ups are counted: see Step).
  int64_t ApplyReplies(int64_t now, LeaseCalls* out);
  // Moves the charge queue's keys to charge_wait_, and charges those that
  // waited charge_delay on clock_ (all of them if `force`).
  void TakeCharges(int64_t now_ns, bool force, LeaseCalls* out);
  // Queues the step's new calls behind the older ones.
  void Enqueue(LeaseCalls calls);
  // Sends queued calls as batch calls (see LeaseOptions::batch_window, on
  // clock_) while fewer than kMaxCallsInFlight are in flight; `force` sends
  // partial batches at once.
  void Dispatch(int64_t now_ns, bool force);
  void DispatchGroups(int64_t now_ns, bool force, bool partial_ok);
  // Whether `c` must leave at this step, fuller batch or not (its
  // LeaseCall::leave_by_ns has come).
  bool Due(const LeaseCall& c, int64_t now_ns) const;
  // The batch group of `c`'s key (grouped calls only).
  int64_t GroupOf(const LeaseCall& c) const;
  // Sends the first `n` queued calls (or, grouping by slot, up to `n` of
  // the oldest call's hash slot) as one batch call; returns how many.
  size_t SubmitBatch(size_t n, std::optional<int64_t> group = std::nullopt);
  // True if `more` new calls still fit under kMaxCallsInFlight with what is
  // in flight and queued.
  bool HasRoom(size_t more) const {
    // Queued charges do not count: they leave after the leases.
    return calls_in_flight_ + static_cast<int64_t>(queued_.size() + more) <
           kMaxCallsInFlight;
  }
  // Nothing asked for, queued, in flight or waiting to be applied.
  bool Idle();

  LeaseBook* const book_;
  LeaseRegistry* const registry_;
  LeaseTransport* const transport_;
  Clock* const clock_;
  const int64_t tick_ns_;
  const int64_t batch_window_ns_;
  const int64_t charge_delay_ns_;
  const bool group_by_slot_;
  const std::string key_prefix_;
  const int64_t evict_every_ns_;

  BoundedMpscQueue<LeaseEntry> requests_;
  BoundedMpscQueue<LeaseEntry> charges_;
  std::atomic<bool> charge_sweep_{false};
  std::atomic<uint64_t> batch_calls_{0};
  std::shared_ptr<ReplySink> sink_;

  std::mutex mu_;               // guards the fields below up to wake_pending_
  std::condition_variable cv_;  // wakes the reconciler
  std::condition_variable done_cv_;  // a step ended (ReturnAll, Sync)
  bool wake_ = false;
  bool stop_ = false;
  bool return_all_ = false;
  int return_all_waiters_ = 0;  // ReturnAll calls waiting
  int flush_waiters_ = 0;       // Sync calls waiting
  bool flush_ = false;          // WakeNow: send the next step's calls at once
  uint64_t steps_started_ = 0;
  uint64_t idle_after_step_ = 0;  // the last step that ended idle
  std::atomic<bool> wake_pending_{false};

  // Reconciler thread only.
  std::vector<LeaseEntry*> want_;
  // Keys waiting for a lease while kMaxCallsInFlight calls are unanswered
  // (still flagged kRefillQueued, so not asked twice), and the book's
  // other calls that waited for room, oldest first.
  std::deque<LeaseEntry*> deferred_;
  struct ChargeWait {
    LeaseEntry* entry;  // still flagged kChargeQueued
    int64_t ready_ns;   // clock_
  };
  std::deque<ChargeWait> charge_wait_;
  std::deque<LeaseCall> queued_;          // leases and returns
  std::deque<LeaseCall> queued_charges_;  // sent after queued_
  size_t Queued() const { return queued_.size() + queued_charges_.size(); }
  int64_t last_partial_ns_ = INT64_MIN / 2;  // clock_: the last partial
                                             // batch left
  int64_t calls_in_flight_ = 0;
  int64_t next_evict_ns_ = 0;

  // Calls the book asked for and whose replies are not yet applied
  // (queued or in flight). Incremented on this thread before the replies
  // that led to the new calls are subtracted, so it never reads 0 while a
  // follow-up call (a grant given back on arrival, a charge retry) is still
  // unsent; relaxed, because only this thread writes it and the decrement
  // below orders the rest. Decremented with release after the step's
  // replies were applied and their follow-ups counted, so a ReturnAll
  // waiter that loads 0 with acquire sees every reply's effects.
  std::atomic<int64_t> outstanding_{0};
  absl::AnyInvocable<void(int64_t now_ns)> step_hook_;      // may be empty
  absl::AnyInvocable<void(int64_t now_ns)> step_end_hook_;  // may be empty
  std::thread thread_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_RECONCILER_H_
