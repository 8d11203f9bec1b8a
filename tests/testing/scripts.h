// The acquire, release and batch scripts run by EVAL on a SyncClient, with
// explicit times, as the Lua tests drive them (no RedisConnection).
#ifndef TOKENLEASE_TESTS_TESTING_SCRIPTS_H_
#define TOKENLEASE_TESTS_TESTING_SCRIPTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "redis/script_call.h"
#include "testing/redis_server.h"
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

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_SCRIPTS_H_
