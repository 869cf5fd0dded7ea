#include "data/yaml_util.hpp"

#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <vector>
#include <sstream>
#include <vector>

namespace meshplan::yamlutil {
namespace {

// Nodes visited by CheckDuplicates. YAML aliases (*a) share their anchor's node, so a small
// file can describe an exponentially large tree ("billion laughs"); no input meshplan reads
// comes near this.
constexpr int64_t kMaxNodes = 1000000;

// One step of the path from the document to a node: a map key (pointing into the document,
// so that deep or aliased trees copy no text) or, when key is null, a sequence index.
struct PathStep {
  const std::string* key = nullptr;
  size_t index = 0;
};

// "distributed.pipeline.pp_size", "residuals[2].name": the steps, then `key`.
std::string PathName(const std::vector<PathStep>& steps, const std::string& key) {
  std::string s;
  for (const PathStep& p : steps) {
    if (p.key) {
      s += (s.empty() ? "" : ".") + *p.key;
    } else {
      s += "[" + std::to_string(p.index) + "]";
    }
  }
  return s.empty() ? key : s + "." + key;
}

// `path` leads from the document to `node`; a duplicate key is reported with its full path
// ("distributed.tp_size").
void CheckDuplicates(const YAML::Node& node, const std::string& filename, std::vector<PathStep>& path, int depth,
                     int64_t& visited) {
  if (depth > 64) {
    throw InputError(LocOf(node, filename), "", "nesting deeper than 64 levels");
  }
  if (++visited > kMaxNodes) {
    throw InputError(LocOf(node, filename), "",
                     "expected at most " + std::to_string(kMaxNodes) +
                         " values in the document, found more (YAML aliases expanding to a huge tree?)");
  }
  if (node.IsMap()) {
    std::set<std::string> keys;
    for (const auto& kv : node) {
      // A value under a key that is not a scalar (a YAML complex key) is named by its parent.
      const bool named = kv.first.IsScalar();
      if (named && !keys.insert(kv.first.Scalar()).second) {
        throw InputError(LocOf(kv.first, filename), PathName(path, kv.first.Scalar()), "duplicate key");
      }
      // yaml-cpp has no merge keys: a plain `<<` is an ordinary key, and the keys it should
      // merge would be lost without a word.
      if (named && kv.first.Scalar() == "<<" && kv.first.Tag() == "?") {
        throw InputError(LocOf(kv.first, filename), PathName(path, "<<"),
                         "YAML merge keys are not supported; write the merged keys out in this map");
      }
      if (named) path.push_back({&kv.first.Scalar(), 0});
      CheckDuplicates(kv.second, filename, path, depth + 1, visited);
      if (named) path.pop_back();
    }
  } else if (node.IsSequence()) {
    size_t i = 0;
    for (const auto& item : node) {
      path.push_back({nullptr, i++});
      CheckDuplicates(item, filename, path, depth + 1, visited);
      path.pop_back();
    }
  }
}

// True when every line is blank, a comment, or a document marker (--- or ...) with at most
// a comment after it.
bool OnlyCommentsOrMarkers(std::string_view text) {
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos) {
      line.remove_prefix(first);
      if ((line.rfind("---", 0) == 0 || line.rfind("...", 0) == 0) && first == 0) line.remove_prefix(3);
      const size_t rest = line.find_first_not_of(" \t\r");
      if (rest != std::string_view::npos && line[rest] != '#') return false;
    }
    pos = end + 1;
  }
  return true;
}

}  // namespace

std::string Shown(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsScalar()) {
    std::string s = n.Scalar();
    if (s.size() > 40) s = s.substr(0, 40) + "...";
    return "'" + s + "'";
  }
  if (n.IsSequence()) return "a list";
  return "a map";
}

SourceLoc LocOf(const YAML::Node& node, const std::string& filename) {
  SourceLoc loc{filename, 0, 0};
  if (node.IsDefined()) {
    YAML::Mark m = node.Mark();
    if (!m.is_null()) {
      loc.line = m.line + 1;
      loc.column = m.column + 1;
    }
  }
  return loc;
}

