// Megatron-Bridge rules on the attention's context-parallel communication (model.cp_comm_type,
// model.hierarchical_context_parallel_sizes): which exchange Transformer Engine's attention runs
// with which model (heads over the a2a group, sliding windows, learned softmax sinks), the
// hierarchical sizes Megatron-Bridge checks, and CP's need for Transformer Engine's attention.
// Sources: Megatron-Bridge training/config.py ConfigContainer._validate_cp_comm_type (067f987d);
// Megatron-Core transformer/dot_product_attention.py, extensions/transformer_engine.py
// TEDotProductAttention.__init__ (d98e8a64); Transformer Engine
// pytorch/attention/dot_product_attention/context_parallel.py attn_forward_func_with_cp and
// utils.py get_attention_backend (d0067d0d).
#include "frameworks/megatron_bridge/rule_util.hpp"

namespace meshplan::rules {
namespace {

using mb::L;

/// Transformer Engine reads cp_comm_type only with CP (TEDotProductAttention.__init__: "if
/// self.config.context_parallel_size > 1").
bool Cp(const RuleContext& c) { return L(c).cp > 1; }
MbCpComm Type(const RuleContext& c) { return L(c).mb.cp_comm; }

/// The a2a level's heads: context_parallel.py AttnFuncWithCPAndQKVOA2A.forward asserts
/// num_heads % cp_size == 0 for Q and K/V (the heads of one TP rank).
bool A2aHeads(const RuleContext& c) {
  if (!Cp(c)) return true;
  const Layout& l = L(c);
  const int64_t n = Type(c) == MbCpComm::kA2a ? l.cp : Type(c) == MbCpComm::kA2aP2p ? l.mb.hcp_first : 1;
  return domain::MegatronCpA2aHeadsDivide(c.model, l.tp, n);
}
std::string A2aHeadsMsg(const RuleContext& c) {
  const Layout& l = L(c);
  const int64_t n = Type(c) == MbCpComm::kA2a ? l.cp : l.mb.hcp_first;
  const int64_t kv = c.model.mla ? c.model.num_attention_heads : c.model.num_key_value_heads;
  return Cat("cp_comm_type ", domain::CpCommValue(Type(c)), " scatters the attention heads over ", n,
             " ranks: num_attention_heads ", c.model.num_attention_heads, " and key/value heads ", kv, " over TP ",
             l.tp, " must each divide by ", n, " (Transformer Engine: num_heads % cp_size == 0)");
}

/// context_parallel.py attn_forward_func_with_cp: "Context parallelism does not support sliding
/// window attention with cp_comm_type" other than a2a and all_gather.
bool SlidingWindow(const RuleContext& c) {
  return !Cp(c) || !domain::HasSlidingWindowLayers(c.model) || domain::MegatronCpCommTakesSlidingWindow(Type(c));
}
std::string SlidingWindowMsg(const RuleContext& c) {
  return Cat(c.model.name, " has sliding-window attention layers: with context_parallel_size ", L(c).cp,
             " Transformer Engine runs them with cp_comm_type a2a or all_gather only, found ",
             domain::CpCommValue(Type(c)), Type(c) == MbCpComm::kUnset ? " (null)" : "");
}

/// attn_forward_func_with_cp: softmax_type other than vanilla only with cp_comm_type a2a.
bool SoftmaxSinks(const RuleContext& c) {
  return !Cp(c) || !c.model.attention_sinks || domain::MegatronCpCommTakesSoftmaxSinks(Type(c));
}
std::string SoftmaxSinksMsg(const RuleContext& c) {
  return Cat(c.model.name, "'s attention has learned softmax sinks (softmax_type learnable): with context_parallel_size ",
             L(c).cp, " Transformer Engine runs it with cp_comm_type a2a only, found ", domain::CpCommValue(Type(c)),
             Type(c) == MbCpComm::kUnset ? " (null)" : "");
}

/// MB config.py _validate_cp_comm_type: a2a+p2p needs hierarchical_context_parallel_sizes, whose
/// product must equal context_parallel_size whenever it is set; TE attn_forward_func_with_cp asserts
/// two levels for a2a+p2p ("requires cp_group = [a2a_cp_group, p2p_cp_group]").
bool HierarchicalSizes(const RuleContext& c) {
  const MbSettings& s = L(c).mb;
  if (s.cp_comm == MbCpComm::kA2aP2p && s.hcp_levels == 0) return false;
  if (s.hcp_levels > 0 && s.hcp_product != L(c).cp) return false;
  return !(Cp(c) && s.cp_comm == MbCpComm::kA2aP2p && s.hcp_levels != 2);
}
std::string HierarchicalSizesMsg(const RuleContext& c) {
  const MbSettings& s = L(c).mb;
  if (s.cp_comm == MbCpComm::kA2aP2p && s.hcp_levels == 0) {
    return "cp_comm_type a2a+p2p needs hierarchical_context_parallel_sizes (the a2a and the p2p level, e.g. [8, 2] for "
           "CP 16 over two 8-GPU nodes): without it CP communication is silently off";
  }
  if (s.hcp_levels > 0 && s.hcp_product != L(c).cp) {
    return Cat("the product of hierarchical_context_parallel_sizes (", s.hcp_product,
               ") must equal context_parallel_size ", L(c).cp);
  }
  return Cat("cp_comm_type a2a+p2p takes two hierarchical_context_parallel_sizes (a2a level, p2p level), found ",
             s.hcp_levels);
}

/// Megatron-Core's own DotProductAttention asserts context_parallel_size == 1 ("Context
/// parallelism is only supported by TEDotProductAttention!"); Transformer Engine's unfused
/// backend takes no CP either (utils.py get_attention_backend).
bool CpNeedsTe(const RuleContext& c) {
  return !Cp(c) || (L(c).mb.transformer_engine && !L(c).mb.unfused_attention);
}
std::string CpNeedsTeMsg(const RuleContext& c) {
  return Cat("context_parallel_size ", L(c).cp, " needs Transformer Engine's fused or flash attention (transformer_impl "
             "transformer_engine, attention_backend not unfused): Megatron-Core's own DotProductAttention runs no CP");
}

constexpr const char* kTeCp = "TE pytorch/attention/dot_product_attention/context_parallel.py attn_forward_func_with_cp";

const Rule kRules[] = {
    {"mb_cp_needs_te_attention", "MCore transformer/dot_product_attention.py DotProductAttention.__init__",
     RuleStage::kMesh, CpNeedsTe, CpNeedsTeMsg},
    {"mb_cp_comm_a2a_heads", "TE context_parallel.py AttnFuncWithCPAndQKVOA2A.forward", RuleStage::kMesh, A2aHeads,
     A2aHeadsMsg},
    {"mb_cp_comm_sliding_window", kTeCp, RuleStage::kMesh, SlidingWindow, SlidingWindowMsg},
    {"mb_cp_comm_softmax_sinks", kTeCp, RuleStage::kMesh, SoftmaxSinks, SoftmaxSinksMsg},
    {"mb_cp_comm_hierarchical_sizes", "MB training/config.py ConfigContainer._validate_cp_comm_type", RuleStage::kMesh,
     HierarchicalSizes, HierarchicalSizesMsg},
};

}  // namespace

std::span<const Rule> MegatronCpRules() { return kRules; }

}  // namespace meshplan::rules
