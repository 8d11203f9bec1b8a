#include "local/atomic_cell.h"

#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace tokenlease::internal {
namespace {

TEST(AtomicCellTest, LoadCompareExchangeValidate) {
  AtomicCell cell(CellValue{1, 2});
  CellValue v;
  cell.Load(v);
  EXPECT_EQ(v, (CellValue{1, 2}));
  CellValue stale{1, 3};
  EXPECT_FALSE(cell.CompareExchange(stale, CellValue{5, 6}));
  EXPECT_EQ(stale, (CellValue{1, 2}));  // failure hands back the current value
  EXPECT_TRUE(cell.CompareExchange(stale, CellValue{5, 6}));
  CellValue seen{5, 6};
  EXPECT_TRUE(cell.Validate(seen));
  CellValue wrong{0, 0};
  EXPECT_FALSE(cell.Validate(wrong));
  EXPECT_EQ(wrong, (CellValue{5, 6}));
}

TEST(AtomicCellTest, SnapshotLoadsAreNeverTorn) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan builds read cells in two halves and validate";
#endif
  // x86-64 machines this project targets all have AVX; if one does not, the
  // fallback (halves + Validate) is what runs, and this test says so.
  if (!kSnapshotLoads) GTEST_SKIP() << "no AVX: snapshot loads disabled";
  AtomicCell cell(CellValue{0, 0});
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    // The only writer, so every CAS succeeds; both halves change each time
    // and a torn read would show b != -a.
    CellValue cur{0, 0};
    for (int64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
      const CellValue next{i, -i};
      cell.CompareExchange(cur, next);
      cur = next;
    }
  });
  // Read until the writer has been seen changing the cell many times. The
  // reader yields every 1,000 reads so that, when both threads share one
  // core (a loaded CI machine), the writer runs between read bursts; with
  // two free cores the yield returns at once. The deadline only bounds a
  // machine that never schedules the writer.
  int64_t torn = 0, not_snapshot = 0, changes = 0;
  CellValue last;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (changes < 1'000 && absl::Now() < deadline) {
    for (int i = 0; i < 1000; ++i) {
      CellValue v;
      not_snapshot += cell.Load(v) ? 0 : 1;
      torn += v.b == -v.a ? 0 : 1;
      changes += v == last ? 0 : 1;
      last = v;
    }
    std::this_thread::yield();
  }
  // Join before asserting, so a failure cannot leave the thread running.
  stop.store(true, std::memory_order_relaxed);
  writer.join();
  EXPECT_EQ(not_snapshot, 0);
  EXPECT_EQ(torn, 0);
  // The reader really raced the writer: 1,000 distinct values seen (on one
  // shared core, about one per yield, so a few seconds).
  EXPECT_GE(changes, 1'000);
}

}  // namespace
}  // namespace tokenlease::internal
