// Division by a divisor fixed at spec-compile time, without a divide
// instruction (64-bit div costs 35-90 cycles on the target machines; this
// costs one multiply and one shift).
#ifndef TOKENLEASE_SRC_LOCAL_FAST_DIV_H_
#define TOKENLEASE_SRC_LOCAL_FAST_DIV_H_

#include <cstdint>

namespace tokenlease::internal {

// floor(n / d) for 0 <= n < 2^63 and a fixed 1 <= d < 2^63, by the
// round-up reciprocal method (Granlund & Montgomery 1994). For d a power of
// two it is a shift. Otherwise, with s = ceil(log2 d) and
// m = floor(2^(63+s) / d) + 1, m*d lies in (2^(63+s), 2^(63+s) + 2^s],
// which makes floor(n*m / 2^(63+s)) exact for every n < 2^63; m < 2^64
// because d > 2^(s-1), and 63 + s >= 64 because d >= 3, so the quotient is
// the high word of one 64x64 multiply shifted right by s - 1. Checked
// against `/` in tests/fast_div_test.cc.
class FastDivisor {
 public:
  FastDivisor() : FastDivisor(1) {}
  explicit FastDivisor(int64_t d) : d_(d) {
    const uint64_t ud = static_cast<uint64_t>(d);
    // s = ceil(log2 d), in [0, 63].
    const int s = d <= 1 ? 0 : 64 - __builtin_clzll(ud - 1);
    if ((ud & (ud - 1)) == 0) {
      pow2_ = true;
      shift_ = s;
      m_ = 0;
    } else {
      pow2_ = false;
      shift_ = s - 1;
      m_ = static_cast<uint64_t>(
               (static_cast<unsigned __int128>(1) << (63 + s)) / ud) +
           1;
    }
  }

  int64_t divisor() const { return d_; }

  // floor(n / d); requires 0 <= n.
  int64_t Div(int64_t n) const {
    const uint64_t un = static_cast<uint64_t>(n);
    if (pow2_) return static_cast<int64_t>(un >> shift_);
    const uint64_t hi =
        static_cast<uint64_t>((static_cast<unsigned __int128>(un) * m_) >> 64);
    return static_cast<int64_t>(hi >> shift_);
  }
  // ceil(n / d); requires 0 <= n <= 2^63 - d.
  int64_t DivCeil(int64_t n) const { return Div(n + d_ - 1); }
  // n mod d given q = Div(n).
  int64_t Rem(int64_t n, int64_t q) const { return n - q * d_; }

 private:
  int64_t d_;
  uint64_t m_;
  int shift_;
  bool pow2_;
};

// Saturating helper: clamps a 128-bit intermediate into [0, INT64_MAX].
inline int64_t ClampNonNegative(__int128 x) {
  if (x < 0) return 0;
  if (x > INT64_MAX) return INT64_MAX;
  return static_cast<int64_t>(x);
}

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LOCAL_FAST_DIV_H_
