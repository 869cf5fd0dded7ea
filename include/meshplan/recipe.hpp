#pragma once
/// \file recipe.hpp
/// Output: the ranked table, AutoModel YAML recipes (with predictions as comments),
/// JSON, and whole-or-nothing file writing.

#include <string>
#include <utility>
#include <vector>

#include "meshplan/search.hpp"

namespace meshplan {

/// One AutoModel recipe fragment: `distributed:` (with `pipeline:` / `moe:` when used),
/// `step_scheduler:`, `fp8:` for FP8, and `dataset: {seq_len: N}` (the planned sequence
/// length, which `meshplan check` reads back); only keys AutoModel's strategy dataclass accepts
/// (automodel.md 1.2: no sequence_parallel / defer_fsdp_grad_sync outside fsdp2).
/// Predictions are YAML comments. `rank` is 1-based.
std::string AutoModelRecipeYaml(const Candidate& c, const PlanRequest& req, int rank);
/// The value AutoModelRecipeYaml writes for distributed.activation_checkpointing: "false",
/// "selective" or "true".
const char* AutoModelCheckpointingValue(Recompute r);

/// One Megatron-Bridge recipe: YAML overrides of the ConfigContainer (model:, train:, ddp:,
/// optimizer:, dist:, comm_overlap:, checkpoint:), preceded by comments with the predictions,
/// the launch environment and the same overrides as one command line. `rank` is 1-based.
/// Keys and derivations: megatron.md 1.2-1.6, 2.10, 2.11.
std::string MegatronRecipeYaml(const Candidate& c, const PlanRequest& req, int rank);
/// The value MegatronRecipeYaml writes for model.recompute_granularity: "null", "selective" or "full".
const char* MegatronRecomputeGranularity(Recompute r);

/// The overrides of a Megatron layout as (dotted key, YAML value) pairs in section order,
/// e.g. {"model.tensor_model_parallel_size", "4"}; `bucket_size` counts parameters. Every key
/// the layout's price depends on is written (both account_for_* keys, the dispatcher, CUDA
/// graphs), at its path in the request's recipe function (model.transformer.* for a
/// GPTModelConfig: recipes/megatron-bridge-recipe-functions.json).
std::vector<std::pair<std::string, std::string>> MegatronOverrides(const Layout& layout, const PlanRequest& req);
/// Header lines of a Megatron-Bridge recipe about its recipe function: which one, and each of
/// its own settings the overrides change (a dispatcher backend the GPU lacks, CUDA graphs that
/// full recompute does not allow).
std::vector<std::string> RecipeFunctionNotes(const Layout& layout, const PlanRequest& req);

/// Environment variables the launcher must set before CUDA starts (MB PR #925: setting them
/// from Python later has no effect): CUDA_DEVICE_MAX_CONNECTIONS and, where TP overlap is on,
/// NVTE_FWD/BWD_LAYERNORM_SM_MARGIN (megatron.md 2.11).
std::vector<std::pair<std::string, std::string>> MegatronLaunchEnv(const Layout& layout);

/// One recipe of `req.framework`: MegatronRecipeYaml or AutoModelRecipeYaml.
std::string RecipeYaml(const Candidate& c, const PlanRequest& req, int rank);

/// All top recipes as one YAML stream (documents separated by ---); Megatron-Bridge recipes
/// when req.framework says so.
std::string RecipesYaml(const PlanResult& result, const PlanRequest& req);

/// Ranked table for a terminal, ending with SearchSummary's line.
std::string RankTable(const PlanResult& result, const PlanRequest& req);

/// One line (no newline): layouts searched, valid, fitting, recompute variants not ranked,
/// subtrees pruned, and the usable capacity in GiB (GPU memory x (1 - headroom)).
std::string SearchSummary(const PlanResult& result, const PlanRequest& req);

/// The whole result as JSON (request, counts, each candidate's layout, memory, time).
std::string ResultJson(const PlanResult& result, const PlanRequest& req);

/// Writes `content` to `path` through a temporary file in the same directory and a
/// rename, so the file is whole or absent. An existing file is replaced only if `force`.
/// A symbolic link is written through, as a shell redirection does: the file it leads to
/// (ResolveOutputPath) is written or created, the link stays. Throws InputError (field `flag`:
/// the option that named the file) when the file exists without force, when the link leads
/// to no file path (/dev/stdout on a pipe) or on I/O failure.
void WriteFileAtomically(const std::string& path, const std::string& content, bool force,
                         const char* flag = "--out");

/// `path` with its symbolic links at the file itself followed (relative targets against the
/// link's directory, at most 40 links), the file they lead to whether or not it exists;
/// `path` unchanged when it is no link. Throws InputError (field `flag`) for a link loop or
/// a link to something that is no file path (/dev/stdout -> /proc/self/fd/1 -> pipe:[N]).
std::string ResolveOutputPath(const std::string& path, const char* flag = "--out");

}  // namespace meshplan

