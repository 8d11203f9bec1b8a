// The SVG writer, read back with a strict XML parser (xml_check.h): the
// document is well-formed, and the series, the limit line and the shaded
// outage are where the data puts them.
#include "demo/svg_chart.h"

#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "demo/chart.h"
#include "demo/sizing.h"
#include "demo/xml_check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::ParseXml;
using testing::XmlElement;

double Num(const XmlElement& e, const std::string& attribute) {
  double v = NAN;
  EXPECT_TRUE(absl::SimpleAtod(e.Attr(attribute), &v))
      << attribute << "=\"" << e.Attr(attribute) << "\"";
  return v;
}

// The (x, y) pixel pairs of a polyline's points attribute.
std::vector<std::pair<double, double>> PolylinePoints(const XmlElement& e) {
  std::vector<std::pair<double, double>> out;
  for (absl::string_view pair :
       absl::StrSplit(e.Attr("points"), ' ', absl::SkipEmpty())) {
    std::vector<absl::string_view> xy = absl::StrSplit(pair, ',');
    double x = 0, y = 0;
    EXPECT_EQ(xy.size(), 2u);
    EXPECT_TRUE(absl::SimpleAtod(xy[0], &x) && absl::SimpleAtod(xy[1], &y));
    out.emplace_back(x, y);
  }
  return out;
}

// 20 s of a limit of 10,000/s, an outage from 8 s to 12 s, two series.
LineChart Sample() {
  LineChart c;
  c.title = "admitted <per second> & the limit";
  c.subtitle = "a \"quoted\" subtitle";
  c.x_label = "seconds since the start";
  c.y_label = "admitted per second";
  c.x_min = 0;
  c.x_max = 20;
  c.bands.push_back({8, 12, "redis-server stopped", "#f4a259", 0.3, "outage"});
  c.rules.push_back(
      {10000, "limit 10,000/s", "#d62728", "8 5", 2, "limit", std::nullopt});
  c.rules.push_back(
      {5000, "share", "#555", "3 3", 1.5, "share", std::make_pair(8.0, 12.0)});
  c.series.push_back({"all instances",
                      "#1f4e9c",
                      2.6,
                      1,
                      "global",
                      {{0, 12000}, {10, 10000}, {20, 9800}}});
  c.series.push_back(
      {"instance 0", "#e6862e", 1.3, 0.9, "instance", {{0, 6000}, {20, 4900}}});
  return c;
}

std::unique_ptr<XmlElement> Parsed(const LineChart& c) {
  absl::StatusOr<std::unique_ptr<XmlElement>> root = ParseXml(RenderSvg(c));
  EXPECT_TRUE(root.ok()) << root.status();
  return root.ok() ? *std::move(root) : std::make_unique<XmlElement>();
}

TEST(SvgChartTest, IsWellFormedSvgWithItsTextsEscaped) {
  const std::string svg = RenderSvg(Sample());
  EXPECT_THAT(svg, HasSubstr("&lt;per second&gt; &amp; the limit"));
  const std::unique_ptr<XmlElement> root = Parsed(Sample());
  EXPECT_EQ(root->name, "svg");
  EXPECT_EQ(root->Attr("xmlns"), "http://www.w3.org/2000/svg");
  EXPECT_EQ(root->Attr("viewBox"), "0 0 1000 580");
  ASSERT_EQ(root->FindAll("text", "title").size(), 1u);
  EXPECT_EQ(root->FindAll("text", "title")[0]->text,
            "admitted <per second> & the limit");
  EXPECT_EQ(root->FindAll("text", "subtitle")[0]->text,
            "a \"quoted\" subtitle");
  EXPECT_EQ(root->FindAll("text", "x-label")[0]->text,
            "seconds since the start");
  EXPECT_EQ(root->FindAll("text", "y-label")[0]->text, "admitted per second");
}

