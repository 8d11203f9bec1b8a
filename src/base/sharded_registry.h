// src/base: the synchronisation primitives every mode shares (spin locks
// with RAII guards and thread-safety annotations, the bounded MPSC queue,
// the notification, epoch-based reclamation) and the key registry both the
// local and the leased limiter keep their keys in. Depends on Abseil only.
//
// ShardedRegistry: a concurrent map from key name to Entry whose lookups
// take no lock and no locked instruction. Power-of-two shards, each an
// open-addressing table of (hash tag, Entry*) slots that readers probe with
// plain atomic loads inside an EpochGuard (epoch.h); inserts, removals and
// table growth take the shard's writer spin lock, which readers never wait
// for. An entry or table that a writer unlinks is freed only after every
// reader that could still hold it has left (epoch-based reclamation), so a
// lookup's entry stays valid for the whole of its callback.
//
// Removing an entry while readers may still use it needs the owner's help:
// TryRetire marks the entry dead atomically with its check that the entry
// is reclaimable (e.g. the state cell is replaced by a "dead" value with a
// compare-and-swap), so a decision racing with the removal fails its own
// compare-and-swap, sees the entry dead and looks the key up again. A
// handle's pin taken during that race is caught by the registry's re-check
// of the pins after TryRetire (both are full barriers, so one of the two
// sides sees the other), which then calls Revive.
#ifndef TOKENLEASE_SRC_BASE_SHARDED_REGISTRY_H_
#define TOKENLEASE_SRC_BASE_SHARDED_REGISTRY_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "base/epoch.h"
#include "base/key_hash.h"
#include "base/spin_lock.h"

