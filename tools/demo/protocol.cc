// The instance -> parent line protocol (protocol.h).
#include "demo/protocol.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tokenlease::tools {
namespace {

// How many numbers follow each numeric tag.
int Arity(absl::string_view tag) {
  static const auto* arity = new absl::flat_hash_map<std::string, int>{
      {"R", 0}, {"L", 4}, {"V", 10}, {"W", 5},
      {"P", 5}, {"K", 3}, {"E", 3}};  // never freed
  const auto it = arity->find(tag);
  return it == arity->end() ? -1 : it->second;
}

bool ToHealth(int64_t v, Health* h) {
  *h = static_cast<Health>(v);
  return v >= -1 && v <= 2;
}

// "o a ho ha" from v[1..4].
Counts CountsAt(const std::vector<int64_t>& v) {
  return {v[1], v[2], v[3], v[4]};
}

}  // namespace

const char* HealthName(Health h) {
  constexpr const char* kNames[] = {"none", "healthy", "degraded", "down"};
  return kNames[static_cast<int>(h) + 1];
}

Counts& Counts::operator+=(const Counts& c) {
  offered += c.offered;
  admitted += c.admitted;
  hot_offered += c.hot_offered;
  hot_admitted += c.hot_admitted;
  return *this;
}

std::string Line(absl::string_view tag, std::initializer_list<int64_t> v) {
  std::string out(tag);
  for (int64_t n : v) absl::StrAppend(&out, " ", n);
  return out + "\n";
}

std::string HealthLine(const HealthEvent& e) {
  return absl::StrCat(
      "H ", e.ns, " ", static_cast<int>(e.from), " ", static_cast<int>(e.to),
      " ", absl::StrReplaceAll(e.reason, {{"\n", " "}, {"\r", " "}}), "\n");
}

absl::Status ApplyLine(absl::string_view line, InstanceReport& r) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad protocol line '", line.substr(0, 80), "': ", why));
  };
  if (absl::string_view rest = line; absl::ConsumePrefix(&rest, "H ")) {
    const std::vector<absl::string_view> f =
        absl::StrSplit(rest, absl::MaxSplits(' ', 3));
    HealthEvent e;
    int64_t from = 0, to = 0;
    if (f.size() < 3 || !absl::SimpleAtoi(f[0], &e.ns) ||
        !absl::SimpleAtoi(f[1], &from) || !absl::SimpleAtoi(f[2], &to) ||
        !ToHealth(from, &e.from) || !ToHealth(to, &e.to)) {
      return bad("expected a time, two health numbers (-1 to 2), a reason");
    }
    if (f.size() == 4) e.reason = std::string(f[3]);
    r.events.push_back(std::move(e));
    return absl::OkStatus();
  }
  if (absl::string_view rest = line; absl::ConsumePrefix(&rest, "M ")) {
    const size_t space = rest.rfind(' ');
    double value = 0;
    if (space == rest.npos || space == 0 ||
        !absl::SimpleAtod(rest.substr(space + 1), &value)) {
      return bad("expected a series and its value");
    }
    const std::string series = absl::StrReplaceAll(
        rest.substr(0, space),
        {{"{limit=\"demo\"}", ""}, {"limit=\"demo\",", ""}});
    r.metrics[series] += value;
    return absl::OkStatus();
  }
  const std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
  const int arity = Arity(f[0]);
  if (arity < 0) return bad("unknown tag");
  if (static_cast<int>(f.size()) != arity + 1) {
    return bad(absl::StrCat("expected ", arity, " numbers"));
  }
  std::vector<int64_t> v(arity);
  for (int i = 0; i < arity; ++i) {
    if (!absl::SimpleAtoi(f[i + 1], &v[i])) {
      return bad(absl::StrCat("'", f[i + 1], "' is no integer"));
    }
  }
  const absl::string_view tag = f[0];
  const bool in_run =
      arity > 0 && v[0] >= 0 && v[0] < static_cast<int64_t>(r.windows.size());
  if (tag == "R") r.ready = true;
  if (tag == "L") {
    if (v[2] < 0 || (v[3] != 0 && v[3] != 1)) {
      return bad("a latency must be >= 0 and hot 0 or 1");
    }
    r.samples.push_back({v[1], v[2], v[3] == 1});
    if (in_run) r.windows[v[0]].latency.push_back(v[2]);
  }
  if (tag == "V") {
    Health h;
    if (!ToHealth(v[9], &h)) return bad("the health must be -1, 0, 1 or 2");
    if (in_run) {
      Window& w = r.windows[v[0]];
      w.closed = true;
      w.live = CountsAt(v);
      w.commands = v[5];
      w.commands_in_window = v[6];
      w.keys = v[7];
      w.rss_kb = v[8];
      w.health = h;
    }
  }
  if (tag == "W" && in_run) r.windows[v[0]].counts = CountsAt(v);
  if (tag == "P") {
    if (v[0] < 0 || v[0] >= kOutagePhases) {
      return bad("the outage phase must be 0, 1 or 2");
    }
    r.phases[v[0]] = CountsAt(v);
  }
  if (tag == "K") {
    if (v[1] < 1 || v[2] < 0 || v[2] > v[1]) {
      return bad("a key needs offered >= 1 and 0 <= admitted <= offered");
    }
    if (v[0] < 0 || (!r.keys.empty() && v[0] <= r.keys.back().rank)) {
      return bad("keys out of rank order");
    }
    r.keys.push_back({v[0], v[1], v[2]});
  }
  if (tag == "E") {
    r.done = true;
    r.last_ns = v[0];
    r.peak_rss_kb = v[1];
    r.commands_with_shutdown = v[2];
  }
  return absl::OkStatus();
}

absl::Status LineSplitter::Feed(
    absl::string_view chunk,
    absl::FunctionRef<absl::Status(absl::string_view)> on_line) {
  buf_.append(chunk.data(), chunk.size());
  size_t begin = 0, end;
  absl::Status status;
  while (status.ok() && (end = buf_.find('\n', begin)) != std::string::npos) {
    status = on_line(absl::string_view(buf_).substr(begin, end - begin));
    begin = end + 1;
  }
  buf_.erase(0, begin);
  return status;
}

bool WriteAll(int fd, absl::string_view s) {
  while (!s.empty()) {
    const ssize_t n = write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    s.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

absl::StatusOr<std::string> ReadLine(int fd) {
  std::string line;
  for (char c;;) {
    const ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1) return absl::UnavailableError("EOF before the end of a line");
    if (c == '\n') return line;
    line.push_back(c);
  }
}

}  // namespace tokenlease::tools
