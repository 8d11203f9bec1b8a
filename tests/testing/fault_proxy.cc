#include "testing/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tokenlease::testing {
namespace {

// Bytes read from one side, due at the other at `due`.
struct Chunk {
  absl::Time due;
  std::string bytes;
};

// One proxied connection: the client's socket and ours to the server.
struct Link {
  int client = -1;
  int upstream = -1;
  std::deque<Chunk> to_upstream;
  std::deque<Chunk> to_client;
  bool dead = false;
};

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// Writes all of `bytes` (blocking: loopback, and clients always read).
bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void Close(Link& link) {
  if (link.client >= 0) close(link.client);
  if (link.upstream >= 0) close(link.upstream);
  link.client = link.upstream = -1;
  link.dead = true;
}

// Sends the chunks of `queue` that are due; false if the socket failed.
bool Flush(std::deque<Chunk>& queue, int fd, absl::Time now) {
  while (!queue.empty() && queue.front().due <= now) {
    if (!SendAll(fd, queue.front().bytes)) return false;
    queue.pop_front();
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FaultProxy>> FaultProxy::Start(
    int upstream_port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return absl::InternalError(absl::StrCat("proxy listen: ", why));
  }
  return std::unique_ptr<FaultProxy>(
      new FaultProxy(fd, ntohs(addr.sin_port), upstream_port));
}

FaultProxy::FaultProxy(int listen_fd, int port, int upstream_port)
    : listen_fd_(listen_fd), port_(port), upstream_port_(upstream_port) {
  thread_ = std::thread([this] { Run(); });
}

FaultProxy::~FaultProxy() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
  close(listen_fd_);
}

void FaultProxy::SetMode(Mode mode, absl::Duration delay) {
  std::lock_guard<std::mutex> lock(mu_);
  mode_ = mode;
  delay_ = delay;
}

FaultProxy::Mode FaultProxy::mode() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mode_;
}

std::string FaultProxy::url() const {
  return absl::StrCat("redis://127.0.0.1:", port_);
}

void FaultProxy::Run() {
  std::vector<Link> links;
  std::vector<pollfd> fds;
  char buf[64 * 1024];
  while (!stop_.load(std::memory_order_relaxed)) {
    Mode mode;
    absl::Duration delay;
    {
      std::lock_guard<std::mutex> lock(mu_);
      mode = mode_;
      delay = delay_;
    }
    const bool hold = mode == Mode::kBlackhole;
    absl::Time now = absl::Now();
    // Wake for the next due chunk, else every 5 ms to see mode and stop.
    absl::Duration wait = absl::Milliseconds(5);
    for (const Link& l : links) {
      for (const auto* q : {&l.to_upstream, &l.to_client}) {
        if (!hold && !q->empty()) wait = std::min(wait, q->front().due - now);
      }
    }
    fds.assign(1, pollfd{listen_fd_, POLLIN, 0});
    for (const Link& l : links) {
      // A blackhole reads nothing: the bytes wait in the kernel.
      const short events = hold ? 0 : POLLIN;
      fds.push_back(pollfd{l.client, events, 0});
      fds.push_back(pollfd{l.upstream, events, 0});
    }
    const int timeout_ms = static_cast<int>(std::max<int64_t>(
        0, absl::ToInt64Milliseconds(wait + absl::Nanoseconds(999'999))));
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    now = absl::Now();
    const size_t before = links.size();
    if (fds[0].revents & POLLIN) {
      const int client = accept(listen_fd_, nullptr, nullptr);
      if (client >= 0) {
        accepted_.fetch_add(1, std::memory_order_relaxed);
        const int upstream = socket(AF_INET, SOCK_STREAM, 0);
        const sockaddr_in to = Loopback(upstream_port_);
        if (upstream >= 0 &&
            connect(upstream, reinterpret_cast<const sockaddr*>(&to),
                    sizeof(to)) == 0) {
          // A peer that stops reading fails a send after 1 s instead of
          // blocking the proxy (and its destructor) for good.
          const int one = 1;
          const timeval send_timeout{1, 0};
          for (const int fd : {client, upstream}) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout,
                       sizeof(send_timeout));
          }
          links.push_back(Link{client, upstream, {}, {}, false});
        } else {
          // The server is gone: the client sees its connection closed.
          close(client);
          if (upstream >= 0) close(upstream);
        }
      }
    }
    for (size_t i = 0; i < before; ++i) {
      Link& l = links[i];
      for (const bool from_client : {true, false}) {
        const pollfd& p = fds[1 + 2 * i + (from_client ? 0 : 1)];
        if (l.dead || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
          continue;
        }
        if (hold) {  // a peer hung up in the blackhole: read nothing, close
          Close(l);
          continue;
        }
        const ssize_t n = recv(p.fd, buf, sizeof(buf), 0);
        if (n <= 0) {
          Close(l);
          continue;
        }
        std::string bytes(buf, static_cast<size_t>(n));
        if (!from_client && mode == Mode::kDropMidReply) {
          // Half a reply, then a closed connection; one shot.
          SendAll(l.client,
                  std::string_view(bytes).substr(0, bytes.size() / 2));
          Close(l);
          dropped_.fetch_add(1, std::memory_order_relaxed);
          std::lock_guard<std::mutex> lock(mu_);
          if (mode_ == Mode::kDropMidReply) mode_ = Mode::kPass;
          mode = Mode::kPass;
          continue;
        }
        const absl::Time due =
            now + (mode == Mode::kDelay ? delay : absl::ZeroDuration());
        (from_client ? l.to_upstream : l.to_client)
            .push_back(Chunk{due, std::move(bytes)});
      }
      if (!l.dead && !hold &&
          !(Flush(l.to_upstream, l.upstream, now) &&
            Flush(l.to_client, l.client, now))) {
        Close(l);
      }
    }
    links.erase(std::remove_if(links.begin(), links.end(),
                               [](const Link& l) { return l.dead; }),
                links.end());
  }
  for (Link& l : links) Close(l);
}

}  // namespace tokenlease::testing
