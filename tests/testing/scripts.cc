#include "testing/scripts.h"

#include <gtest/gtest.h>

#include "tokenlease_lua/scripts.h"

namespace tokenlease::testing {

internal::AcquireArgs At(int64_t now_us, int64_t wanted, int64_t minimum,
                         int64_t max_wait_us) {
  internal::AcquireArgs a;
  a.now_us = now_us;
  a.wanted = wanted;
  a.minimum = minimum;
  a.max_wait_us = max_wait_us;
  return a;
}

internal::AcquireArgs LeaseAt(int64_t now_us, int64_t wanted, int64_t minimum,
                              std::string lease_id) {
  internal::AcquireArgs a = At(now_us, wanted, minimum);
  a.lease_id = std::move(lease_id);
  return a;
}

absl::StatusOr<internal::AcquireResult> TryScriptAcquire(
    SyncClient& client, const LimitSpec& spec, std::string_view prefix,
    std::string_view name, const internal::AcquireArgs& args) {
  return internal::ParseAcquireReply(
      client.Eval(internal::lua::kAcquireScript,
                  internal::AcquireArguments(spec, prefix, name, args)));
}

internal::AcquireResult ScriptAcquire(SyncClient& client, const LimitSpec& spec,
                                      std::string_view prefix,
                                      std::string_view name,
                                      const internal::AcquireArgs& args) {
  auto r = TryScriptAcquire(client, spec, prefix, name, args);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : internal::AcquireResult{};
}

absl::StatusOr<int64_t> TryScriptRelease(SyncClient& client,
                                         const LimitSpec& spec,
                                         std::string_view prefix,
                                         std::string_view name,
                                         const internal::ReleaseArgs& args) {
  return internal::ParseReleaseReply(
      client.Eval(internal::lua::kReleaseScript,
                  internal::ReleaseArguments(spec, prefix, name, args)));
}

int64_t ScriptRelease(SyncClient& client, const LimitSpec& spec,
                      std::string_view prefix, std::string_view name,
                      const internal::ReleaseArgs& args) {
  auto r = TryScriptRelease(client, spec, prefix, name, args);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : -1;
}

std::vector<absl::StatusOr<internal::BatchItemResult>> ScriptBatch(
    SyncClient& client, const LimitSpec& spec, std::string_view prefix,
    const std::vector<internal::BatchItem>& items, int64_t now_us) {
  return internal::ParseBatchReply(
      client.Eval(internal::lua::kBatchScript,
                  internal::BatchArguments(spec, prefix, items, now_us)),
      items);
}

internal::RedisReply ScriptTest::EvalAcquire(
    const LimitSpec& spec, std::string_view name,
    const internal::AcquireArgs& args, const std::vector<std::string>& extra) {
  std::vector<std::string> argv =
      internal::AcquireArguments(spec, script_prefix(), name, args);
  argv.insert(argv.end(), extra.begin(), extra.end());
  return Eval(internal::lua::kAcquireScript, argv);
}

int64_t ScriptTest::Granted(const internal::RedisReply& reply) {
  absl::StatusOr<internal::AcquireResult> a =
      internal::ParseAcquireReply(reply);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? a->granted : -1;
}

absl::StatusOr<internal::AcquireResult> ScriptTest::TryAcquire(
    const LimitSpec& spec, std::string_view name,
    const internal::AcquireArgs& args) {
  return TryScriptAcquire(client(), spec, script_prefix(), name, args);
}

internal::AcquireResult ScriptTest::Acquire(const LimitSpec& spec,
                                            std::string_view name,
                                            const internal::AcquireArgs& args) {
  return ScriptAcquire(client(), spec, script_prefix(), name, args);
}

absl::StatusOr<int64_t> ScriptTest::TryRelease(
    const LimitSpec& spec, std::string_view name,
    const internal::ReleaseArgs& args) {
  return TryScriptRelease(client(), spec, script_prefix(), name, args);
}

int64_t ScriptTest::Release(const LimitSpec& spec, std::string_view name,
                            const internal::ReleaseArgs& args) {
  return ScriptRelease(client(), spec, script_prefix(), name, args);
}

std::vector<absl::StatusOr<internal::BatchItemResult>> ScriptTest::Batch(
    const LimitSpec& spec, const std::vector<internal::BatchItem>& items,
    int64_t now_us) {
  return ScriptBatch(client(), spec, script_prefix(), items, now_us);
}

}  // namespace tokenlease::testing
