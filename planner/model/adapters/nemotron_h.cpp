// NemotronHForCausalLM: Nemotron-H and Nemotron 3 (Nano), a pattern of single-block layers.
//
// Keys and defaults: transformers' NemotronHConfig (models/nemotron_h/configuration_nemotron_h.py)
// and the modeling code of the Nemotron 3 checkpoints (modeling_nemotron_h.py, NemotronHBlock:
// one RMSNorm then one mixer per layer):
//  * hybrid_override_pattern, one character per layer (its length is num_hidden_layers):
//    'M' a Mamba-2 mixer (NemotronHMamba2Mixer), '*' attention (NemotronHAttention, GQA, no
//    biases), '-' an MLP (NemotronHMLP: up_proj h->f, relu2, down_proj f->h: two matrices),
//    'E' a mixture of experts (NemotronHMoE: n_routed_experts two-matrix experts of
//    moe_intermediate_size, a shared expert of moe_shared_expert_intermediate_size, a router
//    with an e_score_correction_bias). transformers >= 5 may give layers_block_type instead
//    ("mamba", "attention", "mlp", "moe").
//  * Mamba-2: mamba_num_heads (128), mamba_head_dim (64), ssm_state_size (128), n_groups (8),
//    conv_kernel (4), use_conv_bias (true), mamba_proj_bias (false), chunk_size (128, the SSD
//    scan's chunk length).
//  * num_key_value_heads defaults to 8, tie_word_embeddings to false (ReadCommon).
//  * LatentMoE (Nemotron 3 Super / Ultra): moe_latent_size (null: none); NemotronHMoE's
//    fc1_latent_proj h -> l and fc2_latent_proj l -> h, the experts l -> f -> l
//    (Megatron-Core moe_layer.py MoELayer, the bridge's mlp.fc1_latent_proj mapping).
//  * MTP: num_nextn_predict_layers (0) and mtp_hybrid_override_pattern (its blocks, "*E" for
//    Super and Ultra), as NemotronHBridge._hf_mtp_config reads them (Megatron-Bridge 067f987
//    src/megatron/bridge/models/nemotronh/nemotron_h_bridge.py).

#include <string>
#include <vector>

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

namespace {

constexpr int64_t kMaxSize = int64_t{1} << 24;

/// The block of one pattern character, or false for a character Nemotron-H does not have.
bool BlockOf(char ch, LayerBlock& b) {
  switch (ch) {
    case 'M': b = {MixerKind::kMamba2, MlpKind::kNone, 0}; return true;
    case '*': b = {MixerKind::kAttention, MlpKind::kNone, 0}; return true;
    case '-': b = {MixerKind::kNone, MlpKind::kDense, 0}; return true;
    case 'E': b = {MixerKind::kNone, MlpKind::kMoe, 0}; return true;
  }
  return false;
}

/// The same for a layers_block_type entry.
bool BlockOfName(const std::string& name, LayerBlock& b) {
  if (name == "mamba") return BlockOf('M', b);
  if (name == "attention") return BlockOf('*', b);
  if (name == "mlp") return BlockOf('-', b);
  if (name == "moe") return BlockOf('E', b);
  return false;
}

}  // namespace

