// The framework registry: the one place that compares Framework values.

#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "frameworks/megatron_bridge/space.hpp"

namespace meshplan {
namespace {

const FrameworkOps kAutoModel{Framework::kAutoModel,     "automodel",          "AutoModel",
                              &AutoModelRules,          &automodel::ToCostView, &automodel::Plan,
                              &automodel::Enumerate,    &AutoModelRecipeYaml,   &automodel::DpFlavour,
                              &automodel::Describe,     &automodel::RecomputeLabel, "NeMo AutoModel",
                              &automodel::NearestChanges, &automodel::NearestRequest,
                              &automodel::AnnotateJson,   &automodel::ScheduleLabel, &automodel::AccumulationSteps,
                              &automodel::LaunchEnv,      "--automodel-version",     "an AutoModel",
                              "dataset.seq_len",         "step_scheduler.global_batch_size", "pytorch"};
const FrameworkOps kMegatronBridge{Framework::kMegatronBridge,    "megatron-bridge",         "Megatron-Bridge",
                                   &MegatronBridgeRules,          &megatron_bridge::ToCostView, &search::MegatronPlan,
                                   &search::MegatronEnumerate,    &MegatronRecipeYaml,       &MbDpFlavourName,
                                   &megatron_bridge::Describe,    &megatron_bridge::RecomputeLabel, "Megatron-Bridge",
                                   &megatron_bridge::NearestChanges, &megatron_bridge::NearestRequest,
                                   &megatron_bridge::AnnotateJson,   &megatron_bridge::ScheduleLabel,
                                   &megatron_bridge::AccumulationSteps, &MegatronLaunchEnv,
                                   "--mbridge-version",           "a Megatron-Bridge",
                                   "model.seq_length",            "train.global_batch_size",
                                   "megatron-bridge"};
const FrameworkOps* const kAll[] = {&kAutoModel, &kMegatronBridge};

}  // namespace

const FrameworkOps& FrameworkOf(Framework framework) {
  return framework == Framework::kMegatronBridge ? kMegatronBridge : kAutoModel;
}

std::span<const FrameworkOps* const> Frameworks() { return kAll; }

bool IsMegatronBridge(Framework framework) { return framework == Framework::kMegatronBridge; }

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

Cost Score(const CostModel& cost, const Layout& layout) {
  return cost.Evaluate(ToCostView(layout, cost.model(), cost.setup()));
}

}  // namespace meshplan
