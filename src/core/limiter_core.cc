#include "core/limiter_core.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/thread_slots.h"
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

// Every SpecHazard ever registered, newest first; slots are never freed.
std::atomic<SpecHazard*> g_spec_hazards{nullptr};

// Hands out hazard ways round-robin. Relaxed: a counter; any value is safe.
std::atomic<uint32_t> g_next_hazard_way{0};

// Every generation some slot names (a scan; see FreeUnused for the orders).
std::vector<const CompiledSpec*> NamedGenerations() {
  std::vector<const CompiledSpec*> named;
  for (SpecHazard* h = FirstSpecHazard(); h != nullptr; h = h->next) {
    // seq_cst: the other side of the store-load pairs of AnnounceSpec and
    // FindOlderBand; also an acquire of a slot's release (its thread's uses
    // of the generation it named before happen before the free).
    for (const std::atomic<const CompiledSpec*>& c : h->current) {
      named.push_back(c.load(std::memory_order_seq_cst));
    }
    named.push_back(h->walking.load(std::memory_order_seq_cst));
  }
  return named;
}

// Moves the generations of `from` that `named` does not hold to `out`.
void TakeUnnamed(std::vector<std::unique_ptr<CompiledSpec>>& from,
                 const std::vector<const CompiledSpec*>& named,
                 std::vector<std::unique_ptr<CompiledSpec>>& out) {
  for (std::unique_ptr<CompiledSpec>& g : from) {
    if (std::find(named.begin(), named.end(), g.get()) == named.end()) {
      out.push_back(std::move(g));
    }
  }
  from.erase(std::remove(from.begin(), from.end(), nullptr), from.end());
}

// Generations of destroyed Limiters that a slot still named: freed by a
// later scan once none does, so that a slot never names freed memory (whose
// address a new generation could take, which the slot would then keep
// alive). At most kSpecHazardWays + 1 per thread. Never destroyed (a
// Limiter may be destroyed during static destruction).
struct Graveyard {
  std::mutex mu;
  std::vector<std::unique_ptr<CompiledSpec>> specs;  // guarded by mu
};
Graveyard& TheGraveyard() {
  static Graveyard* const g = new Graveyard;
  return *g;
}

// Gives a thread's slot back when the thread exits: a pthread key's
// destructor, which glibc runs after the thread's C++ thread_local
// destructors, so that a decision made in one of those still gets its slot
// back. (A decision in another key's destructor sets the key again, and
// glibc calls this again, up to PTHREAD_DESTRUCTOR_ITERATIONS rounds.)
void ReleaseSpecHazard(void* arg) {
  SpecHazard* slot = static_cast<SpecHazard*>(arg);
  // A later decision of this thread takes a slot again.
  spec_hazard_internal::tls = nullptr;
  // Release: the thread's last uses of the generations happen before an
  // UpdateSpec that sees null (acquire in its scan) frees them.
  for (std::atomic<const CompiledSpec*>& c : slot->current) {
    c.store(nullptr, std::memory_order_release);
  }
  slot->walking.store(nullptr, std::memory_order_release);
  // Release: as above, for the next owner (acquire on claim).
  slot->in_use.store(false, std::memory_order_release);
}

pthread_key_t SpecHazardKey() {
  static const pthread_key_t key = [] {
    pthread_key_t k;
    // Fails only when the process is out of keys (PTHREAD_KEYS_MAX, 1024),
    // before any Limiter could decide: nothing sensible to continue with.
    if (pthread_key_create(&k, &ReleaseSpecHazard) != 0) std::abort();
    return k;
  }();
  return key;
}

}  // namespace

SpecHazard* FirstSpecHazard() {
  // seq_cst: a published slot's fields are visible (acquire), and a scan
  // that misses a slot pushed later is ordered before that slot's first
  // announcement, whose check then sees the scan's cause (AnnounceSpec).
  return g_spec_hazards.load(std::memory_order_seq_cst);
}

