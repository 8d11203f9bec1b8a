// An owned copy of a Redis reply. hiredis replies live only for the duration
// of their callback; this outlives it and can cross threads.
#ifndef TOKENLEASE_SRC_REDIS_REPLY_H_
#define TOKENLEASE_SRC_REDIS_REPLY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tokenlease::internal {

struct RedisReply {
  enum class Type : uint8_t {
    kNil,
    kInteger,
    kString,
    kStatus,
    kError,
    kArray
  };
  Type type = Type::kNil;
  int64_t integer = 0;
  std::string str;                   // kString, kStatus, kError (the message)
  std::vector<RedisReply> elements;  // kArray

  bool is_error() const { return type == Type::kError; }
  // "NOSCRIPT No matching script..." -> true for prefix "NOSCRIPT".
  bool ErrorStartsWith(const char* prefix) const;
  // For logs and error messages: "42", "OK", "[1, 2]", "(nil)", "ERR ...".
  std::string DebugString() const;
};

// Converts a hiredis reply (const redisReply*, passed as void* so this header
// needs no hiredis include).
RedisReply CopyReply(const void* hiredis_reply);

// An array reply of integers, e.g. the acquire script's reply, as int64s;
// InvalidArgument naming `what` if the shape is different.
absl::StatusOr<std::vector<int64_t>> IntegerArray(const RedisReply& reply,
                                                  const char* what);

// The most elements an array reply may announce. hiredis allocates what a
// multi-bulk header announces before reading a single element, and its
// own cap is 2^32 - 1: a corrupt or hostile "*1700000000" would allocate
// 13.6 GB (found by tests/fuzz/reply_fuzzer.cc). Our largest reply is a
// batch of 64 items of 6 integers.
inline constexpr int kMaxReplyElements = 1 << 20;

// Sets `reader`'s (a redisReader*, as void* so this header needs no
// hiredis include) cap on array headers to kMaxReplyElements (hiredis
// 1.x's maxelements): a larger one fails the reader with "Multi-bulk
// length out of range", and a connection then closes.
void LimitReplyArrays(void* reader);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_REPLY_H_
