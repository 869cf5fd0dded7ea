#pragma once
/// \file hwdb_parse.hpp
/// Private to planner/hardware/ (and its tests): parsing of one system YAML and the search
/// for the GPU file it names. The public entry points are in include/meshplan/hardware.hpp.

#include <string>
#include <vector>

#include "meshplan/diag.hpp"
#include "meshplan/hardware.hpp"

namespace meshplan::hardware {

/// Where the GPU named by a system's `gpu:` key is looked for, in order: each of `dirs`
/// (folders holding NAME.yaml files, e.g. "hwdb/gpus"), then the embedded hwdb/gpus/ if
/// `embedded` is true.
struct GpuSearch {
  std::vector<std::string> dirs;
  bool embedded = true;
};

/// Loads GPU `name` from the first place of `search` that has it. An unknown name throws
/// InputError at `where` for `field`, listing the names known to `search`.
GpuSpec FindGpu(const std::string& name, const GpuSearch& search, const SourceLoc& where,
                const std::string& field);

/// Parses one system YAML held in `text` (`filename` for messages; its stem becomes the
/// name) and resolves its `gpu:` through `search`. Throws InputError.
SystemSpec ParseSystem(const std::string& text, const std::string& filename, const GpuSearch& search);

/// Names (file stems) of the *.yaml files directly inside `dir`, sorted; empty if the folder
/// does not exist.
std::vector<std::string> ListYamlStems(const std::string& dir);

/// True if `name` is a plain database name: [A-Za-z0-9._-]+, not starting with '.'.
bool IsPlainName(const std::string& name);

/// "a, b, c" (or "none").
std::string JoinNames(const std::vector<std::string>& names);

}  // namespace meshplan::hardware
