// Qwen3NextForCausalLM (Qwen3-Next) and Qwen3_5MoeForConditionalGeneration's text backbone
// (Qwen3.5 MoE; also its text-only class Qwen3_5MoeForCausalLM): a pattern of Gated DeltaNet
// and gated full-attention layers, each followed by a MoE with a shared expert.
//
// Keys and defaults: transformers' Qwen3NextConfig (models/qwen3_next/configuration_qwen3_next.py)
// and Qwen3_5MoeTextConfig (models/qwen3_5_moe), the layers of modeling_qwen3_next.py:
//  * layer_types: "linear_attention" (Qwen3NextGatedDeltaNet) or "full_attention"
//    (Qwen3NextAttention); without it every full_attention_interval-th layer (default 4) is
//    full attention: (i + 1) % interval == 0.
//  * Gated DeltaNet: linear_num_key_heads (16), linear_num_value_heads (32),
//    linear_key_head_dim (128), linear_value_head_dim (128), linear_conv_kernel_dim (4).
//  * Full attention: GQA with head_dim (256), per-head q/k RMSNorm, and a sigmoid output gate
//    (q_proj twice as wide; Qwen3.5's attn_output_gate, default true); no biases unless
//    attention_bias. Partial RoPE (partial_rotary_factor) changes no parameter count.
//  * MLP: Qwen3NextSparseMoeBlock on layer i unless i is in mlp_only_layers or
//    (i + 1) % decoder_sparse_step != 0 (a dense Qwen3NextMLP of intermediate_size there):
//    num_experts (512) SwiGLU experts of moe_intermediate_size (512), top num_experts_per_tok
//    (10), one shared expert of shared_expert_intermediate_size (512) with a sigmoid gate h -> 1.
//  * mtp_num_hidden_layers (1): the MTP layer is not part of the main model's counts.
//  * num_key_value_heads defaults to 2, tie_word_embeddings to false (ReadCommon).

#include <algorithm>
#include <string>
#include <vector>

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadQwen3Next(KeyReader& r, ModelSpec& s) {
  constexpr int64_t kMax = int64_t{1} << 24;
  ReadHeadDim(r, s);
  s.attention_bias = s.attention_out_bias = r.Bool("attention_bias", false);
  s.qk_norm = true;
  s.attention_output_gate = s.architecture == Architecture::kQwen3Next || r.Bool("attn_output_gate", true);

  GatedDeltaNetSpec& g = s.gdn;
  g.num_key_heads = r.Int("linear_num_key_heads", 1, kMax, 16);
  g.num_value_heads = r.Int("linear_num_value_heads", 1, kMax, 32);
  g.key_head_dim = r.Int("linear_key_head_dim", 1, kMax, 128);
  g.value_head_dim = r.Int("linear_value_head_dim", 1, kMax, 128);
  g.conv_kernel = r.Int("linear_conv_kernel_dim", 1, 1024, 4);
  if (g.num_value_heads % g.num_key_heads != 0) {
    r.Fail("linear_num_value_heads", "expected a multiple of linear_num_key_heads (" +
                                         std::to_string(g.num_key_heads) + "), found " +
                                         std::to_string(g.num_value_heads));
  }

  // The layer pattern: mixers from layer_types (or full_attention_interval), MLPs from the MoE keys.
  const int64_t interval = r.Int("full_attention_interval", 1, s.num_layers, 4);
  std::vector<LayerBlock> pattern(size_t(s.num_layers));
  if (auto types = r.StrList("layer_types")) {
    if (int64_t(types->size()) != s.num_layers) {
      r.Fail("layer_types", "expected one entry per layer (num_hidden_layers = " + std::to_string(s.num_layers) +
                                "), found " + std::to_string(types->size()));
    }
    for (size_t i = 0; i < types->size(); ++i) {
      const std::string& t = (*types)[i];
      if (t == "linear_attention") {
        pattern[i].mixer = MixerKind::kGatedDeltaNet;
      } else if (t != "full_attention") {
        throw InputError(r.ItemLoc("layer_types", i), "layer_types[" + std::to_string(i) + "]",
                         "expected 'linear_attention' or 'full_attention', found '" + t + "'");
      }
    }
  } else {
    for (int64_t i = 0; i < s.num_layers; ++i) {
      if ((i + 1) % interval != 0) pattern[size_t(i)].mixer = MixerKind::kGatedDeltaNet;
    }
  }
  ReadExperts(r, s, "num_experts");
  s.moe_intermediate_size = r.Int("moe_intermediate_size", 1, kMax);
  s.shared_expert_intermediate_size = r.Int("shared_expert_intermediate_size", 0, kMax, 512);
  s.num_shared_experts = s.shared_expert_intermediate_size > 0 ? 1 : 0;
  s.shared_expert_gate = s.num_shared_experts > 0;
  const int64_t step = r.Int("decoder_sparse_step", 1, s.num_layers, 1);
  const std::vector<int64_t> mlp_only = r.IntList("mlp_only_layers", 0, s.num_layers - 1);
  int64_t dense = 0;
  for (int64_t i = 0; i < s.num_layers; ++i) {
    const bool only = std::find(mlp_only.begin(), mlp_only.end(), i) != mlp_only.end();
    const bool moe = !only && (i + 1) % step == 0;
    pattern[size_t(i)].mlp = moe ? MlpKind::kMoe : MlpKind::kDense;
    dense += !moe;
  }
  if (dense > 0 && s.intermediate_size == 0) {
    r.Fail("intermediate_size", "missing; expected the dense MLP width of the " + std::to_string(dense) +
                                    " layers that mlp_only_layers / decoder_sparse_step leave without experts");
  }
  s.num_dense_layers = dense;
  s.layer_pattern = pattern;
  r.Get("mtp_num_hidden_layers");  // the MTP layer: outside the main model's counts
}

}  // namespace meshplan::model
