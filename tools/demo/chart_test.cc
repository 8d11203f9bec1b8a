// The run's chart, read back with libxml2 (svg_test.h): the document is
// well-formed SVG, and the lines, the limit, the share and the shaded
// outage are where the run puts them on the axes' ticks.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "demo/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/svg_check.h"

namespace tokenlease::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::tokenlease::testing::Find;
using ::tokenlease::testing::ParseSvg;
using ::tokenlease::testing::Position;
using ::tokenlease::testing::SvgElement;

constexpr int64_t kStart = 1'000'000'000;

// A 2 s run of 2 instances (10,000/s, burst 1,000) in windows of 0.5 s,
// Redis stopped from 0.5 s to 1.5 s; instance i admits 2500 + 100 i + w in
// window w.
DemoOptions Options() {
  DemoOptions o = ResolveOptions(DemoOptions(), /*cpus=*/2);
  o.seconds = 2;
  o.outage_at = 0.5;
  o.outage_seconds = 1;
  return o;
}

RunRecord MakeRun(int instances) {
  RunRecord run;
  run.start_ns = kStart;
  run.windows = 4;
  for (int i = 0; i < instances; ++i) {
    run.reports.emplace_back(run.windows);
    for (int64_t w = 0; w < run.windows; ++w) {
      run.reports[i].windows[w].counts.hot_admitted = 2500 + 100 * i + w;
    }
    run.reports[i].last_ns = kStart + 2'000'000'000;
  }
  return run;
}

std::vector<SvgElement> Chart(const DemoOptions& o, const RunRecord& run) {
  absl::StatusOr<std::vector<SvgElement>> svg =
      ParseSvg(RunChartSvg(o, run, Aggregate(run)));
  EXPECT_TRUE(svg.ok()) << svg.status();
  return svg.ok() ? *svg : std::vector<SvgElement>();
}

std::vector<std::string> Texts(const std::vector<const SvgElement*>& v) {
  std::vector<std::string> out;
  for (const SvgElement* e : v) out.push_back(e->text);
  return out;
}

// The (x, y) pixel pairs of a polyline's points.
std::vector<std::pair<double, double>> Points(const SvgElement& e) {
  std::vector<std::pair<double, double>> out;
  for (absl::string_view p : absl::StrSplit(e.Attr("points"), ' ')) {
    const std::pair<std::string, std::string> xy = absl::StrSplit(p, ',');
    out.emplace_back(std::stod(xy.first), std::stod(xy.second));
  }
  return out;
}

TEST(ChartTest, TheLinesAreTheRunsSteps) {
  const std::vector<SvgElement> svg = Chart(Options(), MakeRun(2));
  ASSERT_FALSE(svg.empty());
  EXPECT_EQ(svg[0].name, "svg");
  EXPECT_EQ(svg[0].Attr("viewBox"), "0 0 1000 580");
  EXPECT_THAT(Texts(Find(svg, "title")),
              ElementsAre("tokenlease: 2 instances share one limit of "
                          "10,000/s; Redis stopped from 0.5 s to 1.5 s"));
  EXPECT_THAT(Texts(Find(svg, "text", "x-tick")),
              ElementsAre("0", "0.2", "0.4", "0.6", "0.8", "1", "1.2", "1.4",
                          "1.6", "1.8", "2"));
  EXPECT_THAT(
      Texts(Find(svg, "text", "y-tick")),
      ElementsAre("0", "2,000", "4,000", "6,000", "8,000", "10,000", "12,000"));
  const std::vector<const SvgElement*> lines = Find(svg, "polyline");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[0]->HasClass("global"));
  EXPECT_EQ(lines[0]->Attr("data-name"), "all instances");
  EXPECT_TRUE(lines[2]->HasClass("instance"));
  EXPECT_EQ(lines[2]->Attr("data-name"), "instance 1");
  // A step per window: its rate held from its start to its end.
  for (size_t s = 0; s < lines.size(); ++s) {
    const auto points = Points(*lines[s]);
    ASSERT_EQ(points.size(), 8u);
    for (int w = 0; w < 4; ++w) {
      const double rate =
          s == 0 ? (5100 + 2 * w) / 0.5 : (2500 + 100 * (s - 1) + w) / 0.5;
      for (int end = 0; end < 2; ++end) {
        EXPECT_NEAR(points[2 * w + end].first,
                    Position(svg, "x", 0.5 * (w + end)), 0.2);
        EXPECT_NEAR(points[2 * w + end].second, Position(svg, "y", rate), 0.2);
      }
    }
  }
}

