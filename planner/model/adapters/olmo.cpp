// Olmo2ForCausalLM (OLMo 2) and OlmoeForCausalLM (OLMoE) (transformers models/olmo2, olmoe:
// Olmo2Config / OlmoeConfig, modeling_olmo2.py / modeling_olmoe.py).
//  * Attention: no biases (attention_bias false), an RMSNorm over the whole q projection (a·d)
//    and one over the whole k projection (g·d), not per head (Olmo2Attention q_norm / k_norm).
//  * Norms: OLMo 2 normalises after attention and after the MLP (post_attention_layernorm,
//    post_feedforward_layernorm), two RMSNorms of h per layer as the pre-norm models have.
//  * OLMoE: every layer an OlmoeSparseMoeBlock of num_experts SwiGLU experts of
//    intermediate_size, top num_experts_per_tok, a router without bias, no shared experts.
// num_key_value_heads defaults to num_attention_heads (ReadCommon).

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadOlmo(KeyReader& r, ModelSpec& s) {
  ReadHeadDim(r, s);
  s.attention_bias = s.attention_out_bias = r.Bool("attention_bias", false);
  s.qk_norm_full = true;
  if (s.architecture == Architecture::kOlmo2) {
    RejectMoeKeys(r, s);
    return;
  }
  ReadExperts(r, s, "num_experts");
  s.moe_intermediate_size = s.intermediate_size;  // OlmoeMLP experts use intermediate_size
  s.num_dense_layers = 0;
}

}  // namespace meshplan::model
