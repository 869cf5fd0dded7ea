// AutoModel's side of `meshplan check`'s nearest layouts: the keys a suggestion changes.
#include <string>
#include <vector>

#include "meshplan/framework.hpp"
#include "search/diff.hpp"

namespace meshplan::automodel {

using search::Diff;
using search::N;

std::vector<std::string> NearestChanges(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup) {
  (void)num_layers;
  std::vector<std::string> c;
  // Every key AutoModelRecipeYaml writes for `b` with a value other than the recipe's.
  Diff(c, "strategy", std::string(StrategyName(a.strategy)), std::string(StrategyName(b.strategy)));
  // dp_size is written null (inferred): a change where the recipe gives a number that differs
  // from the inferred one (null and a number equal to it are the same dp).
  if (a.am.dp_size && a.dp != b.dp) c.push_back("dp_size: " + N(a.dp) + " -> null (inferred " + N(b.dp) + ")");
  Diff(c, "tp_size", N(a.tp), N(b.tp));
  Diff(c, "pp_size", N(a.pp), N(b.pp));
  Diff(c, "cp_size", N(a.cp), N(b.cp));
  Diff(c, "ep_size", N(a.ep), N(b.ep));
  Diff(c, "dp_replicate_size", N(a.dp_replicate), N(b.dp_replicate));
  Diff(c, "local_batch_size", N(a.local_batch_size), N(b.local_batch_size));
  if (a.pp > 1 || b.pp > 1) {
    Diff(c, "pp_microbatch_size", N(a.pp_microbatch_size), N(b.pp_microbatch_size));
    Diff(c, "pp_schedule", std::string(PpScheduleName(a.pp_schedule)), std::string(PpScheduleName(b.pp_schedule)));
    Diff(c, "layers_per_stage", a.layers_per_stage > 0 ? N(a.layers_per_stage) : "null",
         b.layers_per_stage > 0 ? N(b.layers_per_stage) : "null");
    Diff(c, "round_virtual_stages_to_pp_multiple", std::string(StageRoundingName(a.stage_rounding)),
         std::string(StageRoundingName(b.stage_rounding)));
  }
  // Settings the written recipe sets to false, as the cost model prices them (AmWritten: the
  // recipe's value as written, "" for AutoModel's default: true, false, false).
  auto to_false = [&c](const char* field, const std::string& written, bool default_value) {
    if (written.empty() ? default_value : written != "false") {
      c.push_back(std::string(field) + ": " + (written.empty() ? "true (default)" : written) + " -> false");
    }
  };
  if (b.strategy == Strategy::kFsdp2 && b.GradAccumSteps(setup) > 1) {
    to_false("defer_fsdp_grad_sync", a.strategy == Strategy::kFsdp2 ? a.am.defer_fsdp_grad_sync : "", true);
  }
  if (b.pp > 1) to_false("scale_grads_in_schedule", a.am.scale_grads_in_schedule, false);
  if (b.ep > 1) to_false("moe.reshard_after_forward", a.am.moe_reshard_after_forward, false);
  return c;
}

// The nearest layouts are priced with the recipe's model.backend (dispatcher, fake gate).
void NearestRequest(PlanRequest& req, const Layout& recipe) { req.am_moe_backend = recipe.am_backend; }

}  // namespace meshplan::automodel
