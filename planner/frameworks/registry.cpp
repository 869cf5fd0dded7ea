// The framework registry: the one place that compares Framework values.

#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "frameworks/megatron_bridge/space.hpp"

namespace meshplan {
namespace {

std::string NoNote(const PlanRequest& /*req*/) { return ""; }

std::vector<std::string> NoWarnings(const PlanRequest& /*req*/) { return {}; }
ParsedRecipe ReadAutoModel(std::string_view text, const std::string& file, int64_t gpus, const ModelSpec* /*model*/,
                           std::string_view /*recipe_function*/) {
  return ParseAutoModelRecipe(text, file, gpus);
}

const FrameworkOps kAutoModel{
    .id = Framework::kAutoModel,
    .name = "automodel",
    .title = "AutoModel",
    .rules = &AutoModelRules,
    .to_cost_view = &automodel::ToCostView,
    .plan = &automodel::Plan,
    .enumerate = &automodel::Enumerate,
    .for_each_layout = &automodel::ForEachLayout,
    .recipe_yaml = &AutoModelRecipeYaml,
    .dp_flavour = &automodel::DpFlavour,
    .describe = &automodel::Describe,
    .recompute_label = &automodel::RecomputeLabel,
    .product = "NeMo AutoModel",
    .nearest_changes = &automodel::NearestChanges,
    .nearest_request = &automodel::NearestRequest,
    .nearest_release = &automodel::NearestRelease,
    .annotate_json = &automodel::AnnotateJson,
    .schedule_label = &automodel::ScheduleLabel,
    .accumulation_steps = &automodel::AccumulationSteps,
    .set_dp = &automodel::SetDp,
    .launch_env = &automodel::LaunchEnv,
    .version_flag = "--automodel-version",
    .a_layout = "an AutoModel",
    .seq_len_key = "dataset.seq_len",
    .global_batch_key = "step_scheduler.global_batch_size",
    .memory_profile = "pytorch",
    .default_headroom = 0.10,
    .read_recipe = &ReadAutoModel,
    .launch_recipe = &automodel::LaunchRecipe,
    .launch_command = &automodel::LaunchCommand,
    .launch_prelude = &automodel::LaunchPrelude,
    .launch_comment = &automodel::LaunchComment,
    .unfitted_note = &NoNote,
    .search_warnings = &NoWarnings,
    .version_given = [](const ReleaseChoice& asked) { return asked.automodel.has_value(); },
    // NeMo AutoModel runs every supported architecture: its own implementations
    // (nemo_automodel/_transformers/registry.py: DeepseekV32ForCausalLM, Qwen3NextForCausalLM,
    // Qwen3_5MoeForConditionalGeneration, ...) or the transformers class.
    .unsupported_model = [](const ModelSpec&) { return std::string(); },
    .recompute_modules_option = false,
    .recipe_function_option = false,
    .full_recipe_option = true,
    .torch_memory_options = true,
    .override_key_flags = false,
    .explains_pipeline_split = false,
    .local_batch_column = true,
    // Every hybrid AutoModel trains is priced (NVIDIA-NeMo/Automodel 36044ad: each kind with its
    // own model): Gated DeltaNet (Qwen3NextForCausalLM, Qwen3_5MoeForConditionalGeneration;
    // memory_pytorch.cpp, rules_gdn.cpp), Mamba-2 (NemotronHForCausalLM, components/models/
    // nemotron_v3: NemotronBlockActivationBytes, NemotronBlockPasses, rules_nemotron_h.cpp) and
    // DeepSeek-V4 (DeepseekV4ForCausalLM, components/models/deepseek_v4: dsv4_pytorch.cpp
    // Dsv4PytorchTerms, rules_dsv4.cpp).
    .hybrid_refusal = nullptr,
};
const FrameworkOps kMegatronBridge{
    .id = Framework::kMegatronBridge,
    .name = "megatron-bridge",
    .title = "Megatron-Bridge",
    .rules = &MegatronBridgeRules,
    .to_cost_view = &megatron_bridge::ToCostView,
    .plan = &search::MegatronPlan,
    .enumerate = &search::MegatronEnumerate,
    .for_each_layout = &search::MegatronForEachLayout,
    .recipe_yaml = &MegatronRecipeYaml,
    .dp_flavour = &MbDpFlavourName,
    .describe = &megatron_bridge::Describe,
    .recompute_label = &megatron_bridge::RecomputeLabel,
    .product = "Megatron-Bridge",
    .nearest_changes = &megatron_bridge::NearestChanges,
    .nearest_request = &megatron_bridge::NearestRequest,
    .nearest_release = nullptr,
    .annotate_json = &megatron_bridge::AnnotateJson,
    .schedule_label = &megatron_bridge::ScheduleLabel,
    .accumulation_steps = &megatron_bridge::AccumulationSteps,
    .set_dp = &megatron_bridge::SetDp,
    .launch_env = &MegatronLaunchEnv,
    .version_flag = "--mbridge-version",
    .a_layout = "a Megatron-Bridge",
    .seq_len_key = "model.seq_length",
    .global_batch_key = "train.global_batch_size",
    .memory_profile = "megatron-bridge",
    .default_headroom = 0.02,
    .read_recipe = &ParseMegatronRecipe,
    .launch_recipe = &megatron_bridge::LaunchRecipe,
    .launch_command = &megatron_bridge::LaunchCommand,
    .launch_prelude = &megatron_bridge::LaunchPrelude,
    .launch_comment = &megatron_bridge::LaunchComment,
    .unfitted_note = &megatron_bridge::UnfittedNote,
    .search_warnings = &megatron_bridge::SearchWarnings,
    .version_given = [](const ReleaseChoice& asked) { return asked.mbridge.has_value(); },
    .unsupported_model = &megatron_bridge::UnsupportedModel,
    .recompute_modules_option = true,
    .recipe_function_option = true,
    .full_recipe_option = false,
    .torch_memory_options = false,
    .override_key_flags = true,
    .explains_pipeline_split = true,
    .local_batch_column = false,
    .hybrid_refusal = nullptr,  // cost/hybrid.cpp: Megatron-Core's HybridModel
};
const FrameworkOps* const kAll[] = {&kAutoModel, &kMegatronBridge};

}  // namespace

const FrameworkOps& FrameworkOf(Framework framework) {
  return framework == Framework::kMegatronBridge ? kMegatronBridge : kAutoModel;
}

std::span<const FrameworkOps* const> Frameworks() { return kAll; }

const FrameworkOps* FindFramework(std::string_view name) {
  for (const FrameworkOps* f : kAll) {
    if (name == f->name) return f;
  }
  return nullptr;
}

Framework DetectFramework(std::string_view text, const std::string& filename) {
  return IsMegatronRecipe(text, filename) ? Framework::kMegatronBridge : Framework::kAutoModel;
}

CostView ToCostView(const Layout& layout, const ModelSpec& model, const TrainSetup& setup) {
  return FrameworkOf(layout).to_cost_view(layout, model, setup);
}

CostView MeshCostView(const Layout& l, const ModelSpec& model, const TrainSetup& setup) {
  CostView v;
  v.tp = l.tp;
  v.pp = l.pp;
  v.cp = l.cp;
  v.ep = l.ep;
  v.etp = l.EffectiveEtp();  // MCore model_parallel_config.py:507: unset = tp
  v.dp = l.dp;
  v.dp_replicate = l.dp_replicate;
  v.vpp = l.vpp;
  v.micro_batch = l.micro_batch();
  v.mb_per_call = l.pp_microbatches();
  v.grad_accum = l.GradAccumSteps(setup);
  v.split = SplitStages(model.num_layers, l);
  v.places = OwnSplitPlaces(l);
  v.mtp_layers = MtpLayers(l);
  v.sequence_parallel = l.sequence_parallel;
  v.recompute = l.recompute;
  return v;
}

std::string Describe(const Layout& layout) { return FrameworkOf(layout).describe(layout); }
std::string RecomputeLabel(const Layout& layout) { return FrameworkOf(layout).recompute_label(layout); }
PlanResult Plan(const PlanRequest& req) { return FrameworkOf(req.framework).plan(req); }
std::vector<Layout> EnumerateLayouts(const PlanRequest& req) { return FrameworkOf(req.framework).enumerate(req); }
void ForEachLayout(const PlanRequest& req, const std::function<bool(const Layout&)>& visit, const MeshFilter& keep_mesh) {
  FrameworkOf(req.framework).for_each_layout(req, visit, keep_mesh);
}

std::string FrameworkHybridRefusal(const FrameworkOps& fw, const ModelSpec& model) {
  if (std::string why = HybridRefusal(model); !why.empty()) return why;
  if (!model.is_hybrid() || fw.hybrid_refusal == nullptr) return "";
  const std::string why = fw.hybrid_refusal(model);
  if (why.empty()) return "";
  return model.architecture_name + " is a hybrid model (a layer pattern of token-mixer and MLP blocks): " + why;
}

Cost Score(const CostModel& cost, const Layout& layout) {
  return cost.Evaluate(ToCostView(layout, cost.model(), cost.setup()));
}

}  // namespace meshplan