SpecHazard* ThisThreadSpecHazard() {
  if (spec_hazard_internal::tls != nullptr) return spec_hazard_internal::tls;
  // seq_cst, both: the head's load as FirstSpecHazard's, and the push
  // publishes the slot's fields (release) and is ordered with the scans'
  // loads of the head (see FirstSpecHazard).
  SpecHazard* slot = ClaimOrAddSlot(g_spec_hazards, std::memory_order_seq_cst,
                                    std::memory_order_seq_cst);
  spec_hazard_internal::tls = slot;
  // Allocates at most once per thread (glibc's second-level key array);
  // without it the slot would stay claimed after the thread exits.
  if (pthread_setspecific(SpecHazardKey(), slot) != 0) std::abort();
  return slot;
}

Decision LimiterCore::InvalidArgumentDecision() {
  Decision d;
  d.source = DecisionSource::kInvalidArgument;
  d.retry_after_ns = kNever;
  return d;
}

Decision LimiterCore::FinishedInvalidArgument() const {
  Decision d = InvalidArgumentDecision();
  Finish(&d);
  return d;
}

std::unique_ptr<CompiledSpec> CompileSpec(const LimitSpec& spec,
                                          uint32_t generation,
                                          const CompiledSpec* previous) {
  auto c = std::make_unique<CompiledSpec>();
  c->source = spec;
  c->generation = generation;
  // Release: `previous` was fully built before (and FindOlderBand loads the
  // link with acquire); this generation is published later by spec_.
  c->previous.store(previous, std::memory_order_release);
  c->all_buckets = true;
  for (const Band& band : spec.bands) {
    c->bands.push_back(CompileBand(band, spec.max_borrow, generation));
    const bool log = band.algorithm == Algorithm::kSlidingWindowLog;
    c->log_index.push_back(log ? c->log_count++ : -1);
    c->all_buckets =
        c->all_buckets && (band.algorithm == Algorithm::kTokenBucket ||
                           band.algorithm == Algorithm::kGcra);
  }
  c->lock_free = c->bands.size() == 1 && c->log_count == 0;
  return c;
}

LimiterCore::LimiterCore(const LimitSpec& spec, const LimiterOptions& options)
    : LimiterCore(CompileSpec(spec, 0, nullptr), options) {}

LimiterCore::LimiterCore(std::unique_ptr<CompiledSpec> first,
                         const LimiterOptions& options)
    : clock_(options.clock != nullptr ? options.clock : DefaultClock()),
      system_clock_(clock_ == DefaultClock()),
      max_key_bytes_(static_cast<size_t>(options.max_key_bytes)),
      shadow_(options.shadow),
      lock_free_(first->lock_free),
      all_buckets_(first->all_buckets),
      one_gcra_band_(first->lock_free &&
                     first->bands[0].cell_kind == CellKind::kGcra),
      stepwise_cells_(first->bands[0].cell_kind == CellKind::kStepwise),
      hazard_way_(static_cast<int>(
          g_next_hazard_way.fetch_add(1, std::memory_order_relaxed) %
          kSpecHazardWays)),
      registry_(this, options.max_keys, options.shards,
                KeyRegistry::Growth::kReclaims) {
  // Release: publishes the compiled spec's contents (no reader yet).
  spec_.store(first.get(), std::memory_order_release);
  std::lock_guard<std::mutex> lock(update_mu_);
  live_.push_back(std::move(first));
}

