#pragma once
/// \file model.hpp
/// Model architecture (from a Hugging Face config.json, meshplan's own YAML with the same
/// keys, or a preset in models/) and its parameter counts per component.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "meshplan/diag.hpp"

namespace meshplan {

/// Architectures meshplan can describe, by their HF `architectures[0]` string.
enum class Architecture {
  kLlama,       ///< LlamaForCausalLM
  kMistral,     ///< MistralForCausalLM
  kMixtral,     ///< MixtralForCausalLM
  kQwen2,       ///< Qwen2ForCausalLM
  kQwen3,       ///< Qwen3ForCausalLM
  kQwen3Moe,    ///< Qwen3MoeForCausalLM
  kDeepseekV3,  ///< DeepseekV3ForCausalLM (MLA attention, shared + routed experts)
  kGptOss,      ///< GptOssForCausalLM
};

/// Multi-head latent attention (DeepSeek-V2/V3). All sizes are counts of elements.
struct MlaSpec {
  int64_t q_lora_rank = 0;  ///< 0: no low-rank Q projection (q_lora_rank: null)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

/// A decoder-only transformer as meshplan sees it. Field names follow the HF config keys.
/// For MoE models `intermediate_size` is the dense-layer FFN width (Mixtral and GPT-OSS
/// have no dense layers; there it equals moe_intermediate_size).
struct ModelSpec {
  std::string name;               ///< preset name or file path
  std::string architecture_name;  ///< HF string, e.g. "LlamaForCausalLM"
  Architecture architecture = Architecture::kLlama;
  SourceLoc source;               ///< file the spec came from (line 0)

  int64_t hidden_size = 0;
  int64_t num_layers = 0;            ///< num_hidden_layers (MTP layers excluded)
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;   ///< equals num_attention_heads without GQA
  int64_t head_dim = 0;              ///< hidden_size / heads unless the config sets head_dim
  int64_t intermediate_size = 0;     ///< dense FFN width
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;       ///< bias on q, k, v (Qwen2: q,k,v only; GPT-OSS: q,k,v,o)
  bool attention_out_bias = false;   ///< bias on o_proj
  bool qk_norm = false;              ///< per-head RMSNorm on q and k (Qwen3)
  bool attention_sinks = false;      ///< one learned sink logit per head (GPT-OSS)
  int64_t sliding_window = 0;        ///< 0: none
  int64_t num_sliding_window_layers = 0;
  /// rope_scaling.rope_type (transformers < 5; `type` in older configs) or
  /// rope_parameters.rope_type (transformers >= 5): "yarn", "llama3", "linear", ...;
  /// empty for plain RoPE (null, missing, or "default").
  std::string rope_scaling_type;

  // Mixture of experts. num_experts == 0 means a dense model.
  int64_t num_experts = 0;              ///< routed experts per MoE layer
  int64_t experts_per_token = 0;        ///< top-k
  int64_t moe_intermediate_size = 0;    ///< width of one routed expert
  int64_t num_shared_experts = 0;
  int64_t shared_expert_intermediate_size = 0;  ///< total width of the shared experts
  int64_t num_dense_layers = 0;         ///< layers with a dense MLP (all layers if dense)
  bool router_bias = false;             ///< router linear has a bias (GPT-OSS) or a score-correction bias (DeepSeek-V3)
  bool expert_bias = false;             ///< expert linears have biases (GPT-OSS)

  bool mla = false;
  MlaSpec mla_spec;

  /// Multi-token prediction layers (DeepSeek-V3 num_nextn_predict_layers; 0 for every other
  /// architecture). Not part of num_layers or of ParamCounts' totals, as in the published
  /// parameter counts (DeepSeek-V3: 671B without its 14B MTP module). Megatron-Bridge's
  /// model provider trains them (mtp_num_layers = num_nextn_predict_layers, AutoBridge), each
  /// an MTP block of Megatron-Core's MultiTokenPredictionLayer: two RMSNorms (enorm, hnorm) of
  /// h, eh_proj (2h -> h, no bias), one decoder layer of the model's last layer type, and a
  /// final RMSNorm of h (megatron/core/transformer/multi_token_prediction.py).
  int64_t mtp_num_layers = 0;

  /// Where each config key was read (for messages that point into the user's file).
  std::map<std::string, SourceLoc> field_locs;

  bool is_moe() const { return num_experts > 0; }
  int64_t num_moe_layers() const { return num_layers - num_dense_layers; }
  /// Location of a field for diagnostics; the file with line 0 if unknown.
  SourceLoc Loc(const std::string& field) const;
};

/// Parameter counts (elements, not bytes), by component, summed over all layers.
/// Formulas: Megatron-LM theoretical_memory_usage.py::compute_weight_and_optimizer_memory
/// (megatron.md 3.1) extended with the biases and norms of each HF implementation.
struct ParamCounts {
  int64_t embedding = 0;       ///< vocab_size * hidden_size
  int64_t attention = 0;       ///< all attention projections (+ biases, q/k norms, sinks, MLA norms)
  int64_t dense_mlp = 0;       ///< dense-layer MLPs
  int64_t routed_experts = 0;  ///< all routed experts of all MoE layers
  int64_t shared_experts = 0;
  int64_t router = 0;
  int64_t norms = 0;           ///< per-layer input/post-attention norms + final norm
  int64_t output_head = 0;     ///< 0 when tie_word_embeddings
  int64_t total = 0;
  int64_t active = 0;          ///< per token: routed experts counted top-k / num_experts

  // Per-layer figures used by the cost model.
  int64_t attention_per_layer = 0;
  int64_t dense_mlp_per_layer = 0;     ///< 0 for a model without dense layers
  int64_t expert_per_layer = 0;        ///< ONE routed expert of one MoE layer
  int64_t shared_per_layer = 0;        ///< shared experts of one MoE layer
  int64_t router_per_layer = 0;
  int64_t norms_per_layer = 0;         ///< the two per-layer norms
};

/// Counts parameters per component. Throws nothing (spec must be valid).
ParamCounts CountParams(const ModelSpec& model);

/// Parses a HF config.json (JSON) or meshplan model YAML (same keys) held in `text`.
/// `filename` is used in messages only. Unknown architecture, missing or out-of-range
/// fields, inconsistent MoE fields: throws InputError with file, line, column and field.
ModelSpec ParseModel(std::string_view text, const std::string& filename);

/// A preset name (see ListModelPresets) or a path to a config.json / .yaml file.
/// Throws InputError for an unknown name (listing the presets) or a bad file.
ModelSpec LoadModel(const std::string& name_or_path);

/// Preset names of models/ (embedded), sorted.
std::vector<std::string> ListModelPresets();

/// HF architecture strings meshplan supports, in declaration order.
std::vector<std::string> SupportedArchitectures();

/// "LlamaForCausalLM" etc.
const char* ArchitectureName(Architecture a);

}  // namespace meshplan
