// For the tests only: the demo's SVG read back with libxml2 (a maintained,
// strict XML parser), so that a chart that is not well-formed fails, and
// its elements can be found by name and class and their positions checked
// against the axes' tick labels.
#ifndef TOKENLEASE_TOOLS_DEMO_SVG_TEST_H_
#define TOKENLEASE_TOOLS_DEMO_SVG_TEST_H_

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace tokenlease::tools::testing {

struct SvgElement {
  std::string name, text;
  std::string group;  // the class of the <g> it is in
  std::map<std::string, std::string> attrs;

  std::string Attr(const std::string& k) const {
    const auto it = attrs.find(k);
    return it == attrs.end() ? "" : it->second;
  }
  bool HasClass(absl::string_view c) const {
    for (absl::string_view w : absl::StrSplit(Attr("class"), ' ')) {
      if (w == c) return true;
    }
    return false;
  }
  // An attribute (or with "text" the text) as a number: "2,000" is 2000.
  double Num(const std::string& k) const {
    double v = NAN;
    const std::string s = k == "text" ? text : Attr(k);
    return absl::SimpleAtod(absl::StrReplaceAll(s, {{",", ""}}), &v) ? v : NAN;
  }
};

// Every element of `doc` in document order; InvalidArgument with libxml2's
// message if it is not a well-formed SVG document.
inline absl::StatusOr<std::vector<SvgElement>> ParseSvg(
    const std::string& doc) {
  xmlDocPtr d = xmlReadMemory(
      doc.data(), static_cast<int>(doc.size()), "chart.svg", nullptr,
      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (d == nullptr) {
    const xmlError* e = xmlGetLastError();
    return absl::InvalidArgumentError(
        absl::StrCat("not well-formed: ", e != nullptr ? e->message : "?"));
  }
  std::vector<SvgElement> out;
  auto walk = [&](auto& self, xmlNodePtr n, const std::string& group) -> void {
    for (; n != nullptr; n = n->next) {
      if (n->type != XML_ELEMENT_NODE) continue;
      SvgElement e{reinterpret_cast<const char*>(n->name), "", group, {}};
      for (xmlAttrPtr a = n->properties; a != nullptr; a = a->next) {
        xmlChar* v = xmlNodeListGetString(d, a->children, 1);
        e.attrs[reinterpret_cast<const char*>(a->name)] =
            v != nullptr ? reinterpret_cast<const char*>(v) : "";
        xmlFree(v);
      }
      xmlChar* text = xmlNodeGetContent(n);
      e.text = reinterpret_cast<const char*>(text);
      xmlFree(text);
      out.push_back(e);
      self(self, n->children, e.name == "g" ? e.Attr("class") : group);
    }
  };
  xmlNodePtr root = xmlDocGetRootElement(d);
  const bool svg =
      root != nullptr && root->ns != nullptr &&
      xmlStrcmp(root->name, BAD_CAST "svg") == 0 &&
      xmlStrcmp(root->ns->href, BAD_CAST "http://www.w3.org/2000/svg") == 0;
  walk(walk, root, "");
  xmlFreeDoc(d);
  if (!svg) return absl::InvalidArgumentError("the root is no SVG <svg>");
  return out;
}

// The elements named `name` ("": any) with class `css_class` ("": any).
inline std::vector<const SvgElement*> Find(const std::vector<SvgElement>& all,
                                           absl::string_view name,
                                           absl::string_view css_class = "") {
  std::vector<const SvgElement*> out;
  for (const SvgElement& e : all) {
    if ((name.empty() || e.name == name) &&
        (css_class.empty() || e.HasClass(css_class))) {
      out.push_back(&e);
    }
  }
  return out;
}

// The pixel position of value `v` on the x or y axis (`axis`), from the
// first and last of its tick labels (a y label's baseline is 4 px below
// its value's position).
inline double Position(const std::vector<SvgElement>& all, const char* axis,
                       double v) {
  const std::vector<const SvgElement*> t =
      Find(all, "text", absl::StrCat(axis, "-tick"));
  if (t.size() < 2) return NAN;
  const std::string k = axis;
  const double off = k == "y" ? -4 : 0;
  const double pa = t.front()->Num(k) + off, pb = t.back()->Num(k) + off;
  return pa + (v - t.front()->Num("text")) /
                  (t.back()->Num("text") - t.front()->Num("text")) * (pb - pa);
}

}  // namespace tokenlease::tools::testing

#endif  // TOKENLEASE_TOOLS_DEMO_SVG_TEST_H_