// No decision can run any more, so every generation can go but those a
// thread's slot still names (they wait in the graveyard). The registry,
// destroyed after this, reads none.
LimiterCore::~LimiterCore() {
  std::vector<std::unique_ptr<CompiledSpec>> expired;  // freed unlocked
  std::lock_guard<std::mutex> lock(update_mu_);
  std::vector<std::unique_ptr<CompiledSpec>> mine = std::move(retired_);
  for (std::unique_ptr<CompiledSpec>& g : live_) mine.push_back(std::move(g));
  Graveyard& grave = TheGraveyard();
  // Before the scan: see FreeUnused.
  std::lock_guard<std::mutex> grave_lock(grave.mu);
  const std::vector<const CompiledSpec*> named = NamedGenerations();
  TakeUnnamed(mine, named, expired);
  TakeUnnamed(grave.specs, named, expired);
  for (std::unique_ptr<CompiledSpec>& g : mine) {
    grave.specs.push_back(std::move(g));
  }
}

const CompiledSpec* LimiterCore::AnnounceSpec() const {
  SpecHazard* h = ThisThreadSpecHazard();
  // seq_cst, here and below: the announcement and the check that follows
  // are one side of a store-load pair whose other side is UpdateSpec's
  // store of the next generation and its later scan of the slots (all
  // seq_cst): either this check sees the generation replaced (and tries
  // the newer one) or the scan sees it announced (and keeps it).
  const CompiledSpec* s = spec_.load(std::memory_order_seq_cst);
  for (;;) {
    // seq_cst (a read-modify-write, also a release of the generation this
    // thread used before: see FreeUnused).
    h->current[hazard_way_].exchange(s, std::memory_order_seq_cst);
    const CompiledSpec* now = spec_.load(std::memory_order_seq_cst);
    if (now == s) return s;
    s = now;
  }
}

const CompiledBand* LimiterCore::FindOlderBand(const CompiledSpec* s,
                                               uint32_t gen, int i) const {
  SpecHazard* h = spec_hazard_internal::tls;  // set by the spec() of `s`
  const CompiledSpec* p = s;  // announced: `current` or `walking`
  while (p->generation > gen) {
    // Acquire: pairs with the release that linked the older generation.
    const CompiledSpec* q = p->previous.load(std::memory_order_acquire);
    if (q == nullptr) return nullptr;
    const uint32_t q_generation = p->generation - 1;  // links are consecutive
    // seq_cst, here and below: a store-load pair with UpdateSpec's store of
    // oldest_linked_ and its later scan: either q is seen unlinked here
    // (and not read) or the scan sees it announced (and keeps it).
    h->walking.exchange(q, std::memory_order_seq_cst);
    if (oldest_linked_.load(std::memory_order_seq_cst) > q_generation) {
      return nullptr;  // left the window meanwhile
    }
    p = q;
  }
  return p->generation == gen ? &p->bands[i] : nullptr;
}

CellValue LimiterCore::ConvertOlderCell(const CompiledSpec* s, int i,
                                        CellValue v, int64_t now_ns) const {
  const CompiledBand* from = FindOlderBand(s, GcraCellGeneration(v), i);
  const CellValue converted =
      from != nullptr
          ? ConvertGcraCell(*from, s->bands[i], v, now_ns)
          : ConvertGcraCellOfUnknownGeneration(s->bands[i], v, now_ns);
  // Release: the reads of the older generation happen before a scan that
  // sees null (acquire) frees it.
  spec_hazard_internal::tls->walking.store(nullptr, std::memory_order_release);
  return converted;
}

LimitSpec LimiterCore::CurrentSpec() const {
  std::lock_guard<std::mutex> lock(update_mu_);
  return live_.back()->source;
}

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
  if (lock_free_) {
    // The clock first: a user's Clock runs no code while this thread holds
    // a generation (it might decide on another Limiter of the same way).
    const int64_t now_ns = Now();
    const CompiledSpec* s = spec();
    // The key was idle, so a new key's cell is equivalent. Nothing else
    // writes a dead cell.
    CellValue dead = kDeadCell;
    e->cell(0).CompareExchange(dead, InitialCell(s->bands[0], now_ns));
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
  if (lock_free_) {
    return stepwise_cells_ ? e->cell(0).HighHalfIs(kDeadCell.b)
                           : e->cell(0).LowHalfIs(kDeadCell.a);
  }
  return e->dead.load(std::memory_order_seq_cst);
}

