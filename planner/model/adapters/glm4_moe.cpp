// Glm4MoeForCausalLM: GLM-4.5, GLM-4.5-Air, GLM-4.6 (transformers models/glm4_moe:
// Glm4MoeConfig, modeling_glm4_moe.py).
//  * Attention (Glm4MoeAttention): GQA with head_dim, biases on q, k, v when attention_bias
//    (o_proj never), per-head q/k RMSNorm when use_qk_norm (default false); partial RoPE
//    (partial_rotary_factor) changes no parameter count.
//  * MLP: the first first_k_dense_replace layers (default 1) a dense SwiGLU of
//    intermediate_size, the rest Glm4MoeMoE: n_routed_experts SwiGLU experts of
//    moe_intermediate_size, n_shared_experts shared ones (default 1) of the same width, a
//    Glm4MoeTopkRouter with an e_score_correction_bias.
//  * num_nextn_predict_layers (GLM-4.5: 1): MTP layers, outside the main model as DeepSeek-V3's.
//  * num_key_value_heads defaults to 8 (ReadCommon).

#include <string>

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadGlm4Moe(KeyReader& r, ModelSpec& s) {
  constexpr int64_t kMax = int64_t{1} << 24;
  ReadHeadDim(r, s);
  s.attention_bias = r.Bool("attention_bias", false);
  s.attention_out_bias = false;
  s.qk_norm = r.Bool("use_qk_norm", false);
  s.mtp_num_layers = r.Int("num_nextn_predict_layers", 0, 64, 0);
  ReadExperts(r, s, "n_routed_experts");
  s.moe_intermediate_size = r.Int("moe_intermediate_size", 1, kMax);
  s.num_shared_experts = r.Int("n_shared_experts", 0, 1024, 1);
  s.shared_expert_intermediate_size = s.num_shared_experts * s.moe_intermediate_size;
  const int64_t first_dense = r.Int("first_k_dense_replace", 0, s.num_layers, 1);
  s.num_dense_layers = first_dense;
  s.router_bias = true;  // Glm4MoeTopkRouter.e_score_correction_bias
}

}  // namespace meshplan::model
