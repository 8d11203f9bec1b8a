// libFuzzer target over what tokenlease reads from the network: Redis
// replies (RESP bytes, parsed by hiredis's reader as the client does, then
// by our script reply parsers) and Redis URLs. Built by the `fuzz` preset
// (clang, -fsanitize=fuzzer,address,undefined) and run briefly by
// scripts/test.sh over the corpus in tests/fuzz/corpus/; a crash, a
// sanitizer report or a broken invariant (__builtin_trap) fails the run.
//
//   build/fuzz/tests/fuzz/reply_fuzzer -max_total_time=60 tests/fuzz/corpus
#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "redis/endpoint.h"
#include "redis/reply.h"
#include "redis/script_call.h"

namespace tokenlease::internal {
namespace {

void Check(bool invariant) {
  if (!invariant) __builtin_trap();
}

// The items a batch call with `n` items could have been made with: their
// ops and amounts come from the input too.
std::vector<BatchItem> Items(std::string_view& in) {
  std::vector<BatchItem> items;
  if (in.empty()) return items;
  const size_t n = static_cast<uint8_t>(in[0]) % (kMaxBatchItems + 1);
  in.remove_prefix(1);
  for (size_t i = 0; i < n; ++i) {
    BatchItem item;
    const uint8_t b = in.empty() ? 0 : static_cast<uint8_t>(in[0]);
    if (!in.empty()) in.remove_prefix(1);
    item.op = static_cast<BatchItem::Op>(b % 3);
    item.wanted = b / 3;
    item.amount = b / 3;
    items.push_back(item);
  }
  return items;
}

// Every reply the reader finds in `in`, through every parser; what a parser
// accepts keeps the protocol's ranges (docs/lua-protocol.md).
void Replies(std::string_view in) {
  const std::vector<BatchItem> items = Items(in);
  redisReader* reader = redisReaderCreate();
  if (reader == nullptr) return;
  LimitReplyArrays(reader);  // as the client's connections are
  if (redisReaderFeed(reader, in.data(), in.size()) == REDIS_OK) {
    for (int replies = 0; replies < 16; ++replies) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader, &raw) != REDIS_OK || raw == nullptr) {
        break;
      }
      const RedisReply reply = CopyReply(raw);
      freeReplyObject(raw);
      if (auto a = ParseAcquireReply(reply); a.ok()) {
        Check(a->granted >= 0 && a->remaining >= 0 && a->retry_after_us >= -1 &&
              a->reset_after_us >= 0 && a->wait_us >= 0);
        // What the limiters make of it (UBSan: no overflow in the ns).
        const Decision d = ToDecision(*a, DecisionSource::kDirect);
        Check(d.reset_after_ns >= 0 && d.retry_after_ns >= kNever);
      }
      if (auto r = ParseReleaseReply(reply); r.ok()) Check(*r >= 0);
      const auto batch = ParseBatchReply(reply, items);
      Check(batch.size() == items.size());
      for (size_t i = 0; i < batch.size(); ++i) {
        if (!batch[i].ok()) continue;
        if (items[i].op == BatchItem::Op::kRelease) {
          Check(batch[i]->released >= 0 &&
                batch[i]->released <= items[i].amount);
        } else {
          Check(batch[i]->acquire.granted >= 0 &&
                batch[i]->acquire.granted <= items[i].wanted);
        }
      }
      (void)reply.DebugString();
    }
  }
  redisReaderFree(reader);
}

// A URL: parsed without a crash; credentials are taken only from text that
// redaction removes (everything between the scheme and the last '@'), and
// redaction removes exactly that.
void Url(absl::string_view in) {
  const absl::StatusOr<RedisEndpoint> ep = ParseRedisUrl(in);
  const std::string redacted = RedactRedisUrl(in);
  const size_t scheme = in.find("://");
  if (ep.ok() && (!ep->password.empty() || !ep->user.empty())) {
    Check(scheme != absl::string_view::npos &&
          in.find('@', scheme + 3) != absl::string_view::npos);
  }
  if (scheme == absl::string_view::npos) return;
  const size_t at = in.rfind('@');
  if (at != absl::string_view::npos && at >= scheme + 3) {
    Check(redacted ==
          absl::StrCat(in.substr(0, scheme + 3), "***", in.substr(at)));
  }
}

}  // namespace
}  // namespace tokenlease::internal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The first byte picks the input kind.
  if (data[0] % 8 == 7) {
    tokenlease::internal::Url(absl::string_view(in.data(), in.size()));
  } else {
    tokenlease::internal::Replies(in);
  }
  return 0;
}
