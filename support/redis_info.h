// Parsing the text of Redis's INFO command: the figures the tools and the
// benchmarks report about a server (its version, memory, the calls and CPU
// time of the scripts, the server's own CPU time). Pure functions of the
// text: fetch it with SyncRedis::Info.
#ifndef TOKENLEASE_SUPPORT_REDIS_INFO_H_
#define TOKENLEASE_SUPPORT_REDIS_INFO_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace tokenlease::support {

// The value of the line "name:value" of INFO output; "" if absent.
std::string InfoText(absl::string_view info, absl::string_view name);

// The server's program and version from INFO server output, for
// banners: "valkey-server 8.0.1" when server_name is valkey (whose
// redis_version is a compatibility 7.2.4), else "redis-server 7.0.15";
// "redis-server ?" when the version is absent.
std::string ServerVersion(absl::string_view info);

// The value of "name:value" as an integer; -1 if absent or not an integer.
int64_t InfoField(absl::string_view info, absl::string_view name);

// calls= of cmdstat_<command> in INFO commandstats output; 0 if absent.
int64_t CommandCalls(absl::string_view info, absl::string_view command);

// usec= (the server's CPU time in the command) of cmdstat_<command> in INFO
// commandstats output; 0 if absent.
int64_t CommandUsec(absl::string_view info, absl::string_view command);

// CommandCalls and CommandUsec of EVAL and EVALSHA together: the script
// calls and their CPU time since the server started or the last CONFIG
// RESETSTAT.
int64_t ScriptCalls(absl::string_view info);
int64_t ScriptUsec(absl::string_view info);

// used_cpu_user + used_cpu_sys of INFO cpu output (the server process's
// CPU time since it started, in seconds with up to 6 decimals) in
// microseconds, read as integers so that no rounding enters the difference
// of two readings; -1 if either is absent or not such a number.
int64_t ServerCpuUsec(absl::string_view info);

}  // namespace tokenlease::support

#endif  // TOKENLEASE_SUPPORT_REDIS_INFO_H_
