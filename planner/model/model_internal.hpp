#pragma once
/// \file model_internal.hpp
/// Private to planner/model: helpers shared between the parser and the counter.

#include <optional>
#include <string>
#include <vector>

#include "meshplan/model.hpp"

namespace meshplan::model {

/// The total parameter count computed in long double, for rejecting specs whose counts
/// would overflow int64 (same formulas as CountParams).
long double ApproxTotalParams(const ModelSpec& m);

/// Architecture for a HF `architectures[0]` string, or nullopt.
std::optional<Architecture> ArchitectureFromName(const std::string& name);

/// A supported architecture that `name` is a near-miss spelling of (case ignored, edit
/// distance <= 2, same version digits, not a known architecture of another family), or "".
std::string ArchitectureSpellingHint(const std::string& name);

/// LoadModel's test: an existing file, or a name with '/' or a .json/.yaml/.yml suffix.
bool LooksLikePath(const std::string& arg);
/// The config.json of a Hugging Face snapshot directory or hub cache folder
/// (models--ORG--NAME/snapshots/...), "" for anything else.
std::string SnapshotConfig(const std::string& arg);
/// True when SnapshotConfig finds one.
bool IsSnapshotDir(const std::string& arg);

/// "a, b, c"
std::string JoinNames(const std::vector<std::string>& names);

}  // namespace meshplan::model
