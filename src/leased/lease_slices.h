// Per-thread slices of a hot key's lease (docs/design.md, "Hot keys:
// per-thread slices"). A key whose adaptive lease reaches
// LeaseOptions::slice_threshold tokens gets one slice per thread slice
// index (tokenlease/internal/lease_hot.h); each thread then decides from
// its own cache line, with no locked instruction, and refills its slice
// from the key's balance with one fetch_sub. The slicer is the book's side:
// it creates the slices, sizes their refills, takes their tokens back when
// the lease ends (Close) or when a slice idles (Sweep), and frees them.
//
// The owner's section (started = ended + 1, check revoked, read and write
// tokens, then ended + 1 or started back) uses relaxed stores and loads;
// the slicer's side sets `revoked`, runs a process-wide memory barrier
// (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED), then waits for
// started == ended before it touches `tokens`. The barrier makes the pair
// a Dekker handshake without a fence on the owner's side: either the
// owner's section saw `revoked`, or the slicer sees it in progress (or
// ended, with its stores visible). Without membarrier (old kernels, some
// seccomp profiles) no key gets slices.
//
// Single-threaded (the reconciler's), except ClaimLeaseSlice, NoteRefiller
// and RefillSlice (deciding threads), and Held and Admitted (any thread).
#ifndef TOKENLEASE_SRC_LEASED_LEASE_SLICES_H_
#define TOKENLEASE_SRC_LEASED_LEASE_SLICES_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "leased/lease_entry.h"
#include "tokenlease/internal/lease_hot.h"

namespace tokenlease::internal {

// The calling thread's slice index plus one, claimed on its first call
// (the lowest index no live thread holds; given back when the thread
// exits). Sets tls_lease_slice.
uint32_t ClaimLeaseSlice();

// The calling thread asks for `e`'s refill (Reconciler::RequestRefill):
// when another thread asked last, the key is decided on by several threads
// and is marked kManyThreads (without LeaseOptions::slice_single_thread,
// LeaseSlicer gives only such keys slices). A store only when
// the asking thread changes; a refill is asked for about once a lease.
inline void NoteRefiller(LeaseEntry* e) {
  uint32_t me = tls_lease_slice;
  if (me == 0) me = ClaimLeaseSlice();
  // relaxed (refiller): a hint.
  const uint32_t last = e->refiller.load(std::memory_order_relaxed);
  if (me == 0 || last == me) return;
  // acq_rel: as every flag change (the other bits are shared).
  if (last != 0) e->flags.fetch_or(kManyThreads, std::memory_order_acq_rel);
  e->refiller.store(me, std::memory_order_relaxed);
}

// True if this process can use slices (membarrier is available and
// registered; checked once).
bool SlicesSupported();

// The result of a refill of the calling thread's slice.
enum class SliceRefill : uint8_t {
  kAdmitted,  // `cost` taken; *remaining is what the slice holds now
  kShort,     // the slice and the balance together hold less than `cost`
  kNoSlice,   // no slice for this thread (index beyond count, or revoked):
              // decide from the balance
};

// The decision path's slice step for a cost the thread's slice could not
// pay inline: takes max(cost - held, chunk) tokens from the key's balance
// with one fetch_sub (giving back what it lacked), and pays `cost` from
// the slice. `*below_low_water`: the balance fell below its low-water mark
// (ask for a refill). Any thread; at most one thread per slice index.
SliceRefill RefillSlice(LeaseHot* e, LeaseSlices* s, int64_t cost,
                        int64_t* remaining, bool* below_low_water);

// The reconciler's side of every key's slices.
class LeaseSlicer {
 public:
  // `threshold`: a key gets slices when its lease size reaches it (0:
  // never). `slices_per_key`: 0 for the automatic count (4 per CPU, 16 ..
  // 256). `idle_ns`: a slice whose tokens did not change for this long
  // goes back to the key's balance. `single_thread`: a key gets slices at
  // the threshold even while one thread decides on it
  // (LeaseOptions::slice_single_thread).
  LeaseSlicer(int64_t threshold, uint32_t slices_per_key, int64_t idle_ns,
              bool single_thread = false);
  ~LeaseSlicer();
  LeaseSlicer(const LeaseSlicer&) = delete;
  LeaseSlicer& operator=(const LeaseSlicer&) = delete;

