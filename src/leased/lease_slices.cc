#include "leased/lease_slices.h"

#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

namespace tokenlease::internal {
namespace {

// --- Thread slice indices ----------------------------------------------------

struct SliceIndices {
  std::mutex mu;
  std::vector<bool> used;  // guarded by mu
};

SliceIndices& Indices() {
  // Never destroyed: threads may exit during static destruction.
  static SliceIndices* const indices = new SliceIndices;
  return *indices;
}

// Set once this thread gave its index back at exit: later decisions (made
// in other thread_locals' destructors) use the balance.
thread_local bool tls_slice_exited = false;

// Gives the thread's index back when it exits. The registry's mutex orders
// the exiting owner's last section before the next owner's first.
struct SliceOwner {
  bool registered = false;  // written at the claim: registers the destructor
  ~SliceOwner() {
    const uint32_t index = tls_lease_slice;
    if (index == 0) return;
    SliceIndices& r = Indices();
    std::lock_guard<std::mutex> lock(r.mu);
    r.used[index - 1] = false;
    tls_lease_slice = 0;
    tls_slice_exited = true;
  }
};
thread_local SliceOwner tls_slice_owner;

// --- The heavy side of the barrier pair
// ----------------------------------------

long Membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

bool RegisterMembarrier() {
  const long cmds = Membarrier(MEMBARRIER_CMD_QUERY);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
  return Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

// A page whose protection HeavyBarrier flips when membarrier fails: the
// TLB shootdown that mprotect sends to every CPU running this process's
// threads is a full barrier there (folly's asymmetric barrier falls back
// on the same effect).
char* BarrierPage() {
  static char* const page = [] {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }();
  return page;
}

// Every running thread of the process passes a full memory barrier before
// this returns (threads not running passed one when they were switched
// out). membarrier can still fail after it was registered (ENOMEM, a
// seccomp filter installed later); then the mprotect shootdown. False if
// neither worked: the caller must not touch a slice's tokens.
bool HeavyBarrier() {
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return true;
  char* page = BarrierPage();
  if (page == nullptr) return false;
  // The page must be mapped and dirty for the protection change to send
  // the shootdown.
  *static_cast<volatile char*>(page) = 1;
  if (mprotect(page, 4096, PROT_READ) != 0) return false;
  return mprotect(page, 4096, PROT_READ | PROT_WRITE) == 0;
}

// True once the owner of `slice` is outside its section (started ==
// ended), waiting up to 20 us (a section is a few instructions; only a
// preempted owner stays longer, and then the caller retries at its next
// step). After HeavyBarrier, a section that began later sees `revoked` and
// leaves without touching the tokens. acquire (both): the section's stores
// (tokens) are visible once its end is (its release store of either).
bool NoSectionInFlight(const LeaseSlice& slice) {
  return slice.started.load(std::memory_order_acquire) ==
         slice.ended.load(std::memory_order_acquire);
}
bool WaitSectionEnded(const LeaseSlice& slice) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::microseconds(20);
  do {
    for (int i = 0; i < 64; ++i) {
      if (NoSectionInFlight(slice)) return true;
    }
  } while (std::chrono::steady_clock::now() < deadline);
  return NoSectionInFlight(slice);
}

// A LeaseSlices header with `count` slices after it, in one block.
std::unique_ptr<LeaseSlices, void (*)(LeaseSlices*)> NewSlices(uint32_t count) {
  static_assert(sizeof(LeaseSlices) == sizeof(LeaseSlice));
  constexpr std::align_val_t kAlign{alignof(LeaseSlice)};
  void* block = ::operator new((count + 1) * sizeof(LeaseSlice), kAlign);
  auto* s = new (block) LeaseSlices;
  s->count = count;
  for (uint32_t i = 0; i < count; ++i) new (&(*s)[i]) LeaseSlice;
  return {s, [](LeaseSlices* p) {
            // Trivially destructible parts: only the block is freed.
            ::operator delete (p, std::align_val_t{alignof(LeaseSlice)});
          }};
}

uint32_t AutomaticCount() {
  const uint32_t cpus = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<uint32_t>(4 * cpus, 16, 256);
}

}  // namespace

uint32_t ClaimLeaseSlice() {
  if (tls_lease_slice != 0 || tls_slice_exited) return tls_lease_slice;
  SliceIndices& r = Indices();
  std::lock_guard<std::mutex> lock(r.mu);
  const auto it = std::find(r.used.begin(), r.used.end(), false);
  const size_t index = static_cast<size_t>(it - r.used.begin());
  if (it == r.used.end()) {
    r.used.push_back(true);
  } else {
    *it = true;
  }
  tls_lease_slice = static_cast<uint32_t>(index + 1);
  // The first use of the thread_local registers its destructor.
  tls_slice_owner.registered = true;
  return tls_lease_slice;
}

bool SlicesSupported() {
  static const bool supported = RegisterMembarrier();
  return supported;
}

SliceRefill RefillSlice(LeaseHot* e, LeaseSlices* s, int64_t cost,
                        int64_t* remaining, bool* below_low_water) {
  *below_low_water = false;
  uint32_t index = tls_lease_slice;
  if (index == 0) index = ClaimLeaseSlice();
  if (index == 0 || index > s->count) return SliceRefill::kNoSlice;
  LeaseSlice& slice = (*s)[index - 1];
  // The owner's section (lease_hot.h, TakeFromSlice): relaxed accesses kept
  // in order by compiler fences; the slicer's membarrier supplies the rest.
  // It ends by setting `started` back: the caller counts what it admits.
  const uint64_t n = slice.ended.load(std::memory_order_relaxed);
  slice.started.store(n + 1, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // acquire: after a Reopen, the slicer's exchange of the tokens is seen.
  if (slice.revoked.load(std::memory_order_acquire)) {
    slice.started.store(n, std::memory_order_release);
    return SliceRefill::kNoSlice;
  }
  const int64_t held = slice.tokens.load(std::memory_order_relaxed);
  SliceRefill result = SliceRefill::kAdmitted;
  if (held >= cost) {
    slice.tokens.store(held - cost, std::memory_order_relaxed);
    *remaining = held - cost;
  } else {
    // relaxed (chunk, chunk_cap): size hints. relaxed (balance): a count of
    // tokens, as on the handle path; a take that finds too few gives the
    // shortfall back, and others meanwhile see fewer tokens, never more.
    const int64_t cap =
        std::max(cost, s->chunk_cap.load(std::memory_order_relaxed));
    const int64_t chunk = std::clamp<int64_t>(
        slice.chunk.load(std::memory_order_relaxed), 1, cap);
    const int64_t want = std::max(chunk, cost - held);
    const int64_t old = e->balance.fetch_sub(want, std::memory_order_relaxed);
    const int64_t got = std::clamp<int64_t>(old, 0, want);
    if (got < want) e->balance.fetch_add(want - got, std::memory_order_relaxed);
    *below_low_water = old - got < e->low_water.load(std::memory_order_relaxed);
    if (held + got >= cost) {
      slice.tokens.store(held + got - cost, std::memory_order_relaxed);
      *remaining = held + got - cost;
      slice.chunk.store(std::min(2 * want, cap), std::memory_order_relaxed);
    } else {
      slice.tokens.store(held + got, std::memory_order_relaxed);
      result = SliceRefill::kShort;
    }
  }
  // release: the tokens' store is visible to a slicer that sees the
  // section ended.
  slice.started.store(n, std::memory_order_release);
  return result;
}

// --- LeaseSlicer
// ---------------------------------------------------------------

struct LeaseSlicer::Key {
  LeaseEntry* entry = nullptr;
  // The header and its slices in one block (LeaseSlices), owned by the
  // slicer's blocks_.
  LeaseSlices* slices = nullptr;
  int64_t lease_size = 0;
  int active = 1;  // slices whose tokens changed at the last sweep (>= 1)
  // A Close in progress: the slices are revoked (and the barrier ran);
  // `taken` holds the tokens taken from them so far, `done` marks those
  // taken. Until Reopen.
  bool closing = false;
  int64_t taken = 0;
  std::vector<bool> done;
  // The sweep's view of each slice: its tokens when last seen, and since
  // when they have not changed.
  std::vector<int64_t> seen;
  std::vector<int64_t> unchanged_since;
};

LeaseSlicer::LeaseSlicer(int64_t threshold, uint32_t slices_per_key,
                         int64_t idle_ns, bool single_thread)
    : threshold_(threshold),
      single_thread_(single_thread),
      count_(slices_per_key == 0 ? AutomaticCount() : slices_per_key),
      idle_ns_(idle_ns) {}

LeaseSlicer::~LeaseSlicer() = default;

LeaseSlicer::Key* LeaseSlicer::Find(const LeaseEntry* e) const {
  const int32_t i = e->record.slice_index;
  return i < 0 ? nullptr : keys_[static_cast<size_t>(i)].get();
}

LeaseSlicer::Key* LeaseSlicer::Slice(LeaseEntry* e) {
  auto key = std::make_unique<Key>();
  key->entry = e;
  if (spare_.empty()) {
    auto block = NewSlices(count_);
    key->slices = block.get();
    std::lock_guard<std::mutex> lock(blocks_mu_);
    blocks_.push_back(std::move(block));
  } else {
    // A forgotten key's block: its owners' counts stay; the rest starts
    // as new (no decision reaches a forgotten key, and its tokens were
    // taken or are spent with its lease).
    key->slices = spare_.back();
    spare_.pop_back();
    for (uint32_t i = 0; i < count_; ++i) {
      LeaseSlice& slice = (*key->slices)[i];
      // relaxed: the block is published by OnGrant's release store.
      slice.tokens.store(0, std::memory_order_relaxed);
      slice.revoked.store(0, std::memory_order_relaxed);
      slice.chunk.store(1, std::memory_order_relaxed);
    }
  }
  key->seen.assign(count_, 0);
  key->unchanged_since.assign(count_, 0);
  key->done.assign(count_, false);
  Key* k = key.get();
  e->record.slice_index = static_cast<int32_t>(keys_.size());
  keys_.push_back(std::move(key));
  return k;
}

void LeaseSlicer::OnGrant(LeaseEntry* e, int64_t lease_size) {
  Key* k = Find(e);
  if (k == nullptr) {
    if (threshold_ <= 0 || lease_size < threshold_ || !SlicesSupported()) {
      return;
    }
    // acquire: a flag set by a deciding thread (a hint).
    if (!single_thread_ &&
        !(e->flags.load(std::memory_order_acquire) & kManyThreads) &&
        deciding_threads_ < 2) {
      // One thread decides on it (so far): where a locked fetch_sub is
      // cheap, slices would gain nothing (slice_single_thread).
      if (e->record.slice_candidate < 0) {
        e->record.slice_candidate = static_cast<int32_t>(candidates_.size());
        candidates_.push_back(e);
      }
      return;
    }
    k = Slice(e);
  }
  k->lease_size = lease_size;
  SizeChunks(k);
  if (e->slices.load(std::memory_order_relaxed) == nullptr) {
    // release: the slices are built before a decision can find them.
    e->slices.store(k->slices, std::memory_order_release);
  }
}

void LeaseSlicer::SizeChunks(Key* k) {
  // A quarter of the lease spread over the active slices: the balance
  // keeps most of the lease for the slices that refill next, and a slice
  // holds less the more threads share the key. relaxed: a size hint.
  k->slices->chunk_cap.store(
      std::max<int64_t>(1, k->lease_size / (4 * k->active)),
      std::memory_order_relaxed);
}

bool LeaseSlicer::Close(LeaseEntry* e) {
  Key* k = Find(e);
  if (k == nullptr) return true;
  LeaseSlices& slice = *k->slices;
  if (!k->closing) {
    for (uint32_t i = 0; i < count_; ++i) {
      // relaxed: HeavyBarrier orders it before the section checks below.
      slice[i].revoked.store(1, std::memory_order_relaxed);
    }
    if (!HeavyBarrier()) return false;  // revoked, nothing taken: retry
    k->closing = true;
    k->done.assign(count_, false);
  }
  bool all = true;
  for (uint32_t i = 0; i < count_; ++i) {
    if (k->done[i]) continue;
    if (!WaitSectionEnded(slice[i])) {
      all = false;  // a preempted owner: this slice at the next try
      continue;
    }
    // relaxed: no owner touches a revoked slice once it left its section;
    // Reopen's release store publishes the zero to the next section.
    k->taken += slice[i].tokens.exchange(0, std::memory_order_relaxed);
    slice[i].chunk.store(1, std::memory_order_relaxed);
    k->seen[i] = 0;
    k->done[i] = true;
  }
  return all;
}

bool LeaseSlicer::Closing(const LeaseEntry* e) const {
  const Key* k = Find(e);
  return k != nullptr && k->closing;
}

int64_t LeaseSlicer::Reopen(LeaseEntry* e) {
  Key* k = Find(e);
  if (k == nullptr) return 0;
  for (uint32_t i = 0; i < count_; ++i) {
    // release: pairs with the owner's acquire load of revoked.
    (*k->slices)[i].revoked.store(0, std::memory_order_release);
  }
  k->closing = false;
  return std::exchange(k->taken, 0);
}

void LeaseSlicer::DropCandidate(LeaseEntry* e) {
  const int32_t i = e->record.slice_candidate;
  if (i < 0) return;
  candidates_[static_cast<size_t>(i)] = candidates_.back();
  candidates_[static_cast<size_t>(i)]->record.slice_candidate = i;
  candidates_.pop_back();
  e->record.slice_candidate = -1;
}

void LeaseSlicer::Sweep(int64_t now) {
  if (deciding_threads_ >= 2) {
    // Several threads decide on this limiter: its hot keys get slices now.
    while (!candidates_.empty()) {
      LeaseEntry* e = candidates_.back();
      const int64_t size = e->record.lease_granted;
      DropCandidate(e);
      if (e->slices.load(std::memory_order_relaxed) == nullptr) {
        e->flags.fetch_or(kManyThreads, std::memory_order_acq_rel);
        OnGrant(e, std::max(size, threshold_));
      }
    }
  }
  // The idle slices of every key, revoked together behind one barrier.
  struct Idle {
    Key* key;
    uint32_t index;
  };
  std::vector<Idle> idle;
  for (const std::unique_ptr<Key>& k : keys_) {
    // A key being closed (its lease ends) keeps its slices revoked; one
    // whose balance is negative has an add-back on its way, which a
    // return would hide from the lease's end (it waits for a balance that
    // is not negative).
    if (k->closing || k->entry->balance.load(std::memory_order_relaxed) < 0) {
      continue;
    }
    int active = 0;
    for (uint32_t i = 0; i < count_; ++i) {
      LeaseSlice& slice = (*k->slices)[i];
      // relaxed: a snapshot; a stale value only delays the return.
      const int64_t tokens = slice.tokens.load(std::memory_order_relaxed);
      if (tokens != k->seen[i]) {
        k->seen[i] = tokens;
        k->unchanged_since[i] = now;
        ++active;
      } else if (tokens != 0 && now - k->unchanged_since[i] >= idle_ns_) {
        slice.revoked.store(1, std::memory_order_relaxed);  // see Close
        idle.push_back({k.get(), i});
      }
    }
    k->active = std::max(active, 1);
    SizeChunks(k.get());
  }
  if (idle.empty()) return;
  const bool fenced = HeavyBarrier();
  for (const Idle& x : idle) {
    LeaseSlice& slice = (*x.key->slices)[x.index];
    if (fenced && WaitSectionEnded(slice)) {
      // relaxed (exchange): as in Close. relaxed (balance): a count of
      // tokens; they move from the slice to the balance, never both.
      const int64_t tokens =
          slice.tokens.exchange(0, std::memory_order_relaxed);
      x.key->entry->balance.fetch_add(tokens, std::memory_order_relaxed);
      slice.chunk.store(1, std::memory_order_relaxed);
      x.key->seen[x.index] = 0;
    }
    // release: as in Reopen.
    slice.revoked.store(0, std::memory_order_release);
  }
}

void LeaseSlicer::Forget(LeaseEntry* e) {
  DropCandidate(e);
  const int32_t i = e->record.slice_index;
  if (i < 0) return;
  spare_.push_back(keys_[static_cast<size_t>(i)]->slices);
  const size_t last = keys_.size() - 1;
  if (static_cast<size_t>(i) != last) {
    keys_[static_cast<size_t>(i)] = std::move(keys_[last]);
    keys_[static_cast<size_t>(i)]->entry->record.slice_index = i;
  }
  keys_.pop_back();
  e->record.slice_index = -1;
  e->slices.store(nullptr, std::memory_order_relaxed);  // relaxed: unreachable
}

int64_t LeaseSlicer::Held(const LeaseEntry* e) {
  // acquire: see LeaseHot::slices.
  const LeaseSlices* s = e->slices.load(std::memory_order_acquire);
  if (s == nullptr) return 0;
  int64_t sum = 0;
  for (uint32_t i = 0; i < s->count; ++i) {
    // relaxed: a snapshot.
    sum += (*s)[i].tokens.load(std::memory_order_relaxed);
  }
  return sum;
}

uint64_t LeaseSlicer::Admitted() const {
  std::lock_guard<std::mutex> lock(blocks_mu_);
  uint64_t sum = 0;
  for (const auto& block : blocks_) {
    for (uint32_t i = 0; i < block->count; ++i) {
      // relaxed: a count publishes nothing (as the threads' counts).
      sum += (*block)[i].ended.load(std::memory_order_relaxed);
    }
  }
  return sum;
}

}  // namespace tokenlease::internal
