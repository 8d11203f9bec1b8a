// The reconciler (src/leased/reconciler.h) over a transport that answers
// when the test says so: flow control (the cap on calls in flight, keys
// deferred beyond it), ReturnAll waiting for exactly what it must, Sync,
// the batch window (and the leases that must leave sooner), the charge delay,
// and hash-slot grouping.
// The transport's Flush ends every step, which gives the tests their
// synchronisation points. Time is the fixture's ManualClock, which the
// reconciler's pacing reads: a batch window or a charge delay passes only
// when a test advances it, so every check about them is exact (no test
// depends on how fast the machine runs).
#include "leased/reconciler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "leased/lease_book.h"
#include "leased/lease_transport.h"
#include "redis/scripts.h"
#include "testing/replies.h"
#include "testing/wait.h"
#include "tokenlease/clock.h"

namespace tokenlease::internal {
namespace {

// Every wait for the reconciler's thread ends by then (real time).
constexpr absl::Duration kBound = ::tokenlease::testing::kWaitBound;

// A grant of `granted` (Redis time 2026-01-01).
RedisReply AcquireReply(int64_t granted, int64_t remaining) {
  return ::tokenlease::testing::AcquireReply(granted, remaining, 0, 0,
                                             1'767'225'600'000'000);
}
using ::tokenlease::testing::IntegerReply;

// Holds every submitted call (a batch item) until the test answers it; a
// batch's callback runs once all of its items are answered.
class FakeTransport final : public LeaseTransport {
 public:
  struct Call {
    bool release = false;  // a release item (else acquire or charge)
    int64_t amount = 0;    // acquire: wanted; release: amount
    std::function<void(RedisReply)> done;
  };

  absl::Status SubmitBatch(std::span<const BatchItem> items,
                           BatchCallback done) override {
    EXPECT_GE(items.size(), 1u);
    EXPECT_LE(items.size(), static_cast<size_t>(kMaxBatchItems));
    struct Pending {
      BatchCallback done;
      BatchReplies replies;
      size_t left;
    };
    auto batch = std::make_shared<Pending>(
        Pending{std::move(done), BatchReplies(items.size()), items.size()});
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < items.size(); ++i) {
      const bool release = items[i].op == BatchItem::Op::kRelease;
      pending_.push_back(Call{release,
                              release ? items[i].amount : items[i].wanted,
                              [batch, i](RedisReply r) {
                                batch->replies[i] = std::move(r);
                                if (--batch->left == 0)
                                  batch->done(std::move(batch->replies));
                              }});
      ++submitted_;
    }
    ++batches_;
    std::vector<std::string> names;
    for (const BatchItem& item : items) names.push_back(item.name);
    batch_names_.push_back(std::move(names));
    max_pending_ = std::max(max_pending_, pending_.size());
    return absl::OkStatus();
  }
  void Flush() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++flushes_;
    }
    cv_.notify_all();
  }

  // Waits for `n` more steps to end (each step ends with a Flush).
  void AwaitSteps(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = flushes_ + n;
    ASSERT_TRUE(cv_.wait_for(lock, absl::ToChronoNanoseconds(kBound),
                             [&] { return flushes_ >= target; }));
  }
  // Takes the unanswered calls (waiting until there are at least `n`).
  std::vector<Call> Take(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, absl::ToChronoNanoseconds(kBound),
                             [&] { return pending_.size() >= n; }))
        << pending_.size() << " of " << n;
    std::vector<Call> out;
    out.swap(pending_);
    return out;
  }
  uint64_t submitted() {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_;
  }
  uint64_t batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }
  size_t max_pending() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_pending_;
  }
  // The limit keys of each batch call so far, in order.
  std::vector<std::vector<std::string>> batch_names() {
    std::lock_guard<std::mutex> lock(mu_);
    return batch_names_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Call> pending_;
  uint64_t flushes_ = 0;
  uint64_t submitted_ = 0;
  uint64_t batches_ = 0;
  std::vector<std::vector<std::string>> batch_names_;
  size_t max_pending_ = 0;
};

class Keys final : public LeaseRegistry::Owner {
 public:
  LeaseEntry* NewEntry(std::string_view name, int64_t) override {
    return new LeaseEntry(name);
  }
  void DeleteEntry(LeaseEntry* e) override { delete e; }
  bool TryRetire(LeaseEntry*, int64_t) override { return false; }
  void Revive(LeaseEntry*) override {}
};

