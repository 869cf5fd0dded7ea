#pragma once
// Helpers shared by the Megatron-Bridge rule files (megatron_*.cpp).
#include <numeric>
#include <string>

#include "meshplan/rule_domains.hpp"
#include "rules/rule_util.hpp"

namespace meshplan::rules {

/// Megatron-Bridge rule groups, concatenated by megatron_registry.cpp in check order.
std::span<const Rule> MegatronMeshRules();
std::span<const Rule> MegatronLayoutRules();  ///< a recipe's pipeline_model_parallel_layout
std::span<const Rule> MegatronHybridRules();  ///< Mamba-2 and hybrid-pattern rows (rules_hybrid.cpp)
std::span<const Rule> MegatronGdnRules();  ///< Gated DeltaNet rows (rules_gdn.cpp)
std::span<const Rule> MegatronDsv4Rules();  ///< DeepSeek-V4 attention and hash-routed MoE rows (rules_dsv4.cpp)
std::span<const Rule> MegatronDpRules();
std::span<const Rule> MegatronCpRules();  ///< cp_comm_type and hierarchical CP sizes (rules_cp.cpp)
std::span<const Rule> MegatronFindingRules();  ///< warning and silently-off rows (frameworks/megatron_bridge/rules_findings.cpp)

namespace mb {

inline const Layout& L(const RuleContext& c) { return c.layout; }

/// Megatron FSDP is on if either flag is (MB config.py:1065-1069 sets both then).
inline bool Mfsdp(const Layout& l) { return l.mb.use_megatron_fsdp || l.mb.dist_use_megatron_fsdp == Tri::kTrue; }
inline bool Fsdp2(const Layout& l) { return l.mb.use_torch_fsdp2; }

/// Expert data-parallel size W / (ETP * EP * PP), 0 if it does not divide.
inline int64_t Edp(const RuleContext& c) {
  const Layout& l = c.layout;
  const int64_t n = l.EffectiveEtp() * l.ep * l.pp;
  return n > 0 && c.setup.num_gpus % n == 0 ? c.setup.num_gpus / n : 0;
}

/// Decoder layers counted by the pipeline split: L, plus embedding and loss when accounted.
inline int64_t SplitLayers(const RuleContext& c) {
  return domain::MegatronSplitLayers(c.model.num_layers, c.layout.pp_split);
}

/// Micro-batches per step M = global_batch / (micro_batch_size * dp) (0 if not whole).
inline int64_t NumMicrobatches(const RuleContext& c) {
  const int64_t mbs = c.layout.micro_batch(), dp = c.layout.dp;
  return domain::GlobalBatchDivides(c.setup.global_batch, mbs, dp) ? c.setup.global_batch / (mbs * dp) : 0;
}

/// Whether Megatron-Bridge builds Megatron-Core's HybridModel for the model: a layer pattern
/// with Mamba-2 mixers (its NemotronH providers). The Gated DeltaNet hybrids (Qwen3-Next,
/// Qwen3.5: qwen/qwen3_next_bridge.py, qwen/qwen35_bridge.py) build GPTModel, whose
/// TransformerBlock splits, interleaves and lays out layers as for the flat models.
inline bool BuildsHybridModel(const ModelSpec& m) {
  for (const LayerBlock& b : m.layer_pattern) {
    if (b.mixer == MixerKind::kMamba2) return true;
  }
  return false;
}

inline const char* OnOff(bool b) { return b ? "true" : "false"; }
inline const char* TriName(Tri t) { return t == Tri::kUnset ? "unset" : t == Tri::kTrue ? "true" : "false"; }

}  // namespace mb
}  // namespace meshplan::rules
