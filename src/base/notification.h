// A one-shot event, like absl::Notification but built on std::mutex and
// std::condition_variable. Debian's Abseil is not built with
// ThreadSanitizer, so TSan cannot see absl::Notification's synchronisation
// and would report false races on everything handed across it.
#ifndef TOKENLEASE_SRC_BASE_NOTIFICATION_H_
#define TOKENLEASE_SRC_BASE_NOTIFICATION_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/time/time.h"

namespace tokenlease::internal {

class Notification {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  bool HasBeenNotified() const {
    std::lock_guard<std::mutex> lock(mu_);
    return notified_;
  }
  void WaitForNotification() const {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return notified_; });
  }
  // False if `timeout` passed first.
  bool WaitForNotificationWithTimeout(absl::Duration timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                        [this] { return notified_; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool notified_ = false;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_NOTIFICATION_H_
