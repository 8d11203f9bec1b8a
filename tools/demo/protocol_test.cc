// Round trips of the parent/instance line protocol.
#include "demo/protocol.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Applies every line of `text` (which must end with '\n').
absl::Status ApplyAll(const std::string& text, InstanceReport& r) {
  LineSplitter lines;
  return lines.Feed(text, [&](absl::string_view l) { return ApplyLine(l, r); });
}

TEST(ProtocolTest, StartTime) {
  const std::string line = EncodeStart(123456789012345);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(*DecodeStart(absl::string_view(line).substr(0, line.size() - 1)),
            123456789012345);
  EXPECT_FALSE(DecodeStart("soon").ok());
}

TEST(ProtocolTest, ResultsRoundTrip) {
  const WindowCounts counts{50000, 5000, 49000, 4900};
  const RunTiming timing{11, 22, 3, 4096};
  // Each counter holds its position in the "C" line.
  const FinalStats stats{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  std::vector<int64_t> latency(2500);
  for (size_t i = 0; i < latency.size(); ++i) latency[i] = 100 + i;

  InstanceReport r(/*windows=*/2, /*live=*/false);
  const std::string text = EncodeReady() + EncodeSample(1, 7, 8000, 99) +
                           EncodeCounts(1, counts) + EncodeLatency(latency) +
                           EncodeTiming(timing) + EncodeFinal(stats) +
                           EncodeEnd();
  ASSERT_TRUE(ApplyAll(text, r).ok());
  EXPECT_TRUE(r.ready);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.windows[1].offered, 50000);
  EXPECT_EQ(r.windows[1].hot_admitted, 4900);
  EXPECT_EQ(r.windows[1].keys, 7);
  EXPECT_EQ(r.windows[1].rss_kb, 8000);
  EXPECT_EQ(r.windows[1].commands, 99);
  EXPECT_EQ(r.windows[0].keys, -1);  // not sampled
  EXPECT_EQ(r.latency, latency);
  EXPECT_EQ(r.timing.last_ns, 22);
  EXPECT_EQ(r.timing.peak_rss_kb, 4096);
  EXPECT_EQ(r.stats.commands_sent, 1);
  EXPECT_EQ(r.stats.replies, 2);
  EXPECT_EQ(r.stats.keys, 10);
  EXPECT_EQ(r.stats.commands_at_end_of_run, 12);
  EXPECT_EQ(r.stats.timeouts, 13);
  EXPECT_EQ(r.stats.spare_misses, 14);
  EXPECT_EQ(r.stats.resets, 15);
  EXPECT_EQ(r.stats.late_replies, 16);
}

TEST(ProtocolTest, LatencyClassesRoundTrip) {
  InstanceReport r(/*windows=*/1, /*live=*/false);
  const std::string text = EncodeLatency({10, 20}) +
                           EncodeLatency({30}, /*cold=*/true) +
                           EncodeLatency({}, /*cold=*/true);
  EXPECT_EQ(text, "L 10 20\nLC 30\n");
  ASSERT_TRUE(ApplyAll(text, r).ok());
  EXPECT_THAT(r.latency_hot, ElementsAre(10, 20));
  EXPECT_THAT(r.latency_cold, ElementsAre(30));
  EXPECT_THAT(r.latency, ElementsAre(10, 20, 30));
}

TEST(ProtocolTest, OutagePhaseLatencyRoundTrips) {
  InstanceReport r(/*windows=*/1, /*live=*/false);
  const std::string text = EncodePhaseLatency(kBeforeOutage, {5, 6}) +
                           EncodePhaseLatency(kDuringOutage, {}) +
                           EncodePhaseLatency(kAfterOutage, {7});
  EXPECT_EQ(text, "LP 0 5 6\nLP 2 7\n");
  ASSERT_TRUE(ApplyAll(text, r).ok());
  EXPECT_THAT(r.latency_phase[kBeforeOutage], ElementsAre(5, 6));
  EXPECT_THAT(r.latency_phase[kDuringOutage], ElementsAre());
  EXPECT_THAT(r.latency_phase[kAfterOutage], ElementsAre(7));
  EXPECT_TRUE(r.latency.empty());  // phases repeat samples, not add them
  // A phase out of range or without a sample is malformed.
  EXPECT_FALSE(ApplyAll("LP 3 1\n", r).ok());
  EXPECT_FALSE(ApplyAll("LP 1\n", r).ok());
}

