#include "redis/reply.h"

#include <hiredis/hiredis.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tokenlease::internal {

bool RedisReply::ErrorStartsWith(const char* prefix) const {
  return type == Type::kError &&
         str.compare(0, std::strlen(prefix), prefix) == 0;
}

std::string RedisReply::DebugString() const {
  switch (type) {
    case Type::kNil:
      return "(nil)";
    case Type::kInteger:
      return absl::StrCat(integer);
    case Type::kString:
    case Type::kStatus:
    case Type::kError:
      return str;
    case Type::kArray: {
      std::vector<std::string> parts;
      parts.reserve(elements.size());
      for (const auto& e : elements) parts.push_back(e.DebugString());
      return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
    }
  }
  return "(unknown)";
}

RedisReply CopyReply(const void* hiredis_reply) {
  const auto* r = static_cast<const redisReply*>(hiredis_reply);
  RedisReply out;
  if (r == nullptr) return out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = RedisReply::Type::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) {
        out.elements.push_back(CopyReply(r->element[i]));
      }
      break;
    default:
      out.type = RedisReply::Type::kNil;
      break;
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> IntegerArray(const RedisReply& reply,
                                                  const char* what) {
  if (reply.type != RedisReply::Type::kArray) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": expected an array of integers, got ", reply.DebugString()));
  }
  std::vector<int64_t> out;
  out.reserve(reply.elements.size());
  for (const auto& e : reply.elements) {
    if (e.type != RedisReply::Type::kInteger) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": expected an array of integers, got ", reply.DebugString()));
    }
    out.push_back(e.integer);
  }
  return out;
}

void LimitReplyArrays(void* reader) {
  static_cast<redisReader*>(reader)->maxelements = kMaxReplyElements;
}

}  // namespace tokenlease::internal