TEST(SvgChartTest, SeriesPointsAreTheDataMapped) {
  const LineChart c = Sample();
  const ChartFrame f = FrameOf(c);
  const std::unique_ptr<XmlElement> root = Parsed(c);
  const std::vector<const XmlElement*> lines = root->FindAll("polyline");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[0]->HasClass("global"));
  EXPECT_EQ(lines[0]->Attr("data-name"), "all instances");
  EXPECT_TRUE(lines[1]->HasClass("instance"));
  for (size_t s = 0; s < lines.size(); ++s) {
    const std::vector<std::pair<double, double>> got =
        PolylinePoints(*lines[s]);
    ASSERT_EQ(got.size(), c.series[s].points.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i].first, f.X(c.series[s].points[i].first), 0.06);
      EXPECT_NEAR(got[i].second, f.Y(c.series[s].points[i].second), 0.06);
    }
  }
  // x spans the plot; y grows upwards, 0 on the x axis.
  EXPECT_DOUBLE_EQ(f.X(0), f.left);
  EXPECT_DOUBLE_EQ(f.X(20), f.right);
  EXPECT_DOUBLE_EQ(f.Y(0), f.bottom);
  EXPECT_LT(f.Y(12000), f.Y(10000));
  // The axis ends at a tick at or above the largest value plus 10%.
  EXPECT_EQ(f.y_top, 14000);
}

TEST(SvgChartTest, TheLimitLineAndTheOutageBand) {
  const LineChart c = Sample();
  const ChartFrame f = FrameOf(c);
  const std::unique_ptr<XmlElement> root = Parsed(c);
  const std::vector<const XmlElement*> limit = root->FindAll("line", "limit");
  ASSERT_EQ(limit.size(), 1u);
  EXPECT_NEAR(Num(*limit[0], "y1"), f.Y(10000), 0.06);
  EXPECT_NEAR(Num(*limit[0], "y2"), f.Y(10000), 0.06);
  EXPECT_NEAR(Num(*limit[0], "x1"), f.left, 0.06);
  EXPECT_NEAR(Num(*limit[0], "x2"), f.right, 0.06);
  EXPECT_EQ(limit[0]->Attr("stroke-dasharray"), "8 5");
  // The share rule covers the outage only.
  const std::vector<const XmlElement*> share = root->FindAll("line", "share");
  ASSERT_EQ(share.size(), 1u);
  EXPECT_NEAR(Num(*share[0], "x1"), f.X(8), 0.06);
  EXPECT_NEAR(Num(*share[0], "x2"), f.X(12), 0.06);

  const std::vector<const XmlElement*> band = root->FindAll("rect", "outage");
  ASSERT_EQ(band.size(), 1u);
  EXPECT_NEAR(Num(*band[0], "x"), f.X(8), 0.06);
  EXPECT_NEAR(Num(*band[0], "x") + Num(*band[0], "width"), f.X(12), 0.11);
  EXPECT_NEAR(Num(*band[0], "y"), f.top, 0.06);
  EXPECT_NEAR(Num(*band[0], "y") + Num(*band[0], "height"), f.bottom, 0.11);
  // The band is drawn under the lines (earlier in the document).
  const std::string svg = RenderSvg(c);
  EXPECT_LT(svg.find("class=\"band outage\""), svg.find("<polyline"));
}

TEST(SvgChartTest, AxesHaveTicksAndTheLegendNamesEveryLine) {
  const LineChart c = Sample();
  const std::unique_ptr<XmlElement> root = Parsed(c);
  std::vector<std::string> y_ticks, x_ticks;
  for (const XmlElement* t : root->FindAll("text", "y-tick")) {
    y_ticks.push_back(t->text);
  }
  for (const XmlElement* t : root->FindAll("text", "x-tick")) {
    x_ticks.push_back(t->text);
  }
  EXPECT_THAT(y_ticks, ElementsAre("0", "2,000", "4,000", "6,000", "8,000",
                                   "10,000", "12,000", "14,000"));
  EXPECT_THAT(x_ticks, ElementsAre("0", "2", "4", "6", "8", "10", "12", "14",
                                   "16", "18", "20"));
  std::vector<std::string> legend;
  const std::vector<const XmlElement*> groups = root->FindAll("g", "legend");
  ASSERT_EQ(groups.size(), 1u);
  for (const XmlElement* t : groups[0]->FindAll("text")) {
    legend.push_back(t->text);
  }
  EXPECT_THAT(legend,
              ElementsAre("all instances", "instance 0", "limit 10,000/s",
                          "share", "redis-server stopped"));
}

