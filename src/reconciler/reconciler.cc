#include "reconciler/reconciler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "redis/script_call.h"
#include "tokenlease_lua/scripts.h"

namespace tokenlease::internal {
namespace {

absl::string_view View(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

const LuaScript kAcquire{View(lua::kAcquireSha1), View(lua::kAcquireScript)};
const LuaScript kRelease{View(lua::kReleaseSha1), View(lua::kReleaseScript)};

std::string RandomInstanceId() {
  std::random_device rd;
  const uint64_t x = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(x));
  return buf;
}

}  // namespace

Reconciler::Reconciler(const LimitSpec& spec, const LeaseOptions& options,
                       std::string key_prefix, LeaseRegistry* registry,
                       RedisClient* client, Clock* clock, size_t queue_capacity)
    : spec_(spec),
      options_(options),
      key_prefix_(std::move(key_prefix)),
      sizing_(ComputeSizing(spec, options)),
      registry_(registry),
      client_(client),
      clock_(clock),
      instance_id_(RandomInstanceId()),
      fixed_window_first_(spec.bands.front().algorithm ==
                          Algorithm::kFixedWindow),
      requests_(queue_capacity),
      sink_(std::make_shared<ReplySink>()),
      rng_(std::random_device{}()) {
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
  const auto tick = absl::ToChronoNanoseconds(options_.tick);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, tick, [this] { return wake_ || stop_; });
      if (stop_) return;
      wake_ = false;
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

void Reconciler::Step() {
  const int64_t now = clock_->NowNanos();
  coarse_now_ns_.store(now, std::memory_order_relaxed);
  client_->BeginBatch();
  ApplyReplies(now);

  // Backlogged work first (it is older): releases, charges, then the lease
  // requests that waited; then the new requests.
  while (!release_backlog_.empty() && HasRoom()) {
    PendingRelease r = std::move(release_backlog_.front());
    release_backlog_.pop_front();
    Submit(ReplyItem::Kind::kRelease, r.entry, r.amount, std::move(r.args),
           /*acquire=*/false);
  }
  if (!charge_backlog_.empty()) {
    std::vector<LeaseEntry*> charges;
    charges.swap(charge_backlog_);
    for (LeaseEntry* e : charges) {
      --e->book.charge_backlog_refs;
      SendCharge(e);
    }
  }
  want_.assign(deferred_.begin(), deferred_.end());
  deferred_.clear();
  while (LeaseEntry* e = requests_.TryPop()) want_.push_back(e);

  // Leases past their lifetime give their leftovers back.
  while (!expiry_.empty() && expiry_.top().at_ns <= now) {
    const Expiry x = expiry_.top();
    expiry_.pop();
    LeaseBook& b = x.entry->book;
    --b.heap_refs;
    if (x.lease_seq == b.lease_seq && b.expires_at_ns != 0 &&
        b.expires_at_ns <= now) {
      ReturnLease(x.entry, now);
    }
  }

  // Cached refusals that are over: the key may ask again.
  for (size_t i = 0; i < denied_.size();) {
    LeaseEntry* e = denied_[i];
    // relaxed: written only by this thread.
    if (e->deny_until_ns.load(std::memory_order_relaxed) > now) {
      ++i;
      continue;
    }
    denied_[i] = denied_.back();
    denied_.pop_back();
    const uint32_t before = e->flags.fetch_and(~(kDenied | kWantedWhileDenied),
                                               std::memory_order_acq_rel);
    // Ask again at once only if decisions were denied meanwhile and the key
    // is below its low-water mark; an idle key is left alone (and can be
    // evicted), so an outage does not turn into polling every key.
    if ((before & kWantedWhileDenied) &&
        e->balance.load(std::memory_order_relaxed) <
            e->low_water.load(std::memory_order_relaxed)) {
      if (!(e->flags.fetch_or(kRefillQueued, std::memory_order_acq_rel) &
            kRefillQueued)) {
        want_.push_back(e);
      }
    }
  }

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
      if (!ReturnLease(e, now)) all_returned = false;
      if (e->unsynced.load(std::memory_order_relaxed) > 0) SendCharge(e);
    });
  }

  for (LeaseEntry* e : want_) {
    if (e->unsynced.load(std::memory_order_relaxed) > 0) SendCharge(e);
    if (return_all) {
      // Returning everything: answer the request without a lease.
      e->flags.fetch_and(~kRefillQueued, std::memory_order_acq_rel);
      continue;
    }
    if (!HasRoom()) {
      deferred_.push_back(e);  // still flagged: not asked twice
      continue;
    }
    SendLease(e, now);
  }
  client_->EndBatch();

  // acq_rel: a ReturnAll waiter that reads 0 sees the backlogs sent.
  backlog_.store(
      static_cast<int64_t>(release_backlog_.size() + charge_backlog_.size() +
                           deferred_.size()),
      std::memory_order_release);
  if (return_all && all_returned) {
    std::lock_guard<std::mutex> lock(mu_);
    return_all_ = false;
    returned_all_at_ns_ = now;  // grants in flight are returned on arrival
  }
  if (now >= next_evict_ns_) {
    EvictIdle(now);
    next_evict_ns_ =
        now + std::max(absl::ToInt64Nanoseconds(options_.tick),
                       absl::ToInt64Nanoseconds(options_.idle_evict) / 4);
  }
}

