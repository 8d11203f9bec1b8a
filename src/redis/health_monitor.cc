#include "redis/health_monitor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace tokenlease::internal {
namespace {

std::string Span(int64_t ns) {
  return absl::FormatDuration(absl::Nanoseconds(ns));
}

}  // namespace

HealthMonitor::HealthMonitor(const RedisOptions& options)
    : slow_reply_ns_(absl::ToInt64Nanoseconds(options.slow_reply)),
      degraded_hold_ns_(absl::ToInt64Nanoseconds(options.degraded_hold)),
      down_after_ns_(absl::ToInt64Nanoseconds(options.down_after)),
      dead_after_ns_(absl::ToInt64Nanoseconds(options.dead_after)) {}

void HealthMonitor::OnReady(int64_t now_ns) {
  first_connect_ = false;
  ready_ = true;
  in_flight_ = 0;
  progress_ns_ = now_ns;
}

void HealthMonitor::OnClosed(std::string reason) {
  first_connect_ = false;
  ready_ = false;
  in_flight_ = 0;
  closed_reason_ = std::move(reason);
}

void HealthMonitor::OnSent(int64_t now_ns) {
  if (!ready_) return;
  if (in_flight_++ == 0) progress_ns_ = now_ns;
}

void HealthMonitor::OnReply(int64_t now_ns, int64_t latency_ns) {
  if (!ready_) return;
  if (in_flight_ > 0) --in_flight_;
  progress_ns_ = now_ns;
  if (latency_ns > slow_reply_ns_) {
    last_bad_ns_ = now_ns;
    last_bad_ = absl::StrCat("a reply took ", Span(latency_ns), " (over ",
                             Span(slow_reply_ns_), ")");
  }
}

void HealthMonitor::OnTimeout(int64_t now_ns) {
  if (!ready_) return;
  last_bad_ns_ = now_ns;
  last_bad_ = "a command timed out";
}

HealthMonitor::Verdict HealthMonitor::Judge(int64_t now_ns) const {
  Verdict v;
  if (!ready_) {
    if (first_connect_) v.health = RedisHealth::kDegraded;
    v.reason =
        first_connect_ ? "connecting for the first time" : closed_reason_;
    return v;
  }
  const int64_t silent = now_ns - progress_ns_;
  if (in_flight_ > 0 && silent >= down_after_ns_) {
    v.reason = absl::StrCat("no reply for ", Span(silent), " while ",
                            in_flight_, " commands waited");
    v.reset = silent >= dead_after_ns_;
    return v;
  }
  if (now_ns - last_bad_ns_ < degraded_hold_ns_) {
    v.health = RedisHealth::kDegraded;
    v.reason = last_bad_;
    return v;
  }
  v.health = RedisHealth::kHealthy;
  v.reason = "replies come back in time";
  return v;
}

}  // namespace tokenlease::internal
