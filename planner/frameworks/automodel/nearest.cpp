// AutoModel's side of `meshplan check`'s nearest layouts: the keys a suggestion changes.
#include <string>
#include <vector>

#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "search/diff.hpp"

namespace meshplan::automodel {

using search::Diff;
using search::N;
using search::NullOr;

void NearestChanges(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup, LayoutDiff& c) {
  (void)num_layers;
  // Every key AutoModelRecipeYaml writes for `b` with a value other than the recipe's; first
  // those set with the mesh (AutoModelSpace::Meshes).
  Diff(c, "strategy", StrategyName(a.strategy), StrategyName(b.strategy));
  // dp_size is written null (inferred): a change where the recipe gives a number that differs
  // from the inferred one (null and a number equal to it are the same dp).
  if (a.am.dp_size && a.dp != b.dp) c.Add("dp_size", [&] { return "dp_size: " + N(a.dp) + " -> null (inferred " + N(b.dp) + ")"; });
  Diff(c, "tp_size", a.tp, b.tp);
  Diff(c, "pp_size", a.pp, b.pp);
  Diff(c, "cp_size", a.cp, b.cp);
  Diff(c, "ep_size", a.ep, b.ep);
  Diff(c, "dp_replicate_size", a.dp_replicate, b.dp_replicate);
  if (c.mesh_only()) return;
  // The dispatcher goes with EP (FamilyOf: one decision); written only where EP is (ep_size > 1).
  if (b.ep > 1) Diff(c, "model.backend.dispatcher", AmDispatcherName(a.am_backend.dispatcher), AmDispatcherName(b.am_backend.dispatcher));
  // DeepSeek-V4's nearest layouts run TileLang's kernels (NearestRequest), which its CP needs.
  auto attn = [](const Layout& l) { return std::string(l.am_backend.attn_tilelang ? "tilelang" : "(not tilelang)"); };
  Diff(c, "model.backend.attn", attn(a), attn(b));
  Diff(c, "local_batch_size", a.local_batch_size, b.local_batch_size);
  if (a.pp > 1 || b.pp > 1) {
    Diff(c, "pp_microbatch_size", a.pp_microbatch_size, b.pp_microbatch_size);
    Diff(c, "pp_schedule", PpScheduleName(a.pp_schedule), PpScheduleName(b.pp_schedule));
    Diff(c, "layers_per_stage", NullOr{a.layers_per_stage > 0, a.layers_per_stage},
         NullOr{b.layers_per_stage > 0, b.layers_per_stage});
    Diff(c, "round_virtual_stages_to_pp_multiple", StageRoundingName(a.stage_rounding), StageRoundingName(b.stage_rounding));
  }
  // Settings the written recipe sets to false, as the cost model prices them (AmWritten: the
  // recipe's value as written, "" for AutoModel's default: true, false, false).
  auto to_false = [&c](const char* field, const std::string& written, bool default_value) {
    if (written.empty() ? default_value : written != "false") {
      c.Add(field, [&] { return std::string(field) + ": " + (written.empty() ? "true (default)" : written) + " -> false"; });
    }
  };
  if (b.strategy == Strategy::kFsdp2 && b.GradAccumSteps(setup) > 1) {
    to_false("defer_fsdp_grad_sync", a.strategy == Strategy::kFsdp2 ? a.am.defer_fsdp_grad_sync : "", true);
  }
  // The FSDP2-only keys the recipe writes, which another strategy's dataclass refuses
  // (automodel.md 1.2): removed, not set.
  if (a.strategy == Strategy::kFsdp2 && b.strategy != Strategy::kFsdp2) {
    auto remove = [&](const char* field, const std::string& written) {
      c.Add(field, [&] { return std::string(field) + ": " + written + " -> (remove the key: " + StrategyName(b.strategy) +
                                " does not take it)"; });
    };
    if (!a.am.defer_fsdp_grad_sync.empty()) remove("defer_fsdp_grad_sync", a.am.defer_fsdp_grad_sync);
    if (a.am.sequence_parallel) remove("sequence_parallel", a.sequence_parallel ? "true" : "false");
  }
  if (b.pp > 1) to_false("scale_grads_in_schedule", a.am.scale_grads_in_schedule, false);
  if (b.ep > 1) to_false("moe.reshard_after_forward", a.am.moe_reshard_after_forward, false);
  Diff(c, "activation_checkpointing", AutoModelCheckpointingValue(a.recompute), AutoModelCheckpointingValue(b.recompute));
}

// The nearest layouts are priced with the recipe's model.backend (dispatcher, fake gate); a
// DeepSeek-V4 recipe's with backend.attn tilelang, the backend plan writes for it and the fix
// rule dsv4_cp_needs_tilelang names (its other backends are dense eager attention).
void NearestRequest(PlanRequest& req, const Layout& recipe) {
  req.am_moe_backend = recipe.am_backend;
  if (req.model.architecture == Architecture::kDeepseekV4) req.am_moe_backend->attn_tilelang = true;
}

// The walk over the EP sizes at which the recipe's deepep cannot run (AutoModelSpace with
// am_release_dispatcher), each with the dispatcher plan writes there (hybridep): the fix the
// rules deepep_ep_ranks and deepep_nvl_peers_in_node name.
bool NearestRelease(const PlanRequest& req, PlanRequest& out) {
  if (!req.model.is_moe() || !req.am_moe_backend || req.am_moe_backend->dispatcher != AmDispatcher::kDeepEP) return false;
  out = req;
  out.am_release_dispatcher = true;
  return true;
}

}  // namespace meshplan::automodel
