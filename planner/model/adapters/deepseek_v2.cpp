// DeepseekV2ForCausalLM: DeepSeek-V2, DeepSeek-V2-Lite (transformers models/deepseek_v2:
// DeepseekV2Config, modeling_deepseek_v2.py). The layers of DeepSeek-V3 (MLA, q_lora_rank null
// in V2-Lite; first_k_dense_replace dense layers, then MoE every moe_layer_freq with
// n_shared_experts shared experts), but the gate (DeepseekV2MoEGate, softmax top-k) has no
// e_score_correction_bias, and V2 trains no MTP layers. Its groups (n_group / topk_group,
// DeepseekV2Config defaults null) limit the routing only under topk_method
// "group_limited_greedy" (DeepSeek-V2; V2-Lite's "greedy" ignores them). num_key_value_heads defaults to 32
// (unused by MLA's parameters).

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadDeepseekV2(KeyReader& r, ModelSpec& s) {
  ReadDeepseekV3(r, s);
  s.router_bias = false;
  if (s.is_moe() && (!r.HasValue("topk_method") || r.Str("topk_method") != "group_limited_greedy")) {
    s.router_num_groups = s.router_group_topk = 1;
  }
}

}  // namespace meshplan::model
