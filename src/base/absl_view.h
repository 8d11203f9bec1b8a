// Debian's Abseil is built with its own absl::string_view (not an alias of
// std::string_view), and absl::StrCat and absl::Hash take only that. The
// library's API and internals use std::string_view; this is the one
// conversion.
#ifndef TOKENLEASE_SRC_BASE_ABSL_VIEW_H_
#define TOKENLEASE_SRC_BASE_ABSL_VIEW_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace tokenlease::internal {

constexpr absl::string_view AbslView(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_ABSL_VIEW_H_
