// A 16-byte state word updated with one compare-and-swap (cmpxchg16b).
#ifndef TOKENLEASE_SRC_LOCAL_ATOMIC_CELL_H_
#define TOKENLEASE_SRC_LOCAL_ATOMIC_CELL_H_

#include <cstdint>

namespace tokenlease::internal {

// The two 64-bit halves of a cell. Each algorithm gives them a meaning
// (docs/design.md, "State words").
struct CellValue {
  int64_t a = 0;
  int64_t b = 0;

  friend bool operator==(const CellValue&, const CellValue&) = default;
};

// True if an aligned 16-byte SSE load is a single atomic access on this CPU:
// Intel (SDM vol. 3A, 9.1.1) and AMD guarantee it on every processor that
// supports AVX. Read once at start-up; false before that, and always false
// under ThreadSanitizer, which cannot see inline-assembly loads.
extern const bool kSnapshotLoads;

// A lock-free 16-byte cell. Every write is a 16-byte CAS that compares
// against the value read, so a decision computed from a torn read can never
// be committed. Reads are one 16-byte load where kSnapshotLoads holds, and
// otherwise two relaxed 8-byte loads that may be torn; a caller that decides
// *not* to write (a denial) after such a read confirms it with Validate(),
// itself a CAS, so denials are never based on a torn read either. With
// snapshot loads, denials write nothing: no locked instruction and no
// cache-line ownership, which matters when many threads are denied on one
// hot key.
//
// Memory order: relaxed for the loads, and the CAS is a full barrier on x86
// (lock cmpxchg16b). Relaxed suffices because a cell publishes no other
// memory: its value is the whole state, and linearizability comes from the
// CAS, not from ordering with other locations.
class alignas(16) AtomicCell {
 public:
  AtomicCell() = default;
  explicit AtomicCell(CellValue v) { Store(v); }
  AtomicCell(const AtomicCell&) = delete;
  AtomicCell& operator=(const AtomicCell&) = delete;

  // May be torn; see the class comment.
  CellValue LoadRelaxed() const {
    return CellValue{__atomic_load_n(&a_, __ATOMIC_RELAXED),
                     __atomic_load_n(&b_, __ATOMIC_RELAXED)};
  }

  // Loads the cell; returns true if `out` is an untorn snapshot (so a
  // decision that writes nothing needs no Validate()).
  bool Load(CellValue& out) const {
#if !defined(__SANITIZE_THREAD__)
    if (kSnapshotLoads) [[likely]] {
      long long __attribute__((vector_size(16))) v;
      // volatile + "m": one movdqa, never split, merged or hoisted.
      asm volatile("movdqa %1, %0" : "=x"(v) : "m"(*Raw()));
      out = CellValue{v[0], v[1]};
      return true;
    }
#endif
    out = LoadRelaxed();
    return false;
  }

  // Replaces `expected` with `desired` atomically. On failure `expected`
  // receives the current, untorn value.
  bool CompareExchange(CellValue& expected, CellValue desired) {
#if !defined(__SANITIZE_THREAD__)
    // The instruction itself, with register operands: the builtin passes
    // its 128-bit operands through the stack, and those stores must drain
    // before the locked instruction can complete (measured: the builtin's
    // loop spilled and reloaded both halves on every decision). On failure
    // rdx:rax receive the current value, which is what `expected` must get.
    bool swapped;
    asm volatile("lock cmpxchg16b %[cell]"
                 : "=@ccz"(swapped), [cell] "+m"(*Raw()), "+a"(expected.a),
                   "+d"(expected.b)
                 : "b"(desired.a), "c"(desired.b)
                 : "memory");
    return swapped;
#else  // ThreadSanitizer cannot see inline assembly; it sees the builtin.
    const unsigned __int128 want = Pack(expected);
    const unsigned __int128 prev =
        __sync_val_compare_and_swap(Raw(), want, Pack(desired));
    if (prev == want) return true;
    expected = Unpack(prev);
    return false;
#endif
  }

  // True if the cell still holds `seen` (an atomic 16-byte read-compare);
  // otherwise `seen` receives the current value.
  bool Validate(CellValue& seen) { return CompareExchange(seen, seen); }

  // True if the low (high) half holds `a` (`b`). seq_cst: the key
  // registry's dead mark is checked after a pin, as one side of a
  // store-load pair.
  bool LowHalfIs(int64_t a) const {
    return __atomic_load_n(&a_, __ATOMIC_SEQ_CST) == a;
  }
  bool HighHalfIs(int64_t b) const {
    return __atomic_load_n(&b_, __ATOMIC_SEQ_CST) == b;
  }

  // Plain store for initialisation before the cell is shared, and for
  // updates made under the owning key's lock.
  void Store(CellValue v) {
    __atomic_store_n(&a_, v.a, __ATOMIC_RELAXED);
    __atomic_store_n(&b_, v.b, __ATOMIC_RELAXED);
  }

 private:
  static unsigned __int128 Pack(CellValue v) {
    return (static_cast<unsigned __int128>(static_cast<uint64_t>(v.b)) << 64) |
           static_cast<uint64_t>(v.a);
  }
  static CellValue Unpack(unsigned __int128 x) {
    return CellValue{static_cast<int64_t>(static_cast<uint64_t>(x)),
                     static_cast<int64_t>(static_cast<uint64_t>(x >> 64))};
  }
  unsigned __int128* Raw() { return reinterpret_cast<unsigned __int128*>(&a_); }
  const unsigned __int128* Raw() const {
    return reinterpret_cast<const unsigned __int128*>(&a_);
  }

  int64_t a_ = 0;  // low half
  int64_t b_ = 0;  // high half
};

static_assert(sizeof(AtomicCell) == 16);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LOCAL_ATOMIC_CELL_H_