namespace {

Decision RetryLookupDecision() {
  Decision d;
  d.source = DecisionSource::kKeyLimit;
  d.retry_after_ns = LimiterCore::kRetryLookup;
  return d;
}

// An evaluation as one step: the whole BandResult is known before the
// compare-and-swap, and finishing it is the identity.
template <BandResult (*Eval)(const CompiledBand&, CellValue,
                             const BandRequest&)>
struct OneStep {
  static BandResult Charge(const CompiledBand& b, CellValue cell,
                           const BandRequest& req) {
    return Eval(b, cell, req);
  }
  static const BandResult& Finish(const CompiledBand&, CellValue,
                                  const BandRequest&, const BandResult& r) {
    return r;
  }
};

// GCRA in two steps (band_eval_inl.h): the caller's numbers are derived
// after the compare-and-swap, from the debt alone.
struct TwoStepGcra {
  [[gnu::always_inline]] static band::GcraCharge Charge(
      const CompiledBand& b, CellValue cell, const BandRequest& req) {
    return band::ChargeGcra(b, cell, req);
  }
  [[gnu::always_inline]] static BandResult Finish(const CompiledBand& b,
                                                  CellValue cell,
                                                  const BandRequest& req,
                                                  const band::GcraCharge& c) {
    return band::FinishGcra(b, cell, req, c);
  }
};

// The lock-free loop for one band, with its evaluation inlined (Steps
// wraps functions of band_eval_inl.h) so the whole decision stays in
// registers.
template <typename Steps>
[[gnu::noinline]] Decision CasLoop(const LimiterCore& core,
                                   const CompiledSpec* s, AtomicCell& cell,
                                   const BandRequest& req, int64_t* wait_ns) {
  CellValue cur;
  bool snapshot = cell.Load(cur);
  for (;;) {
    // Retired (a possibly torn read that shows the mark is retried too:
    // only a dead cell's CAS below could make it true again).
    if (IsDeadCell(s->bands[0].cell_kind, cur)) [[unlikely]] {
      if (snapshot || cell.Validate(cur)) return RetryLookupDecision();
      snapshot = true;
      continue;
    }
    const auto c = Steps::Charge(s->bands[0], cur, req);
    if (c.outcome == BandOutcome::kSpecOlderThanCell) [[unlikely]] {
      s = core.spec();
      continue;
    }
    if (c.outcome == BandOutcome::kCellOlderThanSpec) [[unlikely]] {
      const CellValue converted = core.ConvertOlderCell(s, 0, cur, req.now_ns);
      if (cell.CompareExchange(cur, converted)) cur = converted;
      snapshot = true;  // either way `cur` is what the CAS saw
      continue;
    }
    // A write commits only if the cell still holds what was read; a
    // decision without a write stands on a snapshot read, or confirms its
    // (possibly torn) read the same way. So every decision is linearizable.
    if (c.write ? cell.CompareExchange(cur, c.next)
                : snapshot || cell.Validate(cur)) {
      return ToDecision(Steps::Finish(s->bands[0], cur, req, c), wait_ns);
    }
    snapshot = true;  // a failed CAS hands back the current, untorn value
  }
}

// What DecideGcraFast decided, kept in registers: `decided` false means it
// changed nothing and the loop must decide.
struct FastDecision {
  bool decided = false;
  bool allowed = false;
  int64_t remaining = 0;
  int64_t wait_ns = 0;  // BandResult::wait_ns
  int64_t reset_after_ns = 0;

