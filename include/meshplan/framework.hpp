#pragma once
/// \file framework.hpp
/// The framework seam: what meshplan knows of one training framework (NeMo AutoModel,
/// Megatron-Bridge), as one descriptor chosen once per request. Code specific to a framework
/// lives in planner/frameworks/<name>/; planner/frameworks/registry.cpp is the only place that
/// compares Framework values. planner/README.md says how to add a framework.

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "meshplan/cost.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/rules.hpp"
#include "meshplan/search.hpp"
#include <string>
#include <utility>
#include <vector>

namespace meshplan {

/// The framework releases a request asked for (--automodel-version, --mbridge-version).
struct ReleaseChoice {
  std::optional<AutoModelVersion> automodel;  ///< --automodel-version
  std::optional<MBridgeVersion> mbridge;      ///< --mbridge-version
};

/// One framework, as a table of functions (in the style of Rule).
struct FrameworkOps {
  Framework id;
  const char* name;   ///< the --framework value: "automodel", "megatron-bridge"
  const char* title;  ///< as printed: "AutoModel", "Megatron-Bridge"
  /// Its validity rules, in check order (mesh rules first).
  std::span<const Rule> (*rules)();
  /// The one conversion of its layout into what the cost model reads. `layout` is one of this
  /// framework's; model and setup are the request's. Throws nothing.
  CostView (*to_cost_view)(const Layout& layout, const ModelSpec& model, const TrainSetup& setup);
  /// Its whole layout space for a request, searched (Plan) or listed (EnumerateLayouts).
  PlanResult (*plan)(const PlanRequest& req);
  std::vector<Layout> (*enumerate)(const PlanRequest& req);
  /// The same list, one layout at a time in the same order, without holding it (ForEachLayout):
  /// `visit` returns false to stop; `keep_mesh` (may be empty) skips meshes before their rules.
  void (*for_each_layout)(const PlanRequest& req, const std::function<bool(const Layout&)>& visit,
                          const MeshFilter& keep_mesh);
  /// One recipe in its own format (AutoModel `distributed:` YAML, Megatron-Bridge overrides),
  /// with meshplan's header comments; `rank` is 1-based.
  std::string (*recipe_yaml)(const Candidate& candidate, const PlanRequest& req, int rank);
  /// The layout's DP flavour as tables print it ("fsdp2", "ddp+distopt", ...).
  const char* (*dp_flavour)(const Layout& layout);
  /// One-line description (Describe) and recompute label (RecomputeLabel).
  std::string (*describe)(const Layout& layout);
  std::string (*recompute_label)(const Layout& layout);
  const char* product;  ///< the framework's full name: "NeMo AutoModel", "Megatron-Bridge"
  /// `meshplan check`'s nearest layouts: adds to `out` every framework-specific key the recipe
  /// written for `b` sets otherwise than the recipe read (`a`), "key: old -> new" in text mode;
  /// the keys set with the mesh come first, and with LayoutDiff::mesh_only() they are the only
  /// ones compared; the recompute setting under the key its recipe writes. sequence_parallel
  /// is compared by the caller (DiffLayouts).
  void (*nearest_changes)(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup,
                          LayoutDiff& out);
  /// Adjusts the nearest layouts' search to the recipe read (`from`): its own settings that
  /// the suggestions keep.
  void (*nearest_request)(PlanRequest& req, const Layout& from);
  /// The nearest walk's request (`req`, after nearest_request) over the layouts at which the
  /// settings nearest_request fixed fail a rule, with those settings as plan sets them, in
  /// `out`; false where there are none. AutoModel: the EP sizes at which the recipe's deepep
  /// cannot run, with hybridep (PlanRequest::am_release_dispatcher), the fix the rules
  /// deepep_ep_ranks and deepep_nvl_peers_in_node name. nullptr: none (Megatron-Bridge, whose
  /// runtime plan's own layouts release: AddJobPlanFixes).
  bool (*nearest_release)(const PlanRequest& req, PlanRequest& out);
  /// Adds the framework's fields to one recipe of plan --format json (`recipe` as
  /// recipe::CandidateJson built it): Megatron-Bridge's DP flavour, pipeline, overrides and
  /// launch environment.
  void (*annotate_json)(nlohmann::json& recipe, const Candidate& candidate, const PlanRequest& req);
  /// The plan table's schedule column: "-", "1f1b", "interleaved1f1b v2", "interleaved v5 etp1".
  std::string (*schedule_label)(const Layout& layout, const ModelSpec& model);
  /// Gradient-accumulation steps as the framework counts them (JSON grad_accum_steps):
  /// AutoModel's step_scheduler calls per step; Megatron-Bridge's M micro-batches.
  int64_t (*accumulation_steps)(const Layout& layout, const TrainSetup& setup);
  /// Sets `layout`'s data-parallel size to `dp` for `setup` (its GPU count and global batch) and
  /// what the framework derives from it: Megatron-Bridge's local batch (global batch / dp under
  /// PP, SetMegatronMicroBatch); AutoModel keeps the recipe's local batch (fewer accumulation
  /// steps).
  void (*set_dp)(Layout& layout, int64_t dp, const TrainSetup& setup);
  /// Environment variables its launch needs for this layout (Megatron-Bridge:
  /// CUDA_DEVICE_MAX_CONNECTIONS and Transformer Engine's SM margins; AutoModel: none).
  std::vector<std::pair<std::string, std::string>> (*launch_env)(const Layout& layout);
  // Words of its command line and recipes, for messages.
  const char* version_flag;      ///< "--automodel-version", "--mbridge-version"
  const char* a_layout;          ///< "an AutoModel", "a Megatron-Bridge" (layout)
  const char* seq_len_key;       ///< the recipe key of the sequence length
  const char* global_batch_key;  ///< the recipe key of the global batch
  const char* memory_profile;    ///< explain's default --memory-profile
  /// The share of the GPU's memory kept free when --headroom is not given (memory-model.md
  /// "When a layout fits"): what the caching allocator could not hand out, measured on H200 with
  /// the allocator setting the framework's launches use (expandable_segments:True).
  ///   Megatron-Bridge 0.02: Megatron-Core's own step (GPTModel, DistributedDataParallel with the
  ///     distributed optimizer) beside a persistent block grown to the limit lost 1.4-1.8% of
  ///     the GPU (tests/data/measured/h200_mcore_alloc_limit.jsonl, tools/measure/
  ///     mcore_alloc_limit.py), plus the 128 MiB bisection step; every hardware recipe of
  ///     Megatron-Bridge sets expandable_segments (recipes/utils/environment_utils.py
  ///     COMMON_RECIPE_ENV_VARS), as do meshplan's launch files.
  ///   AutoModel 0.10: FSDP2's communication streams keep their own pools, measured 4-30% of
  ///     the allocated peak on two GPUs, and what of it runs out was not measured.
  double default_headroom;
  /// Reads one recipe of this framework (ParseAutoModelRecipe, ParseMegatronRecipe; `model`
  /// resolves what the recipe leaves to the model provider, may be null). Throws InputError.
  /// `recipe_function`: Megatron-Bridge's check --mb-recipe ("" = none given).
  ParsedRecipe (*read_recipe)(std::string_view text, const std::string& file, int64_t num_gpus, const ModelSpec* model,
                              std::string_view recipe_function);
  /// Launch files (planner/launch/): the recipe file written beside the scripts (`full_recipe`,
  /// `hf_model`: plan's --full-recipe, --hf-model), the program and arguments after torchrun's own
  /// (`recipe_word`: the shell word that expands to the recipe's path at run time, "$recipe",
  /// which the scripts set from their own folder), bash lines before it (after the exports) and
  /// comment lines for the script's header (`recipe_file`: the recipe's file name, no folder).
  std::string (*launch_recipe)(const Candidate& candidate, const PlanRequest& req, int rank, bool full_recipe,
                               const std::string& hf_model);
  std::string (*launch_command)(const Candidate& candidate, const PlanRequest& req, const std::string& recipe_word);
  std::string (*launch_prelude)(const Candidate& candidate, const PlanRequest& req);
  std::string (*launch_comment)(const std::string& recipe_file);
  /// The warning that the system's step time uses constants fitted to another system ("" where
  /// the framework's time model has no per-system fit).
  std::string (*unfitted_note)(const PlanRequest& req);
  /// Warnings about what the request searches ("warning: ..."), for plan.
  std::vector<std::string> (*search_warnings)(const PlanRequest& req);
  /// Whether the --automodel-version / --mbridge-version flag of this framework was given.
  bool (*version_given)(const ReleaseChoice& asked);
  /// "" when the framework trains the model's architecture; else why not (the framework source
  /// that shows it), which plan, check and explain give as their error (BuildRequest).
  std::string (*unsupported_model)(const ModelSpec& model);
  // Options only some frameworks take (plan and explain refuse them elsewhere).
  bool recompute_modules_option;  ///< --recompute-modules (Megatron-Bridge's recompute_modules)
  bool recipe_function_option;    ///< --mb-recipe (Megatron-Bridge's run_recipe.py --recipe)
  bool full_recipe_option;        ///< --full-recipe (a complete recipe file, not overrides)
  bool torch_memory_options;      ///< explain's --fp32-params, --defer-fsdp-grad-sync (PyTorch FSDP2)
  /// explain's layout flags (--tp, --pp, ..., --set) are the recipe's override keys, read as an
  /// override file (Megatron-Bridge); false: they fill a LayoutKeys (AutoModel's --strategy ...).
  bool override_key_flags;
  bool explains_pipeline_split;   ///< explain prints Megatron-Core's per-rank layer split
  /// The plan table's lbs column holds Layout::local_batch_size (AutoModel's
  /// step_scheduler.local_batch_size); else "-" (Megatron-Bridge: mbs and mb/step say it).
  bool local_batch_column;
  /// nullptr where the framework's cost terms price hybrid models (a layer pattern of
  /// attention, Mamba-2, Gated DeltaNet, MLP and MoE blocks: Megatron-Core's runtime); else
  /// the sentence that says why its layouts of a hybrid model are not priced, by the model's
  /// mixer kinds ("" for none: FrameworkHybridRefusal).
  std::string (*hybrid_refusal)(const ModelSpec& model);
};

/// "" when `fw` plans, checks and prices `model`; else why not: HybridRefusal(model) (a block
/// kind no framework's cost terms price), or, for a hybrid model, the framework's
/// FrameworkOps::hybrid_refusal prefixed by the model's name. `check` still judges such a
/// layout by the framework's rules (RequestSettings::rules_only_hybrid).
std::string FrameworkHybridRefusal(const FrameworkOps& fw, const ModelSpec& model);

/// The descriptor of `framework`.
const FrameworkOps& FrameworkOf(Framework framework);
/// The descriptor a layout belongs to (Layout::framework).
inline const FrameworkOps& FrameworkOf(const Layout& layout) { return FrameworkOf(layout.framework); }
/// The descriptor whose --framework name is `name` ("automodel", "megatron-bridge"), or nullptr.
const FrameworkOps* FindFramework(std::string_view name);
/// Every framework meshplan plans for, in the order --framework lists them.
std::span<const FrameworkOps* const> Frameworks();

/// The framework of a recipe text: Megatron-Bridge when IsMegatronRecipe says so, else AutoModel.
/// Throws InputError on bad YAML.
Framework DetectFramework(std::string_view text, const std::string& filename);

/// `layout` as the cost model reads it: FrameworkOf(layout).to_cost_view.
CostView ToCostView(const Layout& layout, const ModelSpec& model, const TrainSetup& setup);
/// cost.Evaluate(ToCostView(layout, cost.model(), cost.setup())): the cost of a layout that has
/// passed the rules.
Cost Score(const CostModel& cost, const Layout& layout);

/// The fields every framework's layout fills alike: the mesh (tp, pp, cp, ep, etp in effect, dp,
/// dp_replicate, vpp), the micro-batch arithmetic (micro_batch(), pp_microbatches(),
/// GradAccumSteps()), the layer split (SplitStages, OwnSplitPlaces, MtpLayers), sequence
/// parallel and recompute. The framework's to_cost_view starts from it.
CostView MeshCostView(const Layout& layout, const ModelSpec& model, const TrainSetup& setup);

namespace automodel {
/// AutoModel's layout as the cost model reads it (frameworks/automodel/cost_view.cpp).
CostView ToCostView(const Layout& layout, const ModelSpec& model, const TrainSetup& setup);
/// "fsdp2 tp4 pp2 cp1 ep1 dp4 (rep1) lbs8 mb1 interleaved1f1b lps2 sp ac=full" (frameworks/automodel/describe.cpp).
std::string Describe(const Layout& layout);
/// "none", "selective", "full".
std::string RecomputeLabel(const Layout& layout);
const char* DpFlavour(const Layout& layout);  ///< StrategyName(layout.strategy)
/// The model.backend MoE settings of a layout meshplan proposes with EP size `ep` on `system`:
/// the learned gate, and the dispatcher meshplan's recipe names: deepep, hybridep when EP spans
/// nodes (Automodel PR #2630: DeepEP's internode dispatch times out, issues #2327, #3906) or
/// when DeepEP has no kernel configuration for `ep` (domain::DeepEpRanksSupported: 3, 5, 6, 7);
/// recipe.cpp writes the dispatcher wherever EP > 1; on a ROCm GPU (GpuSpec::rocm) the torch
/// dispatcher; for DeepSeek-V4 `model` also
/// backend.attn tilelang (AmMoeBackend::attn_tilelang). frameworks/automodel/space.cpp.
AmMoeBackend DefaultBackend(const ModelSpec& model, const SystemSpec& system, int64_t ep);
/// Whether model.backend.dispatcher deepep runs with EP size `ep` on `system`: the rules
/// deepep_ep_ranks (DeepEP's kernel configurations, domain::DeepEpRanksSupported) and
/// deepep_nvl_peers_in_node (its first min(ep, 8) ranks on one node); rules_parallel.cpp.
bool DeepEpRuns(const SystemSpec& system, int64_t ep);
PlanResult Plan(const PlanRequest& req);                 ///< planner/frameworks/automodel/space.cpp, AutoModel's space
std::vector<Layout> Enumerate(const PlanRequest& req);   ///< the same space, listed
/// The same list visited one layout at a time (FrameworkOps::for_each_layout).
void ForEachLayout(const PlanRequest& req, const std::function<bool(const Layout&)>& visit, const MeshFilter& keep_mesh);
/// frameworks/automodel/nearest.cpp: FrameworkOps::nearest_changes, nearest_request and nearest_release.
void NearestChanges(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup, LayoutDiff& out);
void NearestRequest(PlanRequest& req, const Layout& from);
bool NearestRelease(const PlanRequest& req, PlanRequest& out);  ///< FrameworkOps::nearest_release
/// frameworks/automodel/recipe_json.cpp: annotate_json, schedule_label, accumulation_steps, launch_env.
std::vector<std::pair<std::string, std::string>> LaunchEnv(const Layout& layout);
void AnnotateJson(nlohmann::json& recipe, const Candidate& candidate, const PlanRequest& req);
std::string ScheduleLabel(const Layout& layout, const ModelSpec& model);
int64_t AccumulationSteps(const Layout& layout, const TrainSetup& setup);
void SetDp(Layout& layout, int64_t dp, const TrainSetup& setup);
/// frameworks/automodel/launch.cpp: the FrameworkOps launch_* entries.
std::string LaunchRecipe(const Candidate& c, const PlanRequest& req, int rank, bool full_recipe, const std::string& hf_model);
std::string LaunchCommand(const Candidate& c, const PlanRequest& req, const std::string& recipe_word);
std::string LaunchPrelude(const Candidate& c, const PlanRequest& req);
std::string LaunchComment(const std::string& recipe_file);
}  // namespace automodel

namespace megatron_bridge {
/// A Megatron-Bridge layout as the cost model reads it (frameworks/megatron_bridge/cost_view.cpp).
CostView ToCostView(const Layout& layout, const ModelSpec& model, const TrainSetup& setup);
/// The fields of ToCostView(layout) that read the layout's recompute settings or CUDA graphs
/// (recompute, recompute_modules, recompute_block_layers, cuda_graph, cuda_graph_scope), set on
/// `view`. A search's feature sets of one mesh differ in these settings only, so one's view with
/// these set is another's. Throws nothing.
void SetRecomputeView(CostView& view, const Layout& layout);
/// "ddp+distopt tp4 pp4 vpp5 cp2 ep1 dp1 mbs1 sp recompute=none" (frameworks/megatron_bridge/describe.cpp).
std::string Describe(const Layout& layout);
/// RecomputeName, and for selective recompute its modules: "selective[mla_up_proj]".
std::string RecomputeLabel(const Layout& layout);
/// frameworks/megatron_bridge/nearest.cpp: FrameworkOps::nearest_changes and nearest_request.
void NearestChanges(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup, LayoutDiff& out);
void NearestRequest(PlanRequest& req, const Layout& from);
/// frameworks/megatron_bridge/recipe_json.cpp: annotate_json, schedule_label, accumulation_steps.
void AnnotateJson(nlohmann::json& recipe, const Candidate& candidate, const PlanRequest& req);
std::string ScheduleLabel(const Layout& layout, const ModelSpec& model);
int64_t AccumulationSteps(const Layout& layout, const TrainSetup& setup);
void SetDp(Layout& layout, int64_t dp, const TrainSetup& setup);
/// frameworks/megatron_bridge/launch.cpp: the FrameworkOps launch_* entries.
std::string LaunchRecipe(const Candidate& c, const PlanRequest& req, int rank, bool full_recipe, const std::string& hf_model);
std::string LaunchCommand(const Candidate& c, const PlanRequest& req, const std::string& recipe_word);
std::string LaunchPrelude(const Candidate& c, const PlanRequest& req);
std::string LaunchComment(const std::string& recipe_file);
/// frameworks/megatron_bridge/notes.cpp: "" when the system carries fitted Megatron-Core
/// step-time constants (megatron_time_fit, written by validate --fit); otherwise a note
/// (constants borrowed from another system) or a warning (the unfitted physical model), each
/// starting with "note: " / "warning: ".
std::string UnfittedNote(const PlanRequest& req);
/// The warning that torch FSDP2 is searched (--strategy fsdp2; Megatron-Bridge issue #2785).
std::vector<std::string> SearchWarnings(const PlanRequest& req);
/// FrameworkOps::unsupported_model of Megatron-Bridge: an architecture without a bridge
/// (a MegatronModelBridge.register_bridge source) at the pinned Megatron-Bridge commit.
std::string UnsupportedModel(const ModelSpec& model);
/// `key` ("model.pipeline_model_parallel_size") at its path in the override tree of the recipe
/// function named `function` (frameworks/megatron_bridge/recipe_functions.cpp OverridePath: the
/// Llama recipes' model.transformer.K); unchanged for "" or a name not in the table. explain's
/// layout flags are written at these paths. Throws nothing.
std::string FlagKeyPath(const std::string& function, const std::string& key);
}  // namespace megatron_bridge

}  // namespace meshplan