void Reconciler::Submit(ReplyItem::Kind kind, LeaseEntry* e, int64_t amount,
                        std::vector<std::string> args, bool acquire) {
  // release: a ReturnAll waiter that sees 0 after the decrement sees the
  // reply's effects.
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  ++calls_in_flight_;
  std::shared_ptr<ReplySink> sink = sink_;
  absl::Status queued = client_->SubmitScript(
      acquire ? kAcquire : kRelease, std::move(args),
      [sink, kind, e, amount](absl::StatusOr<RedisReply> reply) {
        std::lock_guard<std::mutex> lock(sink->mu);
        if (sink->owner == nullptr) return;
        sink->items.push_back(ReplyItem{kind, e, amount, std::move(reply)});
        sink->owner->Wake();
      });
  if (!queued.ok()) {
    std::lock_guard<std::mutex> lock(sink_->mu);
    sink_->items.push_back(ReplyItem{kind, e, amount, queued});
  }
}

void Reconciler::SendLease(LeaseEntry* e, int64_t now) {
  LeaseBook& b = e->book;
  if (b.id == 0) b.id = ++next_entry_id_;
  if (b.lease_size == 0) b.lease_size = sizing_.initial_size;
  // relaxed: a sizing hint written by the decision path.
  const int64_t hint = std::clamp<int64_t>(
      e->wanted_cost.exchange(0, std::memory_order_relaxed), 1,
      std::max<int64_t>(1, spec_.bands.front().burst > 0
                               ? spec_.bands.front().burst
                               : spec_.bands.front().limit));
  const LeaseAsk ask =
      ComputeAsk(sizing_, options_, b.lease_size, b.last_remaining, hint);
  AcquireArgs args;
  args.wanted = ask.wanted;
  args.minimum = ask.minimum;
  b.request_in_flight = true;
  b.requested_at_ns = now;
  b.last_active_ns = now;
  counters_.lease_requests.fetch_add(1, std::memory_order_relaxed);
  Submit(ReplyItem::Kind::kLease, e, ask.wanted,
         AcquireArguments(spec_, key_prefix_, e->name, args),
         /*acquire=*/true);
}

void Reconciler::SendCharge(LeaseEntry* e) {
  LeaseBook& b = e->book;
  if (!HasRoom() || b.charge_in_flight) {
    ++b.charge_backlog_refs;
    // Charged later; the key stays in memory while it has unsynced tokens.
    charge_backlog_.push_back(e);
    return;
  }
  // acq_rel: takes exactly the admissions counted so far.
  const int64_t n = e->unsynced.exchange(0, std::memory_order_acq_rel);
  if (n <= 0) return;
  b.charge_in_flight = true;
  AcquireArgs args;
  args.wanted = n;
  args.minimum = 0;
  args.charge = true;
  // Debt is bounded by one burst: beyond it the limit would stay closed for
  // longer than a full refill, which an outage should not cause.
  args.max_debt = std::max<int64_t>(1, spec_.bands.front().burst > 0
                                           ? spec_.bands.front().burst
                                           : spec_.bands.front().limit);
  counters_.charges.fetch_add(1, std::memory_order_relaxed);
  Submit(ReplyItem::Kind::kCharge, e, n,
         AcquireArguments(spec_, key_prefix_, e->name, args),
         /*acquire=*/true);
}

