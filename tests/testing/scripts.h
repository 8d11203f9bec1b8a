// The acquire, release and batch scripts run by EVAL on a SyncClient, with
// explicit times, as the Lua tests drive them (no RedisConnection).
#ifndef TOKENLEASE_TESTS_TESTING_SCRIPTS_H_
#define TOKENLEASE_TESTS_TESTING_SCRIPTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "redis/reply.h"
#include "redis/script_call.h"
#include "testing/redis_server.h"
#include "testing/redis_test.h"
#include "tokenlease/spec.h"

namespace tokenlease::testing {

// Acquire arguments at `now_us` (-1: the server's TIME).
internal::AcquireArgs At(int64_t now_us, int64_t wanted, int64_t minimum,
                         int64_t max_wait_us = 0);
// At(...) recording its grant under `lease_id`, for a release.
internal::AcquireArgs LeaseAt(int64_t now_us, int64_t wanted, int64_t minimum,
                              std::string lease_id);

// EVAL of the acquire script for key `name` under `prefix`; its parsed
// reply.
absl::StatusOr<internal::AcquireResult> TryScriptAcquire(
    SyncClient& client, const LimitSpec& spec, std::string_view prefix,
    std::string_view name, const internal::AcquireArgs& args);

// TryScriptAcquire that must succeed: a test failure and an empty result
// otherwise.
internal::AcquireResult ScriptAcquire(SyncClient& client, const LimitSpec& spec,
                                      std::string_view prefix,
                                      std::string_view name,
                                      const internal::AcquireArgs& args);

// EVAL of the release script for key `name` under `prefix`: the tokens
// given back, or the error.
absl::StatusOr<int64_t> TryScriptRelease(SyncClient& client,
                                         const LimitSpec& spec,
                                         std::string_view prefix,
                                         std::string_view name,
                                         const internal::ReleaseArgs& args);

// TryScriptRelease that must succeed: -1 and a test failure on an error.
int64_t ScriptRelease(SyncClient& client, const LimitSpec& spec,
                      std::string_view prefix, std::string_view name,
                      const internal::ReleaseArgs& args);

// EVAL of the batch script for `items` on keys under `prefix` at `now_us`
// (-1: the server's TIME): one result per item (ParseBatchReply).
std::vector<absl::StatusOr<internal::BatchItemResult>> ScriptBatch(
    SyncClient& client, const LimitSpec& spec, std::string_view prefix,
    const std::vector<internal::BatchItem>& items, int64_t now_us);

// A RedisTest that drives the scripts by EVAL, with explicit times, on
// keys under one prefix: the one given, or the test's own prefix().
class ScriptTest : public RedisTest {
 protected:
  explicit ScriptTest(std::string key_prefix = "")
      : key_prefix_(std::move(key_prefix)) {}

  // The prefix of the keys the scripts touch.
  const std::string& script_prefix() const {
    return key_prefix_.empty() ? prefix() : key_prefix_;
  }
  // A command or a script on client().
  internal::RedisReply Run(const std::vector<std::string>& cmd) {
    return client().Run(cmd);
  }
  internal::RedisReply Eval(std::string_view script,
                            const std::vector<std::string>& args) {
    return client().Eval(script, args);
  }
  // acquire.lua's reply for key `name` with `args`, then `extra` arguments
  // (empty_since_us).
  internal::RedisReply EvalAcquire(const LimitSpec& spec, std::string_view name,
                                   const internal::AcquireArgs& args,
                                   const std::vector<std::string>& extra = {});
  // The tokens an acquire.lua reply grants; -1 and a test failure if it is
  // not a grant.
  static int64_t Granted(const internal::RedisReply& reply);
  // TryScriptAcquire, ScriptAcquire, TryScriptRelease, ScriptRelease and
  // ScriptBatch on client() and script_prefix().
  absl::StatusOr<internal::AcquireResult> TryAcquire(
      const LimitSpec& spec, std::string_view name,
      const internal::AcquireArgs& args);
  internal::AcquireResult Acquire(const LimitSpec& spec, std::string_view name,
                                  const internal::AcquireArgs& args);
  absl::StatusOr<int64_t> TryRelease(const LimitSpec& spec,
                                     std::string_view name,
                                     const internal::ReleaseArgs& args);
  int64_t Release(const LimitSpec& spec, std::string_view name,
                  const internal::ReleaseArgs& args);
  std::vector<absl::StatusOr<internal::BatchItemResult>> Batch(
      const LimitSpec& spec, const std::vector<internal::BatchItem>& items,
      int64_t now_us);

 private:
  const std::string key_prefix_;
};

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_SCRIPTS_H_
