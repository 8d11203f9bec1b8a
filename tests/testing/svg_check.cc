// The libxml2 reading of an SVG document for the tests (svg_check.h).
#include "testing/svg_check.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace tokenlease::testing {

std::string SvgElement::Attr(const std::string& k) const {
  const auto it = attrs.find(k);
  return it == attrs.end() ? "" : it->second;
}

bool SvgElement::HasClass(absl::string_view c) const {
  for (absl::string_view w : absl::StrSplit(Attr("class"), ' ')) {
    if (w == c) return true;
  }
  return false;
}

double SvgElement::Num(const std::string& k) const {
  double v = NAN;
  const std::string s = k == "text" ? text : Attr(k);
  return absl::SimpleAtod(absl::StrReplaceAll(s, {{",", ""}}), &v) ? v : NAN;
}

absl::StatusOr<std::vector<SvgElement>> ParseSvg(const std::string& doc) {
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
      e.text = text != nullptr ? reinterpret_cast<const char*>(text) : "";
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

std::vector<const SvgElement*> Find(const std::vector<SvgElement>& all,
                                    absl::string_view name,
                                    absl::string_view css_class) {
  std::vector<const SvgElement*> out;
  for (const SvgElement& e : all) {
    if ((name.empty() || e.name == name) &&
        (css_class.empty() || e.HasClass(css_class))) {
      out.push_back(&e);
    }
  }
  return out;
}

double Position(const std::vector<SvgElement>& all, const char* axis,
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

}  // namespace tokenlease::testing
