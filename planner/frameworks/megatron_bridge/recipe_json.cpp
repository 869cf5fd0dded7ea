// Megatron-Bridge's part of a recipe in plan --format json and of the plan table.
#include <nlohmann/json.hpp>

#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"

namespace meshplan::megatron_bridge {

using nlohmann::json;

void AnnotateJson(json& j, const Candidate& c, const PlanRequest& req) {
  json ov = json::object(), env = json::object();
  for (const auto& [k, v] : MegatronOverrides(c.layout, req)) ov[k] = v;
  for (const auto& [k, v] : MegatronLaunchEnv(c.layout)) env[k] = v;
  const Layout& l = c.layout;
  // A Megatron-Bridge layout has no AutoModel strategy or torch stage arithmetic: its DP
  // flavour and Megatron-Core's schedule (VPP model chunks per rank) instead.
  j["layout"].erase("strategy");
  j["layout"]["dp_flavour"] = MbDpFlavourName(l);
  if (l.pp > 1) {
    j["layout"]["pipeline"] = {{"pp_schedule", l.vpp > 1 ? "interleaved1f1b" : "1f1b"},
                                {"pp_microbatch_size", l.pp_microbatch_size},
                                {"virtual_pipeline_model_parallel_size", l.vpp > 1 ? json(l.vpp) : json(nullptr)},
                                {"stages_per_rank", SplitStages(req.model.num_layers, l).stages_per_rank}};
  }
  j["overrides"] = ov;
  j["environment"] = env;
}

std::string ScheduleLabel(const Layout& l, const ModelSpec&) {
  std::string sched = l.pp > 1 && l.vpp > 1 ? "interleaved v" + std::to_string(l.vpp) : l.pp > 1 ? "1f1b" : "-";
  if (l.etp > 0) sched += " etp" + std::to_string(l.etp);
  return sched;
}

int64_t AccumulationSteps(const Layout& l, const TrainSetup& setup) {
  return l.MicroBatchesPerStep(setup);  // no separate loop: the M micro-batches of one schedule call
}

void SetDp(Layout& l, int64_t dp, const TrainSetup& setup) {
  l.dp = dp;
  SetMegatronMicroBatch(l, l.micro_batch(), setup);
}

}  // namespace meshplan::megatron_bridge
