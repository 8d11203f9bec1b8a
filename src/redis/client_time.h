// Small helpers of the client thread's files: the steady clock, libevent's
// timeval, hiredis's error text.
#ifndef TOKENLEASE_SRC_REDIS_CLIENT_TIME_H_
#define TOKENLEASE_SRC_REDIS_CLIENT_TIME_H_

#include <hiredis/async.h>
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace tokenlease::internal {

inline int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline timeval ToTimeval(int64_t ns) {
  ns = std::max<int64_t>(ns, 0);
  timeval tv;
  tv.tv_sec = ns / 1'000'000'000;
  tv.tv_usec = (ns % 1'000'000'000) / 1000;
  return tv;
}

// hiredis copies the socket error into ac->errstr only after some callbacks.
inline const char* ErrorText(const redisAsyncContext* ac,
                             const char* fallback) {
  if (ac->errstr != nullptr && ac->errstr[0] != '\0') return ac->errstr;
  if (ac->c.errstr[0] != '\0') return ac->c.errstr;
  return fallback;
}

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_CLIENT_TIME_H_
