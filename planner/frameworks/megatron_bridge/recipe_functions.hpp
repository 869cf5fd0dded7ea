#pragma once
// Megatron-Bridge's recipe functions as data: recipes/megatron-bridge-recipe-functions.json,
// dumped from Megatron-Bridge's own code by tools/acceptance/dump_mb_recipes.py (the commit is in
// the file's "vendored" lines). Private to planner/frameworks/megatron_bridge/.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "frameworks/megatron_bridge/perf_settings.hpp"
#include "meshplan/search.hpp"

namespace meshplan::megatron_bridge {

/// One recipe function (`run_recipe.py --recipe NAME`) as load_recipe builds it.
struct RecipeFunction {
  std::string name;
  /// Where TransformerConfig keys live in the override tree: "model" (a model provider, e.g.
  /// qwen3_30b_a3b_pretrain_config's to_megatron_provider()) or "model.transformer" (a
  /// GPTModelConfig from AutoBridge...get_model_config(), the Llama 3 / 3.1 recipes).
  std::string transformer_path = "model";
  /// ConfigContainer section -> the dataclass it holds ("" where the section is None, "str"
  /// where it is a string, e.g. mixed_precision: "bf16_mixed").
  std::map<std::string, std::string> sections;
  /// The recipe's own values, by override path ("model.transformer.cuda_graph_impl").
  nlohmann::json values;

  /// The recipe's value of a TransformerConfig / model key `key` (no section: "cuda_graph_impl"),
  /// or a null json when the table has none.
  const nlohmann::json& ModelValue(const std::string& key) const;
  /// comm_overlap is None: a Hydra override of comm_overlap.<key> fails (struct mode) unless
  /// force-added with the class to build.
  bool CommOverlapNone() const;
};

/// The recipe function `name` from the table, or nullptr. Parsed on its first lookup and kept
/// (the pointer stays valid; thread-safe).
const RecipeFunction* FindRecipeFunction(std::string_view name);
/// The pipeline-layout builder the recipe function `name` installs (model.
/// _pipeline_model_parallel_layout_builder: "_get_deepseek_v3_pipeline_layout" for the DeepSeek-V3
/// recipes, "_get_kimi_k2_pipeline_layout" for Kimi-K2's), "" for none; from the table's
/// layout_builders, read from Megatron-Bridge's source by tools/acceptance/scan_mb_recipe_bodies.py,
/// also for functions the dump could not build. scripts/training/recipe_runner.py
/// sync_model_pipeline_layout re-runs the builder after any PP or VP override that does not also
/// set model.pipeline_model_parallel_layout, and the builders raise for (PP, VP) pairs outside
/// their tables.
std::string LayoutBuilderOf(std::string_view name);
/// The names of every recipe function in the table, sorted.
std::vector<std::string> RecipeFunctionNames();
/// The commits the table was dumped from ("Megatron-Bridge 067f987d...: ...").
const std::vector<std::string>& RecipeFunctionSnapshot();
/// Fields (name -> Python type as written) of the config class `qualname`, or nullptr.
const std::map<std::string, std::string>* ConfigClassFields(const std::string& qualname);

/// The recipe function meshplan launches for a model preset, Megatron-Bridge's family alias of
/// its H100 recipe (launch.cpp explains the choice); "" where Megatron-Bridge has none.
std::string DefaultRecipeFunctionName(const std::string& preset);

/// The recipe function a plan's overrides are written for: plan --mb-recipe, else the preset's
/// default (DefaultRecipeFunctionName); "" where there is none.
std::string MbRecipeName(const PlanRequest& req);

/// The overrides name a recipe function (MbRecipeName) that leaves ConfigContainer.comm_overlap
/// None (recipes/common.py _pretrain_common sets comm_overlap=None; the table records which
/// recipes never create a CommOverlapConfig; a recipe not in the table: as the defaults of
/// recipes/common.py, None). run_recipe.py applies the overrides with Hydra on a struct config
/// (utils/omegaconf_utils.py parse_hydra_overrides), where `comm_overlap.tp_comm_overlap=...`
/// under a None node fails ("Could not override"): the comm_overlap overrides must be
/// force-added (ForcedCommOverlapOverrides).
bool ForceAddsCommOverlap(const PlanRequest& req);

/// The comm_overlap entries of `overrides` as run_recipe.py takes them over a None comm_overlap:
/// `++comm_overlap._target_=megatron.bridge.training.comm_overlap.CommOverlapConfig` (the class
/// apply_overrides instantiates) followed by `++comm_overlap.<key>=<value>` for each, in order
/// (force add: the None node becomes a map); empty when `overrides` has none. Unquoted.
std::vector<std::string> ForcedCommOverlapOverrides(const std::vector<std::pair<std::string, std::string>>& overrides);

/// The recipe function a request's overrides are written for: PlanRequest::mb_recipe_function,
/// else DefaultRecipeFunctionName(model); nullptr when neither names one in the table.
const RecipeFunction* RecipeFunctionOf(const PlanRequest& req);

/// `key` ("model.tensor_model_parallel_size") at its path in `fn`'s override tree: a model.K
/// that is not a field of the recipe's model class but is one of its nested TransformerConfig
/// becomes model.transformer.K. Other keys, and every key when `fn` is null, are unchanged.
std::string OverridePath(const RecipeFunction* fn, const std::string& key);

/// Whether the override `key`=`value` (meshplan's dotted form) fits `fn`'s schema: the
/// section exists (or comm_overlap, force-added), the field is a field of its class, and the
/// value is of a kind its Python type takes (null, bool, int, float, string, list). "" when it
/// does; else what is wrong. `mixed_precision` takes a recipe name (a string).
std::string SchemaProblem(const RecipeFunction& fn, const std::string& key, const std::string& value);

/// The software settings a layout runs with when the request names none (PlanRequest::
/// mb_runtime unset): the recipe function's own dispatcher (flex with its backend, where the
/// GPU takes it: Megatron-Bridge training/flex_dispatcher_backend.py; DeepEP is not built for
/// GB200 / GB300, HybridEP is), CUDA graph implementation and scope. The gradient dtype stays
/// fp32: the mixed_precision name meshplan writes replaces the function's own.
/// `note` (may be null) gets a line for each setting changed from the recipe's.
MbRuntime RecipeRuntime(const RecipeFunction* fn, const SystemSpec& system, std::vector<std::string>* note);

/// The name of Megatron-Bridge's performance recipe function for a model preset on a system at
/// a GPU count and precision key (bf16 | fp8cs | fp8mx | nvfp4) for a task ("pretrain" | "sft"),
/// as its perf_recipes name them: "llama3_70b_pretrain_64gpu_h100_fp8cs_config",
/// "llama3_70b_sft_32gpu_h100_fp8cs_config"; "" for a preset or system it has none for.
std::string PerfRecipeFunctionName(const std::string& preset, const std::string& system, const std::string& precision,
                                   int64_t gpus, const std::string& task = "pretrain");
/// A published run's recipe settings as the recipe function `fn` sets them (the run launched the
/// function as is): its dispatcher and CUDA graphs (RecipeRuntime: the backend the GPU takes), its
/// own gradient-reduction dtype (mixed_precision.grad_reduce_in_fp32), EP overlap, recompute
/// granularity, modules, method and layers, and activation offloading.
recipe::PerfRecipeSettings PerfSettingsOfRecipeFunction(const RecipeFunction& fn, const SystemSpec& system);

}  // namespace meshplan::megatron_bridge
