// AutoModel layout -> CostView: the mesh and torch schedule of `distributed:` and
// `step_scheduler:` (automodel.md 1-2), priced on PyTorch (eager Hugging Face modules).

#include <algorithm>
#include "meshplan/framework.hpp"

namespace meshplan::automodel {
namespace {

DpImpl DpImplOf(Strategy s) {
  switch (s) {
    case Strategy::kFsdp2: return DpImpl::kFsdpPerModule;
    case Strategy::kMegatronFsdp: return DpImpl::kMegatronFsdp;
    case Strategy::kDdp: return DpImpl::kReplicated;
  }
  return DpImpl::kFsdpPerModule;
}

// The EP dispatch of `b`: GroupedExperts' all-gather for torch, MoEFlexTokenDispatcher with
// DeepEP or HybridEP otherwise (components/moe/layers.py MoE.__init__). UCCL-EP and
// Mixture-of-Kittens are priced with DeepEP's published bandwidths: meshplan has no published
// figures of theirs (the recipe reader says so).
void SetDispatch(const AmMoeBackend& b, CostView& v) {
  v.dispatcher = b.dispatcher == AmDispatcher::kTorch ? TokenDispatch::kAllgather : TokenDispatch::kFlex;
  v.flex_backend = b.dispatcher == AmDispatcher::kTorch      ? FlexBackend::kNone
                   : b.dispatcher == AmDispatcher::kHybridEP ? FlexBackend::kHybridEP
                                                             : FlexBackend::kDeepEP;
  v.routing = b.ConsecutiveExperts() ? MoeRouting::kConsecutive : MoeRouting::kUniform;
  v.attn_tilelang = b.attn_tilelang;
}

}  // namespace

CostView ToCostView(const Layout& l, const ModelSpec& model, const TrainSetup& setup) {
  CostView v = MeshCostView(l, model, setup);
  v.runtime = CostRuntime::kPyTorchEager;
  v.interleaved = l.pp_schedule == PpSchedule::kInterleaved1F1B;
  // Megatron-LM's estimate (memory profile megatron) reads the stages per rank as its VPP.
  v.estimate_vpp = (l.pp > 1 && v.interleaved) ? v.split.stages_per_rank : 0;
  // AutoModel has no account_for_* split keys and meshplan prices its models without their MTP
  // module: no places, no MTP layers.
  v.places = {};
  v.mtp_layers = 0;
  v.dp_impl = DpImplOf(l.strategy);
  v.loss_fp32_upcast = l.loss_fp32_upcast;
  v.loss_fused_linear = l.loss_fused_linear;
  v.moe_reshard_after_forward = l.am.moe_reshard_after_forward == "true";
  v.fsdp_sharding = FsdpSharding(std::clamp(l.am.zero_dp_strategy, 0, 3));  // enum order = zero_dp_strategy
  v.defer_fsdp_grad_sync = l.strategy == Strategy::kFsdp2 &&
                           (l.am.defer_fsdp_grad_sync == "true" || (l.am.from_recipe && l.am.defer_fsdp_grad_sync.empty()));
  SetDispatch(l.am_backend, v);
  return v;
}

}  // namespace meshplan::automodel
