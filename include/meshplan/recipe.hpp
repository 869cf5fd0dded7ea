#pragma once
/// \file recipe.hpp
/// Output: the ranked table, AutoModel YAML recipes (with predictions as comments),
/// JSON, and whole-or-nothing file writing.

#include <string>

#include "meshplan/search.hpp"

namespace meshplan {

/// One AutoModel recipe fragment: `distributed:` (with `pipeline:` / `moe:` when used)
/// and `step_scheduler:`; only keys AutoModel's strategy dataclass accepts
/// (automodel.md 1.2: no sequence_parallel / defer_fsdp_grad_sync outside fsdp2).
/// Predictions are YAML comments. `rank` is 1-based.
std::string AutoModelRecipeYaml(const Candidate& c, const PlanRequest& req, int rank);

/// All top recipes as one YAML stream (documents separated by ---).
std::string RecipesYaml(const PlanResult& result, const PlanRequest& req);

/// Ranked table for a terminal.
std::string RankTable(const PlanResult& result, const PlanRequest& req);

/// The whole result as JSON (request, counts, each candidate's layout, memory, time).
std::string ResultJson(const PlanResult& result, const PlanRequest& req);

/// Writes `content` to `path` through a temporary file in the same directory and a
/// rename, so the file is whole or absent. An existing file is replaced only if `force`.
/// Throws InputError (field "--out") when the file exists without force or on I/O failure.
void WriteFileAtomically(const std::string& path, const std::string& content, bool force);

}  // namespace meshplan

namespace meshplan {

/// An AutoModel recipe read back: its layout (dp inferred from the world size as AutoModel
/// does) and global batch.
struct ParsedRecipe {
  Layout layout;
  int64_t global_batch = 0;
};

/// Reads the `distributed:` and `step_scheduler:` sections of an AutoModel recipe (other
/// top-level sections are ignored) the way recipes/_dist_utils.py::parse_distributed_section
/// does: size keys default to 1 (null / none mean the default), `strategy` defaults to fsdp2
/// (aliases megatron-fsdp, mfsdp), activation_checkpointing accepts true/on/full/enabled/yes,
/// selective, false/off/none/disabled/no, and every other key must be a field of the
/// strategy's dataclass (components/distributed/config.py) or the recipe is rejected.
/// `dp_size` null is inferred as num_gpus / (tp*cp*pp) (or left as given).
/// Throws InputError (file, line, column, field) on a malformed or unknown key.
ParsedRecipe ParseAutoModelRecipe(std::string_view text, const std::string& filename, int64_t num_gpus);

}  // namespace meshplan
