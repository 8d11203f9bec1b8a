// HashKeyName: the key registry's hash of a key's name, inline. A decision
// by name hashes its key every time; absl::Hash of a string_view is a call
// into a shared library (through the PLT) plus a call of its own wrapper,
// about a fifth of a local decision by name (perf, issue "Many cores on one
// hot key"). This is the same construction inlined: wyhash's folded 64x64
// -> 128-bit multiply over 16 bytes per step (absl's LowLevelHash is a
// variant of it), seeded per process.
#ifndef TOKENLEASE_SRC_BASE_KEY_HASH_H_
#define TOKENLEASE_SRC_BASE_KEY_HASH_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tokenlease::internal {
namespace key_hash_internal {

// Its address seeds the hash: different in every process where the
// executable is position-independent and the address space randomised (as
// absl::Hash's seed), so that which names collide cannot be learnt from
// another process. An address needs no initialisation: a Limiter built
// during static initialisation hashes as every later call does.
inline const char kSeedAnchor = 0;

inline uint64_t Seed() {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&kSeedAnchor));
}

// wyhash's constants (odd, about half the bits set).
inline constexpr uint64_t kK0 = 0xa0761d6478bd642full;
inline constexpr uint64_t kK1 = 0xe7037ed1a0b428dbull;
inline constexpr uint64_t kK2 = 0x8ebc6af09c88c6e3ull;

// The two halves of a * b, folded: every bit of the result depends on
// every bit of both inputs.
inline uint64_t Mix(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

// Unaligned little-endian loads, without aliasing assumptions.
inline uint64_t Read8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
inline uint64_t Read4(const char* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

}  // namespace key_hash_internal

// A 64-bit hash of `s` whose every bit is usable (the registry takes its
// shard from the top bits, its tag from bits 32-47 and its slot from the
// bottom). Equal names hash equally for the life of the process; the value
// differs between processes. Always inline: it is most of a lookup's
// arithmetic, and a call would cost a frame on every decision by name.
[[gnu::always_inline]] inline uint64_t HashKeyName(std::string_view s) {
  using namespace key_hash_internal;  // NOLINT(build/namespaces): local
  const char* p = s.data();
  const size_t n = s.size();
  // The seed enters both factors of every multiply, so that no input can
  // zero one of them without knowing it (a zero factor would drop
  // everything hashed before).
  uint64_t h = Seed() ^ kK0;
  uint64_t a;
  uint64_t b;
  if (n <= 16) [[likely]] {
    if (n >= 8) {
      a = Read8(p);
      b = Read8(p + n - 8);
    } else if (n >= 4) {
      a = Read4(p);
      b = Read4(p + n - 4);
    } else if (n > 0) {
      a = (uint64_t{static_cast<unsigned char>(p[0])} << 16) |
          (uint64_t{static_cast<unsigned char>(p[n >> 1])} << 8) |
          static_cast<unsigned char>(p[n - 1]);
      b = 0;
    } else {
      a = b = 0;
    }
  } else {
    size_t i = 0;
    if (n > 32) {
      // 32 bytes per step in two lanes whose multiplies overlap.
      uint64_t h2 = h ^ kK2;
      for (; i + 32 < n; i += 32) {
        h = Mix(Read8(p + i) ^ kK1 ^ h, Read8(p + i + 8) ^ kK2 ^ h);
        h2 = Mix(Read8(p + i + 16) ^ kK1 ^ h2, Read8(p + i + 24) ^ kK2 ^ h2);
      }
      h ^= h2;
    }
    if (i + 16 < n) h = Mix(Read8(p + i) ^ kK1 ^ h, Read8(p + i + 8) ^ kK2 ^ h);
    // The last 16 bytes (overlapping what came before unless n is a
    // multiple of 16: the length, below, tells such names apart).
    a = Read8(p + n - 16);
    b = Read8(p + n - 8);
  }
  return Mix(kK0 ^ n, Mix(a ^ kK1 ^ h, b ^ kK2 ^ h));
}

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_KEY_HASH_H_
