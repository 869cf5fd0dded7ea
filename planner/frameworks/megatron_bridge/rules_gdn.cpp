// Rules of Megatron-Core's Gated DeltaNet layers (Megatron-Bridge's Qwen3-Next and Qwen3.5
// bridges, qwen/qwen3_next_bridge.py and qwen/qwen35_bridge.py at 067f987, build GPTModel with
// experimental_attention_variant = "gated_delta_net"). Sources at Megatron-LM d98e8a6:
// megatron/core/transformer/transformer_config.py (__post_init__, the gated_delta_net branch)
// and megatron/core/ssm/gated_delta_net/common.py (_GDNBase: q, k and v heads split over TP,
// then over CP by the all-to-all a2a_cp_to_hp). Messages quote the framework's own.
#include "frameworks/megatron_bridge/rule_util.hpp"

namespace meshplan::rules {
namespace {

using namespace mb;

bool HasGdn(const ModelSpec& m) {
  for (const LayerBlock& b : m.layer_pattern) {
    if (b.mixer == MixerKind::kGatedDeltaNet) return true;
  }
  return false;
}

/// Each TP x CP rank owns whole key (q and k) heads. Source: transformer_config.py:1501-1505
/// (assert linear_num_key_heads % (tensor_model_parallel_size * context_parallel_size) == 0).
bool GdnKeyHeads(const RuleContext& c) {
  return !HasGdn(c.model) || c.model.gdn.num_key_heads % (L(c).tp * L(c).cp) == 0;
}
std::string GdnKeyHeadsMsg(const RuleContext& c) {
  return Cat("self.linear_num_key_heads=", c.model.gdn.num_key_heads, " must be a multiple of (",
             "self.tensor_model_parallel_size=", L(c).tp, " * self.context_parallel_size=", L(c).cp,
             "): each TP x CP rank owns whole Gated DeltaNet key heads");
}

/// Each TP x CP rank owns whole value heads. Source: transformer_config.py:1506-1509
/// (assert linear_num_value_heads % (tensor_model_parallel_size * context_parallel_size) == 0).
bool GdnValueHeads(const RuleContext& c) {
  return !HasGdn(c.model) || c.model.gdn.num_value_heads % (L(c).tp * L(c).cp) == 0;
}
std::string GdnValueHeadsMsg(const RuleContext& c) {
  return Cat("self.linear_num_value_heads=", c.model.gdn.num_value_heads, " must be a multiple of (",
             "self.tensor_model_parallel_size=", L(c).tp, " * self.context_parallel_size=", L(c).cp,
             "): each TP x CP rank owns whole Gated DeltaNet value heads");
}

// Both rows concern Gated DeltaNet layers: they pass on other models.
const Rule kRules[] = {
    ForModels(ReadsPartAxesOnly({"mb_gdn_tp_cp_key_heads", "MCore transformer/transformer_config.py:1501-1505",
                                 RuleStage::kMesh, GdnKeyHeads, GdnKeyHeadsMsg, false}),
              HasGdn),
    ForModels(ReadsPartAxesOnly({"mb_gdn_tp_cp_value_heads", "MCore transformer/transformer_config.py:1506-1509",
                                 RuleStage::kMesh, GdnValueHeads, GdnValueHeadsMsg, false}),
              HasGdn),
};

}  // namespace

std::span<const Rule> MegatronGdnRules() { return kRules; }

}  // namespace meshplan::rules