TEST(ChartTest, TheLimitTheShareAndTheOutage) {
  const std::vector<SvgElement> svg = Chart(Options(), MakeRun(2));
  const std::vector<const SvgElement*> limit = Find(svg, "line", "limit");
  ASSERT_EQ(limit.size(), 1u);
  EXPECT_NEAR(limit[0]->Num("y1"), Position(svg, "y", 10000), 0.2);
  EXPECT_EQ(limit[0]->Attr("y2"), limit[0]->Attr("y1"));
  EXPECT_NEAR(limit[0]->Num("x1"), Position(svg, "x", 0), 0.2);
  EXPECT_NEAR(limit[0]->Num("x2"), Position(svg, "x", 2), 0.2);
  EXPECT_EQ(limit[0]->Attr("stroke-dasharray"), "8 5");
  // One instance's share, over the outage only (fail_local).
  const std::vector<const SvgElement*> share = Find(svg, "line", "share");
  ASSERT_EQ(share.size(), 1u);
  EXPECT_NEAR(share[0]->Num("y1"), Position(svg, "y", 5000), 0.2);
  EXPECT_NEAR(share[0]->Num("x1"), Position(svg, "x", 0.5), 0.2);
  EXPECT_NEAR(share[0]->Num("x2"), Position(svg, "x", 1.5), 0.2);
  const std::vector<const SvgElement*> band = Find(svg, "rect", "outage");
  ASSERT_EQ(band.size(), 1u);
  EXPECT_NEAR(band[0]->Num("x"), Position(svg, "x", 0.5), 0.2);
  EXPECT_NEAR(band[0]->Num("x") + band[0]->Num("width"),
              Position(svg, "x", 1.5), 0.2);
  EXPECT_NEAR(band[0]->Num("y") + band[0]->Num("height"), Position(svg, "y", 0),
              0.2);
  // The band is drawn under the lines (earlier in the document), the rules
  // over them.
  auto at = [&](const SvgElement* e) { return e - svg.data(); };
  EXPECT_LT(at(band[0]), at(Find(svg, "polyline")[0]));
  EXPECT_GT(at(limit[0]), at(Find(svg, "polyline").back()));
  // A note per phase, over its middle.
  const std::vector<const SvgElement*> notes = Find(svg, "text", "phase");
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[1]->text, "during: 0.0% of the limit");  // no phase counts
  EXPECT_NEAR(notes[1]->Num("x"), Position(svg, "x", 1), 0.2);
  EXPECT_THAT(Texts(Find(svg, "text", "subtitle")),
              ElementsAre("the hot key's admitted rate per 0.5 s window, over "
                          "all instances and each; fail_local while Redis is "
                          "away (each instance enforces limit / 2)",
                          "whole run: 102.1% of the limit, within its bound "
                          "(L t + B + 2 B)"));
  std::vector<std::string> legend;
  for (const SvgElement* t : Find(svg, "text")) {
    if (t->group == "legend") legend.push_back(t->text);
  }
  EXPECT_THAT(
      legend,
      ElementsAre("all instances", "instance 0", "instance 1", "limit 10,000/s",
                  "one instance's share while Redis is away: limit "
                  "/ 2",
                  "redis-server stopped (SIGSTOP): fail_local"));
}

TEST(ChartTest, AnInterruptedRunEndsAtTheInterruption) {
  RunRecord run = MakeRun(2);
  run.interrupted_ns = kStart + 1'750'000'000;  // the last window ran 0.25 s
  const std::vector<SvgElement> svg = Chart(Options(), run);
  EXPECT_EQ(Find(svg, "text", "x-tick").back()->text, "1.6");  // of 1.75
  const auto points = Points(*Find(svg, "polyline")[0]);
  ASSERT_EQ(points.size(), 8u);
  EXPECT_NEAR(points.back().first, Position(svg, "x", 1.75), 0.2);
  EXPECT_NEAR(points.back().second, Position(svg, "y", (2503 + 2603) / 0.25),
              0.2);
}

