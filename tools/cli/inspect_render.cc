// `tokenlease inspect`'s report as text for people (inspect.h).
#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/common.h"
#include "cli/inspect.h"
#include "cli/state_decode.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli {

std::string TtlText(int64_t pttl_ms) {
  if (pttl_ms == -1) return "no expiry (tokenlease always sets one)";
  if (pttl_ms < 0) return "absent";
  return absl::StrCat("expires in ", FormatUs(pttl_ms * 1000));
}

std::string RenderInspect(const InspectReport& rep) {
  std::string out = absl::StrCat(
      "key ", JsonString(rep.request.key), " with prefix ",
      JsonString(rep.request.prefix), " (keys ", rep.tag, ":...) on ",
      rep.endpoint, "\n", "server time: ", FormatTimeUs(rep.now_us), "\n");
  int64_t since = 0;
  if (rep.since && absl::SimpleAtoi(*rep.since, &since)) {
    absl::StrAppend(&out, "tokenlease state since: ", FormatTimeUs(since),
                    " (tokenlease:since)\n");
  } else {
    absl::StrAppend(&out,
                    "tokenlease state since: no tokenlease:since marker "
                    "(no tokenlease connection since this database began)\n");
  }
  if (rep.request.spec) {
    absl::StrAppend(&out, "limit: ", DescribeSpec(*rep.request.spec),
                    " (from the flags)\n");
  } else {
    absl::StrAppend(&out,
                    "limit: not given; decoded from the stamps (give the limit "
                    "flags to see what is available)\n");
  }
  if (rep.bands.empty()) {
    absl::StrAppend(&out,
                    "\nno state: no band key exists, so the limit is "
                    "fresh for this key (or the prefix or key differ)\n");
  }
  for (const BandReport& b : rep.bands) {
    absl::StrAppend(&out, "\nband ", b.index, ": ", b.key.key);
    if (!b.present) {
      absl::StrAppend(&out, "\n  no state: the band is fresh (",
                      b.decoded.capacity
                          ? absl::StrCat(*b.decoded.capacity, " available")
                          : "full",
                      "; a state back to fresh is deleted)\n");
      continue;
    }
    absl::StrAppend(
        &out, "\n  ", b.key.type,
        b.key.type == "zset" ? absl::StrCat(", ", b.zset_size, " members") : "",
        ", ", TtlText(b.key.pttl_ms));
    if (b.decoded.kind == BandKind::kLog) {
      absl::StrAppend(&out, "; meta ", b.meta.key, ": ", b.meta.type, ", ",
                      TtlText(b.meta.pttl_ms));
    }
    absl::StrAppend(&out, "\n");
    if (b.decoded.kind == BandKind::kLog) {
      if (b.meta.type == "string") {
        absl::StrAppend(&out, "  meta value: ", JsonString(b.value), "\n");
      }
    } else if (b.key.type == "string") {
      absl::StrAppend(&out, "  value: ", JsonString(b.value), "\n");
    }
    if (b.decoded.kind != BandKind::kUndecided) {
      absl::StrAppend(&out, "  kind: ", BandKindName(b.decoded.kind), "\n");
    }
    for (const std::string& line : b.decoded.lines) {
      absl::StrAppend(&out, "  ", line, "\n");
    }
    for (const std::string& p : b.decoded.problems) {
      absl::StrAppend(&out, "  ERROR: ", p, "\n");
    }
  }
  for (const std::string& k : rep.extra_keys) {
    absl::StrAppend(&out, "\nalso present: ", k,
                    " (not a band of the given limit: a limit with more "
                    "bands wrote it, or another spec uses this name)\n");
  }
  if (rep.request.leases) {
    absl::StrAppend(&out, "\nlease records: ", rep.leases_found, "\n");
    for (const LeaseReport& l : rep.leases) {
      absl::StrAppend(&out, "  ", l.key.key, " ", JsonString(l.value), ": ",
                      l.line, "\n");
    }
    if (rep.leases_found > static_cast<int64_t>(rep.leases.size())) {
      absl::StrAppend(&out, "  ... ", rep.leases_found - rep.leases.size(),
                      " more\n");
    }
  }
  absl::StrAppend(&out, "\n");
  if (!rep.problems.empty()) {
    absl::StrAppend(&out, rep.problems.size(),
                    " problem(s): a call of this limit fails for this key "
                    "until it is repaired (its failure mode decides "
                    "meanwhile)\n");
  } else if (rep.available) {
    absl::StrAppend(&out, "now: ", *rep.available,
                    " available (the least over the bands); fresh again in ",
                    FormatUs(*rep.full_in_us), "\n");
  }
  return out;
}

}  // namespace tokenlease::cli