void ReadNemotronH(KeyReader& r, ModelSpec& s) {
  ReadHeadDim(r, s);
  s.attention_bias = s.attention_out_bias = r.Bool("attention_bias", false);
  if (r.Bool("mlp_bias", false)) r.Fail("mlp_bias", "expected false (MLP biases are not modelled), found true");
  const std::string act = r.Str("mlp_hidden_act", std::string("relu2"));
  if (act != "relu2") r.Fail("mlp_hidden_act", "expected 'relu2' (NemotronHMLP's squared ReLU), found '" + act + "'");
  s.gated_mlp = false;

  // The pattern.
  std::vector<LayerBlock> pattern;
  if (r.HasValue("hybrid_override_pattern")) {
    const std::string p = r.Str("hybrid_override_pattern");
    for (size_t i = 0; i < p.size(); ++i) {
      LayerBlock b;
      if (!BlockOf(p[i], b)) {
        r.Fail("hybrid_override_pattern", "expected only 'M' (Mamba-2), '*' (attention), '-' (MLP) and 'E' (MoE), "
                                          "found '" + std::string(1, p[i]) + "' at position " + std::to_string(i));
      }
      pattern.push_back(b);
    }
  } else if (auto types = r.StrList("layers_block_type")) {
    for (size_t i = 0; i < types->size(); ++i) {
      LayerBlock b;
      if (!BlockOfName((*types)[i], b)) {
        throw InputError(r.ItemLoc("layers_block_type", i), "layers_block_type[" + std::to_string(i) + "]",
                         "expected 'mamba', 'attention', 'mlp' or 'moe', found '" + (*types)[i] + "'");
      }
      pattern.push_back(b);
    }
  } else {
    r.Fail("hybrid_override_pattern", "missing; expected the layer pattern such as \"M-M*-\" (or layers_block_type)");
  }
  if (static_cast<int64_t>(pattern.size()) != s.num_layers) {
    r.Fail(r.HasValue("hybrid_override_pattern") ? "hybrid_override_pattern" : "layers_block_type",
           "expected one entry per layer (num_hidden_layers = " + std::to_string(s.num_layers) + "), found " +
               std::to_string(pattern.size()));
  }
  s.layer_pattern = pattern;

  // Mamba-2 mixer sizes (NemotronHConfig defaults).
  Mamba2Spec& m = s.mamba;
  m.num_heads = r.Int("mamba_num_heads", 1, kMaxSize, 128);
  m.head_dim = r.Int("mamba_head_dim", 1, kMaxSize, 64);
  m.state_size = r.Int("ssm_state_size", 1, kMaxSize, 128);
  m.n_groups = r.Int("n_groups", 1, kMaxSize, 8);
  m.conv_kernel = r.Int("conv_kernel", 1, 1024, 4);
  m.conv_bias = r.Bool("use_conv_bias", true);
  m.chunk_size = r.Int("chunk_size", 1, kMaxSize, 128);
  m.proj_bias = r.Bool("mamba_proj_bias", false);
  if (m.num_heads % m.n_groups != 0) {
    r.Fail("n_groups", "expected a divisor of mamba_num_heads (" + std::to_string(m.num_heads) + "), found " +
                           std::to_string(m.n_groups));
  }

  // MLP and MoE layers.
  int64_t dense = 0, moe = 0;
  for (const LayerBlock& b : pattern) {
    dense += b.mlp == MlpKind::kDense;
    moe += b.mlp == MlpKind::kMoe;
  }
  s.num_dense_layers = dense;
  // MTP depths and their block pattern.
  s.mtp_num_layers = r.Int("num_nextn_predict_layers", 0, 64, 0);
  if (s.mtp_num_layers > 0) {
    if (!r.HasValue("mtp_hybrid_override_pattern")) {
      r.Fail("mtp_hybrid_override_pattern", "missing; expected the MTP block pattern (such as \"*E\") with "
                                            "num_nextn_predict_layers > 0 (NemotronHBridge._hf_mtp_config)");
    }
    const std::string p = r.Str("mtp_hybrid_override_pattern");
    for (size_t i = 0; i < p.size(); ++i) {
      LayerBlock b;
      if (!BlockOf(p[i], b)) {
        r.Fail("mtp_hybrid_override_pattern", "expected only 'M', '*', '-' and 'E', found '" + std::string(1, p[i]) +
                                                  "' at position " + std::to_string(i));
      }
      s.mtp_pattern.push_back(b);
    }
    if (s.mtp_pattern.empty()) r.Fail("mtp_hybrid_override_pattern", "expected at least one block, found \"\"");
  }
  for (const LayerBlock& b : s.mtp_pattern) moe += b.mlp == MlpKind::kMoe;
  if (moe == 0 && r.HasValue("moe_latent_size")) {
    r.Fail("moe_latent_size", "expected null or no key for a pattern without MoE ('E') layers");
  }
  if (moe == 0) return;
  if (r.HasValue("moe_latent_size")) s.moe_latent_size = r.Int("moe_latent_size", 1, kMaxSize);
  ReadExperts(r, s, "n_routed_experts");
  s.moe_intermediate_size = r.Int("moe_intermediate_size", 1, kMaxSize);
  s.num_shared_experts = r.Int("n_shared_experts", 0, 1024, 1);
  // NemotronHMoE: one shared MLP n_shared_experts x moe_shared_expert_intermediate_size wide.
  s.shared_expert_intermediate_size =
      s.num_shared_experts > 0 ? s.num_shared_experts * r.Int("moe_shared_expert_intermediate_size", 1, kMaxSize) : 0;
  s.router_bias = true;  // NemotronHTopkRouter.e_score_correction_bias
}

}  // namespace meshplan::model