namespace tokenlease::internal {

// a == b, inline: a lookup compares one name of a few dozen bytes, for
// which a call to memcmp (through the PLT) costs more than the compare.
// Words are read with memcpy (no alignment or aliasing assumption); the
// last word overlaps the one before when the size is not a multiple of 8.
[[gnu::always_inline]] inline bool SameKeyName(std::string_view a,
                                               std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  if (n < 8) {
    if (n >= 4) {  // two 4-byte words, overlapping when n < 8
      auto word4 = [](const char* p) {
        uint32_t w;
        std::memcpy(&w, p, 4);
        return w;
      };
      return word4(a.data()) == word4(b.data()) &&
             word4(a.data() + n - 4) == word4(b.data() + n - 4);
    }
    for (size_t i = 0; i < n; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  auto word = [](const char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  };
  // A branch per word (predicted: names compared after their hash tags
  // matched are almost always equal), so that the loop needs one register
  // besides the pointers: an or-ed difference needs two, and in a decision
  // by name the second was a spill, a store before the decision's
  // compare-and-swap (docs/design.md, "The hot path").
  for (size_t i = 0; i + 8 < n; i += 8) {
    if (word(a.data() + i) != word(b.data() + i)) return false;
  }
  return word(a.data() + n - 8) == word(b.data() + n - 8);
}

// Entry must provide `std::string_view name() const`, stable while the
// entry lives, and `std::atomic<uint32_t> pins`: the handles holding it. A
// handle increments pins inside a lookup (seq_cst: see Resolve in the
// owners) and decrements it with release; reclamation skips pinned entries.
template <typename Entry>
class ShardedRegistry {
 public:
  // What the registry needs from the owner of its entries.
  class Owner {
   public:
    virtual ~Owner() = default;
    // A new entry for `name` (first seen at `now_ns`); never null. Called
    // without any lock held.
    virtual Entry* NewEntry(std::string_view name, int64_t now_ns) = 0;
    // Frees `e`: no reader can reach it any more.
    virtual void DeleteEntry(Entry* e) = 0;
    // If the unpinned entry `e` can be dropped now without changing any
    // decision, marks it dead (atomically with that check, so that a
    // racing decision sees the mark and looks the key up again) and returns
    // true. Called under its shard's writer lock, on the thread that called
    // Reclaim (or, with Growth::kReclaims, an inserting thread).
    virtual bool TryRetire(Entry* e, int64_t now_ns) = 0;
    // Undoes TryRetire: a handle pinned the entry meanwhile.
    virtual void Revive(Entry* e) = 0;
  };

  // When entries are reclaimed without an explicit Reclaim() call.
  enum class Growth : uint8_t {
    // A shard reclaims idle entries when it has doubled since its last
    // sweep (amortised O(1) per insert), and a new key that finds the
    // registry full reclaims before it is refused: TryRetire then runs on
    // the inserting thread.
    kReclaims,
    // Only Reclaim() reclaims (the owner's state is single-threaded); a new
    // key that finds the registry full is refused at once.
    kRefusesWhenFull,
  };

  // `shards` is a power of two (the owner's options validate it).
  ShardedRegistry(Owner* owner, int64_t max_keys, int shards, Growth growth)
      : owner_(owner),
        max_keys_(max_keys),
        growth_(growth),
        shard_mask_(static_cast<size_t>(std::max(shards, 1)) - 1),
        shards_(std::make_unique<Shard[]>(shard_mask_ + 1)) {}

  // Deletes every entry, live or retired. No other thread may use the
  // registry any more.
  ~ShardedRegistry() {
    for (size_t i = 0; i <= shard_mask_; ++i) {
      Shard& shard = shards_[i];
      SpinLockGuard lock(&shard.writer);
      Table* t = shard.table.load(std::memory_order_relaxed);
      if (t != nullptr) {
        for (size_t j = 0; j <= t->mask; ++j) {
          const uint64_t w = t->slots()[j].load(std::memory_order_relaxed);
          if (IsLive(w)) owner_->DeleteEntry(EntryOf(w));
        }
        delete t;
      }
      for (auto& [epoch, e] : shard.retired_entries) owner_->DeleteEntry(e);
      for (auto& [epoch, old] : shard.retired_tables) delete old;
    }
  }
  ShardedRegistry(const ShardedRegistry&) = delete;
  ShardedRegistry& operator=(const ShardedRegistry&) = delete;

  // Calls fn(entry) for `name`, creating the entry if needed, and returns
  // fn's result. The entry cannot be freed during fn (it runs inside an
  // EpochGuard), but it may be retired meanwhile: the owner's decision
  // path detects its own dead mark and calls With again. Calls fn(nullptr)
  // if the key is new and the registry is full (after reclaiming, with
  // Growth::kReclaims). A lookup of an existing key takes no lock and no
  // locked instruction. Always inline: a decision by name is this lookup
  // and fn, and a call between them costs a frame of its own.
  template <typename Fn>
  [[gnu::always_inline]] auto With(std::string_view name, int64_t now_ns,
                                   Fn&& fn) {
    const size_t hash = HashName(name);
    EpochGuard guard;
    Entry* e = Lookup(ShardOf(hash), name, hash);
    // The miss hashes again: the hash and the shard then die in the probe,
    // instead of living (spilled: stores before the decision's
    // compare-and-swap) until its end for a path taken once per key.
    if (e == nullptr) [[unlikely]]
      e = InsertOrReclaim(name, now_ns);
    return fn(e);
  }

  // Calls fn(entry), or fn(nullptr) if `name` is not registered, inside an
  // EpochGuard. Never creates; takes no lock.
  template <typename Fn>
  auto Find(std::string_view name, Fn&& fn) {
    const size_t hash = HashName(name);
    EpochGuard guard;
    return fn(Lookup(ShardOf(hash), name, hash));
  }

  // Calls fn(entry) for every registered entry (an entry retired during the
  // walk may or may not be visited), inside an EpochGuard.
  void ForEach(absl::FunctionRef<void(Entry*)> fn) {
    EpochGuard guard;
    for (size_t i = 0; i <= shard_mask_; ++i) {
      Table* t = shards_[i].table.load(std::memory_order_acquire);
      if (t == nullptr) continue;
      for (size_t j = 0; j <= t->mask; ++j) {
        // Acquire: the entry's construction happens before.
        const uint64_t w = t->slots()[j].load(std::memory_order_acquire);
        if (IsLive(w)) fn(EntryOf(w));
      }
    }
  }

  // Retires every unpinned entry the owner can drop (TryRetire), and frees
  // what earlier calls retired once no reader can hold it; returns how many
  // entries were retired now.
  int64_t Reclaim(int64_t now_ns) {
    int64_t removed = 0;
    for (size_t i = 0; i <= shard_mask_; ++i) {
      SpinLockGuard lock(&shards_[i].writer);
      removed += ReclaimLocked(shards_[i], now_ns);
    }
    FreeRetired();
    return removed;
  }

  // Frees the tables, and with `entries` the entries, retired at least
  // kEpochGrace epochs ago, advancing the epoch if it can (a membarrier
  // system call, see epoch.h). Reclaim calls it; so does an insert that
  // grew a table or swept a shard (entries only with Growth::kReclaims:
  // otherwise the owner's DeleteEntry belongs to the thread that calls
  // Reclaim).
  void FreeRetired(bool entries = true) {
    const uint64_t now = EpochTryAdvance();
    bool left = false;
    for (size_t i = 0; i <= shard_mask_; ++i) {
      Shard& shard = shards_[i];
      std::vector<Entry*> free_entries;
      std::vector<Table*> free_tables;
      {
        SpinLockGuard lock(&shard.writer);
        if (entries) TakeExpired(shard.retired_entries, now, free_entries);
        TakeExpired(shard.retired_tables, now, free_tables);
        left |= !shard.retired_tables.empty();
      }
      for (Entry* e : free_entries) owner_->DeleteEntry(e);
      for (Table* t : free_tables) delete t;
    }
    // relaxed: a hint for FreeRetiredTables, which cleared it before this
    // scan (only ever set here and by inserts, so none is lost).
    if (left) tables_retired_.store(true, std::memory_order_relaxed);
  }

  // With Growth::kRefusesWhenFull, an insert that grows a table leaves the
  // old one for the owner's background thread: FreeRetired runs a
  // membarrier system call, which a decision must not. Cheap when nothing
  // waits (one relaxed load).
  void FreeRetiredTables() {
    // relaxed: see tables_retired_.
    if (tables_retired_.load(std::memory_order_relaxed) &&
        tables_retired_.exchange(false, std::memory_order_relaxed)) {
      FreeRetired(false);
    }
  }

  // Grows every table more than 40 % full (tombstones count) on the
  // calling thread, meant to be the owner's background thread: an insert
  // on a deciding thread then seldom finds its table past 60 % and grows it
  // itself (allocating, faulting pages and rehashing every key under the
  // shard's lock). The new table is allocated and the keys' hashes
  // computed outside the lock; under it, only the slot words are copied
  // (and keys inserted meanwhile hashed). Returns the tables grown.
  int GrowAhead() {
    int grown = 0;
    // Held throughout: no entry seen in a snapshot is freed (and its
    // address reused for another key) before the copy is done.
    EpochGuard guard;
    for (size_t i = 0; i <= shard_mask_; ++i) {
      grown += GrowAheadShard(shards_[i]) ? 1 : 0;
    }
    return grown;
  }

  // Keys registered now.
  int64_t size() const {
    // Relaxed: a count; see size_.
    return size_.load(std::memory_order_relaxed);
  }
  int64_t max_keys() const { return max_keys_; }

 private:
  // One slot, one word: the entry's address in the low 48 bits (x86-64
  // user-space addresses fit: Pack checks) and 16 bits of its hash above
  // them, so that most mismatches read no entry. 0: never used;
  // kTombstone: removed.
  using Slot = std::atomic<uint64_t>;
  static constexpr uint64_t kTombstone = 1;
  static constexpr uint64_t kAddressMask = (uint64_t{1} << 48) - 1;
  // The slots follow the header in the same block: a lookup loads the mask
  // and a slot from one block, one load fewer (the slots pointer) on every
  // decision by name. Made by Table::Make, freed by `delete`.
  struct Table {
    static Table* Make(size_t capacity) {
      void* block = ::operator new(sizeof(Table) + capacity * sizeof(Slot));
      Table* t = new (block) Table(capacity);
      std::uninitialized_value_construct_n(t->slots(), capacity);  // all 0
      return t;
    }
    // Slots are trivially destructible: freeing the block ends them.
    static void operator delete(void* block) { ::operator delete(block); }
    Slot* slots() {
      return std::launder(reinterpret_cast<Slot*>(
          reinterpret_cast<std::byte*>(this) + sizeof(Table)));
    }
    const Slot* slots() const {
      return std::launder(reinterpret_cast<const Slot*>(
          reinterpret_cast<const std::byte*>(this) + sizeof(Table)));
    }
    const size_t mask;

   private:
    explicit Table(size_t capacity) : mask(capacity - 1) {}
  };
  static_assert(std::is_trivially_destructible_v<Slot>);
  static_assert(sizeof(Table) % alignof(Slot) == 0);
  struct alignas(64) Shard {
    // Readers: acquire loads; writers: under `writer`.
    std::atomic<Table*> table{nullptr};
    SpinLock writer;
    size_t live ABSL_GUARDED_BY(writer) = 0;  // entries in `table`
    size_t used ABSL_GUARDED_BY(writer) = 0;  // live + tombstones
    // Growth::kReclaims: sweep when the shard grows past this many keys.
    size_t next_sweep ABSL_GUARDED_BY(writer) = 64;
    std::vector<std::pair<uint64_t, Entry*>> retired_entries
        ABSL_GUARDED_BY(writer);
    std::vector<std::pair<uint64_t, Table*>> retired_tables
        ABSL_GUARDED_BY(writer);
  };

  static uint64_t TagOf(size_t hash) { return ((hash >> 32) & 0xffff) << 48; }
  static uint64_t Pack(Entry* e, size_t hash) {
    const uint64_t address = reinterpret_cast<uintptr_t>(e);
    if ((address & ~kAddressMask) != 0) [[unlikely]] {
      std::fprintf(stderr,
                   "tokenlease: a key entry was allocated above 2^48 "
                   "(%p); the registry needs 48-bit addresses\n",
                   static_cast<void*>(e));
      std::abort();
    }
    return address | TagOf(hash);
  }
  static Entry* EntryOf(uint64_t word) {
    return reinterpret_cast<Entry*>(word & kAddressMask);
  }
  static bool IsLive(uint64_t word) { return word > kTombstone; }

  // Inline (key_hash.h): absl::Hash is a call through the PLT into a
  // shared library on every decision by name.
  [[gnu::always_inline]] static size_t HashName(std::string_view s) {
    return HashKeyName(s);
  }
  // The high bits pick the shard; the low bits the slot.
  Shard& ShardOf(size_t hash) { return shards_[(hash >> 52) & shard_mask_]; }

  // Readers, inside an EpochGuard.
  [[gnu::always_inline]] static Entry* Lookup(Shard& shard,
                                              std::string_view name,
                                              size_t hash) {
    // Acquire: the table's slots as published.
    const Table* t = shard.table.load(std::memory_order_acquire);
    if (t == nullptr) return nullptr;
    const uint64_t tag = TagOf(hash);
    for (size_t i = hash & t->mask, n = 0; n <= t->mask;
         i = (i + 1) & t->mask, ++n) {
      // Acquire: the entry's construction happens before.
      const uint64_t w = t->slots()[i].load(std::memory_order_acquire);
      if (w == 0) return nullptr;
      if ((w & ~kAddressMask) == tag && w != kTombstone) {
        Entry* e = EntryOf(w);
        if (SameKeyName(e->name(), name)) return e;
      }
    }
    return nullptr;
  }

  // With's miss: Insert, and when the registry is full and owns
  // reclamation, a Reclaim across all shards and one more try. Out of line
  // so that the lookup's frame stays small.
  [[gnu::noinline]] Entry* InsertOrReclaim(std::string_view name,
                                           int64_t now_ns) {
    const size_t hash = HashName(name);
    Shard& shard = ShardOf(hash);
    Entry* e = Insert(shard, name, hash, now_ns);
    if (e == nullptr && growth_ == Growth::kReclaims) {
      Reclaim(now_ns);
      e = Insert(shard, name, hash, now_ns);
    }
    return e;
  }

  // Writers. Finds or creates `name`; null if the registry is full. The new
  // entry is built before the writer lock is taken.
  Entry* Insert(Shard& shard, std::string_view name, size_t hash,
                int64_t now_ns) {
    Entry* fresh = owner_->NewEntry(name, now_ns);
    Entry* result = nullptr;
    bool used_fresh = false;
    bool retired = false;
    {
      SpinLockGuard lock(&shard.writer);
      const size_t before =
          shard.retired_entries.size() + shard.retired_tables.size();
      result = InsertLocked(shard, name, hash, now_ns, fresh, &used_fresh);
      retired =
          shard.retired_entries.size() + shard.retired_tables.size() > before;
    }
    if (!used_fresh) owner_->DeleteEntry(fresh);  // never visible to readers
    // A grown table or a sweep retired something: free what has aged
    // (amortised: tables double, sweeps follow doublings). kRefusesWhenFull
    // (a background thread owns reclamation): left to FreeRetiredTables,
    // so that a decision makes no system call.
    if (retired) {
      // relaxed: a hint; the table itself is on the retired list.
      tables_retired_.store(true, std::memory_order_relaxed);
      if (growth_ == Growth::kReclaims) FreeRetired(true);
    }
    return result;
  }

  Entry* InsertLocked(Shard& shard, std::string_view name, size_t hash,
                      int64_t now_ns, Entry* fresh, bool* used_fresh)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.writer) {
    if (Entry* e = Lookup(shard, name, hash)) return e;  // lost a race
    const bool reclaims = growth_ == Growth::kReclaims;
    if (reclaims && shard.live >= shard.next_sweep) {
      ReclaimLocked(shard, now_ns);
      shard.next_sweep = std::max<size_t>(64, 2 * shard.live);
    }
    // A slot is reserved before the insert with a compare-and-swap that
    // never takes size_ past max_keys, so the bound is exact and size()
    // never reads above it; after a reclaim the reservation is tried again
    // (other shards may have taken the freed slots meanwhile).
    for (bool reclaimed = false;;) {
      if (Reserve()) break;
      if (!reclaims || reclaimed || ReclaimLocked(shard, now_ns) == 0) {
        return nullptr;
      }
      reclaimed = true;
    }
    Table* t = shard.table.load(std::memory_order_relaxed);
    // At most 60 % full (tombstones count): a probe finds an empty slot
    // within a few steps.
    if (t == nullptr || 5 * (shard.used + 1) > 3 * (t->mask + 1)) {
      t = Grow(shard, t);
    }
    for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
      const uint64_t w = t->slots()[i].load(std::memory_order_relaxed);
      if (!IsLive(w)) {
        if (w == 0) ++shard.used;
        // Release: publishes the entry's construction with it.
        t->slots()[i].store(Pack(fresh, hash), std::memory_order_release);
        ++shard.live;
        *used_fresh = true;
        return fresh;
      }
    }
  }

  // Capacity for `live` entries: at most a quarter full, so that the
  // background thread's growth at 40 % (GrowAhead) comes long before an
  // insert's at 60 %.
  static size_t CapacityFor(size_t live) {
    size_t capacity = 16;
    while (capacity < 4 * (live + 1)) capacity *= 2;
    return capacity;
  }

  // Replaces the shard's table by a new one with its live entries (without
  // tombstones); the old one is retired (readers may still probe it).
  // `hashes`, if given, holds the hash of each slot word of `old` in
  // `words` (GrowAhead's snapshot): a slot that still holds that word is
  // not hashed again.
  Table* Grow(Shard& shard, Table* old, Table* t = nullptr,
              const std::vector<uint64_t>* words = nullptr,
              const std::vector<size_t>* hashes = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.writer) {
    if (t == nullptr) t = Table::Make(CapacityFor(shard.live));
    if (old != nullptr) {
      for (size_t j = 0; j <= old->mask; ++j) {
        const uint64_t w = old->slots()[j].load(std::memory_order_relaxed);
        if (!IsLive(w)) continue;
        const size_t hash = words != nullptr && (*words)[j] == w
                                ? (*hashes)[j]
                                : HashName(EntryOf(w)->name());
        size_t i = hash & t->mask;
        while (t->slots()[i].load(std::memory_order_relaxed) != 0) {
          i = (i + 1) & t->mask;
        }
        t->slots()[i].store(w, std::memory_order_relaxed);
      }
      shard.retired_tables.emplace_back(EpochNow(), old);
    }
    shard.used = shard.live;
    // Release: the new table's slots, as filled above.
    shard.table.store(t, std::memory_order_release);
    return t;
  }

  // GrowAhead for one shard, inside the caller's EpochGuard.
  bool GrowAheadShard(Shard& shard) {
    Table* old;
    size_t live;
    {
      SpinLockGuard lock(&shard.writer);
      old = shard.table.load(std::memory_order_relaxed);
      if (old == nullptr || 5 * shard.used <= 2 * (old->mask + 1)) {
        return false;
      }
      live = shard.live;
    }
    // Outside the lock: the allocation (and its page faults), and a hash
    // of every key, whose entries are likely out of cache.
    auto* t = Table::Make(CapacityFor(live));
    std::vector<uint64_t> words(old->mask + 1);
    std::vector<size_t> hashes(old->mask + 1);
    for (size_t j = 0; j <= old->mask; ++j) {
      // Acquire: the entry's construction happens before (its name is read).
      words[j] = old->slots()[j].load(std::memory_order_acquire);
      if (IsLive(words[j])) hashes[j] = HashName(EntryOf(words[j])->name());
    }
    {
      SpinLockGuard lock(&shard.writer);
      if (shard.table.load(std::memory_order_relaxed) == old &&
          CapacityFor(shard.live) <= t->mask + 1) {
        Grow(shard, old, t, &words, &hashes);
        t = nullptr;
      }
    }
    if (t != nullptr) {
      delete t;  // an insert grew it meanwhile, or it filled up: next time
      return false;
    }
    // relaxed: a hint; the table itself is on the retired list.
    tables_retired_.store(true, std::memory_order_relaxed);
    return true;
  }

  int64_t ReclaimLocked(Shard& shard, int64_t now_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.writer) {
    Table* t = shard.table.load(std::memory_order_relaxed);
    if (t == nullptr) return 0;
    int64_t removed = 0;
    for (size_t j = 0; j <= t->mask; ++j) {
      const uint64_t w = t->slots()[j].load(std::memory_order_relaxed);
      if (!IsLive(w)) continue;
      Entry* e = EntryOf(w);
      // Acquire: pairs with a handle's release decrement of pins.
      if (e->pins.load(std::memory_order_acquire) != 0 ||
          !owner_->TryRetire(e, now_ns)) {
        continue;
      }
      // seq_cst: TryRetire's mark (a locked read-modify-write) came first;
      // a handle pinned in between is seen here, or its owner sees the mark.
      if (e->pins.load(std::memory_order_seq_cst) != 0) {
        owner_->Revive(e);
        continue;
      }
      // Relaxed: a reader that loads the tombstone reads nothing through it.
      t->slots()[j].store(kTombstone, std::memory_order_relaxed);
      --shard.live;
      shard.retired_entries.emplace_back(EpochNow(), e);
      ++removed;
    }
    size_.fetch_sub(removed, std::memory_order_relaxed);
    return removed;
  }

  // Takes one of max_keys_ slots, or returns false if none is free.
  bool Reserve() {
    // Relaxed: a count; the compare-and-swap keeps the bound.
    int64_t n = size_.load(std::memory_order_relaxed);
    while (n < max_keys_) {
      if (size_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  template <typename T>
  static void TakeExpired(std::vector<std::pair<uint64_t, T*>>& retired,
                          uint64_t now, std::vector<T*>& out) {
    size_t keep = 0;
    for (auto& item : retired) {
      if (item.first + kEpochGrace <= now) {
        out.push_back(item.second);
      } else {
        retired[keep++] = item;
      }
    }
    retired.resize(keep);
  }

  Owner* const owner_;
  const int64_t max_keys_;
  const Growth growth_;
  const size_t shard_mask_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<int64_t> size_{0};
  // A table was retired and may not be freed yet (FreeRetiredTables).
  std::atomic<bool> tables_retired_{false};
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_SHARDED_REGISTRY_H_
