// Gemma2ForCausalLM and Gemma3ForCausalLM (transformers models/gemma2, gemma3: Gemma2Config,
// Gemma3TextConfig, modeling_gemma2.py / modeling_gemma3.py).
//  * Attention: GQA with head_dim (256 in the published configs), no biases unless
//    attention_bias; Gemma 3 adds a per-head RMSNorm on q and k (Gemma3Attention q_norm, k_norm).
//    Logit soft-capping and query_pre_attn_scalar change no parameter count.
//  * Sliding-window layers: layer_types where given; else Gemma 2 slides on the even layers
//    (Gemma2DecoderLayer: is_sliding = not layer_idx % 2) and Gemma 3 on every layer but each
//    sliding_window_pattern-th (default 6: (i + 1) % 6 != 0); sliding_window default 4096.
//  * MLP: GeGLU (gate_proj, up_proj, down_proj: three matrices, as SwiGLU).
//  * Norms: four RMSNorms per layer (sandwich_norms).
//  * tie_word_embeddings defaults to true; num_key_value_heads to 4 (ReadCommon).

#include <string>

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadGemma(KeyReader& r, ModelSpec& s) {
  ReadHeadDim(r, s);
  s.attention_bias = s.attention_out_bias = r.Bool("attention_bias", false);
  s.tie_word_embeddings = r.Bool("tie_word_embeddings", true);  // Gemma2Config / Gemma3TextConfig default
  s.sandwich_norms = true;
  const bool gemma3 = s.architecture == Architecture::kGemma3;
  s.qk_norm = gemma3;
  const int64_t window = r.Int("sliding_window", 1, int64_t{1} << 40, 4096);
  int64_t sliding = 0;
  if (auto types = r.StrList("layer_types")) {
    sliding = CountSlidingLayers(r, s, *types);
  } else if (gemma3) {
    const int64_t pattern = r.Int("sliding_window_pattern", 1, s.num_layers + 1, 6);
    for (int64_t i = 0; i < s.num_layers; ++i) sliding += (i + 1) % pattern != 0;
  } else {
    sliding = (s.num_layers + 1) / 2;
  }
  s.sliding_window = sliding > 0 ? window : 0;
  s.num_sliding_window_layers = sliding;
  RejectMoeKeys(r, s);
}

}  // namespace meshplan::model
