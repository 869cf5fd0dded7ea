// Megatron-Core's pipeline_model_parallel_layout string grammar (PpLayerLayout, layout.hpp).
// Source: Megatron-LM megatron/core/transformer/pipeline_parallel_layer_layout.py at
// d98e8a64ddf3 (2026-08-22), PipelineParallelLayerLayout.parse_str_to_list, lines 282-321.
#include <algorithm>

#include "meshplan/layout.hpp"

namespace meshplan {
namespace {

constexpr size_t kMaxSymbols = size_t{1} << 20;

bool Digit(char c) { return c >= '0' && c <= '9'; }

// Appends `unit` repeated int(digits) times (Python's int() reads leading zeros as written);
// false when the result would pass kMaxSymbols.
bool AppendRepeated(std::string& out, std::string_view unit, std::string_view digits) {
  size_t i = 0;
  while (i + 1 < digits.size() && digits[i] == '0') ++i;
  digits.remove_prefix(i);
  if (digits.size() > 7) return false;  // >= 10^7 copies of at least one character
  size_t n = 0;
  for (char c : digits) n = n * 10 + size_t(c - '0');
  if (n > 0 && (unit.size() > kMaxSymbols / n || out.size() + unit.size() * n > kMaxSymbols)) return false;
  for (size_t k = 0; k < n; ++k) out.append(unit);
  return true;
}

// Where a digit run starting at `from` ends.
size_t DigitsEnd(std::string_view s, size_t from) {
  while (from < s.size() && Digit(s[from])) ++from;
  return from;
}

std::string Shorten(std::string_view s) {
  return s.size() > 60 ? std::string(s.substr(0, 57)) + "..." : std::string(s);
}

std::string CharName(char c) {
  if (c == ' ') return "a space";
  if (c == '\t') return "a tab";
  if (c == '\n') return "a line break";
  if (c == '\r') return "a carriage return";
  const unsigned char u = static_cast<unsigned char>(c);
  if (u < 0x20 || u == 0x7f) return "control character " + std::to_string(int(u));
  if (u >= 0x80) return "a non-ASCII byte";
  return std::string("'") + c + "'";
}

const char kGrammar[] =
    "expected Megatron-Core's layout string: E (embedding), t (decoder layer), m (MTP layer), L (loss), '|' between "
    "stages, x*n and (...)*n repetition, ',' ignored, no spaces";

}  // namespace

PpLayoutParse ParsePpLayoutString(std::string_view text) {
  PpLayoutParse r;
  const std::string too_long = std::string(kGrammar) + "; found a layout of more than " +
                               std::to_string(kMaxSymbols) + " symbols once its repetitions are unrolled";
  // 1. layout_str.replace(",", "") (line 288).
  std::string s;
  s.reserve(text.size());
  for (char c : text) {
    if (c != ',') s += c;
  }
  // 2. re.sub(r'\(([^)]+)\)\*(\d+)', lambda x: x.group(1) * int(x.group(2)), s) (line 297):
  //    leftmost matches, not overlapping, once over the string. [^)]+ runs to the first ')'
  //    after the '(' and must not be empty; no backtracking can shorten it (it must end at a ')').
  std::string a;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '(') {
      const size_t q = s.find(')', i + 1);
      if (q != std::string::npos && q > i + 1 && q + 2 < s.size() && s[q + 1] == '*' && Digit(s[q + 2])) {
        const size_t e = DigitsEnd(s, q + 2);
        if (!AppendRepeated(a, std::string_view(s).substr(i + 1, q - i - 1), std::string_view(s).substr(q + 2, e - q - 2))) {
          r.error = too_long;
          return r;
        }
        i = e;
        continue;
      }
    }
    a += s[i++];
  }
  // 3. re.sub(r'(.)\*(\d+)', ...) over the result (line 298); '.' is any character but '\n'.
  std::string b;
  for (size_t i = 0; i < a.size();) {
    if (i + 2 < a.size() && a[i] != '\n' && a[i + 1] == '*' && Digit(a[i + 2])) {
      const size_t e = DigitsEnd(a, i + 2);
      if (!AppendRepeated(b, std::string_view(a).substr(i, 1), std::string_view(a).substr(i + 2, e - i - 2))) {
        r.error = too_long;
        return r;
      }
      i = e;
      continue;
    }
    b += a[i++];
  }
  if (b.size() > kMaxSymbols) {
    r.error = too_long;
    return r;
  }
  // 4. layout_str.split('|'), each character one of E, L, t, m (lines 303-320).
  r.stages.emplace_back();
  for (char c : b) {
    if (c == '|') {
      r.stages.emplace_back();
      continue;
    }
    if (c != 'E' && c != 'L' && c != 't' && c != 'm') {
      // Stages counted from 1, in the string as unrolled (named when it differs from the text).
      r.error = std::string(kGrammar) + "; found " + CharName(c) + " in stage " + std::to_string(r.stages.size()) +
                (b == text ? "" : " of \"" + Shorten(b) + "\" (the layout unrolled)");
      r.stages.clear();
      return r;
    }
    r.stages.back() += c;
  }
  r.ok = true;
  return r;
}

int64_t PpLayerLayout::Count(char symbol) const {
  int64_t n = 0;
  for (const std::string& s : stages) n += std::count(s.begin(), s.end(), symbol);
  return n;
}

int64_t PpLayerLayout::CountIn(size_t stage, char symbol) const {
  if (stage >= stages.size()) return 0;
  return std::count(stages[stage].begin(), stages[stage].end(), symbol);
}

int64_t PpLayerLayout::StageOf(char symbol) const {
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].find(symbol) != std::string::npos) return int64_t(i);
  }
  return -1;
}

std::string PpLayerLayout::ToString() const {
  std::string out;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (i) out += '|';
    for (char c : stages[i]) {
      if (c != 'c') out += c;
    }
  }
  return out;
}

}  // namespace meshplan
