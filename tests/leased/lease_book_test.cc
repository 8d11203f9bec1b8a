// The lease book on its own (src/leased/lease_book.h): every accounting
// transition driven with a manual clock and hand-made Redis replies, no
// server. Each test checks the calls the book asks for and what it leaves
// in the key's atomics.
#include "leased/lease_book.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "leased/lease_entry.h"
#include "redis/reply.h"
#include "redis/scripts.h"
#include "testing/replies.h"

namespace tokenlease::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'767'225'600'000'000'000;  // 2026-01-01, in ns

// An acquire reply: {granted, remaining, retry_after_us, reset_after_us,
// now_us, wait_us}.
RedisReply AcquireReply(int64_t granted, int64_t remaining,
                        int64_t retry_after_us = 0, int64_t reset_after_us = 0,
                        int64_t now_us = kT0 / 1000) {
  return ::tokenlease::testing::AcquireReply(granted, remaining, retry_after_us,
                                             reset_after_us, now_us);
}
using ::tokenlease::testing::IntegerReply;

// The fields of the calls' batch items (docs/lua-protocol.md, batch).
int64_t Wanted(const LeaseCall& c) { return c.item.wanted; }
int64_t Minimum(const LeaseCall& c) { return c.item.minimum; }
int64_t ChargeFlag(const LeaseCall& c) {
  return c.item.op == BatchItem::Op::kCharge ? 1 : 0;
}
int64_t MaxDebt(const LeaseCall& c) { return c.item.max_debt; }
// release: the amount; acquire and charge: wanted.
int64_t Amount(const LeaseCall& c) {
  return c.item.op == BatchItem::Op::kRelease ? c.item.amount : c.item.wanted;
}
int64_t GrantedAtUs(const LeaseCall& c) { return c.item.granted_at_us; }
// The lease key of a lease request (op "lease") or a release.
std::string DedupKey(const LeaseCall& c) {
  return absl::StrCat(LimitKeyTag("lt:", c.item.name), ":r:", c.item.lease_id);
}

class LeaseBookTest : public ::testing::Test {
 protected:
  // 1000/s, burst 1000: max lease 100 (10 %), min batch 10 (10 ms).
  explicit LeaseBookTest(
      LimitSpec spec = LimitSpec::TokenBucket(1000, absl::Seconds(1)))
      : spec_(std::move(spec)),
        book_(spec_, options_, "inst", /*seed=*/1),
        e_(std::make_unique<LeaseEntry>("k")) {
    // What the limiter counts as redis_errors and key_errors.
    book_.SetErrorSink([this](const absl::Status& error, bool key_error) {
      errors_.push_back(error);
      if (key_error) ++key_errors_;
    });
  }

  uint32_t Flags() const { return e_->flags.load(); }
  int64_t Balance() const { return e_->balance.load(); }

  // The decision path's side of a refill request, then the book's.
  LeaseCalls Ask(int64_t now) {
    e_->flags.fetch_or(kRefillQueued);
    LeaseCalls calls;
    book_.Lease(e_.get(), now, &calls);
    return calls;
  }
  LeaseCalls Apply(const LeaseCall& call, absl::StatusOr<RedisReply> reply,
                   int64_t now) {
    LeaseCalls calls;
    book_.Apply(call, reply, now, &calls);
    return calls;
  }
  LeaseCalls Expire(int64_t now,
                    std::vector<LeaseEntry*>* ask_again = nullptr) {
    LeaseCalls calls;
    std::vector<LeaseEntry*> ignored;
    book_.Expire(now, &calls, ask_again != nullptr ? ask_again : &ignored);
    return calls;
  }
  // Asks and grants `n` tokens at `now` (the lease is sized to n through
  // the cost hint).
  void Grant(int64_t n, int64_t now, int64_t now_us = kT0 / 1000) {
    e_->wanted_cost.store(n);
    LeaseCalls calls = Ask(now);
    ASSERT_THAT(calls, SizeIs(1));
    ASSERT_EQ(calls[0].kind, LeaseCall::Kind::kLease);
    ASSERT_TRUE(
        Apply(calls[0], AcquireReply(n, 500, 0, 0, now_us), now).empty());
  }