TEST(ChartTest, WithoutAnOutageOrInLocalMode) {
  DemoOptions o = Options();
  o.outage = false;
  std::vector<SvgElement> svg = Chart(o, MakeRun(2));
  EXPECT_TRUE(Find(svg, "rect", "outage").empty());
  EXPECT_TRUE(Find(svg, "line", "share").empty());
  EXPECT_EQ(Find(svg, "text", "phase").size(), 0u);
  o.mode = Mode::kLocal;  // each instance's own limit, all along
  svg = Chart(o, MakeRun(2));
  const std::vector<const SvgElement*> share = Find(svg, "line", "share");
  ASSERT_EQ(share.size(), 1u);
  EXPECT_NEAR(share[0]->Num("x1"), Position(svg, "x", 0), 0.2);
  EXPECT_NEAR(share[0]->Num("x2"), Position(svg, "x", 2), 0.2);
}

TEST(ChartTest, ManyInstancesWrapTheLegendAndShrinkThePlot) {
  DemoOptions o = Options();
  o.instances = 12;
  const std::vector<SvgElement> two = Chart(Options(), MakeRun(2));
  const std::vector<SvgElement> many = Chart(o, MakeRun(12));
  EXPECT_EQ(Find(many, "polyline").size(), 13u);
  // Past the 8th, instances are grey and out of the legend.
  EXPECT_EQ(Find(many, "polyline").back()->Attr("stroke"), "#bbbbbb");
  double lowest = 0;
  int named = 0;
  for (const SvgElement* t : Find(many, "text")) {
    if (t->group != "legend") continue;
    lowest = std::max(lowest, t->Num("y"));
    named += t->text.find("instance ") == 0;
  }
  EXPECT_EQ(named, 8);
  EXPECT_LE(lowest, 580);  // still on the canvas
  EXPECT_LT(Position(many, "y", 0), Position(two, "y", 0));
}

TEST(ChartTest, TheCheckerRefusesWhatIsNotWellFormedSvg) {
  EXPECT_FALSE(ParseSvg("<svg xmlns=\"http://www.w3.org/2000/svg\"><g>"
                        "</svg>")
                   .ok());
  EXPECT_FALSE(ParseSvg("<svg xmlns=\"http://www.w3.org/2000/svg\">AT&T"
                        "</svg>")
                   .ok());
  EXPECT_FALSE(ParseSvg("<a/>").ok());  // no SVG
  EXPECT_TRUE(ParseSvg("<svg xmlns=\"http://www.w3.org/2000/svg\"/>").ok());
}

TEST(ChartTest, XmlEscape) {
  EXPECT_EQ(XmlEscape("a <b> & \"c\" 'd'"),
            "a &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;");
}

struct TicksCase {
  double max;
  int most;
  std::vector<double> want;
};

void PrintTo(const TicksCase& c, std::ostream* os) {
  *os << "up to " << c.max << " in at most " << c.most << " steps";
}

class NiceTicksTest : public ::testing::TestWithParam<TicksCase> {};

TEST_P(NiceTicksTest, StepsOfOneTwoOrFive) {
  EXPECT_THAT(NiceTicks(GetParam().max, GetParam().most),
              ElementsAreArray(GetParam().want));
}

INSTANTIATE_TEST_SUITE_P(
    Table, NiceTicksTest,
    ::testing::Values(
        TicksCase{13200, 8, {0, 2000, 4000, 6000, 8000, 10000, 12000, 14000}},
        TicksCase{10000, 8, {0, 2000, 4000, 6000, 8000, 10000}},
        TicksCase{5, 12, {0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5}},
        TicksCase{1, 4, {0, 0.5, 1}},
        TicksCase{0, 4, {0, 0.5, 1}},  // empty: as 1
        TicksCase{99, 2, {0, 50, 100}}),
    [](const ::testing::TestParamInfo<TicksCase>& info) {
      return absl::StrCat("UpTo", std::llround(info.param.max), "In",
                          info.param.most);
    });

}  // namespace
}  // namespace tokenlease::tools
