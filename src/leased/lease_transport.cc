#include "leased/lease_transport.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "redis/scripts.h"

namespace tokenlease::internal {

BatchReplies SplitBatchReply(absl::StatusOr<RedisReply> reply, size_t n) {
  if (!reply.ok()) return BatchReplies(n, reply.status());
  if (reply->type == RedisReply::Type::kError) {
    // The whole call failed (a bad argument, a script error before the
    // first item): every item gets the error, as the single script's own.
    return BatchReplies(n, *reply);
  }
  if (reply->type != RedisReply::Type::kArray || reply->elements.size() != n) {
    return BatchReplies(
        n, absl::InternalError(absl::StrCat(
               "tokenlease batch script: expected an array of ", n,
               " replies, got another reply (is the script on the server "
               "the one this build embeds?)")));
  }
  BatchReplies out;
  out.reserve(n);
  for (RedisReply& element : reply->elements) out.push_back(std::move(element));
  return out;
}

absl::Status RedisLeaseTransport::SubmitBatch(std::span<const BatchItem> items,
                                              BatchCallback done) {
  if (!batch_.has_value()) batch_.emplace(client_);
  if (items.size() == 1) {
    // A lone item costs less in its single script (1.2 to 1.4x less Redis
    // time, docs/benchmarks.md,
    // "Measurements behind design choices"), which replies the same (a
    // charge: its 6 integers, which ParseAcquireItemReply takes as well as
    // the batch's one).
    const BatchItem& item = items[0];
    auto one = [done =
                    std::move(done)](absl::StatusOr<RedisReply> reply) mutable {
      BatchReplies replies;
      replies.push_back(std::move(reply));
      done(std::move(replies));
    };
    if (item.op == BatchItem::Op::kRelease) {
      ReleaseArgs args;
      args.amount = item.amount;
      args.lease_id = item.lease_id;
      args.granted_at_us = item.granted_at_us;
      return batch_->SubmitScript(
          kReleaseScript, ReleaseArguments(spec_, key_prefix_, item.name, args),
          std::move(one));
    }
    AcquireArgs args;
    args.wanted = item.wanted;
    args.minimum = item.minimum;
    args.max_wait_us = item.max_wait_us;
    args.charge = item.op == BatchItem::Op::kCharge;
    args.max_debt = item.max_debt;
    args.lease_id = item.lease_id;
    return batch_->SubmitScript(
        kAcquireScript, AcquireArguments(spec_, key_prefix_, item.name, args),
        std::move(one), absl::ZeroDuration(), start_empty_);
  }
  const size_t n = items.size();
  // A cluster call whose items span slots (of one node: the reconciler
  // groups them by CallGroup) declares no keys and is routed by its first
  // item's slot; one of a single slot declares them (MOVED and ASK then
  // apply to the whole call).
  int route_slot = -1;
  if (client_->cluster()) {
    const uint16_t first = LimitSlot(key_prefix_, items[0].name);
    for (const BatchItem& item : items) {
      if (LimitSlot(key_prefix_, item.name) != first) route_slot = first;
    }
  }
  RedisClient* client = client_;
  return batch_->SubmitScript(
      kBatchScript,
      BatchArguments(spec_, key_prefix_, items, -1, route_slot >= 0),
      [n, client, by_hand = route_slot >= 0,
       done = std::move(done)](absl::StatusOr<RedisReply> reply) mutable {
        BatchReplies replies = SplitBatchReply(std::move(reply), n);
        if (by_hand) {
          // An item of a slot the node does not serve (the map moved on):
          // it fails alone; a new map sends its retry where it belongs.
          for (const absl::StatusOr<RedisReply>& r : replies) {
            if (r.ok() && r->is_error() &&
                r->str.find("non local key") != std::string::npos) {
              client->AskForSlotMap();
              break;
            }
          }
        }
        done(std::move(replies));
      },
      absl::ZeroDuration(), start_empty_, route_slot);
}

}  // namespace tokenlease::internal