  LeaseOptions options_;
  LimitSpec spec_;
  LeaseBook book_;
  std::unique_ptr<LeaseEntry> e_;
  // Every error the book reported (SetErrorSink), and how many of them
  // were errors for the key.
  std::vector<absl::Status> errors_;
  int key_errors_ = 0;
};

TEST_F(LeaseBookTest, GrantFillsTheBalanceAndExpiryReturnsTheLeftover) {
  LeaseCalls calls = Ask(kT0);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(calls[0].kind, LeaseCall::Kind::kLease);
  EXPECT_EQ(calls[0].item.op, BatchItem::Op::kAcquire);
  EXPECT_EQ(Wanted(calls[0]), 1);  // a cold key starts at one token
  EXPECT_EQ(ChargeFlag(calls[0]), 0);
  // The request names the lease key its grant is recorded under (the
  // release below uses the same).
  EXPECT_EQ(DedupKey(calls[0]), "{lt:k}:r:inst:1:1");
  EXPECT_TRUE(Flags() & kRefillQueued);  // until the reply is applied

  EXPECT_TRUE(Apply(calls[0], AcquireReply(1, 999), kT0 + 1 * kMs).empty());
  EXPECT_EQ(Balance(), 1);
  EXPECT_TRUE(Flags() & kHasLease);
  EXPECT_FALSE(Flags() & kRefillQueued);
  EXPECT_EQ(e_->low_water.load(), 1);
  EXPECT_EQ(book_.stats().tokens_granted, 1u);

  // The lifetime counts from when the request left (kT0).
  const int64_t ttl = absl::ToInt64Nanoseconds(options_.lease_ttl);
  EXPECT_TRUE(Expire(kT0 + ttl - 1).empty());
  calls = Expire(kT0 + ttl);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(calls[0].kind, LeaseCall::Kind::kRelease);
  EXPECT_EQ(calls[0].item.op, BatchItem::Op::kRelease);
  EXPECT_EQ(Amount(calls[0]), 1);
  EXPECT_EQ(DedupKey(calls[0]), "{lt:k}:r:inst:1:1");
  EXPECT_EQ(Balance(), 0);
  EXPECT_FALSE(Flags() & kHasLease);
  EXPECT_TRUE(Apply(calls[0], IntegerReply(1), kT0 + ttl).empty());
  EXPECT_EQ(book_.stats().tokens_returned, 1u);
}

TEST_F(LeaseBookTest, TargetDoublesWhenTheKeyRanDryAndHalvesWhenUnused) {
  Grant(1, kT0);
  // Ran dry before the refill landed: the next lease is twice the size.
  e_->flags.fetch_or(kRanDry);
  LeaseCalls calls = Ask(kT0 + kMs);
  ASSERT_THAT(calls, SizeIs(1));
  Apply(calls[0], AcquireReply(1, 500), kT0 + 2 * kMs);
  EXPECT_FALSE(Flags() & kRanDry);
  calls = Ask(kT0 + 3 * kMs);
  EXPECT_EQ(Wanted(calls[0]), 2);
  Apply(calls[0], AcquireReply(2, 500), kT0 + 4 * kMs);
  // Expiring more than half unused halves it again.
  calls = Expire(kT0 + absl::ToInt64Nanoseconds(absl::Seconds(2)));
  ASSERT_FALSE(calls.empty());
  calls = Ask(kT0 + absl::ToInt64Nanoseconds(absl::Seconds(3)));
  EXPECT_EQ(Wanted(calls[0]), 1);
}

// A refill that lands while the key still holds tokens merges them into the
// new lease; the return gives back up to the new grant under its id, then
// up to the merged leftover under the old id (with its own grant time).
TEST_F(LeaseBookTest, MergedLeftoverIsReturnedUnderItsOwnLease) {
  Grant(8, kT0, /*now_us=*/100);
  e_->balance.fetch_sub(3);  // three decisions spent: 5 left
  Grant(8, kT0 + kMs, /*now_us=*/200);
  EXPECT_EQ(Balance(), 13);
  const int64_t ttl = absl::ToInt64Nanoseconds(options_.lease_ttl);
  LeaseCalls calls = Expire(kT0 + kMs + ttl);
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(DedupKey(calls[0]), "{lt:k}:r:inst:1:2");
  EXPECT_EQ(Amount(calls[0]), 8);
  EXPECT_EQ(GrantedAtUs(calls[0]), 200);
  EXPECT_EQ(DedupKey(calls[1]), "{lt:k}:r:inst:1:1");
  EXPECT_EQ(Amount(calls[1]), 5);
  EXPECT_EQ(GrantedAtUs(calls[1]), 100);
  EXPECT_EQ(Balance(), 0);
}

