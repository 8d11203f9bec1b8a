// For the tests only: an SVG document (`tokenlease demo`'s chart) read back
// with libxml2 (a maintained, strict XML parser), so that a chart that is
// not well-formed fails, and its elements can be found by name and class
// and their positions checked against the axes' tick labels.
#ifndef TOKENLEASE_TESTS_TESTING_SVG_CHECK_H_
#define TOKENLEASE_TESTS_TESTING_SVG_CHECK_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tokenlease::testing {

struct SvgElement {
  std::string name, text;
  std::string group;  // the class of the <g> it is in
  std::map<std::string, std::string> attrs;

  std::string Attr(const std::string& k) const;
  bool HasClass(absl::string_view c) const;
  // An attribute (or with "text" the text) as a number: "2,000" is 2000.
  double Num(const std::string& k) const;
};

// Every element of `doc` in document order; InvalidArgument with libxml2's
// message if it is not a well-formed SVG document.
absl::StatusOr<std::vector<SvgElement>> ParseSvg(const std::string& doc);

// The elements named `name` ("": any) with class `css_class` ("": any).
std::vector<const SvgElement*> Find(const std::vector<SvgElement>& all,
                                    absl::string_view name,
                                    absl::string_view css_class = "");

// The pixel position of value `v` on the x or y axis (`axis`), from the
// first and last of its tick labels (a y label's baseline is 4 px below
// its value's position).
double Position(const std::vector<SvgElement>& all, const char* axis, double v);

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_SVG_CHECK_H_
