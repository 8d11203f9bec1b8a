// Hand-made Redis replies for tests that drive reply parsing or the lease
// book without a server: the shapes docs/lua-protocol.md gives.
#ifndef TOKENLEASE_TESTS_TESTING_REPLIES_H_
#define TOKENLEASE_TESTS_TESTING_REPLIES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "redis/reply.h"

namespace tokenlease::testing {

// An integer reply (release.lua's answer: the tokens returned).
internal::RedisReply IntegerReply(int64_t v);
// A bulk string reply.
internal::RedisReply StringReply(std::string s);
// An array reply of `elements`.
internal::RedisReply ArrayReply(std::vector<internal::RedisReply> elements);
// acquire.lua's answer: {granted, remaining, retry_after_us,
// reset_after_us, now_us, wait_us}.
internal::RedisReply AcquireReply(int64_t granted, int64_t remaining,
                                  int64_t retry_after_us,
                                  int64_t reset_after_us, int64_t now_us,
                                  int64_t wait_us = 0);

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_REPLIES_H_
