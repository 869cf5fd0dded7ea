// NeMo AutoModel's rules for its Gated DeltaNet hybrids (Qwen3-Next: components/models/
// qwen3_next; Qwen3.5 MoE: components/models/qwen3_5_moe). Sources under nemo_automodel/ in
// NVIDIA-NeMo/Automodel 36044ad. Both are MoEFSDPSyncMixin MoEs, so EP and PP pass
// _transformers/capabilities.py::validate_for_mesh, and TP is the custom MoE TP path's
// (rules_parallel.cpp moe_no_tensor_parallel: no plan is registered for either).
#include "meshplan/rule_domains.hpp"
#include "rules/rule_util.hpp"

namespace meshplan::rules {
namespace {

const Layout& L(const RuleContext& c) { return c.layout; }

/// Gated DeltaNet layers of the model's pattern.
int64_t GdnLayers(const ModelSpec& m) {
  int64_t n = 0;
  for (const LayerBlock& b : m.layer_pattern) n += b.mixer == MixerKind::kGatedDeltaNet;
  return n;
}

/// CP needs a CP-aware linear-attention module: apply_cp hands the CP mesh to a block's
/// linear_attn only when it has a _cp_mesh attribute (Qwen3.5 MoE's CPAwareGatedDeltaNet,
/// qwen3_5_moe/cp_linear_attn.py, which gathers the shards into dense order around the conv1d
/// and the gated delta rule); Qwen3-Next's Qwen3NextFp32GatedDeltaNet (qwen3_next/layers.py)
/// has none, so apply_cp logs "has linear_attention but no CP-aware linear_attn module;
/// skipping CP setup for this layer" and the layer runs the recurrence over its own
/// load-balanced shard of the sequence as if it were the whole one.
/// Source: components/moe/parallelizer.py::apply_cp (the linear_attention branch).
bool Qwen3NextWithGdn(const ModelSpec& m) { return m.architecture == Architecture::kQwen3Next && GdnLayers(m) > 0; }

bool GdnCpNeedsCpAwareLinearAttn(const RuleContext& c) {
  return L(c).cp == 1 || c.model.architecture != Architecture::kQwen3Next || GdnLayers(c.model) == 0;
}
std::string GdnCpNeedsCpAwareLinearAttnMsg(const RuleContext& c) {
  return Cat("cp_size=", L(c).cp, " on ", c.model.architecture_name, ": apply_cp finds no CP-aware linear_attn on its ",
             GdnLayers(c.model),
             " Gated DeltaNet layers (Qwen3NextFp32GatedDeltaNet has no _cp_mesh) and skips CP setup for them, so each "
             "rank would run the gated delta rule over its own shard of the sequence; use cp_size: 1 (Qwen3.5's "
             "CPAwareGatedDeltaNet supports CP)");
}

const Rule kRules[] = {
    ForModels({"gdn_cp_needs_cp_aware_linear_attn", "components/moe/parallelizer.py::apply_cp", RuleStage::kMesh,
               GdnCpNeedsCpAwareLinearAttn, GdnCpNeedsCpAwareLinearAttnMsg, kNoDp},
              Qwen3NextWithGdn),
};

}  // namespace

std::span<const Rule> AutoModelGdnRules() { return kRules; }

}  // namespace meshplan::rules
