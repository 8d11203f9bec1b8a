#include "core/limiter_core.h"

#include <algorithm>

#include "core/options_checks.h"
#include "local/band_eval.h"
#include "local/band_eval_inl.h"

namespace tokenlease::internal {
namespace {

Decision KeyLimitDecision() {
  Decision d;
  d.source = DecisionSource::kKeyLimit;
  d.retry_after_ns = kNever;
  return d;
}

Decision ToDecision(const BandResult& r, int64_t* wait_ns) {
  Decision d;
  d.allowed = r.outcome == BandOutcome::kAdmit;
  d.remaining = r.remaining;
  d.retry_after_ns = d.allowed ? 0 : r.wait_ns;
  d.reset_after_ns = r.reset_after_ns;
  if (wait_ns != nullptr) *wait_ns = d.allowed ? r.wait_ns : 0;
  return d;
}

// Folds band `r` into the composite decision `d` (all bands must admit).
void Combine(Decision& d, int64_t& wait, const BandResult& r, bool first) {
  const bool admit = r.outcome == BandOutcome::kAdmit;
  if (first) {
    d.allowed = admit;
    d.remaining = r.remaining;
    d.reset_after_ns = r.reset_after_ns;
  } else {
    d.allowed = d.allowed && admit;
    d.remaining = std::min(d.remaining, r.remaining);
    d.reset_after_ns = std::max(d.reset_after_ns, r.reset_after_ns);
  }
  if (admit) {
    wait = std::max(wait, r.wait_ns);
  } else if (d.retry_after_ns != kNever) {
    d.retry_after_ns =
        r.wait_ns == kNever ? kNever : std::max(d.retry_after_ns, r.wait_ns);
  }
}

}  // namespace

Decision LimiterCore::InvalidArgumentDecision() {
  Decision d;
  d.source = DecisionSource::kInvalidArgument;
  d.retry_after_ns = kNever;
  return d;
}

CompiledSpec CompileSpec(const LimitSpec& spec, uint32_t generation,
                         const CompiledSpec* previous) {
  CompiledSpec c;
  c.source = spec;
  c.generation = generation;
  c.previous = previous;
  c.all_buckets = true;
  for (const Band& band : spec.bands) {
    c.bands.push_back(CompileBand(band, spec.max_borrow, generation));
    const bool log = band.algorithm == Algorithm::kSlidingWindowLog;
    c.log_index.push_back(log ? c.log_count++ : -1);
    c.all_buckets =
        c.all_buckets && (band.algorithm == Algorithm::kTokenBucket ||
                          band.algorithm == Algorithm::kGcra);
  }
  c.lock_free = c.bands.size() == 1 && c.log_count == 0;
  return c;
}

LimiterCore::LimiterCore(const LimitSpec& spec, const LimiterOptions& options)
    : clock_(options.clock != nullptr ? options.clock : DefaultClock()),
      system_clock_(clock_ == DefaultClock()),
      max_key_bytes_(static_cast<size_t>(options.max_key_bytes)),
      registry_(this, options.max_keys, options.shards,
                KeyRegistry::Growth::kReclaims) {
  auto first = std::make_unique<CompiledSpec>(CompileSpec(spec, 0, nullptr));
  spec_.store(first.get(), std::memory_order_release);
  absl::MutexLock lock(&update_mu_);
  generations_.push_back(std::move(first));
}

LimiterCore::~LimiterCore() = default;

absl::Status LimiterCore::CheckKey(std::string_view key) const {
  return CheckKeySize("LimiterOptions", key,
                      static_cast<int32_t>(max_key_bytes_));
}

KeyEntry* LimiterCore::NewEntry(std::string_view name, int64_t now_ns) {
  const CompiledSpec* s = spec();
  KeyEntry* e =
      KeyEntry::Create(name, static_cast<int>(s->bands.size()), s->log_count);
  for (size_t i = 0; i < s->bands.size(); ++i) {
    e->cell(static_cast<int>(i)).Store(InitialCell(s->bands[i], now_ns));
  }
  return e;
}

bool LimiterCore::TryRetire(KeyEntry* e, int64_t now_ns) {
  const CompiledSpec* s = spec();
  if (s->lock_free) {
    AtomicCell& cell = e->cell(0);
    // A torn read fails the compare-and-swap below, which compares it whole.
    CellValue v = cell.LoadRelaxed();
    return CellIsIdle(s->bands[0], v, now_ns) &&
           cell.CompareExchange(v, kDeadCell);  // lock cmpxchg16b: seq_cst
  }
  SpinLockGuard lock(&e->lock);
  for (size_t i = 0; i < s->bands.size(); ++i) {
    const int log = s->log_index[i];
    const bool idle =
        log >= 0
            ? e->log(log).IsIdle(s->bands[i], now_ns)
            : CellIsIdle(s->bands[i],
                         e->cell(static_cast<int>(i)).LoadRelaxed(), now_ns);
    if (!idle) return false;
  }
  // seq_cst: one side of the store-load pair with a handle's pin.
  e->dead.store(true, std::memory_order_seq_cst);
  return true;
}

void LimiterCore::Revive(KeyEntry* e) {
  const CompiledSpec* s = spec();
  if (s->lock_free) {
    // The key was idle, so a new key's cell is equivalent. Nothing else
    // writes a dead cell.
    CellValue dead = kDeadCell;
    e->cell(0).CompareExchange(dead, InitialCell(s->bands[0], Now()));
    return;
  }
  SpinLockGuard lock(&e->lock);
  e->dead.store(false, std::memory_order_relaxed);  // under the lock
}

Decision LimiterCore::WaitForRevival(KeyEntry* e, const BandRequest& req,
                                     int64_t* wait_ns) {
  for (int spins = 0;; ++spins) {
    SpinWait(spins);
    const Decision d = Decide(e, req, wait_ns);
    if (d.retry_after_ns != kRetryLookup) return d;
  }
}

bool LimiterCore::IsRetired(KeyEntry* e) const {
  // seq_cst loads: the other side of the pairs in TryRetire.
  if (spec()->lock_free) return e->cell(0).HighHalfIs(kDeadCell.b);
  return e->dead.load(std::memory_order_seq_cst);
}

Decision LimiterCore::DecideByName(std::string_view key, const BandRequest& req,
                                   int64_t* wait_ns) {
  auto decide = [&](KeyEntry* e) {
    if (e == nullptr) return KeyLimitDecision();
    return Decide(e, req, wait_ns);
  };
  // One named result, returned on every path: it is the caller's return
  // slot, so the band loop writes the decision there directly. (A copy
  // out of a local read the loop's 8-byte stores back as 16-byte loads, a
  // store-forwarding stall of about 4 ns on every decision by name.)
  Decision d = req.cost < 0 || key.size() > max_key_bytes_
                   ? InvalidArgumentDecision()
                   : registry_.With(key, req.now_ns, decide);
  // The key was retired while this decision looked at it: the registry no
  // longer holds it, so the next lookup finds or creates its successor.
  while (d.retry_after_ns == kRetryLookup) [[unlikely]] {
      d = registry_.With(key, req.now_ns, decide);
    }
  return d;
}

namespace {

Decision RetryLookupDecision() {
  Decision d;
  d.source = DecisionSource::kKeyLimit;
  d.retry_after_ns = LimiterCore::kRetryLookup;
  return d;
}

// The lock-free loop for one band, with its evaluation inlined (Eval is a
// function of band_eval_inl.h) so the whole decision stays in registers.
template <BandResult (*Eval)(const CompiledBand&, CellValue,
                             const BandRequest&)>
[[gnu::noinline]] Decision CasLoop(const LimiterCore& core,
                                   const CompiledSpec* s, AtomicCell& cell,
                                   const BandRequest& req, int64_t* wait_ns) {
  CellValue cur;
  bool snapshot = cell.Load(cur);
  for (;;) {
    // Retired (a possibly torn read that shows the mark is retried too:
    // only a dead cell's CAS below could make it true again).
    if (cur.b == kDeadCell.b) [[unlikely]] {
      if (snapshot || cell.Validate(cur)) return RetryLookupDecision();
      snapshot = true;
      continue;
    }
    const BandResult r = Eval(s->bands[0], cur, req);
    if (r.outcome == BandOutcome::kSpecOlderThanCell) [[unlikely]] {
      s = core.spec();
      continue;
    }
    if (r.outcome == BandOutcome::kCellOlderThanSpec) [[unlikely]] {
      const CompiledBand& from = s->BandOf(GcraCellGeneration(cur), 0);
      const CellValue converted =
          ConvertGcraCell(from, s->bands[0], cur, req.now_ns);
      if (cell.CompareExchange(cur, converted)) cur = converted;
      snapshot = true;  // either way `cur` is what the CAS saw
      continue;
    }
    // A write commits only if the cell still holds what was read; a
    // decision without a write stands on a snapshot read, or confirms its
    // (possibly torn) read the same way. So every decision is linearizable.
    if (r.write ? cell.CompareExchange(cur, r.next)
                : snapshot || cell.Validate(cur)) {
      return ToDecision(r, wait_ns);
    }
    snapshot = true;  // a failed CAS hands back the current, untorn value
  }
}

}  // namespace

Decision LimiterCore::DecideLockFree(const CompiledSpec* s, KeyEntry* e,
                                     const BandRequest& req, int64_t* wait_ns) {
  AtomicCell& cell = e->cell(0);
  switch (s->bands[0].cell_kind) {
    case CellKind::kGcra:
      return CasLoop<band::EvaluateGcra>(*this, s, cell, req, wait_ns);
    case CellKind::kStepwise:
      return CasLoop<band::EvaluateStepwise>(*this, s, cell, req, wait_ns);
    case CellKind::kFixedWindow:
      return CasLoop<band::EvaluateFixedWindow>(*this, s, cell, req, wait_ns);
    case CellKind::kSlidingCounter:
      return CasLoop<band::EvaluateSlidingCounter>(*this, s, cell, req,
                                                   wait_ns);
    case CellKind::kSlidingLog:
      break;
  }
  return DecideLocked(e, req, wait_ns);  // unreachable: logs are locked
}

BandResult LimiterCore::EvaluateLocked(KeyEntry* e, const CompiledSpec* s,
                                       int i, const BandRequest& req) {
  const CompiledBand& band = s->bands[i];
  const int log = s->log_index[i];
  if (log >= 0) return e->log(log).Evaluate(band, req);
  AtomicCell& cell = e->cell(i);
  for (;;) {
    const CellValue v = cell.LoadRelaxed();  // no writer without the lock
    const BandResult r = EvaluateBand(band, v, req);
    if (r.outcome != BandOutcome::kCellOlderThanSpec) return r;
    cell.Store(ConvertGcraCell(s->BandOf(GcraCellGeneration(v), i), band, v,
                               req.now_ns));
  }
}

Decision LimiterCore::DecideLocked(KeyEntry* e, const BandRequest& req,
                                   int64_t* wait_ns) {
  BandResult results[4];
  int n;
  {
    SpinLockGuard lock(&e->lock);
    // Relaxed: written under this lock.
    if (e->dead.load(std::memory_order_relaxed)) [[unlikely]] {
      return RetryLookupDecision();
    }
    // Loaded under the lock: never older than what earlier holders used.
    const CompiledSpec* s = spec();
    n = static_cast<int>(s->bands.size());
    bool all_admit = true;
    for (int i = 0; i < n; ++i) {
      results[i] = EvaluateLocked(e, s, i, req);
      all_admit = all_admit && results[i].outcome == BandOutcome::kAdmit;
    }
    if (all_admit) {
      for (int i = 0; i < n; ++i) {
        const int log = s->log_index[i];
        if (log >= 0) {
          e->log(log).Record(s->bands[i], req.now_ns, req.cost);
        } else if (results[i].write) {
          e->cell(i).Store(results[i].next);
        }
      }
    } else {
      // Nothing is charged, so the bands that would have admitted report
      // their state without this request.
      BandRequest peek = req;
      peek.cost = 0;
      for (int i = 0; i < n; ++i) {
        if (results[i].outcome == BandOutcome::kAdmit) {
          const int64_t retry = results[i].wait_ns;
          results[i] = EvaluateLocked(e, s, i, peek);
          results[i].wait_ns = retry;
        }
      }
    }
  }
  Decision d;
  int64_t wait = 0;
  for (int i = 0; i < n; ++i) Combine(d, wait, results[i], i == 0);
  if (d.allowed) d.retry_after_ns = 0;
  if (wait_ns != nullptr) *wait_ns = d.allowed ? wait : 0;
  return d;
}

absl::Status LimiterCore::UpdateSpec(const LimitSpec& spec) {
  absl::MutexLock lock(&update_mu_);
  const CompiledSpec* current = generations_.back().get();
  if (current->generation >= kMaxGeneration) {
    return absl::ResourceExhaustedError(
        "this Limiter has had 2^24 - 1 spec updates, the most its state "
        "cells can tag; create a new Limiter");
  }
  auto next = std::make_unique<CompiledSpec>(
      CompileSpec(spec, current->generation + 1, current));
  // Release: publishes the compiled spec's contents to hot-path readers.
  spec_.store(next.get(), std::memory_order_release);
  generations_.push_back(std::move(next));
  return absl::OkStatus();
}

}  // namespace tokenlease::internal
