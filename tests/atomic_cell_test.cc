#include "local/atomic_cell.h"

#include <atomic>
#include <thread>

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
    CellValue cur{0, 0};
    for (int64_t i = 1; i < 2'000'000 && !stop.load(); ++i) {
      // Both halves change on every write: a torn read shows b != -a.
      while (!cell.CompareExchange(cur, CellValue{i, -i})) {
      }
      cur = CellValue{i, -i};
    }
  });
  int64_t snapshots = 0;
  for (int i = 0; i < 2'000'000; ++i) {
    CellValue v;
    ASSERT_TRUE(cell.Load(v));
    ASSERT_EQ(v.b, -v.a) << "torn read at " << i;
    ++snapshots;
  }
  stop.store(true);
  writer.join();
  EXPECT_EQ(snapshots, 2'000'000);
}

}  // namespace
}  // namespace tokenlease::internal