class ReconcilerTest : public ::testing::Test {
 protected:
  explicit ReconcilerTest(const LeaseOptions& options = Options())
      : book_(LimitSpec::TokenBucket(1'000'000, absl::Seconds(1)), options,
              "inst", 1),
        registry_(&keys_, 1 << 20, 64, LeaseRegistry::Growth::kRefusesWhenFull),
        reconciler_(&book_, &registry_, &transport_, &clock_, options,
                    "rt:", 1 << 12) {
    reconciler_.Start();
  }
  ~ReconcilerTest() override { reconciler_.Stop(absl::ZeroDuration()); }

  static LeaseOptions Options() {
    LeaseOptions o;
    o.tick = absl::Milliseconds(1);
    o.lease_ttl = absl::Hours(1);
    o.idle_evict = absl::Hours(2);
    return o;
  }

  // The decision path's refill request for `key`.
  LeaseEntry* Ask(const std::string& key) {
    LeaseEntry* e = registry_.With(key, 0, [](LeaseEntry* x) { return x; });
    reconciler_.RequestRefill(e);
    return e;
  }

  // The decision path's side of admitting `n` tokens of `key` from its
  // local credit.
  void Charge(const std::string& key, int64_t n) {
    LeaseEntry* e = registry_.With(key, 0, [](LeaseEntry* x) { return x; });
    e->unsynced.fetch_add(n);
    reconciler_.RequestCharge(e);
  }

  // Calls ReturnAll on another thread and returns once a step that started
  // after it registered has ended (so that step declined new leases).
  std::future<absl::Status> StartReturnAll() {
    auto returned = std::async(std::launch::async,
                               [&] { return reconciler_.ReturnAll(kBound); });
    for (int i = 0; i < 20'000 && !reconciler_.ReturningAll(); ++i) {
      transport_.AwaitSteps(1);
    }
    EXPECT_TRUE(reconciler_.ReturningAll());
    transport_.AwaitSteps(2);
    return returned;
  }

  static void Answer(std::vector<FakeTransport::Call>& calls) {
    for (FakeTransport::Call& c : calls) {
      c.done(c.release ? IntegerReply(c.amount)
                       : AcquireReply(c.amount, 100000));
    }
  }

  ManualClock clock_;
  Keys keys_;
  FakeTransport transport_;
  LeaseBook book_;
  LeaseRegistry registry_;
  Reconciler reconciler_;
};

// Beyond kMaxCallsInFlight unanswered calls, keys wait (still flagged):
// their lease requests are built only when there is room.
TEST_F(ReconcilerTest, CapsCallsInFlightAndDefersKeysBeyondIt) {
  constexpr int kKeys = 1000;
  for (int i = 0; i < kKeys; ++i) Ask(absl::StrCat("k", i));
  std::vector<FakeTransport::Call> first =
      transport_.Take(Reconciler::kMaxCallsInFlight);
  transport_.AwaitSteps(3);  // more steps: nothing more may be asked
  EXPECT_EQ(transport_.submitted(),
            static_cast<uint64_t>(Reconciler::kMaxCallsInFlight));
  EXPECT_EQ(book_.stats().lease_requests,
            static_cast<uint64_t>(Reconciler::kMaxCallsInFlight));
  Answer(first);
  uint64_t answered = first.size();
  while (answered < kKeys) {
    std::vector<FakeTransport::Call> more = transport_.Take(1);
    answered += more.size();
    Answer(more);
  }
  ASSERT_TRUE(reconciler_.Sync(kBound).ok());
  EXPECT_EQ(transport_.submitted(), static_cast<uint64_t>(kKeys));
  EXPECT_LE(transport_.max_pending(),
            static_cast<size_t>(Reconciler::kMaxCallsInFlight));
  EXPECT_EQ(book_.stats().tokens_granted, static_cast<uint64_t>(kKeys));
}

