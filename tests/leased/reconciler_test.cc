// The reconciler (src/leased/reconciler.h) over a transport that answers
// when the test says so: flow control (the cap on calls in flight, keys
// deferred beyond it), ReturnAll waiting for exactly what it must, Sync,
// the batch window (and the urgent leases that skip it), the charge delay,
// and hash-slot grouping.
// The transport's Flush ends every step, which gives the tests their
// synchronisation points.
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
#include "tokenlease/clock.h"

namespace tokenlease::internal {
namespace {

constexpr absl::Duration kBound = absl::Seconds(20);

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

// Charges without a delay, and a batch window far longer than the test.
class WindowedReconcilerTest : public ReconcilerTest {
 public:
  static LeaseOptions WindowOptions() {
    LeaseOptions o = Options();
    o.batch_window = absl::Seconds(5);
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

// A lease a decision is denied for (no balance, no local credit) is urgent:
// it leaves at the next step, and takes the partial batch with it; a lease
// of a key that can still decide waits for the window.
TEST_F(WindowedReconcilerTest, AnUrgentLeaseLeavesWithoutWaitingForTheWindow) {
  const auto start = std::chrono::steady_clock::now();
  Charge("a", 1);
  std::vector<FakeTransport::Call> first = transport_.Take(1);
  LeaseEntry* rich = registry_.With("rich", 0, [](LeaseEntry* x) { return x; });
  rich->balance.store(5);  // decides from its balance: not urgent
  reconciler_.RequestRefill(rich);
  transport_.AwaitSteps(5);
  // The window is 5 s: only a step that came that late could have sent it.
  if (std::chrono::steady_clock::now() - start < std::chrono::seconds(4)) {
    EXPECT_EQ(transport_.batches(), 1u) << "a lease not needed yet left early";
  }
  const auto asked = std::chrono::steady_clock::now();
  Ask("poor");  // balance 0, credit 0: its next decision is denied
  std::vector<FakeTransport::Call> urgent = transport_.Take(2);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(4))
      << "the urgent lease waited for the window";
  if (std::chrono::steady_clock::now() - start < std::chrono::seconds(4)) {
    EXPECT_EQ(transport_.batches(), 2u);
    ASSERT_EQ(transport_.batch_names().size(), 2u);
    EXPECT_EQ(transport_.batch_names()[1],
              (std::vector<std::string>{"rich", "poor"}));
  }
  Answer(first);
  Answer(urgent);
  EXPECT_TRUE(reconciler_.Sync(kBound).ok());
}

// Charges after a delay longer than the test's steps.
class DelayedChargeReconcilerTest : public ReconcilerTest {
 public:
  static constexpr absl::Duration kDelay = absl::Milliseconds(300);
  static LeaseOptions DelayOptions() {
    LeaseOptions o = Options();
    o.charge_delay = kDelay;
    return o;
  }

 protected:
  DelayedChargeReconcilerTest() : ReconcilerTest(DelayOptions()) {}
};

// A key is charged charge_delay after its first uncharged admission (never
// sooner), and what it admits meanwhile joins that one charge.
TEST_F(DelayedChargeReconcilerTest, AdmissionsWithinTheDelayJoinOneCharge) {
  const auto start = std::chrono::steady_clock::now();
  Charge("a", 1);
  Charge("a", 2);  // the key is already queued: no second charge
  const auto second = std::chrono::steady_clock::now();
  std::vector<FakeTransport::Call> calls = transport_.Take(1);
  EXPECT_GE(std::chrono::steady_clock::now() - start,
            absl::ToChronoNanoseconds(kDelay))
      << "charged before the delay";
  ASSERT_EQ(calls.size(), 1u);
  // Both admissions came before the delay ran out (unless this thread was
  // descheduled for that long in between): one charge of 3.
  if (second - start < absl::ToChronoNanoseconds(kDelay)) {
    EXPECT_EQ(calls[0].amount, 3);
  }
  Answer(calls);
  EXPECT_TRUE(reconciler_.Sync(kBound).ok());
  EXPECT_EQ(book_.stats().tokens_charged, 3u);
  if (second - start < absl::ToChronoNanoseconds(kDelay)) {
    EXPECT_EQ(transport_.submitted(), 1u);
  }
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

}  // namespace
}  // namespace tokenlease::internal
