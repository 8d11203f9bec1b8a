// For the tests: a small strict XML parser, enough to prove that the
// demo's SVG is well-formed and to look inside it. It accepts an optional
// XML declaration, one root element, nested elements with attributes
// (double or single quoted, each name once), text, comments, and the five
// predefined entities and numeric character references; it rejects
// everything else (a DOCTYPE, CDATA, an unknown entity, a '<' or '&' out of
// place, a tag closed by another name, anything after the root).
#ifndef TOKENLEASE_TOOLS_DEMO_XML_CHECK_H_
#define TOKENLEASE_TOOLS_DEMO_XML_CHECK_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tokenlease::tools::testing {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;  // entities decoded
  std::string text;  // the element's own text, entities decoded
  std::vector<std::unique_ptr<XmlElement>> children;

  // The attribute's value, or "" if it has none.
  std::string Attr(const std::string& key) const;
  // True if the class attribute holds `css_class` among its words.
  bool HasClass(absl::string_view css_class) const;
  // Every element below this one (depth first) named `name` ("": any)
  // with `css_class` ("": any).
  std::vector<const XmlElement*> FindAll(
      absl::string_view name, absl::string_view css_class = "") const;
};

// The document's root element, or InvalidArgument saying where and why it
// is not well-formed.
absl::StatusOr<std::unique_ptr<XmlElement>> ParseXml(absl::string_view doc);

}  // namespace tokenlease::tools::testing

#endif  // TOKENLEASE_TOOLS_DEMO_XML_CHECK_H_