  // The caller's decision (as ToDecision makes it; TryAcquire takes no
  // wait, so an admission's wait is 0 here).
  Decision ToDecision() const {
    Decision d;
    d.allowed = allowed;
    d.remaining = remaining;
    d.retry_after_ns = allowed ? 0 : wait_ns;
    d.reset_after_ns = reset_after_ns;
    return d;
  }
};

// The common lock-free decision: a GCRA band (the default algorithm)
// decided from one read with at most one compare-and-swap, in the
// caller's frame. Why: every store since the previous locked instruction
// must drain before the next one completes (up to about half a nanosecond
// each here: ref/cmpxchg16b_after_stores), and a call to the loop costs
// its frame's pushes and spills; this path stores nothing before its
// compare-and-swap but its frame's own, and the caller writes the
// decision after it. Anything else
// (a retired cell, another generation, a debt beyond 2^62 units, a lost
// race, a torn read that fails its check) changes nothing and is left to
// CasLoop, which starts again from a fresh read.
[[gnu::always_inline]] inline FastDecision DecideGcraFast(
    const CompiledBand& b, AtomicCell& cell, const BandRequest& req) {
  // Each early return is a fresh value, not a named one: a named result
  // returned from several places is kept in memory (stored before the
  // compare-and-swap).
  CellValue cur;
  const bool snapshot = cell.Load(cur);
  if (IsDeadCell(CellKind::kGcra, cur)) [[unlikely]]
    return {};
  band::GcraCharge c = band::ChargeGcra(b, cur, req);
  if (c.far) [[unlikely]]
    return {};
  const bool write = c.write;
  if (c.outcome == BandOutcome::kAdmit) {
    if (write) {
      // Only scalars live across the compare-and-swap: a struct that does
      // is kept in memory, and its fields are stored before it.
      const int64_t debt = c.debt;
      const int64_t need = c.need;
      CellValue seen = cur;  // a copy: a failed CAS overwrites it
      if (!cell.CompareExchange(seen, c.next)) return {};
      c = band::GcraCharge();
      c.outcome = BandOutcome::kAdmit;
      c.debt = debt;
      c.need = need;
    }
  } else if (c.outcome != BandOutcome::kDeny) [[unlikely]] {
    return {};  // another generation: CasLoop converts or reloads
  }
  // A decision that writes nothing stands on an untorn read (CasLoop's
  // rule): where loads may be torn, the read is confirmed first.
  if (!write && !snapshot) [[unlikely]] {
    if (!cell.Validate(cur)) return {};
  }
  const BandResult r = band::FinishGcra(b, cur, req, c);
  return FastDecision{.decided = true,
                      .allowed = r.outcome == BandOutcome::kAdmit,
                      .remaining = r.remaining,
                      .wait_ns = r.wait_ns,
                      .reset_after_ns = r.reset_after_ns};
}

// The lock-free decision for `e` under `s` (s->lock_free). Inline in its
// callers, so that a decision by name goes from the lookup straight to the
// band, one call fewer; every path returns a prvalue, so the decision is
// built in the caller's return slot, never copied.
[[gnu::always_inline]] inline Decision DispatchLockFree(const LimiterCore& core,
                                                        const CompiledSpec* s,
                                                        KeyEntry* e,
                                                        const BandRequest& req,
                                                        int64_t* wait_ns) {
  AtomicCell& cell = e->cell(0);
  switch (s->bands[0].cell_kind) {
    case CellKind::kGcra:
      return CasLoop<TwoStepGcra>(core, s, cell, req, wait_ns);
    case CellKind::kStepwise:
      return CasLoop<OneStep<band::EvaluateStepwise>>(core, s, cell, req,
                                                      wait_ns);
    case CellKind::kFixedWindow:
      return CasLoop<OneStep<band::EvaluateFixedWindow>>(core, s, cell, req,
                                                         wait_ns);
    case CellKind::kSlidingCounter:
      return CasLoop<OneStep<band::EvaluateSlidingCounter>>(core, s, cell, req,
                                                            wait_ns);
    case CellKind::kSlidingLog:
      break;
  }
  // Unreachable: sliding logs are never lock-free.
  return LimiterCore::InvalidArgumentDecision();
}

}  // namespace

