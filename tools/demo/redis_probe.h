// The parent's own synchronous hiredis connection to the Redis server:
// PING while a private server starts, CONFIG RESETSTAT before the run, and
// the INFO figures of the summary (commands, memory, keys).
#ifndef TOKENLEASE_TOOLS_DEMO_REDIS_PROBE_H_
#define TOKENLEASE_TOOLS_DEMO_REDIS_PROBE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct redisContext;

namespace tokenlease::tools {

// A numeric field "name:value" of INFO output; -1 if absent.
int64_t InfoField(absl::string_view info, absl::string_view name);

// A text field "name:value" of INFO output; "" if absent.
std::string InfoText(absl::string_view info, absl::string_view name);

// calls= of cmdstat_<command> in INFO commandstats output; 0 if absent.
int64_t CommandCalls(absl::string_view info, absl::string_view command);
// usec= (the server's CPU time in the command) of cmdstat_<command> in INFO
// commandstats output; 0 if absent.
int64_t CommandUsec(absl::string_view info, absl::string_view command);

// used_cpu_user + used_cpu_sys of INFO cpu output (the server process's
// CPU time since it started, in seconds with 6 decimals) in microseconds;
// -1 if either is absent or not a number.
int64_t ServerCpuUsec(absl::string_view info);

class RedisProbe {
 public:
  // Connects to `url` (redis:// or unix://, as the library accepts) with a
  // 2 s timeout.
  static absl::StatusOr<RedisProbe> Connect(absl::string_view url);

  // The reply's string ("" for none or an error).
  std::string Command(const char* command);
  // The reply's integer (-1 for none or another type).
  int64_t Integer(const char* command);
  // A numeric field of an INFO section; -1 if absent.
  int64_t Info(const char* section, absl::string_view name);
  // EVALSHA + EVAL calls since the last CONFIG RESETSTAT.
  int64_t ScriptCalls();
  // usec= of EVALSHA + EVAL since the last CONFIG RESETSTAT.
  int64_t ScriptUsec();
  // The server process's CPU time so far (ServerCpuUsec of INFO cpu): it
  // counts everything the server does, scripts, network I/O and its own
  // timers, and not the time it waits for a core.
  int64_t CpuUsec();
  // True if the server answers PING.
  bool Ping() { return Command("PING") == "PONG"; }

 private:
  struct Free {
    void operator()(redisContext* c) const;
  };
  explicit RedisProbe(redisContext* ctx) : ctx_(ctx) {}

  std::unique_ptr<redisContext, Free> ctx_;
};

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_REDIS_PROBE_H_
