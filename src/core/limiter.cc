#include "tokenlease/limiter.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/limiter_core.h"
#include "core/options_checks.h"

namespace tokenlease {

using internal::BandRequest;
using internal::LimiterCore;
// Caller-supplied times are clamped as the clock's are (LimiterCore::Now).
using internal::ClampTime;

absl::Status LimiterOptions::Validate() const {
  return internal::ValidateLimiterOptions(*this, "LimiterOptions");
}

// ---------------------------------------------------------- Limiter::Handle

namespace internal {
template <>
void KeyPin<KeyEntry>::AddPin(KeyEntry* e) {
  // Relaxed: the copied pin keeps the entry alive, so it cannot be retired
  // while this one is added (ShardedRegistry checks pins before and after
  // retiring).
  if (e != nullptr) e->pins.fetch_add(1, std::memory_order_relaxed);
}
template <>
void KeyPin<KeyEntry>::RemovePin(KeyEntry* e) {
  // Release: every use of the entry happens before an evictor's acquire
  // load sees the pin gone.
  if (e != nullptr) e->pins.fetch_sub(1, std::memory_order_release);
}
}  // namespace internal

std::string_view Limiter::Handle::key() const {
  return entry_ != nullptr ? entry_->name() : std::string_view();
}

// ------------------------------------------------------------------ Limiter

absl::StatusOr<std::unique_ptr<Limiter>> Limiter::Create(
    const LimitSpec& spec, const LimiterOptions& options) {
  if (absl::Status s = ValidateSpec(spec); !s.ok()) return s;
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  return std::unique_ptr<Limiter>(
      new Limiter(std::make_unique<LimiterCore>(spec, options)));
}

Limiter::Limiter(std::unique_ptr<LimiterCore> core) : core_(std::move(core)) {}
Limiter::~Limiter() = default;

// Each decision path builds one named result and finishes it in place
// (ApplyShadow says why). The GCRA paths are separate functions: see
// LimiterCore::TryAcquireGcraByName.
Decision Limiter::TryAcquire(std::string_view key, int64_t cost) {
  const int64_t now_ns = core_->Now();
  return core_->one_gcra_band() ? core_->TryAcquireGcraByName(key, cost, now_ns)
                                : core_->TryAcquireByName(key, cost, now_ns);
}

Decision Limiter::TryAcquire(std::string_view key, int64_t cost,
                             int64_t now_ns) {
  return core_->one_gcra_band()
             ? core_->TryAcquireGcraByName(key, cost, ClampTime(now_ns))
             : core_->TryAcquireByName(key, cost, ClampTime(now_ns));
}

Decision Limiter::TryAcquire(const Handle& handle, int64_t cost) {
  return TryAcquire(handle, cost, core_->Now());
}

Decision Limiter::TryAcquire(const Handle& handle, int64_t cost,
                             int64_t now_ns) {
  // Another limiter's, default-constructed or moved from: bad input.
  // Every path ends in one call whose result is returned as is, so the
  // frame here is one push (GCC does not turn a call that returns a
  // struct in memory into a jump).
  if (handle.core_ != core_.get() || handle.entry_ == nullptr) [[unlikely]] {
    return core_->FinishedInvalidArgument();
  }
  return core_->one_gcra_band()
             ? core_->TryAcquireGcraPinned(handle.entry_, cost,
                                           ClampTime(now_ns))
             : core_->TryAcquirePinned(handle.entry_, cost, ClampTime(now_ns));
}

absl::StatusOr<Limiter::Handle> Limiter::Resolve(std::string_view key) {
  if (absl::Status s = core_->CheckKey(key); !s.ok()) return s;
  for (;;) {
    internal::KeyEntry* retired = nullptr;
    absl::StatusOr<Handle> h = core_->registry().With(
        key, core_->Now(),
        [&](internal::KeyEntry* e) -> absl::StatusOr<Handle> {
          if (e == nullptr) {
            return absl::ResourceExhaustedError(absl::StrCat(
                "cannot register key '", std::string(key),
                "': the Limiter holds max_keys (", core_->registry().size(),
                ") keys and none is idle; raise LimiterOptions.max_keys or "
                "release handles"));
          }
          // seq_cst: one side of the store-load pair with the registry's
          // retirement (ShardedRegistry): either it sees this pin, or this
          // thread sees the entry retired below.
          e->pins.fetch_add(1, std::memory_order_seq_cst);
          if (core_->IsRetired(e)) [[unlikely]] {
            // Release: as any unpin.
            e->pins.fetch_sub(1, std::memory_order_release);
            retired = e;
            return Handle();
          }
          return Handle(core_.get(), e);
        });
    if (retired == nullptr) return h;
    // Retired while it was being pinned: look the key up again.
  }
}

Reservation Limiter::Reserve(std::string_view key, int64_t cost,
                             absl::Duration max_wait) {
  Reservation r;
  if (!core_->all_buckets() || cost < 0 || max_wait < absl::ZeroDuration() ||
      !core_->CheckKey(key).ok()) {
    // Only token buckets and GCRA can borrow; the rest is bad input.
    r.decision = LimiterCore::InvalidArgumentDecision();
  } else {
    const int64_t max_wait_ns =
        max_wait == absl::InfiniteDuration()
            ? INT64_MAX / 4
            : std::min(absl::ToInt64Nanoseconds(max_wait), INT64_MAX / 4);
    r.decision = core_->DecideByName(
        key, BandRequest{core_->Now(), cost, max_wait_ns}, &r.wait_ns);
  }
  core_->Finish(&r.decision);
  internal::SettleReservation(&r);
  return r;
}

Decision Limiter::Acquire(std::string_view key, int64_t cost,
                          absl::Duration timeout) {
  const absl::Time real_deadline = absl::Now() + timeout;
  const int64_t timeout_ns =
      std::clamp<int64_t>(absl::ToInt64Nanoseconds(timeout), 0, INT64_MAX / 4);
  if (core_->all_buckets()) {
    // Book a slot now (FIFO among callers), then wait for it.
    BandRequest req{core_->Now(), cost, timeout_ns};
    req.ignore_borrow_cap = true;
    int64_t wait_ns = 0;
    Decision d = core_->DecideByName(key, req, &wait_ns);
    if (d.allowed && wait_ns > 0) absl::SleepFor(absl::Nanoseconds(wait_ns));
    core_->Finish(&d);
    return d;
  }
  // Window algorithms cannot book ahead: retry when the window allows (one
  // decision is counted: the one returned).
  for (;;) {
    Decision d = core_->DecideByName(key, BandRequest{core_->Now(), cost});
    if (d.allowed || d.retry_after_ns == kNever ||
        d.retry_after() > real_deadline - absl::Now()) {
      core_->Finish(&d);
      return d;
    }
    absl::SleepFor(std::max(d.retry_after(), absl::Microseconds(1)));
  }
}

absl::Status Limiter::UpdateSpec(const LimitSpec& spec) {
  if (absl::Status s = ValidateSpec(spec); !s.ok()) return s;
  // The structural checks run under the update lock, against the spec in
  // force (LimiterCore::UpdateSpec).
  return core_->UpdateSpec(spec);
}

LimitSpec Limiter::spec() const { return core_->CurrentSpec(); }
LimiterStats Limiter::stats() const { return core_->Stats(); }
Clock* Limiter::clock() const { return core_->clock(); }
int64_t Limiter::key_count() const { return core_->registry().size(); }
int64_t Limiter::EvictIdle() { return core_->registry().Reclaim(core_->Now()); }

}  // namespace tokenlease