// A grant asked for before ReturnAll is given back when it arrives, and
// ReturnAll returns only once that release is answered too.
TEST_F(ReconcilerTest, ReturnAllWaitsForAGrantGivenBackOnArrival) {
  LeaseEntry* e = Ask("k");
  std::vector<FakeTransport::Call> lease = transport_.Take(1);
  auto returned = StartReturnAll();  // nothing to return yet
  Answer(lease);                     // the grant lands...
  std::vector<FakeTransport::Call> release = transport_.Take(1);
  ASSERT_EQ(release.size(), 1u);
  EXPECT_TRUE(release[0].release);  // ...and goes back at once
  EXPECT_EQ(e->balance.load(), 0);
  transport_.AwaitSteps(3);
  EXPECT_EQ(returned.wait_for(std::chrono::seconds(0)),
            std::future_status::timeout)
      << "ReturnAll returned before the release was answered";
  Answer(release);
  EXPECT_TRUE(returned.get().ok());
  EXPECT_EQ(book_.stats().tokens_returned, book_.stats().tokens_granted);
}

// While returning everything, keys still waiting for room get no lease.
TEST_F(ReconcilerTest, ReturnAllDeclinesKeysWaitingForRoom) {
  constexpr int kKeys = 600;
  for (int i = 0; i < kKeys; ++i) Ask(absl::StrCat("k", i));
  std::vector<FakeTransport::Call> leases =
      transport_.Take(Reconciler::kMaxCallsInFlight);
  auto returned = StartReturnAll();
  Answer(leases);  // granted, then given back on arrival
  std::vector<FakeTransport::Call> releases =
      transport_.Take(Reconciler::kMaxCallsInFlight);
  for (const FakeTransport::Call& c : releases) EXPECT_TRUE(c.release);
  Answer(releases);
  ASSERT_TRUE(returned.get().ok());
  EXPECT_EQ(book_.stats().lease_requests,
            static_cast<uint64_t>(Reconciler::kMaxCallsInFlight));
  EXPECT_EQ(book_.stats().tokens_returned, book_.stats().tokens_granted);
}

// A key's charge made with its lease request goes out before the lease, in
// the same batch call.
TEST_F(ReconcilerTest, AKeysChargeGoesBeforeItsLease) {
  LeaseEntry* e = registry_.With("c", 0, [](LeaseEntry* x) { return x; });
  e->unsynced.store(7);
  reconciler_.RequestRefill(e);
  std::vector<FakeTransport::Call> calls = transport_.Take(2);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(transport_.batches(), 1u);
  EXPECT_FALSE(calls[0].release);
  EXPECT_EQ(calls[0].amount, 7);  // the charge
  EXPECT_EQ(calls[1].amount, 1);  // the lease: a new key asks for 1
  Answer(calls);
  EXPECT_TRUE(reconciler_.Sync(kBound).ok());
  EXPECT_EQ(book_.stats().tokens_charged, 7u);
}