YAML::Node ParseMap(std::string_view text, const std::string& filename) {
  if (text.find('\0') != std::string_view::npos) {
    throw InputError({filename, 0, 0}, "", "file contains NUL bytes; expected YAML or JSON text");
  }
  YAML::Node root;
  std::vector<YAML::Node> docs;
  try {
    // Every document, not just the first: content after the map (a second JSON object,
    // `{...} garbage`, a `---` document) would otherwise be dropped without a word.
    docs = YAML::LoadAll(std::string(text));
    root = docs.empty() ? YAML::Load(std::string(text)) : docs.front();
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own guard; its message is "bad file"
    throw InputError({filename, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1},
                     "", "nesting deeper than 64 levels");
  } catch (const YAML::Exception& e) {
    SourceLoc loc{filename, e.mark.is_null() ? 0 : e.mark.line + 1,
                  e.mark.is_null() ? 0 : e.mark.column + 1};
    // yaml-cpp reports an unclosed flow map or list with no expected / found; say both.
    std::string why = e.msg;
    if (e.msg == "end of map flow not found") {
      why += ": an unclosed map: expected '}' (or a comma and the next key), found the end of the text or a token that cannot "
             "continue it (a truncated file or a missing comma?)";
    } else if (e.msg == "end of sequence flow not found") {
      why += ": an unclosed list: expected ']' (or a comma and the next item), found the end of the text or a token that cannot "
             "continue it (a truncated file or a missing comma?)";
    }
    // A tab in a line's indentation makes yaml-cpp fail with several messages ("illegal tab
    // when looking for indentation", "end of map not found", "illegal map value"), at or after
    // that line: name the first such line up to the error.
    const size_t last = e.mark.is_null() ? std::string_view::npos : size_t(e.mark.line);
    size_t line = 0;
    for (size_t pos = 0; pos < text.size() && (last == std::string_view::npos || line <= last); ++line) {
      const size_t end = std::min(text.find('\n', pos), text.size());
      const size_t indent_end = text.find_first_not_of(" \t", pos);
      if (text.substr(pos, std::min(indent_end, end) - pos).find('\t') != std::string_view::npos) {
        why += "; line " + std::to_string(line + 1) +
               " is indented with a tab: YAML indents with spaces only (expected spaces, found a tab character)";
        break;
      }
      pos = end + 1;
    }
    throw InputError(loc, "", "malformed YAML/JSON: " + why);
  }
  if (!root.IsMap()) {
    // A file of comments, blank lines and --- / ... markers only parses to null: say so.
    const bool no_content = root.IsNull() && OnlyCommentsOrMarkers(text);
    throw InputError(no_content ? SourceLoc{filename, 0, 0} : LocOf(root, filename), "",
                     no_content ? "expected a map of keys at the top level, found no content (only comments, blank "
                                  "lines or --- markers)"
                                : "expected a map of keys at the top level, found " + Shown(root));
  }
  // Further documents that are empty or null (a trailing `---`) drop nothing.
  for (size_t i = 1; i < docs.size(); ++i) {
    if (docs[i].IsNull()) continue;
    throw InputError(LocOf(docs[i], filename), "",
                     "expected a single YAML/JSON document, found another one after it: " + Shown(docs[i]));
  }
  int64_t visited = 0;
  std::vector<PathStep> path;
  CheckDuplicates(root, filename, path, 0, visited);
  return root;
}

MapReader::MapReader(YAML::Node map, std::string filename, std::string path, QuotedScalars quoted)
    : map_(std::move(map)), filename_(std::move(filename)), path_(std::move(path)), quoted_(quoted) {}

void MapReader::Mark(const std::string& key) const {
  if (std::find(seen_.begin(), seen_.end(), key) == seen_.end()) seen_.push_back(key);
}

bool MapReader::Has(const std::string& key) const {
  Mark(key);
  return map_[key].IsDefined();
}

bool MapReader::HasValue(const std::string& key) const {
  Mark(key);
  YAML::Node n = map_[key];
  return n.IsDefined() && !n.IsNull();
}

YAML::Node MapReader::Get(const std::string& key) const {
  Mark(key);
  return map_[key];
}