  // `e` was granted a lease; the key's lease size is now `lease_size`:
  // gives the key slices once it reaches the threshold, and sizes the
  // largest refill chunk.
  void OnGrant(LeaseEntry* e, int64_t lease_size);

  // Closes `e`'s slices for the end of its lease: revokes them (the
  // owners then decide from the balance), runs the process-wide barrier
  // once, and takes the tokens of every slice whose owner is outside its
  // critical section. True once every slice is taken; false if an owner was
  // preempted inside its section (or no barrier could run): the slices stay
  // revoked and a later Close takes the rest. The tokens taken wait in the
  // slicer until Reopen.
  bool Close(LeaseEntry* e);
  // True between the first Close of a lease's end and Reopen.
  bool Closing(const LeaseEntry* e) const;
  // Lets the owners decide from their slices again and returns the tokens
  // Close took (0 without slices).
  int64_t Reopen(LeaseEntry* e);

  // At each step, before Sweep: how many threads decided on the limiter
  // since the last step (CountingThreads). From two on, keys whose lease
  // reached the threshold get slices now, without waiting for a refill
  // (kManyThreads).
  void NoteDecidingThreads(int threads) { deciding_threads_ = threads; }

  // At each step: slices whose tokens did not change for idle_ns give them
  // back to the key's balance (and their refill size starts small again),
  // and each key's chunk cap follows its number of active slices.
  void Sweep(int64_t now);

  // `e` is about to be freed (no decision can reach it): frees its slices.
  void Forget(LeaseEntry* e);

  // Tokens held by `e`'s slices (a snapshot; 0 without slices). Any
  // thread.
  static int64_t Held(const LeaseEntry* e);

  // Decisions admitted inline from any key's slices since the slicer was
  // made (LeaseSlice::ended, summed over every block of slices it ever
  // made: a forgotten key's block is kept for the next hot key, counts and
  // all). Takes blocks_mu_. Any thread.
  uint64_t Admitted() const;

  uint32_t slices_per_key() const { return count_; }
  size_t sliced_keys() const { return keys_.size(); }

 private:
  struct Key;  // one sliced key's slices and the sweep's view of them
  Key* Find(const LeaseEntry* e) const;
  // Gives `e` slices (and the slicer's record of them).
  Key* Slice(LeaseEntry* e);
  void DropCandidate(LeaseEntry* e);
  static void SizeChunks(Key* k);

  const int64_t threshold_;
  const bool single_thread_;  // LeaseOptions::slice_single_thread
  const uint32_t count_;
  const int64_t idle_ns_;
  std::vector<std::unique_ptr<Key>> keys_;  // LeaseRecord::slice_index
  // Keys whose lease reached the threshold, not (yet) decided on by
  // several threads (LeaseRecord::slice_candidate).
  std::vector<LeaseEntry*> candidates_;
  int deciding_threads_ = 0;
  // Every block of slices made (freed with the slicer), and those no key
  // uses (forgotten keys'), reused before a new one is made: a block's
  // decision counts must outlive its key (Admitted), and blocks are few
  // (at most the keys sliced at once). The list is read by Admitted (any
  // thread) and appended to by the reconciler: guarded by blocks_mu_.
  mutable std::mutex blocks_mu_;
  std::vector<std::unique_ptr<LeaseSlices, void (*)(LeaseSlices*)>> blocks_;
  std::vector<LeaseSlices*> spare_;  // reconciler's only
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_LEASE_SLICES_H_