void Reconciler::SendRelease(LeaseEntry* e, const std::string& lease_id,
                             int64_t granted_at_us, int64_t amount) {
  ReleaseArgs args;
  args.amount = amount;
  args.lease_id = lease_id;
  args.granted_at_us = granted_at_us;
  ++e->book.releases_pending;
  std::vector<std::string> argv =
      ReleaseArguments(spec_, key_prefix_, e->name, args);
  if (HasRoom()) {
    Submit(ReplyItem::Kind::kRelease, e, amount, std::move(argv),
           /*acquire=*/false);
  } else {
    release_backlog_.push_back(PendingRelease{e, amount, std::move(argv)});
  }
}

bool Reconciler::ReturnLease(LeaseEntry* e, int64_t now) {
  LeaseBook& b = e->book;
  // Takes the balance only when it is not negative: a negative balance is a
  // decision's failed subtraction that is about to be added back, and
  // taking it would let the add-back create tokens (or leave them behind
  // with no lease). acq_rel: atomic against concurrent decisions.
  int64_t left = e->balance.load(std::memory_order_relaxed);
  while (left > 0 && !e->balance.compare_exchange_weak(
                         left, 0, std::memory_order_acq_rel)) {
  }
  if (left < 0) {
    if (b.expires_at_ns != 0) {
      // Try again on the next step, when the add-back has landed.
      b.expires_at_ns = now + 1;
      expiry_.push(Expiry{b.expires_at_ns, e, b.lease_seq});
      ++b.heap_refs;
    }
    // Without a lease there is nothing to take back: a dry key being
    // hammered must not hold up a ReturnAll.
    return b.expires_at_ns == 0;
  }
  if (e->unsynced.load(std::memory_order_relaxed) > 0) SendCharge(e);
  if (b.expires_at_ns == 0 && left == 0) return true;
  const double unused =
      b.lease_granted > 0 ? static_cast<double>(left) / b.lease_granted : 0;
  b.lease_size = AdaptTarget(sizing_, std::max<int64_t>(b.lease_size, 1),
                             /*ran_dry=*/false, unused);
  // Each grant's tokens go back under its own lease id and grant time (the
  // script credits them only into the window they were granted in): first
  // the current lease's, then the leftover of the lease merged into it.
  // Leftovers merged from older leases are dropped (stranded, not minted).
  const int64_t give = std::min(left, b.lease_granted);
  if (give > 0 && !b.lease_id.empty()) {
    SendRelease(e, b.lease_id, b.granted_at_us, give);
  }
  const int64_t give_prev = std::min(left - give, b.prev_returnable);
  if (give_prev > 0 && !b.prev_lease_id.empty()) {
    SendRelease(e, b.prev_lease_id, b.prev_granted_at_us, give_prev);
  }
  b.prev_lease_id.clear();
  b.prev_returnable = 0;
  b.expires_at_ns = 0;
  b.lease_id.clear();
  b.lease_granted = 0;
  b.last_active_ns = now;
  // The key is cold again: its cold-key policy applies to its next
  // requests (a fresh local share for kLocalShare). The share is taken back
  // like a balance, compensating a decision's in-flight subtraction.
  int64_t share = e->local_share.load(std::memory_order_relaxed);
  while (share > 0 && !e->local_share.compare_exchange_weak(
                          share, 0, std::memory_order_acq_rel)) {
  }
  e->flags.fetch_and(~(kHasLease | kLocalSeeded), std::memory_order_acq_rel);
  return true;
}

