// KeyName: a key's name kept inside its entry when it is short (most keys:
// "user:12345", an IP, an API key id), on the heap when it is long, so that
// an entry built in a SpareBlocks block allocates nothing more.
#ifndef TOKENLEASE_SRC_BASE_KEY_NAME_H_
#define TOKENLEASE_SRC_BASE_KEY_NAME_H_

#include <cstddef>
#include <cstring>
#include <string_view>

namespace tokenlease::internal {

class KeyName {
 public:
  // Names up to this many bytes need no allocation.
  static constexpr size_t kInlineBytes = 48;

  explicit KeyName(std::string_view name) : size_(name.size()) {
    char* to = inline_;
    if (size_ > kInlineBytes) to = heap_ = new char[size_];
    if (size_ > 0) std::memcpy(to, name.data(), size_);
  }
  ~KeyName() {
    if (size_ > kInlineBytes) delete[] heap_;
  }
  KeyName(const KeyName&) = delete;
  KeyName& operator=(const KeyName&) = delete;

  std::string_view view() const {
    return {size_ > kInlineBytes ? heap_ : inline_, size_};
  }

 private:
  const size_t size_;
  union {
    char inline_[kInlineBytes];
    char* heap_;
  };
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_KEY_NAME_H_
