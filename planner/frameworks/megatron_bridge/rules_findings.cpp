// Megatron-Bridge findings: rows of the table that do not make a layout invalid. Warnings
// (Severity::kWarning): conditions Megatron only warns about, or that its guide requires but
// its code does not check. Silently-off settings (Severity::kSilentlyOff): overlaps a recipe
// requests that Megatron-Bridge switches off without a word. `meshplan check` prints both
// (FindingMessages); the search never reads them. MB = Megatron-Bridge, MLM = Megatron-LM,
// MCore = Megatron-Core. Each row's source is printed in brackets after its message.
#include "frameworks/megatron_bridge/rule_util.hpp"

namespace meshplan::rules {
namespace {

using namespace mb;

/// Pre-Blackwell, TP or CP > 1 without FSDP or EP overlap: CUDA_DEVICE_MAX_CONNECTIONS must be 1
/// (kernels queue in order so TP comm is scheduled before the GEMM). Megatron-LM's own argument
/// parser asserts it; Megatron-Bridge does not, and Megatron-Core only warns.
/// Source: MLM arguments.py:1452-1479; MCore tensor_parallel/layers.py:908-924; MB
/// scripts/performance/utils/overrides.py:248-263.
bool HopperCdmc(const RuleContext& c) {
  const Layout& l = L(c);
  const bool pre_blackwell = c.system != nullptr && !c.system->gpu.BlackwellOrNewer();
  if (!pre_blackwell || (l.tp == 1 && l.cp == 1)) return true;
  if (Mfsdp(l) || Fsdp2(l) || l.mb.ep_a2a_overlap == Tri::kTrue) return true;
  return l.mb.cuda_device_max_connections == 0 || l.mb.cuda_device_max_connections == 1;
}
std::string HopperCdmcMsg(const RuleContext& c) {
  return Cat("CUDA_DEVICE_MAX_CONNECTIONS=", L(c).mb.cuda_device_max_connections, " on ", c.system->gpu.name,
             " with TP ", L(c).tp, " / CP ", L(c).cp,
             ": before Blackwell Megatron needs 1 so TP/CP communication is queued ahead of the GEMMs");
}

/// MoE with TP: SP is required by the MLM guide (MCore only warns).
/// Source: MCore model_parallel_config.py:561-566; megatron.md 2.13.
bool EpTpNeedsSp(const RuleContext& c) { return !(L(c).tp > 1 && L(c).ep > 1) || L(c).sequence_parallel; }
std::string EpTpNeedsSpMsg(const RuleContext& c) {
  return Cat("tensor_model_parallel_size ", L(c).tp, " with expert_model_parallel_size ", L(c).ep,
             " should use sequence_parallel: true (the token dispatcher expects sequence-split tokens)");
}

/// tp_comm_overlap takes effect only with TP >= 2, sequence parallel and Transformer Engine;
/// otherwise Megatron-Bridge turns it off. Source: MB training/comm_overlap.py:441-451.
bool TpOverlapTakesEffect(const RuleContext& c) {
  const Layout& l = L(c);
  return l.mb.tp_comm_overlap != Tri::kTrue || (l.tp >= 2 && l.sequence_parallel && l.mb.transformer_engine);
}
std::string TpOverlapTakesEffectMsg(const RuleContext& c) {
  const Layout& l = L(c);
  return std::string("comm_overlap.tp_comm_overlap: true is switched off silently: TP overlap needs ") +
         (l.tp < 2 ? "tensor_model_parallel_size >= 2 (found " + std::to_string(l.tp) + ")"
          : !l.sequence_parallel ? "sequence_parallel: true (its all-gather/reduce-scatter is what overlaps)"
                                 : "Transformer Engine (transformer_impl: transformer_engine)");
}

/// With one data-parallel rank there is no gradient reduce or parameter gather to overlap.
/// Source: MB training/comm_overlap.py:562-591.
bool DpOverlapHasDp(const RuleContext& c) {
  const Layout& l = L(c);
  return !((l.mb.overlap_grad_reduce == Tri::kTrue || l.mb.overlap_param_gather == Tri::kTrue) && l.dp == 1);
}
std::string DpOverlapHasDpMsg(const RuleContext&) {
  return "overlap_grad_reduce / overlap_param_gather have nothing to overlap with data parallel size 1";
}

/// Left unset, DP overlap is turned on only with the distributed optimizer (or Megatron FSDP).
/// Source: MB training/comm_overlap.py:635-643.
bool DpOverlapDefault(const RuleContext& c) {
  const Layout& l = L(c);
  const bool dist = l.use_distributed_optimizer || l.mb.use_megatron_fsdp;
  return dist || l.dp <= 1 || l.mb.overlap_grad_reduce != Tri::kUnset;
}
std::string DpOverlapDefaultMsg(const RuleContext&) {
  return "DP overlap (overlap_grad_reduce, overlap_param_gather) is only turned on by default with the "
         "distributed optimizer; without it gradients are all-reduced after the backward";
}

// The sources are printed after the messages, in brackets, as `check` has always written them.
const Rule kRules[] = {
    {"mb_cuda_device_max_connections_before_blackwell",
     "MLM training/arguments.py:1452-1479 asserts it; Megatron-Core only warns, tensor_parallel/layers.py:908-924",
     RuleStage::kMesh, HopperCdmc, HopperCdmcMsg, kNoDp, Severity::kWarning},
    {"mb_ep_with_tp_wants_sequence_parallel",
     "MCore model_parallel_config.py:561-566 warns; the Megatron-LM guide says required", RuleStage::kFeatures,
     EpTpNeedsSp, EpTpNeedsSpMsg, kNoDp, Severity::kWarning},
    {"mb_tp_comm_overlap_needs_tp_sp_te", "MB training/comm_overlap.py:441-451", RuleStage::kFeatures,
     TpOverlapTakesEffect, TpOverlapTakesEffectMsg, kNoDp, Severity::kSilentlyOff},
    {"mb_dp_overlap_needs_dp", "MB training/comm_overlap.py:562-591", RuleStage::kMesh, DpOverlapHasDp,
     DpOverlapHasDpMsg, true, Severity::kSilentlyOff},
    {"mb_dp_overlap_default_needs_distributed_optimizer", "MB training/comm_overlap.py:635-643", RuleStage::kMesh,
     DpOverlapDefault, DpOverlapDefaultMsg, true, Severity::kSilentlyOff},
};

}  // namespace

std::span<const Rule> MegatronFindingRules() { return kRules; }

}  // namespace meshplan::rules