TEST(SvgChartTest, SubtitleLinesAndNotes) {
  LineChart c = Sample();
  const double one_line = FrameOf(c).top;
  c.subtitle = "first line\nsecond line";
  c.notes.push_back({10, 1, "during: 100.0% of the limit", "phase"});
  const ChartFrame f = FrameOf(c);
  EXPECT_GT(f.top, one_line);  // the plot makes room for the second line
  const std::unique_ptr<XmlElement> root = Parsed(c);
  const std::vector<const XmlElement*> sub = root->FindAll("text", "subtitle");
  ASSERT_EQ(sub.size(), 2u);
  EXPECT_EQ(sub[1]->text, "second line");
  EXPECT_LT(Num(*sub[1], "y"), f.top);
  const std::vector<const XmlElement*> notes = root->FindAll("text", "phase");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0]->text, "during: 100.0% of the limit");
  EXPECT_NEAR(Num(*notes[0], "x"), f.X(10), 0.06);
  EXPECT_GT(Num(*notes[0], "y"), f.top);
}

TEST(SvgChartTest, ManyLegendItemsWrapAndShrinkThePlot) {
  LineChart c = Sample();
  const double one_row = FrameOf(c).bottom;
  for (int i = 1; i < 12; ++i) {
    c.series.push_back({"instance " + std::to_string(i),
                        "#888",
                        1,
                        1,
                        "instance",
                        {{0, 1}, {20, 1}}});
  }
  EXPECT_LT(FrameOf(c).bottom, one_row);
  const std::unique_ptr<XmlElement> root = Parsed(c);
  double lowest = 0;
  for (const XmlElement* t : root->FindAll("g", "legend")[0]->FindAll("text")) {
    lowest = std::max(lowest, Num(*t, "y"));
  }
  EXPECT_LE(lowest, c.height);  // still on the canvas
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

struct BadXml {
  const char* name;
  const char* doc;
  const char* why;
};

void PrintTo(const BadXml& c, std::ostream* os) { *os << c.doc; }

class XmlCheckTest : public ::testing::TestWithParam<BadXml> {};

TEST_P(XmlCheckTest, RejectsWhatIsNotWellFormed) {
  const absl::StatusOr<std::unique_ptr<XmlElement>> root =
      ParseXml(GetParam().doc);
  ASSERT_FALSE(root.ok()) << GetParam().doc;
  EXPECT_THAT(root.status().message(), HasSubstr(GetParam().why));
}

INSTANTIATE_TEST_SUITE_P(
    Table, XmlCheckTest,
    ::testing::Values(
        BadXml{"CrossedTags", "<a><b></a></b>", "</a> closes <b>"},
        BadXml{"Unclosed", "<a>", "<a> unclosed"},
        BadXml{"AttributeTwice", "<a x=\"1\" x=\"2\"/>", "attribute 'x' twice"},
        BadXml{"UnquotedValue", "<a x=1/>", "expected a quoted value"},
        BadXml{"UnknownEntity", "<a>&nbsp;</a>", "unknown entity '&nbsp;'"},
        BadXml{"BareAmpersand", "<a>AT&T</a>", "'&' that starts no reference"},
        BadXml{"LessThanInValue", "<a x=\"<\"/>", "'<' in an attribute value"},
        BadXml{"TwoRoots", "<a/><b/>", "content after the root element"},
        BadXml{"DashesInComment", "<a><!-- a -- b --></a>",
               "'--' inside a comment"},
        BadXml{"Cdata", "<a><![CDATA[x]]></a>", "CDATA"},
        BadXml{"AttributesRunTogether", "<a x=\"1\"y=\"2\"/>",
               "expected whitespace before an attribute"},
        BadXml{"Empty", "", "expected the root element"}),
    [](const ::testing::TestParamInfo<BadXml>& info) {
      return std::string(info.param.name);
    });

TEST(XmlCheckTest, ReadsWhatIsWellFormed) {
  absl::StatusOr<std::unique_ptr<XmlElement>> root = ParseXml(
      "<?xml version=\"1.0\"?>\n<!-- c --><a k='v &amp; w'>x &lt;y&gt; "
      "&#65;&#x42;<b class=\"p q\"/><c/></a>\n");
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ((*root)->Attr("k"), "v & w");
  EXPECT_EQ((*root)->text, "x <y> AB");
  ASSERT_EQ((*root)->children.size(), 2u);
  EXPECT_TRUE((*root)->children[0]->HasClass("q"));
  EXPECT_EQ((*root)->FindAll("", "p").size(), 1u);
}

// The run's chart: its lines, the limit and the outage come from the run.
TEST(RunChartTest, FromARun) {
  DemoOptions o = ResolveOptions(DemoOptions(), /*cpus=*/2);  // 2 instances
  o.seconds = 2;
  o.outage_at = 0.5;
  o.outage_seconds = 1;
  RunRecord run;
  run.start_ns = 1'000'000'000;
  run.windows = 4;
  for (int i = 0; i < 2; ++i) {
    run.reports.emplace_back(run.windows, false);
    for (int64_t w = 0; w < run.windows; ++w) {
      run.reports[i].windows[w].hot_admitted = 2500 + 100 * i + w;
    }
    run.reports[i].timing.last_ns = run.start_ns + 2'000'000'000;
  }
  const Totals t = Aggregate(run);
  const LineChart c = RunChart(o, run, t);
  EXPECT_EQ(c.x_max, 2);
  ASSERT_EQ(c.series.size(), 3u);
  EXPECT_EQ(c.series[0].css_class, "global");
  // Steps: each window's rate held across it (2 points a window).
  ASSERT_EQ(c.series[0].points.size(), 8u);
  EXPECT_EQ(c.series[0].points[0], std::make_pair(0.0, (2500 + 2600) / 0.5));
  EXPECT_EQ(c.series[0].points[1], std::make_pair(0.5, (2500 + 2600) / 0.5));
  EXPECT_EQ(c.series[2].points[7], std::make_pair(2.0, 2603 / 0.5));
  ASSERT_EQ(c.bands.size(), 1u);
  EXPECT_EQ(c.bands[0].from, 0.5);
  EXPECT_EQ(c.bands[0].to, 1.5);
  EXPECT_THAT(c.bands[0].label, HasSubstr("fail_local"));
  // A note per phase (the phases' counts are all 0 here).
  ASSERT_EQ(c.notes.size(), 3u);
  EXPECT_EQ(c.notes[1].text, "during: 0.0% of the limit");
  EXPECT_EQ(c.notes[1].x, 1);
  ASSERT_EQ(c.rules.size(), 2u);
  EXPECT_EQ(c.rules[0].y, 10000);  // the limit
  EXPECT_EQ(c.rules[1].y, 5000);   // one instance's share, limit / 2
  EXPECT_EQ(c.rules[1].x_range, std::make_pair(0.5, 1.5));
  // Interrupted at 1.75 s: the last window ran 0.25 s.
  RunRecord cut = run;
  cut.interrupted_ns = run.start_ns + 1'750'000'000;
  const LineChart partial = RunChart(o, cut, t);
  EXPECT_EQ(partial.x_max, 1.75);
  EXPECT_EQ(partial.series[0].points.back(),
            std::make_pair(1.75, (2503 + 2603) / 0.25));
  // Without an outage: no band and no share.
  o.outage = false;
  const LineChart quiet = RunChart(o, run, t);
  EXPECT_TRUE(quiet.bands.empty());
  EXPECT_EQ(quiet.rules.size(), 1u);
  EXPECT_TRUE(ParseXml(RenderSvg(quiet)).ok());
}

}  // namespace
}  // namespace tokenlease::tools
