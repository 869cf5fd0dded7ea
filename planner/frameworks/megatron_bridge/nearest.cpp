// Megatron-Bridge's side of `meshplan check`'s nearest layouts: the keys a suggestion changes
// and the recipe's own settings the suggestions keep.
#include <algorithm>
#include <string>
#include <vector>

#include "meshplan/framework.hpp"
#include "frameworks/megatron_bridge/space.hpp"
#include "search/diff.hpp"

namespace meshplan::megatron_bridge {
namespace {

using search::Diff;
using search::N;

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

}  // namespace

std::vector<std::string> NearestChanges(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup) {
  (void)setup;
  std::vector<std::string> c;
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
  return c;
}

void NearestRequest(PlanRequest& req, const Layout& from) {
  // The nearest layouts train the MTP layers the recipe asks for (model.mtp_num_layers, or the
  // model provider's when unset: ParseMegatronRecipe resolves it), as Megatron-Bridge would.
  if (from.mtp_layers >= 0) req.model.mtp_num_layers = from.mtp_layers;
  // The recipe's own selective recompute is among the nearest layouts' choices.
  if (from.recompute == Recompute::kSelective &&
      std::find(req.mb_recompute_module_sets.begin(), req.mb_recompute_module_sets.end(), from.mb.recompute_modules) ==
          req.mb_recompute_module_sets.end()) {
    req.mb_recompute_module_sets.push_back(from.mb.recompute_modules);
  }
  // The recipe's own software settings (dispatcher and flex backend, EP overlap, CUDA graphs,
  // gradient dtype, TE cross-entropy)
  // price and go with the nearby layouts: a flex dispatcher stays flex (else every EP layout
  // would change it, and EP 1 ranked nearest).
  if (!req.mb_runtime) req.mb_runtime = search::MbRuntimeOf(from);
}

}  // namespace meshplan::megatron_bridge
