// shaping_client: a client that shapes its own outgoing calls.
//
// A backend accepts 20 calls per second from us. Instead of sending a burst
// and handling the backend's 429s, the client waits its turn before each
// call with Limiter::Acquire: a token bucket of 20 per second with a burst
// of 1 hands out one slot every 50 ms, in arrival order. A call that cannot
// get a slot within its timeout is refused at once and books nothing.
//
// Run by hand: build/release/examples/shaping_client
// No Redis needed: the limit is in-process. Exits 0 only if call k started
// no earlier than k x 50 ms after the first was asked for (the rate held),
// the calls were not needlessly late, and a call whose timeout is shorter
// than its wait was refused without taking a slot.
#include <cstdio>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tokenlease/tokenlease.h"

namespace {

// Stands in for the real outgoing call.
void CallBackend(int i, absl::Time start) {
  std::printf(
      "call %d at +%3lld ms\n", i,
      static_cast<long long>(absl::ToInt64Milliseconds(absl::Now() - start)));
}

}  // namespace

int main() {
  constexpr absl::Duration kSpacing = absl::Milliseconds(50);
  absl::StatusOr<std::unique_ptr<tokenlease::Limiter>> limiter =
      tokenlease::Limiter::Create(tokenlease::LimitSpec::TokenBucket(
          20, absl::Seconds(1), /*burst=*/1));
  if (!limiter.ok()) {
    std::fprintf(stderr, "cannot create the limiter: %s\n",
                 limiter.status().ToString().c_str());
    return 1;
  }

  constexpr int kCalls = 10;
  std::vector<absl::Time> started;
  const absl::Time start = absl::Now();
  for (int i = 0; i < kCalls; ++i) {
    // Waits up to 1 s for a slot; far more than the 50 ms each one needs.
    const tokenlease::Decision d =
        (*limiter)->Acquire("backend", 1, absl::Seconds(1));
    if (!d.allowed) {
      std::fprintf(stderr, "call %d: no slot within 1 s\n", i);
      return 1;
    }
    started.push_back(absl::Now());
    CallBackend(i, start);
  }

  // The next slot is 50 ms away: a caller that can wait only 10 ms is
  // refused at once (the wait is known up front) and takes no slot, so the
  // call after it still gets the next one.
  const absl::Time refused_at = absl::Now();
  const tokenlease::Decision impatient =
      (*limiter)->Acquire("backend", 1, absl::Milliseconds(10));
  std::printf("impatient call (10 ms timeout): %s after %lld ms\n",
              impatient.allowed ? "admitted" : "refused",
              static_cast<long long>(
                  absl::ToInt64Milliseconds(absl::Now() - refused_at)));
  const tokenlease::Decision next =
      (*limiter)->Acquire("backend", 1, absl::Seconds(1));
  const absl::Duration next_at = absl::Now() - started.back();
  std::printf("next call: %lld ms after call %d\n",
              static_cast<long long>(absl::ToInt64Milliseconds(next_at)),
              kCalls - 1);

  // Slots are fixed in time (the first one + k x 50 ms): a call woken late
  // does not push the later ones back, so check each call against its slot,
  // not against the call before it. The first slot is no earlier than
  // `start` (the first Acquire began then), but call 0 may be seen to
  // start later than its slot (a thread preempted on a loaded machine), so
  // slot k is measured from `start`. 1 ms of slack for clock reads.
  bool ok = !impatient.allowed && next.allowed &&
            next_at < kSpacing + absl::Milliseconds(250);
  for (int k = 1; k < kCalls; ++k) {
    const absl::Duration since_start = started[k] - start;
    if (since_start < k * kSpacing - absl::Milliseconds(1)) {
      std::printf("WRONG: call %d came %s after the first was asked for\n", k,
                  absl::FormatDuration(since_start).c_str());
      ok = false;
    }
  }
  // Not needlessly late either (generous: a loaded machine wakes late).
  const absl::Duration total = started.back() - started.front();
  ok &= total < (kCalls - 1) * kSpacing + absl::Milliseconds(250);
  std::printf("%d calls in %lld ms (at 20/s: at least %lld ms)\n%s\n", kCalls,
              static_cast<long long>(absl::ToInt64Milliseconds(total)),
              static_cast<long long>(
                  absl::ToInt64Milliseconds((kCalls - 1) * kSpacing)),
              ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
