#include "testing/prometheus_check.h"

#include <cmath>
#include <cstdlib>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tokenlease::testing {
namespace {

bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (colon && c == ':');
}
bool IsNameChar(char c, bool colon) {
  return IsNameStart(c, colon) || (c >= '0' && c <= '9');
}

bool IsMetricName(std::string_view s) {
  if (s.empty() || !IsNameStart(s[0], true)) return false;
  for (char c : s) {
    if (!IsNameChar(c, true)) return false;
  }
  return true;
}

bool IsLabelName(std::string_view s) {
  if (s.empty() || !IsNameStart(s[0], false)) return false;
  for (char c : s) {
    if (!IsNameChar(c, false)) return false;
  }
  return s.substr(0, 2) != "__";
}

// True if `s` is valid UTF-8 (no overlong forms, surrogates, or values past
// U+10FFFF).
bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    uint32_t min;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n;
  }
  return true;
}

// A float as Go's strconv.ParseFloat reads it in the text format:
// [+-]digits[.digits][e[+-]digits], [+-].digits..., +Inf, -Inf, Inf, NaN.
std::optional<double> ParseValue(std::string_view s) {
  if (s == "+Inf" || s == "Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  if (s == "NaN") return NAN;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exp;
    if (exp == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  return std::strtod(std::string(s).c_str(), nullptr);
}

// Unescapes a HELP text (\\ and \n only).
std::optional<std::string> UnescapeHelp(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i == s.size()) return std::nullopt;
    if (s[i] == '\\') {
      out += '\\';
    } else if (s[i] == 'n') {
      out += '\n';
    } else {
      return std::nullopt;
    }
  }
  return out;
}

