// DeepseekV4ForCausalLM: DeepSeek-V4 Flash / Pro. Every layer is DeepSeek-V4's hybrid attention
// and a MoE; the residual stream is hc_mult wide (manifold-constrained hyper-connections).
//
// Keys and defaults: NeMo AutoModel's DeepseekV4Config (components/models/deepseek_v4/
// config.py, defaults = the Flash values) and Megatron-Bridge's DeepSeekV4Bridge
// (models/deepseek/deepseek_v4_bridge.py provider_bridge, _dsv4_compress_ratios,
// _dsv4_num_hash_layers). Read at NVIDIA-NeMo/Automodel 36044ad3d139363fb6c73c24af2e7c6b65ec52f6
// (config.py, layers.py, model.py), NVIDIA-NeMo/Megatron-Bridge
// 067f987df03b8355b03192d88d70f1709fedf51a (deepseek_v4_bridge.py, training/utils/flop_utils.py,
// perf_recipes/deepseek/gb200/deepseek_v4.py, examples/models/deepseek_v4/README.md) and
// NVIDIA/Megatron-LM dev d48bd6be0a85cc0d6d3cc71e8750cf357cc6bdb1 (transformer_config.py,
// experimental_attention_variant/deepseek_v4_hybrid_attention.py, hyper_connection.py: the DSv4
// attention is on Megatron-LM's dev branch only; the commit Megatron-Bridge main pins, 2a75ac1,
// has none). The committed config (tests/data/models/arch/deepseek-v4-flash.json, the preset
// models/deepseek-v4-flash.json) is a third-party quote of DeepSeek-V4-Flash-Base's
// config.json, its values equal to DeepseekV4Config's defaults. There is no intermediate_size
// key (every layer is MoE): it is set to moe_intermediate_size, AutoModel's MoEConfig inter_dim.
// Tensors as AutoModel's layers.py:
//  * Attention (DeepseekV4Attention): wq_a h -> q_lora_rank, q_norm, wq_b -> a·head_dim; wkv
//    h -> head_dim (one KV head, num_key_value_heads 1), kv_norm; wo_a grouped: o_groups groups
//    of a·head_dim/o_groups -> o_lora_rank; wo_b o_groups·o_lora_rank -> h; sinks (a).
//  * compress_ratios[i] per layer (num_hidden_layers entries, then the MTP layers'; or
//    layer_types with compress_rates): 0 the sliding window (sliding_window) alone; 4
//    compressed sparse attention (a Compressor in overlap mode, 2·head_dim wide, plus the
//    lightning Indexer of index_n_heads x index_head_dim over the q_lora latent); 128 heavily
//    compressed attention (a Compressor head_dim wide).
//  * MoE in every layer: n_routed_experts SwiGLU experts of moe_intermediate_size, top
//    num_experts_per_tok, n_shared_experts shared, a router with its expert bias (noaux_tc);
//    the first num_hash_layers route by a token-id table (a buffer, no parameters).
//  * Hyper-connections (DeepseekV4HyperConnection), two per layer: fn (2 + m)·m x m·h, base
//    (2 + m)·m, scale 3; the output head's contraction (DeepseekV4HyperHead) m x m·h + m + 1.
//  * num_nextn_predict_layers (1): the MTP layers, outside the main model's counts.