TEST(ProtocolTest, KeyCountsAreDeltaEncoded) {
  const std::vector<KeyCount> counts = {{0, 5, 3}, {1, 1, 1}, {42, 2, 0}};
  EXPECT_EQ(EncodeKeyCounts(counts), "K 1 5 3 1 1 1 41 2 0\n");
  EXPECT_EQ(EncodeKeyCounts({}), "");
  InstanceReport r(/*windows=*/1, /*live=*/false);
  ASSERT_TRUE(ApplyAll(EncodeKeyCounts(counts), r).ok());
  EXPECT_EQ(r.key_counts, counts);
}

TEST(ProtocolTest, ManyKeyCountsRoundTrip) {
  // 100,000 keys as a Zipf run's tail sends them: every third rank, most
  // offered once; split over 100 lines.
  std::vector<KeyCount> counts;
  for (int64_t i = 0; i < 100000; ++i) {
    counts.push_back({3 * i + 1, i < 100 ? 1000 + i : 1, i % 2});
  }
  const std::string text = EncodeKeyCounts(counts);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 100);
  EXPECT_LT(text.size(), 8 * counts.size());  // about 7 bytes a key
  InstanceReport r(/*windows=*/1, /*live=*/false);
  ASSERT_TRUE(ApplyAll(text, r).ok());
  EXPECT_EQ(r.key_counts, counts);
}

TEST(ProtocolTest, MalformedKeyCounts) {
  InstanceReport r(/*windows=*/1, /*live=*/false);
  EXPECT_THAT(ApplyLine("K 1 2", r).message(), HasSubstr("multiple of 3"));
  EXPECT_THAT(ApplyLine("K", r).message(), HasSubstr("multiple of 3"));
  EXPECT_FALSE(ApplyLine("K 0 1 1", r).ok());  // distance 0
  EXPECT_FALSE(ApplyLine("K 1 0 0", r).ok());  // offered nothing
  EXPECT_FALSE(ApplyLine("K 1 1 2", r).ok());  // admitted > offered
  ASSERT_TRUE(ApplyLine("K 6 1 1", r).ok());   // rank 5
  EXPECT_THAT(ApplyLine("K 5 1 1", r).message(), HasSubstr("rank order"));
  ASSERT_TRUE(ApplyLine("K 7 1 1", r).ok());  // rank 6, in a new line
  EXPECT_THAT(r.key_counts, ElementsAre(KeyCount{5, 1, 1}, KeyCount{6, 1, 1}));
}

TEST(ProtocolTest, LiveWindowRoundTrip) {
  // offered, admitted, hot offered and admitted, commands so far and in
  // the window, keys, RSS, health, latency.
  const LiveWindow w{
      false,           100, 10, 90, 9, 1000, 50, 3, 2048, Health::kDown,
      {120, 130, 5000}};
  EXPECT_EQ(EncodeLive(2, w),
            "V 2 100 10 90 9 1000 50 3 2048 2 3 120 130 5000\n");
  InstanceReport r(/*windows=*/4, /*live=*/true);
  ASSERT_TRUE(ApplyAll(EncodeLive(2, w), r).ok());
  const LiveWindow& got = r.live[2];
  EXPECT_TRUE(got.got);
  EXPECT_FALSE(r.live[1].got);
  EXPECT_EQ(got.hot_admitted, 9);
  EXPECT_EQ(got.commands_in_window, 50);
  EXPECT_EQ(got.rss_kb, 2048);
  EXPECT_EQ(got.health, Health::kDown);
  EXPECT_THAT(got.latency, ElementsAre(120, 130, 5000));
  // Local mode has no connection: -1.
  LiveWindow none = w;
  none.health = Health::kNone;
  ASSERT_TRUE(ApplyAll(EncodeLive(3, none), r).ok());
  EXPECT_EQ(r.live[3].health, Health::kNone);
  EXPECT_THAT(ApplyLine("V 0 1 2 3 4 5 6 7 8 3 0", r).message(),
              HasSubstr("the health must be -1, 0, 1 or 2"));
}

