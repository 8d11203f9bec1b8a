// The instance -> parent lines: what each applies to the report, and the
// malformed ones refused.
#include "demo/protocol.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

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

TEST(ProtocolTest, ResultsRoundTrip) {
  InstanceReport r(/*windows=*/2);
  const std::string text =
      Line("R", {}) + Line("L", {1, 600, 120, 1}) + Line("L", {0, 5, 5000, 0}) +
      Line("V", {1, 50, 5, 49, 4, 99, 9, 7, 8000, 2}) +
      Line("W", {1, 50000, 5000, 49000, 4900}) +
      Line("P", {2, 1000, 250, 900, 200}) + Line("K", {0, 5, 3}) +
      Line("K", {42, 2, 0}) + Line("E", {22, 4096, 1234});
  ASSERT_EQ(text.substr(0, 16), "R\nL 1 600 120 1\n");
  ASSERT_TRUE(ApplyAll(text, r).ok());
  EXPECT_TRUE(r.ready);
  EXPECT_TRUE(r.done);
  EXPECT_THAT(r.samples, ::testing::SizeIs(2));
  EXPECT_EQ(r.samples[0].t_ns, 600);
  EXPECT_EQ(r.samples[0].ns, 120);
  EXPECT_TRUE(r.samples[0].hot);
  EXPECT_FALSE(r.samples[1].hot);
  // The live row's samples, by window.
  EXPECT_THAT(r.windows[1].latency, ElementsAre(120));
  EXPECT_THAT(r.windows[0].latency, ElementsAre(5000));
  const Window& w = r.windows[1];
  EXPECT_TRUE(w.closed);
  EXPECT_FALSE(r.windows[0].closed);
  EXPECT_EQ(w.live, (Counts{50, 5, 49, 4}));
  EXPECT_EQ(w.counts, (Counts{50000, 5000, 49000, 4900}));
  EXPECT_EQ(w.commands, 99);
  EXPECT_EQ(w.commands_in_window, 9);
  EXPECT_EQ(w.keys, 7);
  EXPECT_EQ(w.rss_kb, 8000);
  EXPECT_EQ(w.health, Health::kDown);
  EXPECT_EQ(r.windows[0].keys, -1);  // not sampled
  EXPECT_EQ(r.phases[kAfterOutage], (Counts{1000, 250, 900, 200}));
  EXPECT_EQ(r.phases[kBeforeOutage], Counts{});
  EXPECT_THAT(r.keys, ElementsAre(KeyCount{0, 5, 3}, KeyCount{42, 2, 0}));
  EXPECT_EQ(r.last_ns, 22);
  EXPECT_EQ(r.peak_rss_kb, 4096);
  EXPECT_EQ(r.commands_with_shutdown, 1234);
}

TEST(ProtocolTest, HealthEventsKeepTheirReasons) {
  const HealthEvent down{123456789, Health::kHealthy, Health::kDown,
                         "no reply for 250ms while 3 commands waited"};
  const HealthEvent bare{7, Health::kDegraded, Health::kHealthy, ""};
  EXPECT_EQ(HealthLine(down),
            "H 123456789 0 2 no reply for 250ms while 3 commands waited\n");
  EXPECT_EQ(HealthLine({5, Health::kDown, Health::kDegraded, "one\ntwo"}),
            "H 5 2 1 one two\n");
  InstanceReport r(/*windows=*/1);
  ASSERT_TRUE(ApplyAll(HealthLine(down) + HealthLine(bare), r).ok());
  EXPECT_THAT(r.events, ElementsAre(down, bare));
  EXPECT_FALSE(ApplyLine("H 1 0", r).ok());           // no "to"
  EXPECT_FALSE(ApplyLine("H 1 0 7 why", r).ok());     // no such state
  EXPECT_FALSE(ApplyLine("H soon 0 2 why", r).ok());  // no time
  EXPECT_EQ(HealthName(Health::kDegraded), std::string("degraded"));
}

// The limiter's counters come as its Prometheus text; the limit label is
// left out and the instances' values add up.
TEST(ProtocolTest, MetricLines) {
  InstanceReport r(/*windows=*/1);
  ASSERT_TRUE(ApplyAll("M tokenlease_keys{limit=\"demo\"} 3\n"
                       "M tokenlease_decisions_total{limit=\"demo\",source="
                       "\"lease\",result=\"admitted\"} 120\n"
                       "M tokenlease_keys{limit=\"demo\"} 2\n",
                       r)
                  .ok());
  ASSERT_EQ(r.metrics.size(), 2u);
  EXPECT_EQ(r.metrics["tokenlease_keys"], 5);
  EXPECT_EQ(r.metrics["tokenlease_decisions_total{source=\"lease\",result="
                      "\"admitted\"}"],
            120);
  EXPECT_FALSE(ApplyLine("M tokenlease_keys", r).ok());
  EXPECT_FALSE(ApplyLine("M tokenlease_keys many", r).ok());
}

TEST(ProtocolTest, MalformedLinesAreErrors) {
  InstanceReport r(/*windows=*/1);
  EXPECT_THAT(ApplyLine("X 1", r).message(), HasSubstr("unknown tag"));
  EXPECT_THAT(ApplyLine("W 0 1 2", r).message(), HasSubstr("expected 5"));
  EXPECT_THAT(ApplyLine("W 0 1 2 3 4 5", r).message(), HasSubstr("expected 5"));
  EXPECT_THAT(ApplyLine("E 1 two 3", r).message(), HasSubstr("no integer"));
  EXPECT_THAT(ApplyLine("W 0  1 2 3", r).message(), HasSubstr("no integer"));
  EXPECT_THAT(ApplyLine("V 0 1 2 3 4 5 6 7 8 3", r).message(),
              HasSubstr("the health must be -1, 0, 1 or 2"));
  EXPECT_THAT(ApplyLine("P 3 1 1 1 1", r).message(),
              HasSubstr("the outage phase must be 0, 1 or 2"));
  EXPECT_FALSE(ApplyLine("L 0 1 -5 1", r).ok());  // a negative latency
  EXPECT_FALSE(ApplyLine("L 0 1 5 2", r).ok());   // hot is 0 or 1
  EXPECT_FALSE(ApplyLine("K 1 0 0", r).ok());     // offered nothing
  EXPECT_FALSE(ApplyLine("K 1 1 2", r).ok());     // admitted > offered
  ASSERT_TRUE(ApplyLine("K 5 1 1", r).ok());
  EXPECT_THAT(ApplyLine("K 5 1 1", r).message(), HasSubstr("rank order"));
  EXPECT_FALSE(ApplyLine("", r).ok());
  // A window outside the run is ignored.
  EXPECT_TRUE(ApplyLine("W 5 1 1 1 1", r).ok());
  EXPECT_TRUE(ApplyLine("V -1 1 2 3 4 5 6 7 8 0", r).ok());
  EXPECT_FALSE(r.windows[0].closed);
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

TEST(ProtocolTest, PipeLines) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  ASSERT_TRUE(WriteAll(p[1], "123\nrest"));
  close(p[1]);
  EXPECT_EQ(*ReadLine(p[0]), "123");
  EXPECT_FALSE(ReadLine(p[0]).ok());  // EOF before the end of the line
  close(p[0]);
}

}  // namespace
}  // namespace tokenlease::tools