std::string MapReader::Field(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

SourceLoc MapReader::Loc(const std::string& key) const {
  YAML::Node n = map_[key];
  if (n.IsDefined()) {
    // Point at the key itself when we can find it.
    for (const auto& kv : map_) {
      if (kv.first.IsScalar() && kv.first.Scalar() == key) return LocOf(kv.first, filename_);
    }
    return LocOf(n, filename_);
  }
  return LocOf(map_, filename_);
}

void MapReader::Fail(const std::string& key, const std::string& message) const {
  throw InputError(Loc(key), Field(key), message);
}

void MapReader::FailMissing(const std::string& key, const std::string& expected) const {
  // A key of the map one or two edits from the missing one is most likely its misspelling:
  // point at it instead of at the map.
  for (const auto& kv : map_) {
    if (!kv.first.IsScalar()) continue;
    const std::string& k = kv.first.Scalar();
    if (std::find(seen_.begin(), seen_.end(), k) != seen_.end()) continue;
    const size_t diff = k.size() > key.size() ? k.size() - key.size() : key.size() - k.size();
    if (diff <= 2 && EditDistance(k, key) <= 2) {
      throw InputError(LocOf(kv.first, filename_), Field(key),
                       "missing; " + expected + "; found the unknown key '" + k + "' here: did you mean '" + key + "'?");
    }
  }
  Fail(key, "missing; " + expected);
}

int64_t MapReader::Int(const std::string& key, int64_t min, int64_t max, std::optional<int64_t> fallback) {
  Mark(key);
  YAML::Node n = map_[key];
  const std::string range = "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    if (n.IsDefined()) Fail(key, range + ", found null");
    FailMissing(key, range);
  }
  if (!n.IsScalar()) Fail(key, "expected an integer, found " + Shown(n));
  std::string s = n.Scalar();
  // yaml-cpp tags a quoted scalar "!" and a plain one "?".
  if (n.Tag() == "!" && quoted_ == QuotedScalars::kRefused) {
    Fail(key, "expected an integer, found the string \"" + (s.size() > 40 ? s.substr(0, 40) + "..." : s) + "\"");
  }
  {
    // 010: PyYAML and OmegaConf (YAML 1.1), which AutoModel and Megatron-Bridge read recipes
    // with, take it as octal 8 (and 08 as a string); JSON (Hugging Face configs) refuses it.
    // Nobody reads it as 10.
    const size_t d = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    if (s.size() > d + 1 && s[d] == '0' && s.find_first_not_of("0123456789", d) == std::string::npos) {
      Fail(key, "expected an integer, found '" + s +
                    "' (a leading zero: PyYAML and OmegaConf, which the frameworks read YAML with, take it as "
                    "octal (010 is 8) or as a string (08), and JSON refuses it; write the number without it)");
    }
  }
  char* end = nullptr;
  errno = 0;
  const long long v = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') {
    // A whole float (4.0, 1e3) is no integer either: the frameworks get the float as it is
    // (Megatron-Core then fails on it or, worse, computes with it).
    double d = 0;
    const bool whole = YAML::convert<double>::decode(n, d) && std::isfinite(d) && d == std::floor(d);
    Fail(key, "expected an integer, found " + Shown(n) +
                  (whole && std::fabs(d) < 9.0e15 ? " (a float; write " + std::to_string(static_cast<long long>(d)) + ")"
                                                  : whole ? " (a float)" : ""));
  }
  if (errno == ERANGE) {
    // An integer all the same (99999999999999999999), too large for any range read here.
    if (s.size() > 40) s = s.substr(0, 40) + "...";
    Fail(key, range + ", found " + s + " (out of range)");
  }
  if (v < min || v > max) Fail(key, range + ", found " + std::to_string(v));
  return v;
}

double MapReader::Num(const std::string& key, double min, double max, std::optional<double> fallback) {
  Mark(key);
  YAML::Node n = map_[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    if (n.IsDefined()) Fail(key, "expected a number, found null");
    FailMissing(key, "expected a number");
  }
  // A quoted number is a string to the frameworks, as in Int.
  if (n.IsScalar() && n.Tag() == "!" && quoted_ == QuotedScalars::kRefused) {
    const std::string& s = n.Scalar();
    Fail(key, "expected a number, found the string \"" + (s.size() > 40 ? s.substr(0, 40) + "..." : s) + "\"");
  }
  double d = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, d)) Fail(key, "expected a number, found " + Shown(n));
  if (!std::isfinite(d)) Fail(key, "expected a finite number, found " + Shown(n));
  if (d < min || d > max) {
    std::ostringstream os;
    os << "expected a number in [" << min << ", " << max << "], found " << d;
    Fail(key, os.str());
  }
  return d;
}

