#pragma once
// Shared helpers for reading YAML / JSON input with yaml-cpp, turning every problem into
// an InputError that names file, line, column and field. Used by model/, hardware/ and
// recipe readers; nothing else includes yaml-cpp for input.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "meshplan/diag.hpp"

namespace meshplan::yamlutil {

/// Parses `text`; a syntax error becomes InputError at the parser's position. A document
/// that is not a map is an error too, and so is content after it (a second document or
/// object; an empty or null one is allowed). Duplicate keys at any depth are errors, whose
/// field is the key's full path ("distributed.tp_size", "residuals[2].name").
YAML::Node ParseMap(std::string_view text, const std::string& filename);

/// 1-based position of `node` in `filename` (line 0 if the node has no mark).
SourceLoc LocOf(const YAML::Node& node, const std::string& filename);
/// A node as error messages show what was found: 'scalar' (quoted, cut at 40 characters),
/// null, "a list" or "a map".
std::string Shown(const YAML::Node& node);

/// How Int and Bool read a quoted scalar ("4", "false"). YAML types it a string, and so do
/// PyYAML / OmegaConf (Megatron-Bridge's override files) and JSON: refused (a quoted "false"
/// set on a Megatron config is a non-empty string, which Python reads as true). AutoModel's
/// config loader turns every string into the Python literal it spells
/// (components/config/loader.py, translate_value), so "4" is the integer 4 and "false" is
/// False there; Megatron-Bridge's env_vars take strings too.
enum class QuotedScalars { kRefused, kRead };

/// Reader for one map node: typed getters with range checks, and a final check that
/// every key was known. `path` prefixes field names in messages ("gpu" -> "gpu.bf16_tflops").
class MapReader {
 public:
  MapReader(YAML::Node map, std::string filename, std::string path = "", QuotedScalars quoted = QuotedScalars::kRefused);

  bool Has(const std::string& key) const;
  /// Value present and not null.
  bool HasValue(const std::string& key) const;
  YAML::Node Get(const std::string& key) const;

  /// Integer in [min, max], written as one: a float (4.0, 1e3) is refused, even a whole one
  /// (every reader of these files, PyYAML, JSON, AutoModel's loader, keeps it a float), and so is
  /// a quoted "4" unless the reader was made with QuotedScalars::kRead. Missing: `fallback` if
  /// given, else an error.
  int64_t Int(const std::string& key, int64_t min, int64_t max,
              std::optional<int64_t> fallback = std::nullopt);
  /// Finite number in [min, max].
  double Num(const std::string& key, double min, double max,
             std::optional<double> fallback = std::nullopt);
  /// true or false; a quoted "true" / "false" only with QuotedScalars::kRead. Throws InputError.
  bool Bool(const std::string& key, std::optional<bool> fallback = std::nullopt);
  std::string Str(const std::string& key, std::optional<std::string> fallback = std::nullopt);

  /// Marks keys as known without reading them (keys the planner ignores).
  void Ignore(std::initializer_list<const char*> keys);
  /// Throws for the first key never read nor ignored ("unknown key; did you mean ...").
  void RejectUnknown() const;
  /// Throws for the first key never read nor ignored that is within `max_distance` edits of
  /// one that was (a typo of a key meshplan checks); other unknown keys pass. For files whose
  /// full schema is larger than what meshplan reads (Megatron-Bridge overrides).
  void RejectNearMisses(size_t max_distance = 2) const;

  SourceLoc Loc(const std::string& key) const;   ///< key's position, or the map's
  std::string Field(const std::string& key) const;  ///< "path.key"
  [[noreturn]] void Fail(const std::string& key, const std::string& message) const;
  /// "missing; <expected>" for a required key; when an unread key of the map is one or two
  /// edits from it, the error points at that key and names it as the likely misspelling.
  [[noreturn]] void FailMissing(const std::string& key, const std::string& expected) const;
  const std::string& filename() const { return filename_; }

 private:
  YAML::Node map_;
  std::string filename_;
  std::string path_;
  QuotedScalars quoted_;
  mutable std::vector<std::string> seen_;
  void Mark(const std::string& key) const;
};

/// Levenshtein distance between `a` and `b` (insert, delete, substitute; each costs 1).
size_t EditDistance(const std::string& a, const std::string& b);
/// The shortest of `candidates` that `word` (3 characters or more) begins, else the closest to it
/// by edit distance (empty if none is close).
/// (Case is ignored in the comparison: "DGX-H100" suggests dgx-h100.)
std::string DidYouMean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace meshplan::yamlutil