void Reconciler::CacheDenial(LeaseEntry* e, int64_t until_ns) {
  // relaxed: the decision path reads it only to compute a retry hint.
  e->deny_until_ns.store(until_ns, std::memory_order_relaxed);
  if (!(e->flags.fetch_or(kDenied, std::memory_order_acq_rel) & kDenied)) {
    denied_.push_back(e);
  }
}

void Reconciler::ApplyReplies(int64_t now) {
  std::vector<ReplyItem> items;
  {
    std::lock_guard<std::mutex> lock(sink_->mu);
    items.swap(sink_->items);
  }
  for (ReplyItem& item : items) {
    switch (item.kind) {
      case ReplyItem::Kind::kLease:
        ApplyLease(item.entry, item.reply, now);
        break;
      case ReplyItem::Kind::kRelease: {
        --item.entry->book.releases_pending;
        absl::StatusOr<int64_t> n =
            item.reply.ok() ? ParseReleaseReply(*item.reply)
                            : absl::StatusOr<int64_t>(item.reply.status());
        if (n.ok()) {
          counters_.tokens_returned.fetch_add(*n, std::memory_order_relaxed);
        } else {
          counters_.redis_errors.fetch_add(1, std::memory_order_relaxed);
        }
        break;
      }
      case ReplyItem::Kind::kCharge: {
        item.entry->book.charge_in_flight = false;
        absl::StatusOr<AcquireResult> r =
            item.reply.ok()
                ? ParseAcquireReply(*item.reply)
                : absl::StatusOr<AcquireResult>(item.reply.status());
        if (r.ok()) {
          counters_.tokens_charged.fetch_add(r->granted,
                                             std::memory_order_relaxed);
        } else {
          // Charge again later: over-charging keeps the limit safe; losing
          // the charge would not.
          item.entry->unsynced.fetch_add(item.amount,
                                         std::memory_order_acq_rel);
          ++item.entry->book.charge_backlog_refs;
          charge_backlog_.push_back(item.entry);  // retried next step
          counters_.redis_errors.fetch_add(1, std::memory_order_relaxed);
        }
        break;
      }
    }
    --calls_in_flight_;
    // release: see Submit().
    outstanding_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void Reconciler::ApplyLease(LeaseEntry* e, const absl::StatusOr<RedisReply>& r,
                            int64_t now) {
  LeaseBook& b = e->book;
  b.request_in_flight = false;
  const int64_t sample = now - b.requested_at_ns;
  if (sample > 0) {
    const int64_t rtt = rtt_ns_.load(std::memory_order_relaxed);
    rtt_ns_.store(rtt - rtt / 8 + sample / 8, std::memory_order_relaxed);
  }
  absl::StatusOr<AcquireResult> res =
      r.ok() ? ParseAcquireReply(*r)
             : absl::StatusOr<AcquireResult>(r.status());
  if (!res.ok()) {
    counters_.redis_errors.fetch_add(1, std::memory_order_relaxed);
    // Back off, per key: Redis is slow, gone or refusing; the key keeps
    // spending what it holds and asks again after tick x 2^n (<= 250 ms).
    b.error_streak = std::min(b.error_streak + 1, 16);
    const int64_t backoff =
        std::min<int64_t>(250'000'000, absl::ToInt64Nanoseconds(options_.tick)
                                           << (b.error_streak - 1));
    CacheDenial(e, now + backoff);
    e->flags.fetch_and(~kRefillQueued, std::memory_order_acq_rel);
    return;
  }
  b.error_streak = 0;
  b.last_remaining = res->remaining;
  const bool ran_dry =
      e->flags.fetch_and(~kRanDry, std::memory_order_acq_rel) & kRanDry;
  if (res->granted > 0) {
    b.lease_size =
        AdaptTarget(sizing_, std::max<int64_t>(b.lease_size, 1), ran_dry, 0);
    ++b.lease_seq;
    std::string merged_id = std::exchange(
        b.lease_id, absl::StrCat(instance_id_, ":", b.id, ":", b.lease_seq));
    const int64_t merged_granted_at_us =
        std::exchange(b.granted_at_us, res->now_us);
    const int64_t merged_granted = std::exchange(b.lease_granted, res->granted);
    int64_t life = absl::ToInt64Nanoseconds(options_.lease_ttl);
    if (fixed_window_first_ && res->reset_after_us > 0) {
      // Tokens of one fixed window must not be spent in the next.
      life = std::min(life, res->reset_after_us * 1000);
    }
    // Counted from when the request left (the grant is at least that old).
    b.expires_at_ns = std::min(now, b.requested_at_ns) + life;
    expiry_.push(Expiry{b.expires_at_ns, e, b.lease_seq});
    ++b.heap_refs;
    b.last_active_ns = now;
    counters_.tokens_granted.fetch_add(res->granted, std::memory_order_relaxed);
    // relaxed: a threshold; a stale value only shifts one refill.
    e->low_water.store(
        std::max<int64_t>(
            1, static_cast<int64_t>(b.lease_size * options_.low_water)),
        std::memory_order_relaxed);
    // relaxed: a count of tokens; it publishes nothing else.
    const int64_t leftover =
        e->balance.fetch_add(res->granted, std::memory_order_relaxed);
    // The leftover of an active lease is merged into this one; what of it
    // is left at the return can still go back under the old id. (A failed
    // subtraction in flight makes `leftover` smaller: fewer tokens returned,
    // never more than were granted.)
    b.prev_returnable = merged_id.empty()
                            ? 0
                            : std::clamp<int64_t>(leftover, 0, merged_granted);
    b.prev_lease_id = b.prev_returnable > 0 ? std::move(merged_id) : "";
    b.prev_granted_at_us = merged_granted_at_us;
    e->flags.fetch_or(kHasLease, std::memory_order_acq_rel);
    if (b.requested_at_ns <= returned_all_at_ns_) {
      ReturnLease(e, now);  // asked for before ReturnAll: give it back
    }
  } else {
    counters_.denied_by_redis.fetch_add(1, std::memory_order_relaxed);
    int64_t wait = res->retry_after_us < 0
                       ? absl::ToInt64Nanoseconds(options_.lease_ttl)
                       : res->retry_after_us * 1000;
    // Jitter (up to +25%) so that instances refused together do not all
    // come back at the same instant: whoever returns first is random.
    wait += static_cast<int64_t>(
        std::uniform_real_distribution<double>(0, 0.25)(rng_) * wait);
    CacheDenial(e, now + std::max<int64_t>(wait, 1));
  }
  e->flags.fetch_and(~kRefillQueued, std::memory_order_acq_rel);
}

void Reconciler::EvictIdle(int64_t now) {
  const int64_t idle_ns = absl::ToInt64Nanoseconds(options_.idle_evict);
  registry_->Evict([&](LeaseEntry* e) {
    const LeaseBook& b = e->book;
    // relaxed loads: the writer lock excludes lookups by name, pins > 0
    // excludes handles, and everything else is this thread's own state.
    return e->pins.load(std::memory_order_acquire) == 0 &&
           e->balance.load(std::memory_order_relaxed) == 0 &&
           e->unsynced.load(std::memory_order_relaxed) == 0 &&
           (e->flags.load(std::memory_order_relaxed) &
            (kRefillQueued | kDenied)) == 0 &&
           !b.request_in_flight && !b.charge_in_flight && b.heap_refs == 0 &&
           b.releases_pending == 0 && b.charge_backlog_refs == 0 &&
           now - b.last_active_ns >= idle_ns;
  });
}

LeaseStats Reconciler::stats() const {
  LeaseStats s;
  s.lease_requests = counters_.lease_requests.load(std::memory_order_relaxed);
  s.tokens_granted = counters_.tokens_granted.load(std::memory_order_relaxed);
  s.tokens_returned = counters_.tokens_returned.load(std::memory_order_relaxed);
  s.denied_by_redis = counters_.denied_by_redis.load(std::memory_order_relaxed);
  s.charges = counters_.charges.load(std::memory_order_relaxed);
  s.tokens_charged = counters_.tokens_charged.load(std::memory_order_relaxed);
  s.redis_errors = counters_.redis_errors.load(std::memory_order_relaxed);
  return s;
}

}  // namespace tokenlease::internal
