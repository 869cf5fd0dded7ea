// AutoModel's part of a recipe in plan --format json and of the plan table.
#include <nlohmann/json.hpp>

#include "meshplan/framework.hpp"

namespace meshplan::automodel {

void AnnotateJson(nlohmann::json& j, const Candidate& c, const PlanRequest& req) {
  // The model.backend settings the layout is priced with (the YAML recipe writes those that
  // differ from AutoModel's defaults): the MoE dispatcher where EP > 1, DeepSeek-V4's attention.
  const Layout& l = c.layout;
  nlohmann::json backend = nlohmann::json::object();
  if (req.model.is_moe() && l.ep > 1) backend["dispatcher"] = AmDispatcherName(l.am_backend.dispatcher);
  if (req.model.architecture == Architecture::kDeepseekV4) backend["attn"] = l.am_backend.attn_tilelang ? "tilelang" : "te";  // "te": BackendConfig's default
  if (!backend.empty()) j["layout"]["backend"] = backend;
}

std::string ScheduleLabel(const Layout& l, const ModelSpec& model) {
  if (l.pp <= 1) return "-";
  std::string sched = PpScheduleName(l.pp_schedule);
  if (l.pp_schedule == PpSchedule::kInterleaved1F1B) {
    sched += " v" + std::to_string(SplitStages(model.num_layers, l).stages_per_rank);
  }
  return sched;
}

int64_t AccumulationSteps(const Layout& l, const TrainSetup& setup) {
  return l.GradAccumSteps(setup);  // step_scheduler's accumulation: pipeline schedule calls per step
}

void SetDp(Layout& l, int64_t dp, const TrainSetup&) { l.dp = dp; }

std::vector<std::pair<std::string, std::string>> LaunchEnv(const Layout&) { return {}; }

}  // namespace meshplan::automodel