struct Parser {
  std::string_view text;
  PromExposition out;
  std::map<std::string, size_t> family_index;  // by name
  std::set<std::string> closed;                // families that ended
  std::string current;                         // the family being written
  std::set<std::string> series;                // name + labels, seen
  std::set<std::string> declared_help, declared_type;
  int line_no = 0;

  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line_no, ": ", what));
  }

  // Switches to family `name` (its HELP, TYPE or a sample): it must not
  // have ended before.
  absl::Status Enter(const std::string& name) {
    if (name == current) return absl::OkStatus();
    if (closed.count(name)) {
      return Error(absl::StrCat("family ", name,
                                " continues after another family started "
                                "(a family's lines must be contiguous)"));
    }
    if (!current.empty()) closed.insert(current);
    current = name;
    if (!family_index.count(name)) {
      family_index[name] = out.families.size();
      out.families.push_back(PromFamily{name, "", "", {}});
    }
    return absl::OkStatus();
  }

  absl::Status Comment(std::string_view line) {
    std::string_view rest = line.substr(1);
    const bool help = rest.substr(0, 6) == " HELP ";
    const bool type = rest.substr(0, 6) == " TYPE ";
    if (!help && !type) return absl::OkStatus();  // a plain comment
    rest.remove_prefix(6);
    const size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) {
      return Error(help ? "HELP without a text" : "TYPE without a type");
    }
    const std::string name(rest.substr(0, sp));
    const std::string_view arg = rest.substr(sp + 1);
    if (!IsMetricName(name))
      return Error(absl::StrCat("bad metric name '", name, "'"));
    if (absl::Status s = Enter(name); !s.ok()) return s;
    PromFamily& f = out.families[family_index[name]];
    if (help) {
      if (!declared_help.insert(name).second) {
        return Error(absl::StrCat("second HELP for ", name));
      }
      std::optional<std::string> h = UnescapeHelp(arg);
      if (!h.has_value()) return Error("HELP text with a bad escape");
      if (!IsUtf8(*h)) return Error("HELP text is not UTF-8");
      f.help = *h;
      return absl::OkStatus();
    }
    if (!declared_type.insert(name).second) {
      return Error(absl::StrCat("second TYPE for ", name));
    }
    if (!f.samples.empty()) {
      return Error(absl::StrCat("TYPE for ", name, " after its samples"));
    }
    if (arg != "counter" && arg != "gauge" && arg != "histogram" &&
        arg != "summary" && arg != "untyped") {
      return Error(absl::StrCat("unknown type '", std::string(arg), "'"));
    }
    if (arg == "counter" && !name.ends_with("_total")) {
      return Error(absl::StrCat("counter ", name, " does not end in _total"));
    }
    f.type = std::string(arg);
    return absl::OkStatus();
  }

  // The family a sample named `name` belongs to: the current one if the
  // name is one of its series names.
  std::optional<std::string> FamilyOf(const std::string& name) const {
    auto matches = [&](const std::string& family) {
      auto it = family_index.find(family);
      if (it == family_index.end()) return false;
      const std::string& type = out.families[it->second].type;
      if (type.empty()) return false;  // no TYPE line (yet)
      if (type == "histogram") {
        return name == family + "_bucket" || name == family + "_sum" ||
               name == family + "_count";
      }
      if (type == "summary") {
        return name == family || name == family + "_sum" ||
               name == family + "_count";
      }
      return name == family;
    };
    if (!current.empty() && matches(current)) return current;
    for (const auto& [family, index] : family_index) {
      if (matches(family)) return family;
    }
    return std::nullopt;
  }

  absl::Status Sample(std::string_view line) {
    size_t i = 0;
    while (i < line.size() && IsNameChar(line[i], true)) ++i;
    const std::string name(line.substr(0, i));
    if (!IsMetricName(name)) return Error("a sample without a metric name");
    PromLabels labels;
    std::string canonical = name + "{";
    if (i < line.size() && line[i] == '{') {
      ++i;
      if (i < line.size() && line[i] == '}') return Error("an empty label set");
      while (true) {
        const size_t start = i;
        while (i < line.size() && IsNameChar(line[i], false)) ++i;
        const std::string label(line.substr(start, i - start));
        if (!IsLabelName(label)) {
          return Error(absl::StrCat("bad label name '", label, "'"));
        }
        if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
          return Error(absl::StrCat("label ", label, " without =\"value\""));
        }
        i += 2;
        std::string value;
        while (true) {
          if (i >= line.size()) return Error("unterminated label value");
          const char c = line[i++];
          if (c == '"') break;
          if (c != '\\') {
            value += c;
            continue;
          }
          if (i >= line.size()) return Error("unterminated escape");
          const char e = line[i++];
          if (e == '\\') {
            value += '\\';
          } else if (e == '"') {
            value += '"';
          } else if (e == 'n') {
            value += '\n';
          } else {
            return Error(absl::StrCat("bad escape \\", std::string(1, e),
                                      " in a label value"));
          }
        }
        if (!IsUtf8(value)) {
          return Error(absl::StrCat("label ", label, "'s value is not UTF-8"));
        }
        if (!labels.emplace(label, value).second) {
          return Error(absl::StrCat("label ", label, " twice"));
        }
        if (i < line.size() && line[i] == ',') {
          ++i;
          if (i < line.size() && line[i] == '}') {
            return Error("a trailing comma in the label set");
          }
          continue;
        }
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        return Error("expected ',' or '}' in the label set");
      }
    }
    if (i >= line.size() || line[i] != ' ') {
      return Error("expected one space before the value");
    }
    ++i;
    const std::string_view value_text = line.substr(i);
    if (value_text.find(' ') != std::string_view::npos ||
        value_text.find('\t') != std::string_view::npos) {
      return Error("a timestamp or extra field after the value");
    }
    std::optional<double> value = ParseValue(value_text);
    if (!value.has_value()) {
      return Error(absl::StrCat("bad value '", std::string(value_text), "'"));
    }
    for (const auto& [k, v] : labels)
      absl::StrAppend(&canonical, k, "=", v, ",");
    if (!series.insert(canonical).second) {
      return Error(absl::StrCat("series ", canonical, "} twice"));
    }
    std::optional<std::string> family = FamilyOf(name);
    if (!family.has_value()) {
      return Error(absl::StrCat("sample ", name,
                                " of no family declared by a TYPE line"));
    }
    if (absl::Status s = Enter(*family); !s.ok()) return s;
    PromFamily& f = out.families[family_index[*family]];
    if (!declared_help.count(*family)) {
      return Error(absl::StrCat("sample of ", *family, " before its HELP"));
    }
    if (f.type == "counter" && (!std::isfinite(*value) || *value < 0)) {
      return Error(
          absl::StrCat("counter ", name, " is ", std::string(value_text)));
    }
    const bool is_bucket = f.type == "histogram" && name == *family + "_bucket";
    if (is_bucket != static_cast<bool>(labels.count("le"))) {
      return Error(is_bucket ? "a bucket without le"
                             : "le on a sample that is not a bucket");
    }
    f.samples.push_back(PromSample{name, std::move(labels), *value});
    return absl::OkStatus();
  }

  // The histogram rules, once the whole text is read.
  absl::Status CheckHistograms() {
    for (const PromFamily& f : out.families) {
      if (f.type != "histogram") continue;
      struct Series {
        std::vector<std::pair<double, double>> buckets;  // (le, count)
        std::optional<double> sum, count;
      };
      std::map<PromLabels, Series> by_labels;
      for (const PromSample& s : f.samples) {
        PromLabels key = s.labels;
        key.erase("le");
        Series& series = by_labels[key];
        if (s.name == f.name + "_bucket") {
          std::optional<double> le = ParseValue(s.labels.at("le"));
          if (!le.has_value() || std::isnan(*le)) {
            return absl::InvalidArgumentError(
                absl::StrCat(f.name, ": bad le '", s.labels.at("le"), "'"));
          }
          series.buckets.emplace_back(*le, s.value);
        } else if (s.name == f.name + "_sum") {
          series.sum = s.value;
        } else {
          series.count = s.value;
        }
      }
      for (const auto& [labels, series] : by_labels) {
        const std::string where =
            absl::StrCat(f.name, " (", labels.size(), " labels)");
        if (series.buckets.empty() || !series.sum || !series.count) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, ": needs buckets, _sum and _count for every label set"));
        }
        for (size_t i = 0; i < series.buckets.size(); ++i) {
          const auto [le, n] = series.buckets[i];
          if (n < 0 || n != std::floor(n)) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": bucket count ", n));
          }
          if (i > 0 && !(le > series.buckets[i - 1].first)) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, ": le ", le, " after ", series.buckets[i - 1].first));
          }
          if (i > 0 && n < series.buckets[i - 1].second) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": buckets not cumulative at le=", le));
          }
        }
        if (!std::isinf(series.buckets.back().first) ||
            series.buckets.back().first < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": the last bucket is not le=\"+Inf\""));
        }
        if (series.buckets.back().second != *series.count) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, ": +Inf bucket ", series.buckets.back().second,
              " != _count ", *series.count));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status Run() {
    if (text.empty()) return absl::OkStatus();
    if (text.back() != '\n') {
      return absl::InvalidArgumentError("the text does not end in a newline");
    }
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t end = text.find('\n', pos);
      const std::string_view line = text.substr(pos, end - pos);
      pos = end + 1;
      ++line_no;
      if (line.empty()) return Error("an empty line");
      if (line.find('\r') != std::string_view::npos) {
        return Error("a carriage return");
      }
      absl::Status s = line[0] == '#' ? Comment(line) : Sample(line);
      if (!s.ok()) return s;
    }
    for (const PromFamily& f : out.families) {
      if (!declared_type.count(f.name) || !declared_help.count(f.name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("family ", f.name, " lacks its HELP or TYPE line"));
      }
    }
    return CheckHistograms();
  }
};

}  // namespace

const PromFamily* PromExposition::Family(std::string_view name) const {
  for (const PromFamily& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::optional<double> PromExposition::Value(std::string_view name,
                                            const PromLabels& labels) const {
  for (const PromFamily& f : families) {
    for (const PromSample& s : f.samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
  }
  return std::nullopt;
}

absl::StatusOr<PromExposition> ParsePrometheusText(std::string_view text) {
  Parser p;
  p.text = text;
  if (absl::Status s = p.Run(); !s.ok()) return s;
  return std::move(p.out);
}

}  // namespace tokenlease::testing
