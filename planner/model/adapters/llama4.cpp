// Llama4ForConditionalGeneration's text backbone (text_config) and Llama4ForCausalLM
// (transformers models/llama4: Llama4TextConfig, modeling_llama4.py).
//  * Attention (Llama4TextAttention): GQA with head_dim (128), no biases unless
//    attention_bias. Its q/k norm (Llama4TextL2Norm, use_qk_norm) has no weight: no parameter.
//  * Layer types: no_rope_layers lists 1 for a layer with RoPE and 0 for a NoPE layer; an empty
//    or missing list is Llama4TextConfig's default, every no_rope_layer_interval-th (4) layer
//    NoPE ((i + 1) % 4 == 0). RoPE layers attend in chunks of attention_chunk_size (8192)
//    tokens ("chunked_attention"), NoPE layers over the whole causal context
//    ("full_attention"); layer_types, when given, overrides that.
//  * MLP: the layers of moe_layers (default range(interleave_moe_layer_step - 1, L, step):
//    Scout every layer, Maverick every second) are Llama4TextMoe: num_local_experts SwiGLU
//    experts of intermediate_size, one shared expert of intermediate_size, a bias-free router
//    h -> experts; the others a dense SwiGLU of intermediate_size_mlp (16384).
//  * Norms: input and post-attention RMSNorms per layer, a final norm; untied embeddings.
//  * num_key_value_heads defaults to 8 (ReadCommon).

#include <algorithm>
#include <string>
#include <vector>

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadLlama4(KeyReader& r, ModelSpec& s) {
  constexpr int64_t kMax = int64_t{1} << 24;
  ReadHeadDim(r, s);
  s.attention_bias = s.attention_out_bias = r.Bool("attention_bias", false);
  r.Bool("use_qk_norm", true);  // Llama4TextL2Norm: no weight, no parameter
  const int64_t L = s.num_layers;

  // MoE layers.
  ReadExperts(r, s, "num_local_experts");
  const int64_t expert_width = s.intermediate_size;
  s.moe_intermediate_size = expert_width;
  s.num_shared_experts = 1;  // Llama4TextMoe.shared_expert (Llama4TextMLP of intermediate_size)
  s.shared_expert_intermediate_size = expert_width;
  const int64_t step = r.Int("interleave_moe_layer_step", 1, L, 1);
  std::vector<int64_t> moe_layers = r.IntList("moe_layers", 0, L - 1);
  if (!r.HasValue("moe_layers")) {
    for (int64_t i = step - 1; i < L; i += step) moe_layers.push_back(i);
  }
  std::sort(moe_layers.begin(), moe_layers.end());
  if (std::adjacent_find(moe_layers.begin(), moe_layers.end()) != moe_layers.end()) {
    r.Fail("moe_layers", "expected each layer index at most once");
  }
  s.num_dense_layers = L - int64_t(moe_layers.size());
  if (s.num_dense_layers > 0) s.intermediate_size = r.Int("intermediate_size_mlp", 1, kMax, 16384);
  else r.Get("intermediate_size_mlp");

  // RoPE / NoPE layers and chunked attention.
  std::vector<int64_t> rope = r.IntList("no_rope_layers", 0, 1);
  if (rope.empty()) {
    const int64_t interval = r.Int("no_rope_layer_interval", 1, L + 1, 4);
    for (int64_t i = 0; i < L; ++i) rope.push_back((i + 1) % interval != 0);
  } else if (int64_t(rope.size()) != L) {
    r.Fail("no_rope_layers", "expected one entry (1: RoPE, 0: NoPE) per layer, " + std::to_string(L) + ", found " +
                                 std::to_string(rope.size()));
  }
  int64_t chunked = 0;
  for (int64_t v : rope) chunked += v;
  s.num_nope_layers = L - chunked;
  if (auto types = r.StrList("layer_types")) {
    if (int64_t(types->size()) != L) {
      r.Fail("layer_types", "expected one entry per layer, " + std::to_string(L) + ", found " +
                                std::to_string(types->size()));
    }
    chunked = 0;
    for (size_t i = 0; i < types->size(); ++i) {
      const std::string& t = (*types)[i];
      if (t != "chunked_attention" && t != "full_attention") {
        throw InputError(r.ItemLoc("layer_types", i), "layer_types",
                         "expected \"chunked_attention\" or \"full_attention\", found \"" + t + "\"");
      }
      chunked += t == "chunked_attention";
    }
  }
  // A null attention_chunk_size: no chunking (every layer full causal); missing: 8192.
  const YAML::Node chunk = r.Get("attention_chunk_size");
  if (chunk && chunk.IsNull()) chunked = 0;
  s.attention_chunk_size = r.Int("attention_chunk_size", 1, int64_t{1} << 40, 8192);
  s.num_chunked_attention_layers = chunked;
  if (chunked == 0) s.attention_chunk_size = 0;
}

}  // namespace meshplan::model
