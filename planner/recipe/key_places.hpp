#pragma once
// Keys written in the wrong section of a recipe. Both frameworks read a key only in its own
// section: Megatron-Bridge skips any other with only a logged warning (omegaconf_utils.py
// _apply_overrides: hasattr), AutoModel ignores it at the top level and refuses it in a typed
// section. Left alone, `tp_size` under step_scheduler: or `train.tensor_model_parallel_size`
// reads as the default (tp 1) and the recipe is judged as a layout nobody asked for.

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace meshplan::recipe {

/// Where a key that meshplan reads belongs.
struct KeyPlace {
  std::string key;
  /// The sections it belongs under, named in the message ("distributed", "distributed.pipeline").
  std::vector<std::string> homes;
  /// Other sections whose config also has a field of this name: accepted there, not named.
  std::vector<std::string> also = {};
};

/// Throws InputError at the first key of the checked `sections` (dotted paths from the root;
/// "" is the top level) that `places` lists under other sections only:
///   "step_scheduler.tp_size: expected tp_size under distributed:, found it under step_scheduler:"
/// `note`, when not empty, is appended after "; ". Sections that are absent or not maps are
/// skipped (their readers say what is wrong with them); keys not in `places` pass.
void RefuseMisplacedKeys(const YAML::Node& root, const std::vector<std::string>& sections,
                         const std::vector<KeyPlace>& places, const std::string& filename,
                         const std::string& note = "");

}  // namespace meshplan::recipe
