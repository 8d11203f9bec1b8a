// The reconciler: one thread per LeasedLimiter that turns refill requests
// from the decision path into pipelined lease requests (the acquire script),
// applies the grants, expires leases and returns their leftovers (the
// release script), charges tokens admitted without a lease, caches Redis's
// refusals, and evicts idle keys. It alone touches LeaseEntry::book.
#ifndef TOKENLEASE_SRC_RECONCILER_RECONCILER_H_
#define TOKENLEASE_SRC_RECONCILER_RECONCILER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "lease/lease_entry.h"
#include "lease/lease_registry.h"
#include "lease/lease_sizer.h"
#include "redis/command_queue.h"
#include "redis/redis_client.h"
#include "redis/reply.h"
#include "tokenlease/clock.h"
#include "tokenlease/leased.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

class Reconciler {
 public:
  Reconciler(const LimitSpec& spec, const LeaseOptions& options,
             std::string key_prefix, LeaseRegistry* registry,
             RedisClient* client, Clock* clock, size_t queue_capacity);
  ~Reconciler();  // Stop() if still running

  void Start();
  // Returns every lease and charges every unleased admission, waits for
  // Redis (up to `timeout`), then stops the thread.
  void Stop(absl::Duration timeout);

  // Decision path, any thread: ask for a refill of `e` (once until it is
  // answered; no-op while Redis's refusal is cached).
  void RequestRefill(LeaseEntry* e) {
    // relaxed: a hint; the fetch_or below decides.
    const uint32_t f = e->flags.load(std::memory_order_relaxed);
    if (f & (kRefillQueued | kDenied)) return;
    // acq_rel: exactly one caller wins the flag and enqueues.
    if (e->flags.fetch_or(kRefillQueued, std::memory_order_acq_rel) &
        kRefillQueued) {
      return;
    }
    if (!requests_.TryPush(e)) {
      // Full: drop the request; the next decision on the key asks again.
      e->flags.fetch_and(~kRefillQueued, std::memory_order_relaxed);
      return;
    }
    Wake();
  }

  // Returns every lease now; waits up to `timeout` for the confirmations.
  absl::Status ReturnAll(absl::Duration timeout);

  // An estimate of how long a lease request takes (for retry_after).
  int64_t round_trip_ns() const {
    return rtt_ns_.load(std::memory_order_relaxed);  // relaxed: an estimate
  }
  // The reconciler clock as of its last step: decisions use it for retry
  // hints without reading a clock themselves.
  int64_t coarse_now_ns() const {
    return coarse_now_ns_.load(std::memory_order_relaxed);  // relaxed: a hint
  }
  LeaseStats stats() const;

 private:
  struct ReplyItem {
    enum class Kind : uint8_t { kLease, kRelease, kCharge } kind;
    LeaseEntry* entry;
    int64_t amount;  // charge: tokens sent
    absl::StatusOr<RedisReply> reply;
  };
  // Replies arrive on the client thread and are applied here.
  struct ReplySink {
    std::mutex mu;
    std::vector<ReplyItem> items;
    Reconciler* owner = nullptr;  // null once the reconciler stopped
  };
  struct Expiry {
    int64_t at_ns;
    LeaseEntry* entry;
    uint64_t lease_seq;
    bool operator>(const Expiry& o) const { return at_ns > o.at_ns; }
  };

  void Run();
  void Wake();
  void Step();
  void ApplyReplies(int64_t now);
  void ApplyLease(LeaseEntry* e, const absl::StatusOr<RedisReply>& r,
                  int64_t now);
  void SendLease(LeaseEntry* e, int64_t now);
  // Calls (lease requests, charges, releases) in flight at most. At ~30 us of
  // script per call, 256 queued calls are ~8 ms of Redis time per instance: far
  // below any sane command timeout, so an overloaded Redis slows leasing down
  // instead of timing out (and resetting) every connection.
  static constexpr int64_t kMaxCallsInFlight = 256;
  void SendCharge(LeaseEntry* e);
  // Takes the key's balance and returns it. False if the balance was
  // negative (a decision's add-back is on its way): retried later.
  bool ReturnLease(LeaseEntry* e, int64_t now);
  // Sends (or queues) one release of `amount` tokens of a grant.
  void SendRelease(LeaseEntry* e, const std::string& lease_id,
                   int64_t granted_at_us, int64_t amount);
  void CacheDenial(LeaseEntry* e, int64_t until_ns);
  void EvictIdle(int64_t now);
  void Submit(ReplyItem::Kind kind, LeaseEntry* e, int64_t amount,
              std::vector<std::string> args, bool acquire);

  const LimitSpec spec_;
  const LeaseOptions options_;
  const std::string key_prefix_;
  const LeaseSizing sizing_;
  LeaseRegistry* const registry_;
  RedisClient* const client_;
  Clock* const clock_;
  const std::string instance_id_;
  const bool fixed_window_first_;  // expiry also at the window's end

  BoundedMpscQueue<LeaseEntry> requests_;
  std::shared_ptr<ReplySink> sink_;

  std::mutex mu_;  // guards the wait below and the flags it waits on
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  bool wake_ = false;
  bool stop_ = false;
  bool return_all_ = false;
  int return_all_waiters_ = 0;  // ReturnAll calls waiting (under mu_)
  std::atomic<bool> wake_pending_{false};

  // Reconciler thread only.
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<>> expiry_;
  std::vector<LeaseEntry*> denied_;
  std::vector<LeaseEntry*> want_;
  std::mt19937_64 rng_;
  int64_t next_evict_ns_ = 0;
  uint64_t next_entry_id_ = 0;
  // Work waits here while kMaxCallsInFlight calls are unanswered, so that a
  // slow or overloaded Redis gets a bounded backlog instead of a storm of
  // calls that all time out: keys waiting for a lease (still flagged, so
  // not asked twice), keys with admissions to charge, and releases.
  std::deque<LeaseEntry*> deferred_;
  std::vector<LeaseEntry*> charge_backlog_;
  struct PendingRelease {
    LeaseEntry* entry;
    int64_t amount;
    std::vector<std::string> args;
  };
  std::deque<PendingRelease> release_backlog_;
  int64_t calls_in_flight_ = 0;
  // When ReturnAll last ran (reconciler clock): a grant asked for before it
  // is returned as soon as it arrives.
  int64_t returned_all_at_ns_ = -1;
  std::atomic<int64_t> backlog_{0};  // backlog sizes, for ReturnAll
  bool HasRoom() const { return calls_in_flight_ < kMaxCallsInFlight; }

  std::atomic<int64_t> outstanding_{0};  // submitted, not yet applied
  std::atomic<int64_t> rtt_ns_{1'000'000};
  std::atomic<int64_t> coarse_now_ns_{0};
  struct Counters {
    std::atomic<uint64_t> lease_requests{0}, tokens_granted{0},
        tokens_returned{0}, denied_by_redis{0}, charges{0}, tokens_charged{0},
        redis_errors{0};
  };
  Counters counters_;
  std::thread thread_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_RECONCILER_RECONCILER_H_
