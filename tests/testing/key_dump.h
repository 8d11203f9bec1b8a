// Every key under a prefix with its type, value and expiry time, read in
// one script call: tests compare such dumps to prove a failing call changed
// nothing (values and TTLs) or that two sets of keys are twins.
#ifndef TOKENLEASE_TESTS_TESTING_KEY_DUMP_H_
#define TOKENLEASE_TESTS_TESTING_KEY_DUMP_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include "testing/redis_server.h"

namespace tokenlease::testing {

// One key as a test compares it.
struct KeyState {
  std::string value;  // "<type>:<value>" (a ZSET: "member score ...")
  int64_t expire_ms;  // PEXPIRETIME: -1 without a TTL

  friend bool operator==(const KeyState&, const KeyState&) = default;
  friend std::ostream& operator<<(std::ostream& os, const KeyState& k) {
    return os << k.value << " (expires " << k.expire_ms << ")";
  }
};

// Every key whose name starts with `prefix` (no glob characters in it),
// keyed by the rest of its name. A test failure if the reply is malformed.
std::map<std::string, KeyState> DumpKeys(SyncClient& client,
                                         const std::string& prefix);

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_KEY_DUMP_H_
