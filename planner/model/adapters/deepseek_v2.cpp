// DeepseekV2ForCausalLM: DeepSeek-V2, DeepSeek-V2-Lite (transformers models/deepseek_v2:
// DeepseekV2Config, modeling_deepseek_v2.py). The layers of DeepSeek-V3 (MLA, q_lora_rank null
// in V2-Lite; first_k_dense_replace dense layers, then MoE every moe_layer_freq with
// n_shared_experts shared experts), but the gate (DeepseekV2MoEGate, softmax top-k) has no
// e_score_correction_bias, and V2 trains no MTP layers. num_key_value_heads defaults to 32
// (unused by MLA's parameters).

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadDeepseekV2(KeyReader& r, ModelSpec& s) {
  ReadDeepseekV3(r, s);
  s.router_bias = false;
}

}  // namespace meshplan::model
