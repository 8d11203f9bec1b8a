// A TCP proxy of our own between a client and a redis-server, for the
// network faults a server cannot make itself: added latency, a connection
// dropped in the middle of a reply, and a blackhole (connections stay open,
// nothing passes: a partition). It listens on a free 127.0.0.1 port and
// forwards every connection to 127.0.0.1:<upstream_port>.
//
// A blackhole holds bytes, it never discards them (they wait in the
// kernel's socket buffers, as TCP retransmits them across a real
// partition), so when it heals every reply still reaches its command in
// order (a peer that hangs up meanwhile closes its link). One thread runs
// the proxy; SetMode may be called from any thread. A send that a peer does
// not read within 1 s closes its link.
#ifndef TOKENLEASE_TESTS_TESTING_FAULT_PROXY_H_
#define TOKENLEASE_TESTS_TESTING_FAULT_PROXY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tokenlease::testing {

class FaultProxy {
 public:
  enum class Mode {
    kPass,          // forward at once
    kDelay,         // every chunk, either way, arrives `delay` later
    kDropMidReply,  // the next reply is cut after half its bytes and both
                    // sockets closed; then kPass again (one shot)
    kBlackhole,     // accept and hold: nothing is forwarded until healed
  };

  // Listens on a free 127.0.0.1 port; forwards to 127.0.0.1:upstream_port.
  static absl::StatusOr<std::unique_ptr<FaultProxy>> Start(int upstream_port);
  // Stops the thread and closes every socket.
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // Applies to every connection from the next poll on (within 5 ms).
  void SetMode(Mode mode, absl::Duration delay = absl::ZeroDuration());
  Mode mode() const;

  int port() const { return port_; }
  // "redis://127.0.0.1:<port>".
  std::string url() const;
  // Connections accepted so far, and closed by a kDropMidReply.
  int64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }
  int64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  FaultProxy(int listen_fd, int port, int upstream_port);
  void Run();

  const int listen_fd_;
  const int port_;
  const int upstream_port_;
  mutable std::mutex mu_;  // guards mode_ and delay_ (tests set, Run reads)
  Mode mode_ = Mode::kPass;
  absl::Duration delay_;
  // relaxed: counters and a stop flag polled every 5 ms; nothing is
  // published through them.
  std::atomic<int64_t> accepted_{0};
  std::atomic<int64_t> dropped_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_FAULT_PROXY_H_
