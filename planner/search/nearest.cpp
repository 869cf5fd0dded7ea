// The valid layouts nearest to a given one, for `meshplan check`.
#include <algorithm>
#include <string>

#include "meshplan/framework.hpp"
#include "meshplan/search.hpp"

namespace meshplan {
namespace {

template <typename T>
void Diff(std::vector<std::string>& out, const char* field, const T& a, const T& b) {
  if (a != b) out.push_back(std::string(field) + ": " + a + " -> " + b);
}

std::string N(int64_t v) { return std::to_string(v); }

// How a Megatron-Bridge recipe splits the layers over the pipeline stages, as its keys say it.
std::string PpSplitKeys(const Layout& l) {
  if (l.pp <= 1) return "none";
  switch (l.pp_split) {
    case MbPpSplit::kAccountEmbeddingLoss:
      return "account_for_embedding/loss_in_pipeline_split";
    case MbPpSplit::kLayout:
      return "pipeline_model_parallel_layout";
    case MbPpSplit::kEven:
      break;
  }
  return "even (num_layers / (pp x vpp))";
}

// The pipeline_model_parallel_layout a Megatron-Bridge layout sets, "null" for none.
std::string LayoutValue(int64_t num_layers, const Layout& l) {
  const std::string v = PpLayoutValue(num_layers, l);
  return v.empty() ? "null" : v;
}

// "field: old -> new" for every field whose value differs between the recipe read (layout `a`)
// and the recipe written for the nearby layout `b` (AutoModelRecipeYaml / MegatronRecipeYaml).
std::vector<std::string> Changes(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup) {
  std::vector<std::string> c;
  if (a.framework == Framework::kMegatronBridge) {
    Diff(c, "tensor_model_parallel_size", N(a.tp), N(b.tp));
    Diff(c, "pipeline_model_parallel_size", N(a.pp), N(b.pp));
    Diff(c, "virtual_pipeline_model_parallel_size", a.vpp > 1 ? N(a.vpp) : "null", b.vpp > 1 ? N(b.vpp) : "null");
    Diff(c, "pipeline layer split", PpSplitKeys(a), PpSplitKeys(b));
    if (a.pp_split == MbPpSplit::kLayout && b.pp_split == MbPpSplit::kLayout) {
      Diff(c, "pipeline_model_parallel_layout", LayoutValue(num_layers, a), LayoutValue(num_layers, b));
    }
    Diff(c, "mtp_num_layers", MtpLayers(a) > 0 ? N(MtpLayers(a)) : "null", MtpLayers(b) > 0 ? N(MtpLayers(b)) : "null");
    Diff(c, "context_parallel_size", N(a.cp), N(b.cp));
    Diff(c, "expert_model_parallel_size", N(a.ep), N(b.ep));
    if (a.EffectiveEtp() != b.EffectiveEtp()) {
      Diff(c, "expert_tensor_parallel_size", a.etp > 0 ? N(a.etp) : "null", b.etp > 0 ? N(b.etp) : "null");
    }
    Diff(c, "data-parallel flavour", std::string(MbDpFlavourName(a)), std::string(MbDpFlavourName(b)));
    Diff(c, "micro_batch_size", N(a.micro_batch()), N(b.micro_batch()));
    auto method = [](const Layout& x) {
      return std::string(x.mb.recompute_method == MbRecomputeMethod::kUniform ? "uniform"
                         : x.mb.recompute_method == MbRecomputeMethod::kBlock ? "block"
                                                                             : "null");
    };
    if (a.recompute == Recompute::kSelective && b.recompute == Recompute::kSelective) {
      Diff(c, "recompute_modules", RecomputeModulesValue(a.mb.recompute_modules),
           RecomputeModulesValue(b.mb.recompute_modules));
    }
    Diff(c, "recompute_method", method(a), method(b));
    Diff(c, "recompute_num_layers", a.mb.recompute_num_layers > 0 ? N(a.mb.recompute_num_layers) : "null",
         b.mb.recompute_num_layers > 0 ? N(b.mb.recompute_num_layers) : "null");
    Diff(c, "cpu_offloading", std::string(a.mb.cpu_offloading ? "true" : "false"),
         std::string(b.mb.cpu_offloading ? "true" : "false"));
    // Runtime settings the recipe wrote and the suggestion's recipe writes otherwise
    // (MegatronOverrides): a flex dispatcher turned alltoall, an overlap switched off.
    auto dispatcher = [](const Layout& x) {
      return std::string(x.mb.token_dispatcher == MbDispatcher::kFlex       ? "flex"
                         : x.mb.token_dispatcher == MbDispatcher::kAlltoall ? "alltoall"
                                                                            : "allgather");
    };
    // Allgather is also what an unset key reads as (the recipe functions' providers set alltoall):
    // only a dispatcher the recipe chose, alltoall or flex, is compared.
    if (b.ep > 1 && a.mb.token_dispatcher != MbDispatcher::kAllgather) {
      Diff(c, "moe_token_dispatcher_type", dispatcher(a),
           std::string(b.mb.token_dispatcher == MbDispatcher::kFlex ? "flex" : "alltoall"));
    }
    auto tri = [&c](const char* field, Tri was, Tri now) {
      if (was == Tri::kUnset) return;  // not written by the recipe: the suggestion's value is new, not a change
      Diff(c, field, std::string(was == Tri::kTrue ? "true" : "false"), std::string(now == Tri::kTrue ? "true" : "false"));
    };
    tri("tp_comm_overlap", a.mb.tp_comm_overlap, b.mb.tp_comm_overlap);
    tri("overlap_p2p_comm", a.mb.overlap_p2p_comm, b.mb.overlap_p2p_comm);
    tri("batch_p2p_comm", a.mb.batch_p2p_comm, b.mb.batch_p2p_comm);
    tri("overlap_grad_reduce", a.mb.overlap_grad_reduce, b.mb.overlap_grad_reduce);
    tri("overlap_param_gather", a.mb.overlap_param_gather, b.mb.overlap_param_gather);
  } else {
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
  }
  Diff(c, "sequence_parallel", std::string(a.sequence_parallel ? "true" : "false"),
       std::string(b.sequence_parallel ? "true" : "false"));
  Diff(c, "recompute", std::string(RecomputeName(a.recompute)), std::string(RecomputeName(b.recompute)));
  return c;
}

}  // namespace

std::vector<NearbyLayout> NearestValidLayouts(const PlanRequest& request, const Layout& from, int n) {
  PlanRequest req = request;
  // The recipe's own selective recompute is among the nearest layouts' choices.
  if (from.framework == Framework::kMegatronBridge && from.recompute == Recompute::kSelective &&
      std::find(req.mb_recompute_module_sets.begin(), req.mb_recompute_module_sets.end(), from.mb.recompute_modules) ==
          req.mb_recompute_module_sets.end()) {
    req.mb_recompute_module_sets.push_back(from.mb.recompute_modules);
  }
  // The recipe's own software settings (dispatcher, EP overlap, CUDA graphs, gradient dtype)
  // price and go with the nearby layouts: a flex dispatcher stays flex (else every EP layout
  // would change it, and EP 1 ranked nearest).
  if (from.framework == Framework::kMegatronBridge && !req.mb_runtime) {
    MbRuntime rt;
    if (from.mb.token_dispatcher != MbDispatcher::kAllgather) rt.dispatcher = from.mb.token_dispatcher;
    rt.ep_a2a_overlap = from.mb.ep_a2a_overlap == Tri::kTrue ? Tri::kTrue : Tri::kFalse;
    rt.cuda_graph = from.mb.cuda_graph;
    rt.cuda_graph_scope = from.mb.cuda_graph_scope;
    rt.grad_reduce_in_fp32 = from.mb.grad_reduce_in_fp32;
    req.mb_runtime = rt;
  }
  const CostModel cost(req.model, req.system, req.setup);
  std::vector<std::pair<Layout, std::vector<std::string>>> valid;
  for (const Layout& l : EnumerateLayouts(req)) {
    RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
    if (FirstFailure(ctx)) continue;
    valid.emplace_back(l, Changes(from, l, req.model.num_layers, req.setup));
  }
  std::stable_sort(valid.begin(), valid.end(),
                   [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  // Score whole groups of equal distance, nearest first, until n layouts that fit are found.
  std::vector<NearbyLayout> scored;
  int fitting = 0;
  for (size_t i = 0; i < valid.size();) {
    const size_t d = valid[i].second.size();
    for (; i < valid.size() && valid[i].second.size() == d; ++i) {
      NearbyLayout x{{valid[i].first, Score(cost, valid[i].first)}, std::move(valid[i].second)};
      fitting += x.candidate.cost.fits ? 1 : 0;
      scored.push_back(std::move(x));
    }
    if (fitting >= n) break;
  }
  std::stable_sort(scored.begin(), scored.end(), [](const NearbyLayout& a, const NearbyLayout& b) {
    if (a.candidate.cost.fits != b.candidate.cost.fits) return a.candidate.cost.fits;
    if (a.changes.size() != b.changes.size()) return a.changes.size() < b.changes.size();
    return RanksBefore(a.candidate, b.candidate);
  });
  if (scored.size() > static_cast<size_t>(n)) scored.resize(n);
  return scored;
}

}  // namespace meshplan