// Only the leftover of the lease merged last is remembered: older ones are
// dropped (stranded in Redis until they expire), never returned twice.
TEST_F(LeaseBookTest, LeftoversOfOlderMergesAreDroppedNotMinted) {
  Grant(8, kT0, 100);
  Grant(8, kT0 + kMs, 200);
  Grant(8, kT0 + 2 * kMs, 300);  // balance 24; the first lease's 8 dropped
  const int64_t ttl = absl::ToInt64Nanoseconds(options_.lease_ttl);
  LeaseCalls calls = Expire(kT0 + 2 * kMs + ttl);
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(Amount(calls[0]) + Amount(calls[1]), 16);
  EXPECT_EQ(Balance(), 0);
}

// A negative balance at expiry is a decision's failed subtraction whose
// add-back is on its way: taking it would let the add-back mint tokens.
TEST_F(LeaseBookTest, NegativeBalanceAtExpiryIsRetriedNotTaken) {
  Grant(4, kT0);
  e_->balance.fetch_sub(6);  // a cost-6 decision in flight: -2
  const int64_t ttl = absl::ToInt64Nanoseconds(options_.lease_ttl);
  EXPECT_TRUE(Expire(kT0 + ttl).empty());
  EXPECT_EQ(Balance(), -2);
  EXPECT_TRUE(Flags() & kHasLease);
  e_->balance.fetch_add(6);  // the decision undoes its subtraction
  LeaseCalls calls = Expire(kT0 + ttl + 1);  // retried one step later
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(Amount(calls[0]), 4);
  EXPECT_EQ(Balance(), 0);
}

// A cost above the burst never reaches wanted_cost (the decision path
// checks), and the book clamps the hint anyway: a request Redis must refuse
// would deny the key for good.
TEST_F(LeaseBookTest, CostHintAboveTheBurstIsClamped) {
  e_->wanted_cost.store(5000);
  LeaseCalls calls = Ask(kT0);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(Wanted(calls[0]), 1000);
  EXPECT_EQ(Minimum(calls[0]), 1000);
}

