#include "shared/failure_policy.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tokenlease::internal {
namespace {

std::unique_ptr<LocalFallback> MakeFallback(const LimitSpec& spec,
                                            const SharedLimitOptions& o) {
  if (o.failure_mode != FailureMode::kFailLocal) return nullptr;
  return std::make_unique<LocalFallback>(spec, o, o.fallback_instances);
}

}  // namespace

FailurePolicy::FailurePolicy(const LimitSpec& spec,
                             const SharedLimitOptions& options,
                             std::function<void(std::string_view)> log)
    : mode_(options.failure_mode),
      shadow_(options.shadow),
      configured_instances_(options.fallback_instances),
      fallback_(MakeFallback(spec, options)),
      log_(std::move(log)) {}

Decision FailurePolicy::Decide(std::string_view key, int64_t cost,
                               int64_t retry_ns) {
  Decision d;
  switch (mode_) {
    case FailureMode::kFailClosed:
      d.source = DecisionSource::kFailClosed;
      d.retry_after_ns = retry_ns;
      return d;
    case FailureMode::kFailOpen:
      d.allowed = true;
      d.source = DecisionSource::kFailOpen;
      return d;
    case FailureMode::kFailLocal:
      break;
  }
  // Reads the clock: only while Redis cannot decide (the local engine
  // needs the time; the Redis paths do not).
  d = fallback_->TryAcquire(key, cost);
  if (d.source != DecisionSource::kInvalidArgument) {
    d.source = DecisionSource::kFallback;
  }
  return d;
}

Reservation FailurePolicy::Reserve(std::string_view key, int64_t cost,
                                   absl::Duration max_wait, int64_t retry_ns) {
  if (mode_ != FailureMode::kFailLocal) {
    Reservation r;
    r.decision = Decide(key, cost, retry_ns);
    r.granted = r.decision.allowed;
    return r;
  }
  Reservation r = fallback_->Reserve(key, cost, max_wait);
  if (r.decision.source != DecisionSource::kInvalidArgument) {
    r.decision.source = DecisionSource::kFallback;
  }
  return r;
}

void FailurePolicy::NoteError(const absl::Status& error, bool key_error) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  if (key_error) key_errors_.fetch_add(1, std::memory_order_relaxed);
  if (!log_) return;
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count();
  std::string line;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    const std::string message = error.ToString();
    // At most a line a second, and the same message at most once a minute.
    const int64_t since =
        last_log_ns_ == INT64_MIN ? INT64_MAX : now_ns - last_log_ns_;
    if (since < 1'000'000'000 ||
        (message == last_logged_ && since < 60'000'000'000)) {
      ++unlogged_;
      return;
    }
    line = absl::StrCat(
        "Redis gave no decision: ", message, " (", FailureModeName(mode_),
        " decides meanwhile",
        unlogged_ > 0 ? absl::StrCat("; ", unlogged_, " errors not logged")
                      : std::string(),
        ")");
    last_logged_ = message;
    last_log_ns_ = now_ns;
    unlogged_ = 0;
  }
  log_(line);  // outside the lock: the callback may be slow
}

absl::Status FailurePolicy::UpdateSpec(const LimitSpec& spec) {
  return fallback_ != nullptr ? fallback_->UpdateSpec(spec) : absl::OkStatus();
}

void FailurePolicy::Fill(SharedLimitStats* s, bool share_keys,
                         uint64_t lease_admitted) const {
  s->decisions = counter_.Sum();
  s->decisions.admitted[static_cast<int>(DecisionSource::kLease)] +=
      lease_admitted;
  // relaxed: statistics.
  const uint64_t calls = calls_.load(std::memory_order_relaxed);
  if (calls > 0) s->redis_calls = calls;
  s->decisions_per_call = s->redis_calls == 0
                              ? 0
                              : static_cast<double>(s->decisions.Total()) /
                                    static_cast<double>(s->redis_calls);
  s->redis_errors = errors_.load(std::memory_order_relaxed);
  s->key_errors = key_errors_.load(std::memory_order_relaxed);
  s->instances =
      fallback_ != nullptr ? fallback_->instances() : configured_instances_;
  if (share_keys && fallback_ != nullptr) {
    s->keys = static_cast<uint64_t>(fallback_->keys());
  }
}

}  // namespace tokenlease::internal
