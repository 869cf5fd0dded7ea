// AutoModel's part of a recipe in plan --format json and of the plan table.
#include <nlohmann/json.hpp>

#include "meshplan/framework.hpp"

namespace meshplan::automodel {

void AnnotateJson(nlohmann::json&, const Candidate&, const PlanRequest&) {}

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