Decision LimiterCore::DecideLockFree(const CompiledSpec* s, KeyEntry* e,
                                     const BandRequest& req, int64_t* wait_ns) {
  return DispatchLockFree(*this, s, e, req, wait_ns);
}

// Decide for an entry the registry found (null: the registry is full),
// with the lock-free dispatch inlined (one call fewer).
[[gnu::always_inline]] inline Decision LimiterCore::DecideFound(
    KeyEntry* e, const BandRequest& req, int64_t* wait_ns) {
  if (e == nullptr) [[unlikely]]
    return KeyLimitDecision();
  const CompiledSpec* s = spec();
  if (s->lock_free) [[likely]]
    return DispatchLockFree(*this, s, e, req, wait_ns);
  return DecideLocked(e, req, wait_ns);
}

Decision LimiterCore::DecideByName(std::string_view key, const BandRequest& req,
                                   int64_t* wait_ns) {
  return DecideByNameInline(key, req, wait_ns);
}

Decision LimiterCore::TryAcquireGcraPinned(KeyEntry* e, int64_t cost,
                                           int64_t now_ns) {
  if (cost >= 0) [[likely]] {
    const FastDecision f =
        DecideGcraFast(spec()->bands[0], e->cell(0), BandRequest{now_ns, cost});
    if (f.decided) [[likely]] {
      Decision d = f.ToDecision();  // built after the CAS
      Finish(&d);
      return d;
    }
  }
  return TryAcquirePinned(e, cost, now_ns);
}

Decision LimiterCore::TryAcquirePinned(KeyEntry* e, int64_t cost,
                                       int64_t now_ns) {
  const BandRequest req{now_ns, cost};
  Decision d =
      cost < 0 ? InvalidArgumentDecision() : DecideFound(e, req, nullptr);
  if (d.retry_after_ns == kRetryLookup) [[unlikely]] {
    d = WaitForRevival(e, req, nullptr);
  }
  Finish(&d);
  return d;
}

Decision LimiterCore::TryAcquireGcraByName(std::string_view key, int64_t cost,
                                           int64_t now_ns) {
  // The GCRA fast path inside the lookup. What it leaves undecided (a lost
  // race, a retired key, a full registry: rare) is looked up and decided
  // again by the general path.
  if (cost >= 0 && key.size() <= max_key_bytes_) [[likely]] {
    const FastDecision f = registry_.With(
        key, now_ns,
        // Inline: a call would put its captures in memory.
        [&](KeyEntry * e) __attribute__((always_inline))->FastDecision {
          if (e == nullptr) [[unlikely]]
            return {};
          return DecideGcraFast(spec()->bands[0], e->cell(0),
                                BandRequest{now_ns, cost});
        });
    if (f.decided) [[likely]] {
      Decision d = f.ToDecision();  // built after the CAS
      Finish(&d);
      return d;
    }
  }
  return TryAcquireByName(key, cost, now_ns);
}

Decision LimiterCore::TryAcquireByName(std::string_view key, int64_t cost,
                                       int64_t now_ns) {
  Decision d = DecideByNameInline(key, BandRequest{now_ns, cost}, nullptr);
  Finish(&d);
  return d;
}

[[gnu::always_inline]] inline Decision LimiterCore::DecideByNameInline(
    std::string_view key, const BandRequest& req, int64_t* wait_ns) {
  // One named result, returned on every path: it is the caller's return
  // slot, so the band loop writes the decision there directly. (A copy
  // out of a local read the loop's 8-byte stores back as 16-byte loads, a
  // store-forwarding stall of about 4 ns on every decision by name.)
  Decision d = req.cost < 0 || key.size() > max_key_bytes_
                   ? InvalidArgumentDecision()
                   : registry_.With(
                         key, req.now_ns,
                         // Inline: a call would put its
                         // captures in memory.
                         [&](KeyEntry * e) __attribute__((always_inline)) {
                           return DecideFound(e, req, wait_ns);
                         });
  // The key was retired while this decision looked at it. Out of line, and
  // `key` passed by value: nothing on the hot path takes its address (a
  // spilled string_view reloaded as one 16-byte word is a store-forwarding
  // stall, measured at a quarter of a decision by name).
  if (d.retry_after_ns == kRetryLookup) [[unlikely]] {
    d = RetryByName(key, req, wait_ns);
  }
  return d;
}