TEST_F(ReconcilerTest, SyncReturnsOnlyOnceTheAnswersAreApplied) {
  LeaseEntry* e = Ask("k");
  std::vector<FakeTransport::Call> lease = transport_.Take(1);
  auto synced =
      std::async(std::launch::async, [&] { return reconciler_.Sync(kBound); });
  transport_.AwaitSteps(3);
  EXPECT_EQ(synced.wait_for(std::chrono::seconds(0)),
            std::future_status::timeout);
  Answer(lease);
  EXPECT_TRUE(synced.get().ok());
  EXPECT_EQ(e->balance.load(), 1);  // applied before Sync returned
  // Nothing pending: Sync returns after one step.
  EXPECT_TRUE(reconciler_.Sync(kBound).ok());
  // A deadline while a call is unanswered.
  Ask("other");
  std::vector<FakeTransport::Call> other = transport_.Take(1);
  EXPECT_EQ(reconciler_.Sync(absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  Answer(other);
}

// Charges without a delay, and a batch window far longer than any real
// wait of a test (kBound): only advancing the manual clock ends it.
class WindowedReconcilerTest : public ReconcilerTest {
 public:
  static constexpr absl::Duration kWindow = absl::Hours(1);
  static LeaseOptions WindowOptions() {
    LeaseOptions o = Options();
    o.batch_window = kWindow;
    o.charge_delay = absl::ZeroDuration();
    return o;
  }

 protected:
  WindowedReconcilerTest() : ReconcilerTest(WindowOptions()) {}
};

// A lone call leaves at once; the next partial batch waits for the window
// (or for someone waiting on it: Sync), and then carries everything queued.
TEST_F(WindowedReconcilerTest,
       APartialBatchWaitsForTheWindowUnlessAWaiterNeedsIt) {
  Charge("a", 1);
  std::vector<FakeTransport::Call> first = transport_.Take(1);
  EXPECT_EQ(transport_.batches(), 1u);
  Charge("b", 2);
  Charge("c", 3);
  transport_.AwaitSteps(5);
  EXPECT_EQ(transport_.batches(), 1u) << "b and c left before the window";
  Answer(first);
  auto synced =
      std::async(std::launch::async, [&] { return reconciler_.Sync(kBound); });
  std::vector<FakeTransport::Call> rest = transport_.Take(2);
  EXPECT_EQ(transport_.batches(), 2u);  // b and c in one call
  Answer(rest);
  EXPECT_TRUE(synced.get().ok());
  EXPECT_EQ(book_.stats().tokens_charged, 6u);
}

// The window is measured on the reconciler's clock: a partial batch waits
// until exactly batch_window after the last one left, not a nanosecond
// less, and then leaves without any waiter.
TEST_F(WindowedReconcilerTest, APartialBatchLeavesWhenTheWindowEndsOnTheClock) {
  Charge("a", 1);
  std::vector<FakeTransport::Call> first = transport_.Take(1);  // at the start
  Charge("b", 2);
  Charge("c", 3);
  clock_.Advance(kWindow - absl::Nanoseconds(1));
  // Two steps: the second started after the advance (and after the
  // charges were queued).
  transport_.AwaitSteps(2);
  EXPECT_EQ(transport_.batches(), 1u) << "b and c left before the window";
  clock_.Advance(absl::Nanoseconds(1));
  std::vector<FakeTransport::Call> rest = transport_.Take(2);
  ASSERT_EQ(rest.size(), 2u) << "the window ended and b and c did not leave";
  EXPECT_EQ(transport_.batches(), 2u);
  EXPECT_EQ(transport_.batch_names()[1], (std::vector<std::string>{"b", "c"}));
  Answer(first);
  Answer(rest);
  EXPECT_TRUE(reconciler_.Sync(kBound).ok());
  EXPECT_EQ(book_.stats().tokens_charged, 6u);
}

// A clock that steps back (a wall clock may) holds a partial batch for one
// window from the step, not until the clock is back where it was.
TEST_F(WindowedReconcilerTest, AClockSteppingBackHoldsABatchOneWindowAtMost) {
  Charge("a", 1);
  std::vector<FakeTransport::Call> first = transport_.Take(1);
  clock_.Advance(-absl::Hours(24));
  Charge("b", 2);
  transport_.AwaitSteps(2);
  EXPECT_EQ(transport_.batches(), 1u) << "no time has passed: b must wait";
  clock_.Advance(kWindow);  // still 23 hours before the first batch left
  std::vector<FakeTransport::Call> rest = transport_.Take(1);
  ASSERT_EQ(rest.size(), 1u) << "b waited for the clock to come back";
  EXPECT_EQ(rest[0].amount, 2);
  Answer(first);
  Answer(rest);
  EXPECT_TRUE(reconciler_.Sync(kBound).ok());
}

// A lease a decision is denied for (no balance, no local credit) is due at
// once: it leaves at the next step, and takes the partial batch with it; a
// lease of a key that can still decide waits for the window. The clock
// never moves here, so the window never ends: whatever leaves after the
// first call left because it was due.
TEST_F(WindowedReconcilerTest, ADeniedLeaseLeavesWithoutWaitingForTheWindow) {
  Charge("a", 1);
  std::vector<FakeTransport::Call> first = transport_.Take(1);
  LeaseEntry* rich = registry_.With("rich", 0, [](LeaseEntry* x) { return x; });
  rich->balance.store(5);  // decides from its balance: no deadline
  reconciler_.RequestRefill(rich);
  transport_.AwaitSteps(5);
  EXPECT_EQ(transport_.batches(), 1u) << "a lease not needed yet left early";
  Ask("poor");  // balance 0, credit 0: its next decision is denied
  std::vector<FakeTransport::Call> due = transport_.Take(2);
  ASSERT_EQ(due.size(), 2u) << "the denied lease waited for the window";
  EXPECT_EQ(transport_.batches(), 2u);
  ASSERT_EQ(transport_.batch_names().size(), 2u);
  EXPECT_EQ(transport_.batch_names()[1],
            (std::vector<std::string>{"rich", "poor"}));
  Answer(first);
  Answer(due);
  EXPECT_TRUE(reconciler_.Sync(kBound).ok());
}

// The renewal of a key that spends its lease far faster than a window
// leaves at the step when Redis, refilling at the limit's rate since its
// last reply, may hold the renewal's minimum: not sooner (here, where the
// window is an hour, nothing else sends it), and not a window later (the
// key would run dry).
class RenewalReconcilerTest : public WindowedReconcilerTest {
 protected:
  // "hot" gets 5,000 tokens with 1,000 left in Redis (which refills 1,000
  // a millisecond), spends 4,000 of them in 1 ms, and asks again for at
  // least 5,000 (the cost hint): Redis may hold that 4 ms after its reply,
  // 3 ms after the renewal is asked for.
  LeaseEntry* AskForARenewalDueIn3Ms() {
    LeaseEntry* e = registry_.With("hot", 0, [](LeaseEntry* x) { return x; });
    e->wanted_cost.store(5000);
    reconciler_.RequestRefill(e);
    std::vector<FakeTransport::Call> first = transport_.Take(1);
    EXPECT_EQ(first.size(), 1u);
    if (first.empty()) return e;
    first[0].done(AcquireReply(5000, 1000));
    EXPECT_TRUE(reconciler_.Sync(kBound).ok());
    EXPECT_EQ(e->balance.load(), 5000);
    clock_.Advance(absl::Milliseconds(1));
    e->balance.fetch_sub(4000);
    e->wanted_cost.store(5000);
    reconciler_.RequestRefill(e);
    transport_.AwaitSteps(3);
    EXPECT_EQ(transport_.batches(), 1u) << "the renewal left before it was due";
    return e;
  }
  void AnswerTheRenewal() {
    std::vector<FakeTransport::Call> renewal = transport_.Take(1);
    ASSERT_EQ(renewal.size(), 1u) << "the renewal waited for the window";
    EXPECT_EQ(renewal[0].amount, 5000);
    Answer(renewal);
    EXPECT_TRUE(reconciler_.Sync(kBound).ok());
  }
};

TEST_F(RenewalReconcilerTest, ARenewalThatCannotWaitLeavesWhenItIsDue) {
  AskForARenewalDueIn3Ms();
  clock_.Advance(absl::Milliseconds(3) - absl::Nanoseconds(1));
  transport_.AwaitSteps(2);
  EXPECT_EQ(transport_.batches(), 1u) << "the renewal left before it was due";
  clock_.Advance(absl::Nanoseconds(1));
  AnswerTheRenewal();
}

// The clock steps back a day while the renewal waits: its deadline, now a
// day ahead, would hold it for a day; it leaves at once instead.
TEST_F(RenewalReconcilerTest, AClockSteppingBackDoesNotHoldADeadline) {
  AskForARenewalDueIn3Ms();
  clock_.Advance(-absl::Hours(24));
  AnswerTheRenewal();
}

// Charges after a delay far longer than any real wait of a test: only
// advancing the manual clock ends it.
class DelayedChargeReconcilerTest : public ReconcilerTest {
 public:
  static constexpr absl::Duration kDelay = absl::Minutes(10);
  static LeaseOptions DelayOptions() {
    LeaseOptions o = Options();
    o.charge_delay = kDelay;
    return o;
  }

 protected:
  DelayedChargeReconcilerTest() : ReconcilerTest(DelayOptions()) {}
};

// A key is charged charge_delay after its first uncharged admission (not a
// nanosecond sooner), and what it admits meanwhile joins that one charge.
TEST_F(DelayedChargeReconcilerTest, AdmissionsWithinTheDelayJoinOneCharge) {
  Charge("a", 1);
  // Two steps: the second started after the request, so the key waits
  // from the clock's start.
  transport_.AwaitSteps(2);
  Charge("a", 2);  // the key is still queued: no second charge
  clock_.Advance(kDelay - absl::Nanoseconds(1));
  transport_.AwaitSteps(2);  // the second step saw the advanced clock
  EXPECT_EQ(transport_.submitted(), 0u) << "charged before the delay";
  clock_.Advance(absl::Nanoseconds(1));
  std::vector<FakeTransport::Call> calls = transport_.Take(1);
  ASSERT_EQ(calls.size(), 1u) << "not charged when the delay ran out";
  EXPECT_EQ(calls[0].amount, 3);  // both admissions, one charge
  Answer(calls);
  EXPECT_TRUE(reconciler_.Sync(kBound).ok());
  EXPECT_EQ(book_.stats().tokens_charged, 3u);
  EXPECT_EQ(transport_.submitted(), 1u);
}

// A clock that steps back delays a waiting charge by charge_delay from the
// step at most, not until the clock is back where it was.
TEST_F(DelayedChargeReconcilerTest, AClockSteppingBackDelaysAChargeOnceAtMost) {
  Charge("a", 1);
  transport_.AwaitSteps(2);  // waits from the start: due at start + kDelay
  clock_.Advance(-absl::Hours(24));
  transport_.AwaitSteps(2);
  EXPECT_EQ(transport_.submitted(), 0u) << "no time has passed: not due";
  clock_.Advance(kDelay);  // still 24 hours before the first due time
  std::vector<FakeTransport::Call> calls = transport_.Take(1);
  ASSERT_EQ(calls.size(), 1u) << "the charge waited for the clock to return";
  EXPECT_EQ(calls[0].amount, 1);
  Answer(calls);
  EXPECT_TRUE(reconciler_.Sync(kBound).ok());
}

class SlotReconcilerTest : public ReconcilerTest {
 protected:
  SlotReconcilerTest() : ReconcilerTest(SlotOptions()) {}
  static LeaseOptions SlotOptions() {
    LeaseOptions o = WindowedReconcilerTest::WindowOptions();
    o.group_batches_by_slot = true;
    return o;
  }
};

// group_batches_by_slot: every call carries keys of one Redis Cluster hash
// slot only, and every call is sent.
TEST_F(SlotReconcilerTest, EachCallCarriesOneHashSlot) {
  constexpr int kKeys = 40;
  for (int i = 0; i < kKeys; ++i) Charge(absl::StrCat("k", i), 1);
  // Sync sends every partial batch at once (no window).
  auto synced =
      std::async(std::launch::async, [&] { return reconciler_.Sync(kBound); });
  size_t answered = 0;
  while (answered < kKeys) {
    std::vector<FakeTransport::Call> calls = transport_.Take(1);
    answered += calls.size();
    Answer(calls);
  }
  EXPECT_TRUE(synced.get().ok());
  EXPECT_EQ(book_.stats().tokens_charged, static_cast<uint64_t>(kKeys));
  size_t items = 0;
  std::set<uint16_t> slots;
  for (const std::vector<std::string>& names : transport_.batch_names()) {
    ASSERT_FALSE(names.empty());
    const uint16_t slot = HashSlot(LimitKeyTag("rt:", names[0]));
    for (const std::string& name : names) {
      EXPECT_EQ(HashSlot(LimitKeyTag("rt:", name)), slot) << name;
    }
    slots.insert(slot);
    items += names.size();
  }
  EXPECT_EQ(items, static_cast<size_t>(kKeys));
  EXPECT_GT(slots.size(), 1u);  // 40 keys do not share one slot
}

// A call that is due sends the partial batch of its own slot only: a
// charge of another slot keeps waiting for the window (an hour here).
TEST_F(SlotReconcilerTest, ADueCallSendsItsOwnSlotOnly) {
  ASSERT_NE(HashSlot(LimitKeyTag("rt:", "b")),
            HashSlot(LimitKeyTag("rt:", "poor")));
  Charge("a", 1);
  std::vector<FakeTransport::Call> first = transport_.Take(1);  // alone
  Charge("b", 2);
  transport_.AwaitSteps(3);
  EXPECT_EQ(transport_.batches(), 1u) << "b left before the window";
  Ask("poor");  // balance 0, credit 0: its next decision is denied
  std::vector<FakeTransport::Call> due = transport_.Take(1);
  transport_.AwaitSteps(3);
  ASSERT_EQ(transport_.batch_names().size(), 2u) << "b left with poor";
  EXPECT_EQ(transport_.batch_names()[1], std::vector<std::string>{"poor"});
  Answer(first);
  Answer(due);
  auto synced =
      std::async(std::launch::async, [&] { return reconciler_.Sync(kBound); });
  std::vector<FakeTransport::Call> rest = transport_.Take(1);
  EXPECT_EQ(transport_.batch_names().back(), std::vector<std::string>{"b"});
  Answer(rest);
  EXPECT_TRUE(synced.get().ok());
}

}  // namespace
}  // namespace tokenlease::internal