namespace meshplan {

/// An AutoModel or Megatron-Bridge recipe read back: its layout (dp inferred from the world
/// size as the framework does) and global batch.
struct ParsedRecipe {
  Layout layout;
  int64_t global_batch = 0;
  int64_t seq_len = 0;  ///< Megatron model.seq_length or AutoModel dataset.seq_len if set; 0 otherwise
  /// GEMM precision the recipe asks for: Megatron-Bridge `mixed_precision` (a registered recipe
  /// name: the fp8 / mxfp8 / nvfp4 ones, or bf16 / fp16; or a MixedPrecisionConfig map's fp8 /
  /// fp4), AutoModel `fp8.enabled`. `precision_set` false: not said.
  Precision precision = Precision::kBf16;
  bool precision_set = false;
  /// Keys the recipe leaves to the framework's defaults that matter to the plan ("train.
  /// global_batch_size = 32 (Megatron-Bridge recipes/common.py default)"), for `check` to say.
  std::vector<std::string> defaults_used;
  /// Settings the recipe gives that the framework overwrites without an error ("ddp.
  /// grad_reduce_in_fp32: false is overwritten by ..."), for `check` and `explain` to say.
  std::vector<std::string> overridden;
};

/// Reads the `distributed:` and `step_scheduler:` sections of an AutoModel recipe (other
/// top-level sections are ignored) the way recipes/_dist_utils.py::parse_distributed_section
/// does: size keys default to 1 (null / none mean the default), `strategy` defaults to fsdp2
/// (aliases megatron-fsdp, mfsdp), activation_checkpointing accepts true/on/full/enabled/yes,
/// selective, false/off/none/disabled/no, and every other key must be a field of the
/// strategy's dataclass (components/distributed/config.py) or the recipe is rejected.
/// `model.backend` (BackendConfig) gives the MoE dispatcher and the fake gate
/// (Layout::am_backend); its other fields are accepted, an unknown one refused.
/// `dp_size` null is inferred as num_gpus / (tp*cp*pp) (or left as given). A key it reads, found
/// at the top level or under another of distributed:, distributed.pipeline: and step_scheduler:,
/// is refused with the section it belongs under.
/// Throws InputError (file, line, column, field) on a malformed, unknown or misplaced key.
ParsedRecipe ParseAutoModelRecipe(std::string_view text, const std::string& filename, int64_t num_gpus);

/// True if the YAML map `text` looks like a Megatron-Bridge override file: it has none of
/// AutoModel's `distributed:` / `step_scheduler:` and at least one ConfigContainer section
/// (model, train, ddp, dist, optimizer, comm_overlap, checkpoint). Throws InputError on bad YAML.
bool IsMegatronRecipe(std::string_view text, const std::string& filename);

/// Reads a Megatron-Bridge override YAML (megatron.md 1.8-1.9): the parallel sizes of model:
/// (expert_tensor_parallel_size null = unset = TP), its pipeline split keys, recompute keys,
/// train.global_batch_size / micro_batch_size, ddp:, optimizer:, dist:, comm_overlap:,
/// checkpoint.ckpt_format and env_vars.CUDA_DEVICE_MAX_CONNECTIONS. Other keys of these
/// sections and other sections are ignored; dp = num_gpus / (tp*pp*cp), at least 1 (when it
/// is not whole, mb_world_divisible_by_tp_pp_cp fails). A mixed_precision that is not a name
/// Megatron-Bridge registers, nor a map of MixedPrecisionConfig fields, is an InputError, and so
/// is a key it reads found at the top level or in one of these sections whose config lacks it
/// (train.tensor_model_parallel_size: Megatron-Bridge would skip it).
/// With `model`, a model.mtp_num_layers the recipe leaves unset takes the model provider's value
/// (ModelSpec::mtp_num_layers, AutoBridge's num_nextn_predict_layers); without, it stays
/// kMtpFromModel. Throws InputError (file, line, column, field) for a value of the wrong type or range.
///
/// The overrides are for a recipe function (`recipe_function`; "": the one the file's
/// "# recipe function: NAME" header names, as meshplan writes it; none without either). With one
/// of recipes/megatron-bridge-recipe-functions.json, every key must be a field of that function's
/// config at the path written (InputError otherwise, naming the path to write: the Llama recipes
/// take model.transformer.*), and the layout keys the file leaves unset take the function's own
/// values (listed in defaults_used), as they would in a run. An unknown name is an InputError
/// on --mb-recipe.
ParsedRecipe ParseMegatronRecipe(std::string_view text, const std::string& filename, int64_t num_gpus,
                                 const ModelSpec* model = nullptr, std::string_view recipe_function = "");

}  // namespace meshplan
