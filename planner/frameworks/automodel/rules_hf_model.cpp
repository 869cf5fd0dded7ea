// NeMo AutoModel's rules for a model it has no implementation of and trains as the
// transformers module (Llama 4: Llama4ForConditionalGeneration, with no module under
// nemo_automodel/components/models/; parallelizer.py only names its layers and heads), and for
// chunked attention under context parallelism. Sources under nemo_automodel/ in
// NVIDIA-NeMo/Automodel 36044ad.
#include "meshplan/rule_domains.hpp"
#include "rules/rule_util.hpp"

namespace meshplan::rules {
namespace {

const Layout& L(const RuleContext& c) { return c.layout; }

/// Architectures AutoModel trains as transformers' own module: their MoE blocks are not
/// AutoModel's (MoEFSDPSyncMixin) and the module declares no _pp_plan (transformers
/// modeling_llama4.py Llama4ForConditionalGeneration: _tp_plan = {} and no _pp_plan).
bool TransformersModule(const ModelSpec& m) { return m.architecture == Architecture::kLlama4; }

/// Source: _transformers/capabilities.py::validate_for_mesh ("Expert parallelism (ep_size=...)
/// requires a MoE model, but ... does not inherit from MoEFSDPSyncMixin"; supports_ep is
/// _is_moe(model_cls)).
bool EpNeedsAutoModelMoe(const RuleContext& c) { return L(c).ep == 1 || !TransformersModule(c.model); }
std::string EpNeedsAutoModelMoeMsg(const RuleContext& c) {
  return Cat("Expert parallelism (ep_size=", L(c).ep, ") requires a MoE model, but ", c.model.architecture_name,
             " does not inherit from MoEFSDPSyncMixin (AutoModel trains it as the transformers module); use ep_size: 1");
}

/// Source: _transformers/capabilities.py::validate_for_mesh ("Pipeline parallelism
/// (pp_size=...) requires a _pp_plan attribute on ..."; supports_pp: _pp_plan or MoEFSDPSyncMixin).
bool PpNeedsPpPlan(const RuleContext& c) { return L(c).pp == 1 || !TransformersModule(c.model); }
std::string PpNeedsPpPlanMsg(const RuleContext& c) {
  return Cat("Pipeline parallelism (pp_size=", L(c).pp, ") requires a _pp_plan attribute on ",
             c.model.architecture_name, ", but none was found; use pp_size: 1");
}

/// CP shards the sequence and runs causal attention without the model's mask, so chunked
/// layers (attention_chunk_size) would attend across chunks. At a sequence no longer than one
/// chunk chunked attention is full causal attention and CP changes nothing.
/// Source: components/distributed/context_parallel/utils.py::attach_context_parallel_hooks
/// (attention_mask removed, is_causal=True); transformers masking_utils.py chunked mask.
bool CpNoChunkedAttention(const RuleContext& c) {
  const ModelSpec& m = c.model;
  return L(c).cp == 1 || m.num_chunked_attention_layers == 0 || c.setup.seq_len <= m.attention_chunk_size;
}
std::string CpNoChunkedAttentionMsg(const RuleContext& c) {
  return Cat("cp_size=", L(c).cp, " with attention_chunk_size=", c.model.attention_chunk_size, " on ",
             c.model.num_chunked_attention_layers, " layers and seq_len ", c.setup.seq_len,
             ": context parallelism replaces the chunked mask by full causal attention; use cp_size: 1 or a "
             "sequence of at most ", c.model.attention_chunk_size, " tokens");
}

const Rule kRules[] = {
    {"ep_needs_automodel_moe", "_transformers/capabilities.py::validate_for_mesh", RuleStage::kMesh,
     EpNeedsAutoModelMoe, EpNeedsAutoModelMoeMsg, kNoDp},
    {"pp_needs_pp_plan", "_transformers/capabilities.py::validate_for_mesh", RuleStage::kMesh, PpNeedsPpPlan,
     PpNeedsPpPlanMsg, kNoDp},
    {"cp_no_chunked_attention", "components/distributed/context_parallel/utils.py::attach_context_parallel_hooks",
     RuleStage::kMesh, CpNoChunkedAttention, CpNoChunkedAttentionMsg, kNoDp},
};

}  // namespace

std::span<const Rule> HfModelRules() { return kRules; }

}  // namespace meshplan::rules