TEST_F(LeaseBookTest, RefusalIsCachedWithJitterAndOnlyWantedKeysAskAgain) {
  LeaseCalls calls = Ask(kT0);
  Apply(calls[0], AcquireReply(0, 0, /*retry_after_us=*/100'000), kT0);
  EXPECT_TRUE(Flags() & kDenied);
  EXPECT_FALSE(Flags() & kRefillQueued);
  const int64_t until = e_->deny_until_ns.load();
  // Jittered by up to +25 % (never 0 with this seed: instances refused
  // together come back at different times).
  EXPECT_GT(until, kT0 + 100 * kMs);
  EXPECT_LE(until, kT0 + 125 * kMs);
  EXPECT_EQ(book_.stats().denied_by_redis, 1u);

  std::vector<LeaseEntry*> again;
  Expire(until - 1, &again);
  EXPECT_TRUE(Flags() & kDenied);
  Expire(until, &again);
  EXPECT_FALSE(Flags() & kDenied);
  EXPECT_TRUE(again.empty());  // nobody asked meanwhile: left alone

  // Denied again, and this time a decision wanted tokens meanwhile.
  calls = Ask(until);
  Apply(calls[0], AcquireReply(0, 0, 100'000), until);
  e_->flags.fetch_or(kWantedWhileDenied);
  Expire(e_->deny_until_ns.load(), &again);
  EXPECT_THAT(again, ElementsAre(e_.get()));
  EXPECT_TRUE(Flags() & kRefillQueued);
  EXPECT_FALSE(Flags() & (kDenied | kWantedWhileDenied));
}

TEST_F(LeaseBookTest, ErrorsBackOffPerKeyUpTo250ms) {
  const int64_t tick = absl::ToInt64Nanoseconds(options_.tick);
  int64_t now = kT0;
  for (int n = 1; n <= 10; ++n) {
    LeaseCalls calls = Ask(now);
    ASSERT_THAT(calls, SizeIs(1));
    Apply(calls[0], absl::UnavailableError("gone"), now);
    const int64_t backoff = std::min<int64_t>(250 * kMs, tick << (n - 1));
    EXPECT_EQ(e_->deny_until_ns.load(), now + backoff) << "error " << n;
    now += backoff;
    Expire(now);
    EXPECT_FALSE(Flags() & kDenied);
  }
  ASSERT_THAT(errors_, SizeIs(10));
  for (const absl::Status& e : errors_) {
    EXPECT_EQ(e.code(), absl::StatusCode::kUnavailable) << e;
  }
  EXPECT_EQ(key_errors_, 0);
  // Per key: another key's first error backs off one tick.
  LeaseEntry other("other");
  other.flags.fetch_or(kRefillQueued);
  LeaseCalls calls;
  book_.Lease(&other, now, &calls);
  ASSERT_THAT(calls, SizeIs(1));
  Apply(calls[0], absl::UnavailableError("gone"), now);
  EXPECT_EQ(other.deny_until_ns.load(), now + tick);
  // A success resets the streak.
  calls = Ask(now);
  Apply(calls[0], AcquireReply(1, 10), now);
  calls = Ask(now);
  Apply(calls[0], absl::UnavailableError("gone"), now);
  EXPECT_EQ(e_->deny_until_ns.load(), now + tick);
  Expire(now + tick);  // lifts both refusals before `other` goes away
}

// After an outage (RedisHealth kDown, then an answer): the round-trip
// estimate, which a reply that waited out a frozen server inflated, is the
// one of before, so retry_after drops back at once; and a key backing off
// after a failed call asks again at this step, not after its backoff.
TEST_F(LeaseBookTest, RecoveryRestoresTheRoundTripAndRetriesAtOnce) {
  const int64_t before = book_.round_trip_ns();
  book_.OutageBegan();
  // A lease request answered 5 s later (the server was frozen).
  LeaseCalls calls = Ask(kT0);
  ASSERT_THAT(calls, SizeIs(1));
  int64_t now = kT0 + 5000 * kMs;
  Apply(calls[0], AcquireReply(1, 10), now);
  EXPECT_GT(book_.round_trip_ns(), before + 500 * kMs);
  // Another request fails: the key backs off.
  calls = Ask(now);
  ASSERT_THAT(calls, SizeIs(1));
  Apply(calls[0], absl::UnavailableError("gone"), now);
  ASSERT_GT(e_->deny_until_ns.load(), now);
  ASSERT_TRUE(Flags() & kRedisFailed);
  now += kMs;
  book_.Recovered(now);
  EXPECT_EQ(book_.round_trip_ns(), before);
  EXPECT_EQ(e_->deny_until_ns.load(), now);
  Expire(now);
  EXPECT_FALSE(Flags() & kDenied);
  // Not in an outage: Recovered changes nothing.
  calls = Ask(now);
  ASSERT_THAT(calls, SizeIs(1));
  Apply(calls[0], AcquireReply(1, 10), now + 3000 * kMs);
  const int64_t inflated = book_.round_trip_ns();
  book_.Recovered(now + 3000 * kMs);
  EXPECT_EQ(book_.round_trip_ns(), inflated);
}

// Tokens admitted without a lease are charged before the key's lease
// request; one charge per key is in flight at a time, a failed one is
// retried, and nothing is lost or counted twice.
TEST_F(LeaseBookTest, ChargesOneAtATimeAndRetryFailures) {
  e_->unsynced.store(3);
  LeaseCalls calls = Ask(kT0);
  ASSERT_THAT(calls, SizeIs(2));
  const LeaseCall charge = calls[0];
  EXPECT_EQ(charge.kind, LeaseCall::Kind::kCharge);
  EXPECT_EQ(Wanted(charge), 3);
  EXPECT_EQ(ChargeFlag(charge), 1);
  EXPECT_EQ(MaxDebt(charge), 1000);  // one burst
  EXPECT_EQ(calls[1].kind, LeaseCall::Kind::kLease);
  EXPECT_EQ(e_->unsynced.load(), 0);
  Apply(calls[1], AcquireReply(1, 100), kT0);

  // Two more while the first charge is unanswered: they wait.
  e_->unsynced.store(2);
  calls = Ask(kT0 + kMs);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(calls[0].kind, LeaseCall::Kind::kLease);
  EXPECT_TRUE(book_.HasRetries());
  EXPECT_FALSE(book_.Evictable(e_.get(),
                               kT0 + absl::ToInt64Nanoseconds(absl::Hours(1))));

  // The first charge fails: its 3 tokens are owed again, after a backoff
  // of one tick.
  Apply(charge, absl::DeadlineExceededError("slow"), kT0 + 2 * kMs);
  EXPECT_EQ(e_->unsynced.load(), 5);
  calls.clear();
  book_.RetryCharges(kT0 + 2 * kMs, &calls);
  EXPECT_TRUE(calls.empty());
  const int64_t tick = absl::ToInt64Nanoseconds(options_.tick);
  book_.RetryCharges(kT0 + 2 * kMs + tick, &calls);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(Wanted(calls[0]), 5);
  EXPECT_EQ(e_->unsynced.load(), 0);
  Apply(calls[0], AcquireReply(5, 90), kT0 + 3 * kMs);
  EXPECT_EQ(book_.stats().tokens_charged, 5u);
  calls.clear();
  book_.RetryCharges(kT0 + 3 * kMs + tick,
                     &calls);  // the waiting entry finds nothing left
  EXPECT_TRUE(calls.empty());
  EXPECT_FALSE(book_.HasRetries());
}

// ColdKeyPolicy::kLocalShare (the default): a new key starts with A =
// 0.25 x burst of credit; each charge's reply sets it to min(A, 0.25 x what
// Redis says is left), counting what was admitted meanwhile, so credit plus
// uncharged tokens never exceed that.
TEST_F(LeaseBookTest, LocalCreditFollowsWhatRedisSaysIsLeft) {
  ASSERT_EQ(book_.initial_credit(), 250);
  LeaseEntry e("c", book_.initial_credit());
  auto admit = [&](int64_t n) {  // the decision path's side
    ASSERT_GE(e.local_share.fetch_sub(n), n);
    e.unsynced.fetch_add(n);
    e.flags.fetch_or(kChargeQueued);
  };
  admit(100);
  LeaseCalls calls;
  book_.ChargeQueued(&e, &calls);
  EXPECT_FALSE(e.flags.load() & kChargeQueued);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(ChargeFlag(calls[0]), 1);
  EXPECT_EQ(Wanted(calls[0]), 100);
  admit(50);  // while the charge is in flight: 100 credit + 50 uncharged
  // Redis has 400 left: the target is min(250, 100) = 100 in all.
  EXPECT_TRUE(Apply(calls[0], AcquireReply(100, 400), kT0).empty());
  EXPECT_EQ(e.local_share.load() + e.unsynced.load(), 100);
  EXPECT_EQ(e.local_share.load(), 50);
  // Redis has plenty again: credit back up to A, less the uncharged 50.
  calls.clear();
  e.flags.fetch_or(kChargeQueued);
  book_.ChargeQueued(&e, &calls);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_TRUE(Apply(calls[0], AcquireReply(50, 5000), kT0).empty());
  EXPECT_EQ(e.local_share.load(), 250);
  // Redis is empty (a lease refused): no credit left.
  admit(10);
  e.flags.fetch_or(kRefillQueued);
  calls.clear();
  book_.Lease(&e, kT0, &calls);
  ASSERT_THAT(calls, SizeIs(2));  // the charge of 10, then the lease
  EXPECT_EQ(calls[1].leave_by_ns, kNoDeadline);  // credit is left
  EXPECT_TRUE(Apply(calls[1], AcquireReply(0, 0, 1000), kT0).empty());
  EXPECT_EQ(e.local_share.load(), 0);
  EXPECT_TRUE(Apply(calls[0], AcquireReply(10, 0), kT0).empty());
  EXPECT_EQ(e.local_share.load(), 0);
  EXPECT_EQ(book_.stats().tokens_charged, 160u);
}

// ReturnAll: a lease caught with a negative balance is not taken (and the
// caller keeps waiting); a key without a lease is not waited for.
TEST_F(LeaseBookTest, ReturnAllWaitsForACaughtLeaseOnly) {
  LeaseCalls calls;
  EXPECT_TRUE(book_.ReturnLease(e_.get(), kT0, &calls));  // no lease
  EXPECT_TRUE(calls.empty());
  Grant(4, kT0);
  e_->balance.fetch_sub(5);  // -1: caught mid-decision
  EXPECT_FALSE(book_.ReturnLease(e_.get(), kT0 + kMs, &calls));
  EXPECT_TRUE(calls.empty());
  e_->balance.fetch_add(5);
  EXPECT_TRUE(book_.ReturnLease(e_.get(), kT0 + 2 * kMs, &calls));
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(Amount(calls[0]), 4);
  EXPECT_FALSE(Flags() & kHasLease);
}

TEST_F(LeaseBookTest, GrantAskedForBeforeReturnAllIsGivenBackOnArrival) {
  LeaseCalls calls = Ask(kT0);
  book_.ReturnedAll(kT0 + kMs);
  calls = Apply(calls[0], AcquireReply(1, 10), kT0 + 2 * kMs);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(calls[0].kind, LeaseCall::Kind::kRelease);
  EXPECT_EQ(Balance(), 0);
  EXPECT_FALSE(Flags() & kHasLease);
}

TEST_F(LeaseBookTest, DeclineChargesAndAnswersWithoutALease) {
  e_->unsynced.store(2);
  e_->flags.fetch_or(kRefillQueued);
  LeaseCalls calls;
  book_.Decline(e_.get(), &calls);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(calls[0].kind, LeaseCall::Kind::kCharge);
  EXPECT_FALSE(Flags() & kRefillQueued);
}

TEST_F(LeaseBookTest, EvictableOnlyWhenNothingIsHeldOrPending) {
  const int64_t idle = absl::ToInt64Nanoseconds(options_.idle_evict);
  // A key no sweep has seen is not idle: a decision may be creating it
  // (retiring it then denied that decision, or left its charge unsent when
  // Sync returned). Its first sweep stamps it; idle_evict later it is idle.
  EXPECT_FALSE(book_.Evictable(e_.get(), kT0));
  EXPECT_FALSE(book_.Evictable(e_.get(), kT0 + idle - 1));
  EXPECT_TRUE(book_.Evictable(e_.get(), kT0 + idle));  // never used
  Grant(2, kT0);
  const int64_t ttl = absl::ToInt64Nanoseconds(options_.lease_ttl);
  EXPECT_FALSE(book_.Evictable(e_.get(), kT0 + idle));  // holds a lease
  LeaseCalls calls = Expire(kT0 + ttl);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_FALSE(book_.Evictable(e_.get(), kT0 + ttl + idle));  // release due
  Apply(calls[0], IntegerReply(2), kT0 + ttl);
  EXPECT_FALSE(book_.Evictable(e_.get(), kT0 + ttl + idle - 1));
  EXPECT_TRUE(book_.Evictable(e_.get(), kT0 + ttl + idle));
  e_->unsynced.store(1);
  EXPECT_FALSE(book_.Evictable(e_.get(), kT0 + ttl + idle));
}

class FixedWindowLeaseBookTest : public LeaseBookTest {
 protected:
  FixedWindowLeaseBookTest()
      : LeaseBookTest(LimitSpec::FixedWindow(1000, absl::Seconds(10))) {}
};

// Tokens of one fixed window must not be spent in the next: the lease ends
// with the window (the reply's reset_after) when that comes first.
TEST_F(FixedWindowLeaseBookTest, LeaseEndsWithItsWindow) {
  LeaseCalls calls = Ask(kT0);
  Apply(calls[0], AcquireReply(1, 999, 0, /*reset_after_us=*/300'000), kT0);
  EXPECT_TRUE(Expire(kT0 + 300 * kMs - 1).empty());
  calls = Expire(kT0 + 300 * kMs);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(calls[0].kind, LeaseCall::Kind::kRelease);
}

// 10,000/s with a burst of 1,000: a max lease (100) lasts 10 ms at the
// limit's rate, so one renewal per 20 ms batch window would cap a key that
// spends that fast.
class ShortBurstLeaseBookTest : public LeaseBookTest {
 protected:
  ShortBurstLeaseBookTest()
      : LeaseBookTest(LimitSpec::TokenBucket(10000, absl::Seconds(1), 1000)) {}

  // A lease of 100 landed at kT0 with `remaining` left in Redis, then
  // `spent` of it went by `now`: the renewal's call (for 100 tokens, at
  // least 100: 10 ms of the rate).
  LeaseCall Renewal(int64_t spent, int64_t now, int64_t remaining = 500,
                    int64_t minimum = 100) {
    e_->wanted_cost.store(100);
    LeaseCalls calls = Ask(kT0);
    EXPECT_THAT(calls, SizeIs(1));
    EXPECT_TRUE(Apply(calls[0], AcquireReply(100, remaining), kT0).empty());
    e_->balance.fetch_sub(spent);
    e_->wanted_cost.store(minimum);
    calls = Ask(now);
    EXPECT_THAT(calls, SizeIs(1));
    if (calls.empty()) return LeaseCall{};
    EXPECT_EQ(Wanted(calls[0]), minimum);
    return calls[0];
  }
};

// Half the lease in 10 ms: the other half lasts less than a window, and
// even a max lease would; Redis holds the minimum: the renewal leaves now.
TEST_F(ShortBurstLeaseBookTest, ARenewalThatCannotWaitLeavesNow) {
  const int64_t now = kT0 + 10 * kMs;
  const LeaseCall call = Renewal(50, now);
  EXPECT_EQ(call.kind, LeaseCall::Kind::kLease);
  EXPECT_EQ(call.leave_by_ns, now);
}

// Redis had 20 left 2 ms ago: the minimum of 100 is there 6 ms from now,
// at 10 tokens a millisecond; the renewal leaves then, not sooner.
TEST_F(ShortBurstLeaseBookTest, ARenewalLeavesWhenRedisMayHoldTheMinimum) {
  EXPECT_EQ(Renewal(50, kT0 + 2 * kMs, /*remaining=*/20).leave_by_ns,
            kT0 + 8 * kMs);
}

// A minimum of 500 (the cost hint) that Redis may hold only in 49.9 ms: the
// renewal leaves within a window (20 ms) all the same, as it would have
// without a deadline.
TEST_F(ShortBurstLeaseBookTest, ARenewalWaitsAWindowAtMost) {
  const int64_t now = kT0 + 2 * kMs;
  EXPECT_EQ(Renewal(50, now, /*remaining=*/1, /*minimum=*/500).leave_by_ns,
            now + absl::ToInt64Nanoseconds(options_.batch_window));
}

// Half the lease in 500 ms: the renewal waits for the window.
TEST_F(ShortBurstLeaseBookTest, ARenewalThatCanWaitHasNoDeadline) {
  EXPECT_EQ(Renewal(50, kT0 + 500 * kMs).leave_by_ns, kNoDeadline);
}

// Redis said nothing is left: asking sooner would only be refused sooner.
TEST_F(ShortBurstLeaseBookTest, ARenewalOfAnExhaustedLimitHasNoDeadline) {
  EXPECT_EQ(Renewal(50, kT0 + 10 * kMs, /*remaining=*/0).leave_by_ns,
            kNoDeadline);
}

// The default limit (1000/s, burst 1000, max lease 100): a max lease lasts
// 100 ms at the limit's rate, so however fast a key spends, the limit
// caps it before one renewal per window does.
TEST_F(LeaseBookTest, ARenewalOfALongBurstHasNoDeadline) {
  e_->wanted_cost.store(100);
  LeaseCalls calls = Ask(kT0);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_TRUE(Apply(calls[0], AcquireReply(100, 500), kT0).empty());
  e_->balance.fetch_sub(60);
  calls = Ask(kT0 + 1 * kMs);
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(calls[0].leave_by_ns, kNoDeadline);
}

}  // namespace
}  // namespace tokenlease::internal
