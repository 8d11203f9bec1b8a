// NOT PART OF THE API: what the handles of tokenlease's public headers
// (Limiter::Handle, LeasedLimiter::Handle) are built from. Names here may
// change without notice.
#ifndef TOKENLEASE_INTERNAL_KEY_PIN_H_
#define TOKENLEASE_INTERNAL_KEY_PIN_H_

#include <utility>

namespace tokenlease::internal {

// One pin on a registered key of type `Entry`: a key is never evicted while
// a pin on it exists. A copy is another pin (the library's AddPin: one
// relaxed increment, as the copied pin keeps the key alive); a move hands
// the pin over; the destructor gives it back (RemovePin: a release
// decrement, so every use happens before an eviction that sees no pin).
// The library defines AddPin and RemovePin for each Entry it uses.
template <typename Entry>
class KeyPin {
 public:
  KeyPin() = default;
  KeyPin(const KeyPin& other) : entry_(other.entry_) { AddPin(entry_); }
  KeyPin& operator=(const KeyPin& other) {
    if (this != &other) {
      AddPin(other.entry_);
      RemovePin(entry_);
      entry_ = other.entry_;
    }
    return *this;
  }
  KeyPin(KeyPin&& other) noexcept
      : entry_(std::exchange(other.entry_, nullptr)) {}
  KeyPin& operator=(KeyPin&& other) noexcept {
    if (this != &other) {
      RemovePin(entry_);
      entry_ = std::exchange(other.entry_, nullptr);
    }
    return *this;
  }
  ~KeyPin() { RemovePin(entry_); }

  // True if this pins a key (default-constructed and moved-from ones do
  // not).
  bool valid() const { return entry_ != nullptr; }

 protected:
  // Takes over a pin the caller already holds on `pinned`.
  explicit KeyPin(Entry* pinned) : entry_(pinned) {}

  Entry* entry_ = nullptr;

 private:
  // Both do nothing for null.
  static void AddPin(Entry* e);
  static void RemovePin(Entry* e);
};

// A value that a move leaves at T{} in the moved-from object (a copy keeps
// it): for fields that must agree with a KeyPin's entry being gone.
template <typename T>
struct ResetOnMove {
  ResetOnMove() = default;
  explicit ResetOnMove(T v) : value(v) {}
  ResetOnMove(const ResetOnMove&) = default;
  ResetOnMove& operator=(const ResetOnMove&) = default;
  ResetOnMove(ResetOnMove&& other) noexcept
      : value(std::exchange(other.value, T{})) {}
  ResetOnMove& operator=(ResetOnMove&& other) noexcept {
    value = std::exchange(other.value, T{});
    return *this;
  }
  T value{};
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_INTERNAL_KEY_PIN_H_