TEST(ProtocolTest, HealthEventsRoundTripWithTheirReasons) {
  const HealthEvent down{123456789, Health::kHealthy, Health::kDown,
                         "no reply for 250ms while 3 commands waited"};
  const HealthEvent multi{5, Health::kDown, Health::kDegraded,
                          "line one\nline two"};
  const HealthEvent bare{7, Health::kDegraded, Health::kHealthy, ""};
  EXPECT_EQ(EncodeHealthEvent(down),
            "H 123456789 0 2 no reply for 250ms while 3 commands waited\n");
  EXPECT_EQ(EncodeHealthEvent(multi), "H 5 2 1 line one line two\n");
  InstanceReport r(/*windows=*/1, /*live=*/true);
  ASSERT_TRUE(ApplyAll(EncodeHealthEvent(down) + EncodeHealthEvent(multi) +
                           EncodeHealthEvent(bare),
                       r)
                  .ok());
  ASSERT_EQ(r.health_events.size(), 3u);
  EXPECT_EQ(r.health_events[0], down);
  EXPECT_EQ(r.health_events[1].reason, "line one line two");
  EXPECT_EQ(r.health_events[2], bare);
  EXPECT_FALSE(ApplyLine("H 1 0", r).ok());           // no "to"
  EXPECT_FALSE(ApplyLine("H 1 0 7 why", r).ok());     // no such state
  EXPECT_FALSE(ApplyLine("H soon 0 2 why", r).ok());  // no time
  EXPECT_EQ(HealthName(Health::kDegraded), std::string("degraded"));
}

TEST(ProtocolTest, PhaseCountsRoundTrip) {
  const PhaseCounts during{1000, 250, 900, 200};
  EXPECT_EQ(EncodePhaseCounts(kDuringOutage, during), "P 1 1000 250 900 200\n");
  InstanceReport r(/*windows=*/1, /*live=*/false);
  ASSERT_TRUE(ApplyAll(EncodePhaseCounts(kDuringOutage, during), r).ok());
  EXPECT_EQ(r.phases[kDuringOutage], during);
  EXPECT_EQ(r.phases[kBeforeOutage], PhaseCounts{});
  EXPECT_THAT(ApplyLine("P 3 1 1 1 1", r).message(),
              HasSubstr("the outage phase must be 0, 1 or 2"));
  EXPECT_THAT(ApplyLine("P 0 1 1 1", r).message(), HasSubstr("expected 5"));
}

TEST(ProtocolTest, WindowsOutsideTheRunAreIgnored) {
  InstanceReport r(/*windows=*/1, /*live=*/false);
  EXPECT_TRUE(ApplyAll(EncodeCounts(5, WindowCounts{}), r).ok());
  EXPECT_TRUE(ApplyAll("S -1 1 2 3\n", r).ok());
}

TEST(ProtocolTest, MalformedLinesAreErrors) {
  InstanceReport r(/*windows=*/1, /*live=*/true);
  EXPECT_THAT(ApplyLine("X 1", r).message(), HasSubstr("unknown tag"));
  EXPECT_THAT(ApplyLine("W 0 1 2", r).message(), HasSubstr("expected 5"));
  EXPECT_THAT(ApplyLine("T 1 two 3 4", r).message(), HasSubstr("no integer"));
  EXPECT_FALSE(ApplyLine("V 0 1 2 3 4 5 6 7 8 0 2 100", r).ok());  // 1 of 2
  EXPECT_FALSE(ApplyLine("", r).ok());
}

TEST(ProtocolTest, SplitterJoinsChunks) {
  LineSplitter s;
  std::vector<std::string> got;
  auto collect = [&](absl::string_view l) {
    got.emplace_back(l);
    return absl::OkStatus();
  };
  ASSERT_TRUE(s.Feed("R\nW 0 1", collect).ok());
  EXPECT_THAT(got, ElementsAre("R"));
  ASSERT_TRUE(s.Feed(" 2 3 4\nE", collect).ok());
  ASSERT_TRUE(s.Feed("\n", collect).ok());
  EXPECT_THAT(got, ElementsAre("R", "W 0 1 2 3 4", "E"));
}

TEST(ProtocolTest, ThinEvenlyKeepsAtMostMax) {
  std::vector<int64_t> v(10);
  for (int i = 0; i < 10; ++i) v[i] = i;
  EXPECT_THAT(ThinEvenly(v, 4), ElementsAre(0, 3, 6, 9));
  EXPECT_EQ(ThinEvenly(v, 10), v);
  EXPECT_TRUE(ThinEvenly({}, 4).empty());
  std::vector<int64_t> big(10000, 1);
  EXPECT_LE(ThinEvenly(big, kMaxLiveSamples).size(), kMaxLiveSamples);
}

}  // namespace
}  // namespace tokenlease::tools