Decision LimiterCore::RetryByName(std::string_view key, const BandRequest& req,
                                  int64_t* wait_ns) {
  // The registry no longer holds the key, so the next lookup finds or
  // creates its successor.
  for (;;) {
    Decision d = registry_.With(key, req.now_ns, [&](KeyEntry* e) {
      return DecideFound(e, req, wait_ns);
    });
    if (d.retry_after_ns != kRetryLookup) return d;
  }
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
    cell.Store(ConvertOlderCell(s, i, v, req.now_ns));
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

void LimiterCore::FreeUnused(std::vector<std::unique_ptr<CompiledSpec>>& out) {
  Graveyard& grave = TheGraveyard();
  // Before the scan, so that a generation buried after it (named when the
  // destroyed Limiter scanned, later than ours) is not judged by it.
  std::lock_guard<std::mutex> lock(grave.mu);  // after update_mu_, always
  const std::vector<const CompiledSpec*> named = NamedGenerations();
  TakeUnnamed(retired_, named, out);
  TakeUnnamed(grave.specs, named, out);
}

absl::Status LimiterCore::UpdateSpec(const LimitSpec& spec) {
  std::vector<std::unique_ptr<CompiledSpec>> expired;  // freed unlocked
  std::lock_guard<std::mutex> lock(update_mu_);
  const CompiledSpec* current = live_.back().get();
  const LimitSpec& old = current->source;
  if (old.bands.size() != spec.bands.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "UpdateSpec cannot change the number of bands (", old.bands.size(),
        " -> ", spec.bands.size(), "); create a new Limiter"));
  }
  for (size_t i = 0; i < spec.bands.size(); ++i) {
    const Band& a = old.bands[i];
    const Band& b = spec.bands[i];
    if (a.algorithm != b.algorithm ||
        (a.algorithm == Algorithm::kTokenBucket && a.refill != b.refill)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "UpdateSpec cannot change bands[", i, "] from ",
          AlgorithmName(a.algorithm), " to ", AlgorithmName(b.algorithm),
          " or change its refill style; create a new Limiter"));
    }
  }
  if (current->generation >= kMaxGeneration) {
    return absl::ResourceExhaustedError(
        "this Limiter has had 2^24 - 1 spec updates, the most its state "
        "cells can tag; create a new Limiter");
  }
  std::unique_ptr<CompiledSpec> next =
      CompileSpec(spec, current->generation + 1, current);
  // seq_cst: publishes the compiled spec's contents (release), and is the
  // other side of AnnounceSpec's store-load pair (with the scans below).
  spec_.store(next.get(), std::memory_order_seq_cst);
  live_.push_back(std::move(next));
  if (live_.size() > static_cast<size_t>(kRetainedGenerations)) {
    // The oldest generation leaves the window. seq_cst: the other side of
    // FindOlderBand's store-load pair (with the scan below).
    oldest_linked_.store(live_[1]->generation, std::memory_order_seq_cst);
    // Release: as every store of the link (null publishes nothing, but the
    // readers' acquire pairs with it).
    live_[1]->previous.store(nullptr, std::memory_order_release);
    retired_.push_back(std::move(live_.front()));
    live_.pop_front();
  }
  if (!retired_.empty()) FreeUnused(expired);
  return absl::OkStatus();
}

}  // namespace tokenlease::internal
