#pragma once
/// \file key_reader.hpp
/// Private to planner/model: reads the top-level keys of a HF config.json (or meshplan
/// model YAML) through yamlutil::MapReader, remembers which keys were read and where, and
/// at the end rejects keys that look like misspellings of the keys read.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/yaml_util.hpp"
#include "meshplan/model.hpp"

namespace meshplan::model {

/// Typed access to the top-level map. Every key asked for is recorded (so that typos of it
/// can be recognised) and, when present, its position goes into spec.field_locs.
class KeyReader {
 public:
  KeyReader(YAML::Node root, std::string filename, ModelSpec& spec);

  /// Present and not null (the key counts as read).
  bool HasValue(const std::string& key);
  YAML::Node Get(const std::string& key);
  /// Integer in [min, max]; null or missing gives `fallback`, else an error. A quoted
  /// string ("4096") is rejected: HF writes numbers unquoted.
  int64_t Int(const std::string& key, int64_t min, int64_t max,
              std::optional<int64_t> fallback = std::nullopt);
  bool Bool(const std::string& key, std::optional<bool> fallback = std::nullopt);
  std::string Str(const std::string& key, std::optional<std::string> fallback = std::nullopt);
  /// A list of integers, each in [min, max]; missing or null gives an empty list.
  std::vector<int64_t> IntList(const std::string& key, int64_t min, int64_t max);
  /// A list of strings; missing or null gives nullopt.
  std::optional<std::vector<std::string>> StrList(const std::string& key);

  SourceLoc Loc(const std::string& key) const;
  /// Position of the n-th item of the list under `key`.
  SourceLoc ItemLoc(const std::string& key, size_t n) const;
  [[noreturn]] void Fail(const std::string& key, const std::string& message) const;

  /// Throws "unknown key; did you mean ..." for a key that is neither read nor a known HF
  /// key and lies within edit distance 2 of a key that was read. Other unknown keys are
  /// ignored: HF configs carry many keys that do not change the parameter count.
  void CheckSpelling() const;

 private:
  void Note(const std::string& key);
  void RejectQuoted(const std::string& key, const char* expected) const;

  YAML::Node root_;
  yamlutil::MapReader map_;
  ModelSpec& spec_;
  std::vector<std::string> read_;
};

/// HF config keys meshplan knows and deliberately ignores (rope, tokens, dtype, ...).
bool IsKnownIgnoredKey(const std::string& key);

}  // namespace meshplan::model
