// What a shared limit does when Redis cannot decide (a LeasedLimiter for a
// key whose lease ran out, a DirectLimiter call that got no answer):
// deny, admit, or enforce a local share. Chosen per limit;
// docs/operations.md compares the modes.
#ifndef TOKENLEASE_FAILURE_MODE_H_
#define TOKENLEASE_FAILURE_MODE_H_

#include <cstdint>

namespace tokenlease {

// What a decision does when Redis cannot decide for its key. Leased mode:
// the connection is down (RedisHealth::kDown), or the key's last lease
// request failed (timeout, lost connection, a wrong type or corrupt value
// in its key); tokens already leased are spent as always (Redis granted
// them), and this applies once they run out. Direct mode (opt-in,
// DirectLimiterOptions::failure_mode): a call that got no decision.
enum class FailureMode : uint8_t {
  // The default: deny, as Redis would if it could not count. Nothing is
  // admitted beyond what Redis granted before the outage.
  kFailClosed,
  // Admit every request (source kFailOpen): the limit is off meanwhile.
  kFailOpen,
  // Enforce a local share (source kFallback): each instance decides alone
  // with the limit divided by `fallback_instances` (every band's limit and
  // burst, rounded down, at least 1: with a limit below the instance count
  // the instances together admit up to one token per band each), in an
  // in-process engine. A key's share starts full on its first such decision
  // and is kept (refilling) across outages.
  kFailLocal,
};

// Returns a stable lower-case name ("fail_closed", "fail_open",
// "fail_local").
const char* FailureModeName(FailureMode m);

}  // namespace tokenlease

#endif  // TOKENLEASE_FAILURE_MODE_H_
