#include "testing/replies.h"

#include <utility>

namespace tokenlease::testing {

using internal::RedisReply;

RedisReply IntegerReply(int64_t v) {
  RedisReply r;
  r.type = RedisReply::Type::kInteger;
  r.integer = v;
  return r;
}

RedisReply StringReply(std::string s) {
  RedisReply r;
  r.type = RedisReply::Type::kString;
  r.str = std::move(s);
  return r;
}

RedisReply ArrayReply(std::vector<RedisReply> elements) {
  RedisReply r;
  r.type = RedisReply::Type::kArray;
  r.elements = std::move(elements);
  return r;
}

RedisReply AcquireReply(int64_t granted, int64_t remaining,
                        int64_t retry_after_us, int64_t reset_after_us,
                        int64_t now_us, int64_t wait_us) {
  std::vector<RedisReply> elements;
  for (int64_t v :
       {granted, remaining, retry_after_us, reset_after_us, now_us, wait_us}) {
    elements.push_back(IntegerReply(v));
  }
  return ArrayReply(std::move(elements));
}

}  // namespace tokenlease::testing