#include <algorithm>
#include <string>
#include <vector>

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadDeepseekV4(KeyReader& r, ModelSpec& s) {
  constexpr int64_t kMax = int64_t{1} << 24;
  s.head_dim = r.Int("head_dim", 1, kMax, 512);
  DeepseekV4Spec& v = s.dsv4;
  v.q_lora_rank = r.Int("q_lora_rank", 1, kMax, 1024);
  v.o_lora_rank = r.Int("o_lora_rank", 1, kMax, 1024);
  v.o_groups = r.Int("o_groups", 1, kMax, 8);
  v.index_n_heads = r.Int("index_n_heads", 1, kMax, 64);
  v.index_head_dim = r.Int("index_head_dim", 1, kMax, 128);
  v.index_topk = r.Int("index_topk", 1, kMax, 512);
  v.hc_mult = r.Int("hc_mult", 1, 64, 4);
  if ((s.num_attention_heads * s.head_dim) % v.o_groups != 0) {
    r.Fail("o_groups", "expected a divisor of num_attention_heads x head_dim (" +
                           std::to_string(s.num_attention_heads * s.head_dim) + "), found " +
                           std::to_string(v.o_groups));
  }
  v.qk_rope_head_dim = r.Int("qk_rope_head_dim", 1, s.head_dim, 64);
  s.sliding_window = r.Int("sliding_window", 1, kMax, 128);
  // DeepseekV4Config's defaults: 256 routed experts, top 6 (ReadExperts has none).
  s.num_experts = r.Int("n_routed_experts", 1, 1 << 16, 256);
  s.experts_per_token = r.Int("num_experts_per_tok", 1, s.num_experts, std::min<int64_t>(6, s.num_experts));
  s.moe_intermediate_size = r.Int("moe_intermediate_size", 1, kMax, 2048);
  // No dense layers and no intermediate_size key: AutoModel's MoEConfig takes inter_dim =
  // moe_intermediate_size (deepseek_v4/model.py DeepseekV4Model moe_defaults).
  if (!r.HasValue("intermediate_size")) s.intermediate_size = s.moe_intermediate_size;
  s.num_shared_experts = r.Int("n_shared_experts", 0, 64, 1);
  s.shared_expert_intermediate_size = s.num_shared_experts * s.moe_intermediate_size;
  s.router_bias = true;  // noaux_tc's expert bias
  v.num_hash_layers = r.Int("num_hash_layers", 0, s.num_layers, 3);

  // compress_ratios (the bridge's legacy key) or layer_types + compress_rates (transformers').
  std::vector<int64_t> ratios = r.IntList("compress_ratios", 0, 1 << 20);
  if (ratios.empty()) {
    // compress_rates maps a layer type to its ratio (the bridge's _dsv4_compress_ratios reads
    // it first); the types it does not name take the bridge's defaults, 4 and 128.
    int64_t csa = 4, hca = 128;
    if (const YAML::Node rates = r.Get("compress_rates"); rates && rates.IsMap()) {
      auto rate = [&](const char* type, int64_t& out) {
        if (!rates[type]) return;
        try {
          out = rates[type].as<int64_t>();
        } catch (const YAML::Exception&) {
          r.Fail("compress_rates", std::string("expected an integer ratio for '") + type + "', found '" +
                                       rates[type].as<std::string>("?") + "'");
        }
      };
      rate("compressed_sparse_attention", csa);
      rate("heavily_compressed_attention", hca);
    }
    if (auto types = r.StrList("layer_types")) {
      for (size_t i = 0; i < types->size(); ++i) {
        const std::string& t = (*types)[i];
        if (t == "sliding_attention") ratios.push_back(0);
        else if (t == "compressed_sparse_attention") ratios.push_back(csa);
        else if (t == "heavily_compressed_attention") ratios.push_back(hca);
        else {
          throw InputError(r.ItemLoc("layer_types", i), "layer_types[" + std::to_string(i) + "]",
                           "expected 'sliding_attention', 'compressed_sparse_attention' or "
                           "'heavily_compressed_attention', found '" + t + "'");
        }
      }
    }
  }
  if (int64_t(ratios.size()) < s.num_layers) {
    r.Fail("compress_ratios", "expected at least one ratio per layer (num_hidden_layers = " +
                                  std::to_string(s.num_layers) + "), found " + std::to_string(ratios.size()) +
                                  " (DeepSeek-V4 needs per-layer compression ratios: compress_ratios, or "
                                  "layer_types)");
  }
  std::vector<LayerBlock> pattern(size_t(s.num_layers));
  for (int64_t i = 0; i < s.num_layers; ++i) {
    const int64_t c = ratios[size_t(i)];
    if (c != 0 && c != 4 && c != 128) {
      r.Fail("compress_ratios", "expected 0, 4 or 128 at index " + std::to_string(i) + " (the ratios "
                                "AutoModel's DeepseekV4Compressor and Megatron-Bridge's bridge build), found " +
                                    std::to_string(c));
    }
    pattern[size_t(i)] = {MixerKind::kDeepseekV4Attention, MlpKind::kMoe, s.sliding_window, c};
  }
  s.num_dense_layers = 0;
  s.layer_pattern = pattern;
  // MTP: num_nextn_predict_layers (default 1) depths of one DeepSeek-V4 attention block (its
  // ratio the entry after the main layers', 0 when compress_ratios stops there: the bridge's
  // _dsv4_compress_ratios appends 0) with its MoE, one layer as the main pattern's.
  s.mtp_num_layers = r.Int("num_nextn_predict_layers", 0, 64, 1);
  if (s.mtp_num_layers > 0) {
    const int64_t c = int64_t(ratios.size()) > s.num_layers ? ratios[size_t(s.num_layers)] : 0;
    s.mtp_pattern = {{MixerKind::kDeepseekV4Attention, MlpKind::kMoe, s.sliding_window, c}};
  }
  for (const char* key : {"compress_rates", "hc_sinkhorn_iters", "hc_eps",
                          "compress_rope_theta", "index_topk", "swiglu_limit", "scoring_func", "topk_method",
                          "routed_scaling_factor", "norm_topk_prob", "rope_scaling", "rope_theta",
                          "attention_bias", "attention_dropout", "mlp_layer_types"}) {
    r.Get(key);
  }
}

}  // namespace meshplan::model
