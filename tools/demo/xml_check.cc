// The tests' strict XML parser (xml_check.h).
#include "demo/xml_check.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tokenlease::tools::testing {
namespace {

bool NameStart(char c) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_' ||
         c == ':';
}
bool NameChar(char c) {
  return NameStart(c) || absl::ascii_isdigit(static_cast<unsigned char>(c)) ||
         c == '-' || c == '.';
}
bool Space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  explicit Parser(absl::string_view doc) : s_(doc) {}

  absl::StatusOr<std::unique_ptr<XmlElement>> Document() {
    if (absl::StartsWith(s_, "<?xml")) {
      const size_t end = s_.find("?>");
      if (end == absl::string_view::npos) return Error("unclosed declaration");
      i_ = end + 2;
    }
    if (absl::Status s = Misc(); !s.ok()) return s;
    if (!Peek('<')) return Error("expected the root element");
    absl::StatusOr<std::unique_ptr<XmlElement>> root = Element();
    if (!root.ok()) return root.status();
    if (absl::Status s = Misc(); !s.ok()) return s;
    if (i_ != s_.size()) return Error("content after the root element");
    return root;
  }

 private:
  absl::Status Error(absl::string_view why) const {
    const absl::string_view before = s_.substr(0, std::min(i_, s_.size()));
    const size_t line = std::count(before.begin(), before.end(), '\n') + 1;
    const size_t nl = before.rfind('\n');
    const size_t col = nl == absl::string_view::npos ? i_ + 1 : i_ - nl;
    return absl::InvalidArgumentError(
        absl::StrCat("XML error at line ", line, ", column ", col, ": ", why));
  }
  bool Peek(char c) const { return i_ < s_.size() && s_[i_] == c; }
  bool Ahead(absl::string_view t) const {
    return absl::StartsWith(s_.substr(i_), t);
  }
  void SkipSpace() {
    while (i_ < s_.size() && Space(s_[i_])) ++i_;
  }

  // Whitespace and comments (outside the root).
  absl::Status Misc() {
    for (;;) {
      SkipSpace();
      if (!Ahead("<!--")) return absl::OkStatus();
      if (absl::Status s = Comment(); !s.ok()) return s;
    }
  }

  absl::Status Comment() {
    i_ += 4;
    const size_t end = s_.find("--", i_);
    if (end == absl::string_view::npos) return Error("unclosed comment");
    if (end + 2 >= s_.size() || s_[end + 2] != '>') {
      return Error("'--' inside a comment");
    }
    i_ = end + 3;
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Name() {
    const size_t start = i_;
    if (i_ >= s_.size() || !NameStart(s_[i_])) return Error("expected a name");
    while (i_ < s_.size() && NameChar(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  // Decodes the text up to `stop` (a quote, or '<' for content).
  absl::StatusOr<std::string> Chars(char stop) {
    std::string out;
    while (i_ < s_.size() && s_[i_] != stop) {
      const char c = s_[i_];
      if (c == '<') return Error("'<' in an attribute value");
      if (c != '&') {
        out += c;
        ++i_;
        continue;
      }
      const size_t end = s_.find(';', i_);
      if (end == absl::string_view::npos || end - i_ > 10) {
        return Error("'&' that starts no reference");
      }
      const absl::string_view ref = s_.substr(i_ + 1, end - i_ - 1);
      if (ref == "amp") {
        out += '&';
      } else if (ref == "lt") {
        out += '<';
      } else if (ref == "gt") {
        out += '>';
      } else if (ref == "quot") {
        out += '"';
      } else if (ref == "apos") {
        out += '\'';
      } else if (absl::StartsWith(ref, "#")) {
        uint32_t cp = 0;
        const bool hex = absl::StartsWith(ref, "#x");
        const bool ok = hex ? absl::SimpleHexAtoi(ref.substr(2), &cp)
                            : absl::SimpleAtoi(ref.substr(1), &cp);
        if (!ok || cp == 0 || cp > 0x10FFFF) {
          return Error("bad character reference");
        }
        AppendUtf8(cp, out);
      } else {
        return Error(absl::StrCat("unknown entity '&", ref, ";'"));
      }
      i_ = end + 1;
    }
    return out;
  }

  absl::StatusOr<std::unique_ptr<XmlElement>> Element() {
    ++i_;  // '<'
    auto e = std::make_unique<XmlElement>();
    absl::StatusOr<std::string> name = Name();
    if (!name.ok()) return name.status();
    e->name = *name;
    for (;;) {
      const size_t before = i_;
      SkipSpace();
      if (Ahead("/>")) {
        i_ += 2;
        return e;
      }
      if (Peek('>')) {
        ++i_;
        break;
      }
      if (i_ == before) return Error("expected whitespace before an attribute");
      absl::StatusOr<std::string> key = Name();
      if (!key.ok()) return key.status();
      SkipSpace();
      if (!Peek('=')) return Error("expected '=' after an attribute name");
      ++i_;
      SkipSpace();
      if (!Peek('"') && !Peek('\'')) return Error("expected a quoted value");
      const char quote = s_[i_++];
      absl::StatusOr<std::string> value = Chars(quote);
      if (!value.ok()) return value.status();
      if (!Peek(quote)) return Error("unclosed attribute value");
      ++i_;
      if (!e->attributes.emplace(*key, *value).second) {
        return Error(absl::StrCat("attribute '", *key, "' twice"));
      }
    }
    return Content(std::move(e));
  }

  absl::StatusOr<std::unique_ptr<XmlElement>> Content(
      std::unique_ptr<XmlElement> e) {
    for (;;) {
      if (i_ >= s_.size())
        return Error(absl::StrCat("<", e->name, "> unclosed"));
      if (Ahead("</")) {
        i_ += 2;
        absl::StatusOr<std::string> name = Name();
        if (!name.ok()) return name.status();
        if (*name != e->name) {
          return Error(absl::StrCat("</", *name, "> closes <", e->name, ">"));
        }
        SkipSpace();
        if (!Peek('>')) return Error("expected '>'");
        ++i_;
        return e;
      }
      if (Ahead("<!--")) {
        if (absl::Status s = Comment(); !s.ok()) return s;
        continue;
      }
      if (Ahead("<!") || Ahead("<?")) {
        return Error("CDATA, DOCTYPE or processing instruction in content");
      }
      if (Peek('<')) {
        absl::StatusOr<std::unique_ptr<XmlElement>> child = Element();
        if (!child.ok()) return child.status();
        e->children.push_back(*std::move(child));
        continue;
      }
      absl::StatusOr<std::string> text = Chars('<');
      if (!text.ok()) return text.status();
      e->text += *text;
    }
  }

  absl::string_view s_;
  size_t i_ = 0;
};

void Collect(const XmlElement& e, absl::string_view name,
             absl::string_view css_class, std::vector<const XmlElement*>& out) {
  for (const std::unique_ptr<XmlElement>& c : e.children) {
    if ((name.empty() || c->name == name) &&
        (css_class.empty() || c->HasClass(css_class))) {
      out.push_back(c.get());
    }
    Collect(*c, name, css_class, out);
  }
}

}  // namespace

std::string XmlElement::Attr(const std::string& key) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? "" : it->second;
}

bool XmlElement::HasClass(absl::string_view css_class) const {
  for (absl::string_view word :
       absl::StrSplit(Attr("class"), ' ', absl::SkipEmpty())) {
    if (word == css_class) return true;
  }
  return false;
}

std::vector<const XmlElement*> XmlElement::FindAll(
    absl::string_view name, absl::string_view css_class) const {
  std::vector<const XmlElement*> out;
  Collect(*this, name, css_class, out);
  return out;
}

absl::StatusOr<std::unique_ptr<XmlElement>> ParseXml(absl::string_view doc) {
  return Parser(doc).Document();
}

}  // namespace tokenlease::tools::testing