bool MapReader::Bool(const std::string& key, std::optional<bool> fallback) {
  Mark(key);
  YAML::Node n = map_[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    if (n.IsDefined()) Fail(key, "expected true or false, found null");
    FailMissing(key, "expected true or false");
  }
  bool b = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, b)) Fail(key, "expected true or false, found " + Shown(n));
  if (n.Tag() == "!" && quoted_ == QuotedScalars::kRefused) {
    Fail(key, "expected true or false, found the string \"" + n.Scalar() +
                  "\" (quoted: the framework would get a string, and any non-empty string is true in Python; "
                  "write " + (b ? "true" : "false") + " without quotes)");
  }
  return b;
}

std::string MapReader::Str(const std::string& key, std::optional<std::string> fallback) {
  Mark(key);
  YAML::Node n = map_[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    if (n.IsDefined()) Fail(key, "expected a string, found null");
    FailMissing(key, "expected a string");
  }
  if (!n.IsScalar()) Fail(key, "expected a string, found " + Shown(n));
  return n.Scalar();
}

void MapReader::Ignore(std::initializer_list<const char*> keys) {
  for (const char* k : keys) Mark(k);
}

void MapReader::RejectUnknown() const {
  std::vector<std::string> known(seen_.begin(), seen_.end());
  for (const auto& kv : map_) {
    if (!kv.first.IsScalar()) throw InputError(LocOf(kv.first, filename_), path_, "keys must be strings");
    const std::string& k = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string hint = DidYouMean(k, known);
    throw InputError(LocOf(kv.first, filename_), Field(k),
                     "unknown key" + (hint.empty() ? std::string() : "; did you mean '" + hint + "'?"));
  }
}

void MapReader::RejectNearMisses(size_t max_distance) const {
  std::vector<std::string> known(seen_.begin(), seen_.end());
  for (const auto& kv : map_) {
    if (!kv.first.IsScalar()) throw InputError(LocOf(kv.first, filename_), path_, "keys must be strings");
    const std::string& k = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    for (const std::string& c : known) {
      const size_t diff = k.size() > c.size() ? k.size() - c.size() : c.size() - k.size();
      if (diff <= max_distance && EditDistance(k, c) <= max_distance) {
        throw InputError(LocOf(kv.first, filename_), Field(k), "unknown key; did you mean '" + c + "'?");
      }
    }
  }
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string DidYouMean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  // Case is ignored: "DGX-H100" is dgx-h100.
  auto lower = [](std::string s) {
    for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  const std::string w = word.size() <= 4096 ? lower(word) : word;
  // A word that begins a name is taken for that name cut short ("qwen3-30b" for qwen3-30b-a3b,
  // "mi300" for mi300x-8): the shortest name it begins.
  if (w.size() >= 3) {
    std::string shortest;
    for (const std::string& c : candidates) {
      if (c.size() > w.size() && lower(c).compare(0, w.size(), w) == 0 && (shortest.empty() || c.size() < shortest.size())) {
        shortest = c;
      }
    }
    if (!shortest.empty()) return shortest;
  }
  // Of equally distant candidates, the one closest in length, then the one sharing the longest
  // start with the word: "deepseek-v4-pro" suggests deepseek-v4-flash rather than deepseek-v3
  // (5 edits each), "gemm_fp16" gemm_bf16 rather than gemm_fp8 (2 each).
  auto shared_start = [&](const std::string& c) {
    size_t n = 0;
    while (n < w.size() && n < c.size() && w[n] == c[n]) ++n;
    return n;
  };
  size_t best_diff = 0, best_start = 0;
  for (const std::string& c : candidates) {
    // The distance is at least the length difference: skip hopeless (e.g. 1 MB) words fast.
    const size_t diff = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (diff > best_d || (diff == best_d && best.empty())) continue;
    const std::string lc = lower(c);
    const size_t d = EditDistance(w, lc);
    const size_t start = shared_start(lc);
    const bool tie_won =
        d == best_d && !best.empty() && (diff < best_diff || (diff == best_diff && start > best_start));
    if (d < best_d || tie_won) {
      best_d = d;
      best = c;
      best_diff = diff;
      best_start = start;
    }
  }
  return best;
}

}  // namespace meshplan::yamlutil
