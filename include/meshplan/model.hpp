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
  kNemotronH,   ///< NemotronHForCausalLM (Nemotron-H, Nemotron 3: Mamba-2 + attention + MLP/MoE blocks)
  kGlm4Moe,     ///< Glm4MoeForCausalLM (GLM-4.5, GLM-4.5-Air, GLM-4.6)
  kDeepseekV2,  ///< DeepseekV2ForCausalLM (DeepSeek-V2, V2-Lite: MLA, softmax router without bias)
  kPhi3,        ///< Phi3ForCausalLM (Phi-3, Phi-4)
  kGranite,     ///< GraniteForCausalLM (IBM Granite 3)
  kOlmo2,       ///< Olmo2ForCausalLM (OLMo 2)
  kOlmoe,       ///< OlmoeForCausalLM (OLMoE)
  kGemma2,      ///< Gemma2ForCausalLM (Gemma 2)
  kGemma3,      ///< Gemma3ForCausalLM (Gemma 3 text-only: 1B) and Gemma3ForConditionalGeneration's text_config
  kQwen3Next,   ///< Qwen3NextForCausalLM (Gated DeltaNet + gated full attention every 4th layer, MoE + shared expert)
  kQwen3_5Moe,  ///< Qwen3_5MoeForConditionalGeneration (Qwen3.5 MoE: Qwen3-Next's text backbone under text_config)
  kDeepseekV32, ///< DeepseekV32ForCausalLM (DeepSeek-V3.2: DeepSeek-V3 with the DSA lightning indexer)
  kDeepseekV4,  ///< DeepseekV4ForCausalLM (DeepSeek-V4 Flash / Pro: hybrid compressed attention, hyper-connections)
  kLlama4,      ///< Llama4ForConditionalGeneration's text_config (Llama 4 Scout, Maverick: chunked attention, NoPE layers, interleaved MoE + shared expert)
  /// No Hugging Face architecture meshplan implements: a generic dense or MoE decoder (GQA
  /// attention, SwiGLU MLP, RMSNorm) from the standard config fields. Reached only by asking:
  /// --generic-decoder on an unsupported config, a shape-only model YAML
  /// (`architecture: generic`), or a published-runs row's shape columns. ModelSpec::generic_note
  /// says so in every output.
  kGeneric,
};

/// Multi-head latent attention (DeepSeek-V2/V3). All sizes are counts of elements.
struct MlaSpec {
  int64_t q_lora_rank = 0;  ///< 0: no low-rank Q projection (q_lora_rank: null)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

/// The token mixer of one layer of a layer pattern.
enum class MixerKind {
  kNone,       ///< no mixer: an MLP-only layer (Nemotron-H's '-' and 'E')
  kAttention,  ///< softmax attention: MHA / GQA / MQA by num_key_value_heads, MLA where ModelSpec::mla
  kMamba2,     ///< Mamba-2 SSM mixer (ModelSpec::mamba)
  kGatedDeltaNet,  ///< Gated DeltaNet linear attention (ModelSpec::gdn; Qwen3-Next, Qwen3.5)
  /// DeepSeek-V4's hybrid attention (ModelSpec::dsv4): MQA over a sliding window plus, by
  /// LayerBlock::compress_ratio, compressed sparse (4) or heavily compressed (128) attention
  kDeepseekV4Attention,
};
/// The MLP of one layer of a layer pattern.
enum class MlpKind {
  kNone,   ///< no MLP: a mixer-only layer (Nemotron-H's 'M' and '*')
  kDense,  ///< intermediate_size wide (gated or not: ModelSpec::gated_mlp)
  kMoe,    ///< routed experts (+ shared experts where the model has them)
};
/// One layer of a layer pattern: its mixer, its MLP, and one RMSNorm before each of them.
struct LayerBlock {
  MixerKind mixer = MixerKind::kAttention;
  MlpKind mlp = MlpKind::kDense;
  int64_t sliding_window = 0;  ///< attention only; 0 = full causal attention
  int64_t compress_ratio = 0;  ///< kDeepseekV4Attention only: compress_ratios[i] (0 = the window alone)
};

/// Mamba-2 mixer sizes (Megatron-Core megatron/core/ssm/mamba_mixer.py MambaMixer; the keys of
/// transformers' NemotronHConfig). Counts of elements.
struct Mamba2Spec {
  int64_t num_heads = 0;    ///< mamba_num_heads (nheads)
  int64_t head_dim = 0;     ///< mamba_head_dim (d_inner = num_heads · head_dim)
  int64_t state_size = 0;   ///< ssm_state_size (d_state)
  int64_t n_groups = 0;     ///< n_groups (ngroups of B and C)
  int64_t conv_kernel = 4;  ///< conv_kernel (d_conv)
  bool conv_bias = true;    ///< use_conv_bias
  bool proj_bias = false;   ///< mamba_proj_bias / use_bias: biases on in_proj and out_proj
  /// chunk_size: the SSD scan's chunk length Q (Megatron-Core MambaMixer chunk_size = 128;
  /// NemotronHConfig chunk_size = 128). Tokens.
  int64_t chunk_size = 128;
  int64_t d_inner() const { return num_heads * head_dim; }
};

/// Gated DeltaNet linear-attention sizes (Yang, Kautz, Hatamizadeh 2024, "Gated Delta Networks:
/// Improving Mamba2 with Delta Rule", arXiv:2412.06464; the tensors of transformers'
/// Qwen3NextGatedDeltaNet, the keys of Qwen3NextConfig). Counts of elements.
struct GatedDeltaNetSpec {
  int64_t num_key_heads = 0;    ///< linear_num_key_heads (q and k heads)
  int64_t num_value_heads = 0;  ///< linear_num_value_heads (v heads; a multiple of the key heads)
  int64_t key_head_dim = 0;     ///< linear_key_head_dim
  int64_t value_head_dim = 0;   ///< linear_value_head_dim
  int64_t conv_kernel = 4;      ///< linear_conv_kernel_dim (depthwise causal conv over q, k, v)
  int64_t key_dim() const { return num_key_heads * key_head_dim; }
  int64_t value_dim() const { return num_value_heads * value_head_dim; }
};

/// DeepSeek-V4 attention and residual sizes (the keys of DeepseekV4Config; tensors of NeMo
/// AutoModel's components/models/deepseek_v4/layers.py DeepseekV4Attention, Compressor,
/// Indexer, HyperConnection). Counts of elements.
struct DeepseekV4Spec {
  int64_t q_lora_rank = 0;     ///< q_lora_rank (wq_a h -> r_q, wq_b r_q -> a·head_dim)
  int64_t o_lora_rank = 0;     ///< o_lora_rank (wo_a per group, wo_b o_groups·r_o -> h)
  int64_t o_groups = 0;        ///< o_groups
  int64_t index_n_heads = 0;   ///< index_n_heads (the CSA layers' indexer)
  int64_t index_head_dim = 0;  ///< index_head_dim
  int64_t index_topk = 0;      ///< index_topk: compressed entries each query of a CSA layer attends to
  int64_t hc_mult = 0;         ///< hc_mult: residual streams of the hyper-connections
  int64_t qk_rope_head_dim = 0;  ///< qk_rope_head_dim: the rotary part of head_dim
  int64_t num_hash_layers = 0; ///< num_hash_layers: first layers routed by a token-id table
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
  /// true: a gated MLP (SwiGLU: gate and up h->f, down f->h; every supported architecture);
  /// false: a two-matrix MLP (fc1 h->f, GeLU or squared ReLU, fc2 f->h: GPT-3, Nemotron-4), only
  /// for a generic decoder given by its shape. Parameters and GEMM FLOPs use 2 matrices instead
  /// of 3 (Megatron-LM training.py num_floating_point_operations: gated_linear_multiplier 3/2
  /// with swiglu, else 1); activation memory and elementwise time keep the gated MLP's terms
  /// (docs/cost-model.md).
  bool gated_mlp = true;
  bool attention_bias = false;       ///< bias on q, k, v (Qwen2: q,k,v only; GPT-OSS: q,k,v,o)
  bool attention_out_bias = false;   ///< bias on o_proj
  bool qk_norm = false;              ///< per-head RMSNorm on q and k (Qwen3)
  /// RMSNorm on the whole q (a·d) and k (g·d) projections, not per head (OLMo 2, OLMoE:
  /// Olmo2Attention q_norm / k_norm).
  bool qk_norm_full = false;
  /// RMSNorms after attention and after the MLP as well as before them: four per layer
  /// (Gemma 2 / 3: input, post_attention, pre_feedforward, post_feedforward layernorms).
  bool sandwich_norms = false;
  bool attention_sinks = false;      ///< one learned sink logit per head (GPT-OSS)
  /// A sigmoid output gate per query channel: q_proj h -> 2·a·d (queries and gate), the gate
  /// multiplying the attention output before o_proj (Qwen3-Next, Qwen3.5: attn_output_gate).
  bool attention_output_gate = false;
  int64_t sliding_window = 0;        ///< 0: none
  int64_t num_sliding_window_layers = 0;
  /// Chunked attention (Llama 4 attention_chunk_size; transformers' "chunked_attention" layer
  /// type): the sequence is cut into chunks of this many tokens and a query attends causally to
  /// the keys of its own chunk only. 0: none. Tokens.
  int64_t attention_chunk_size = 0;
  int64_t num_chunked_attention_layers = 0;  ///< layers with chunked attention (the others full causal)
  /// Layers without rotary position embeddings (Llama 4 no_rope_layers: every
  /// no_rope_layer_interval-th layer, full causal attention). No count depends on it.
  int64_t num_nope_layers = 0;
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
  /// Group-limited routing (DeepSeek-V2/V3 n_group / topk_group; Megatron-Core
  /// moe_router_num_groups / moe_router_group_topk, moe_utils.py group_limited_topk): the
  /// routed experts split into router_num_groups equal groups of consecutive experts, each
  /// token picks router_group_topk groups (by the sum of each group's best scores) and its
  /// experts_per_token experts among them. 1 and 1: every expert reachable (no grouping).
  int64_t router_num_groups = 1;
  int64_t router_group_topk = 1;
  /// Routing is group-limited: more than one group and fewer groups chosen than exist.
  bool group_limited_routing() const { return router_num_groups > 1 && router_group_topk < router_num_groups; }
  bool expert_bias = false;             ///< expert linears have biases (GPT-OSS)
  /// A sigmoid gate h -> 1 on the shared expert's output (Qwen3-Next shared_expert_gate).
  bool shared_expert_gate = false;
  /// LatentMoE (Nemotron 3 Super / Ultra: moe_latent_size; 0 = none). Megatron-Core MoELayer
  /// (megatron/core/transformer/moe/moe_layer.py): fc1_latent_proj h -> ℓ before the dispatch
  /// and fc2_latent_proj ℓ -> h after the combine, both TELinear parallel_mode "duplicated"
  /// (replicated over TP, no bias); the routed experts run in the latent space (fc1 ℓ -> f_e,
  /// fc2 f_e -> ℓ) and the tokens are dispatched and combined ℓ wide. The router and the
  /// shared expert see the full hidden state h. Elements.
  int64_t moe_latent_size = 0;
  /// Width the routed experts read and the token dispatcher moves: moe_latent_size under
  /// LatentMoE, else hidden_size.
  int64_t ExpertInputSize() const { return moe_latent_size > 0 ? moe_latent_size : hidden_size; }

  bool mla = false;
  MlaSpec mla_spec;
  /// DeepSeek-V3.2's DSA lightning indexer (DeepseekV32Indexer; 0 heads: none). Per layer:
  /// wq_b q_lora_rank -> index_n_heads·index_head_dim, wk h -> index_head_dim, k_norm (a
  /// LayerNorm of index_head_dim: weight and bias), weights_proj h -> index_n_heads; each query
  /// attends to the index_topk keys the indexer selects.
  int64_t index_n_heads = 0;
  int64_t index_head_dim = 0;
  int64_t index_topk = 0;

  /// Multi-token prediction layers (DeepSeek-V3 num_nextn_predict_layers; 0 for every other
  /// architecture). Not part of num_layers or of ParamCounts' totals, as in the published
  /// parameter counts (DeepSeek-V3: 671B without its 14B MTP module). Megatron-Bridge's
  /// model provider trains them (mtp_num_layers = num_nextn_predict_layers, AutoBridge), each
  /// an MTP block of Megatron-Core's MultiTokenPredictionLayer: two RMSNorms (enorm, hnorm) of
  /// h, eh_proj (2h -> h, no bias), one decoder layer of the model's last layer type, and a
  /// final RMSNorm of h (megatron/core/transformer/multi_token_prediction.py).
  int64_t mtp_num_layers = 0;
  /// A hybrid model's MTP block (Nemotron 3 Super / Ultra: mtp_hybrid_override_pattern "*E",
  /// one attention and one MoE block; Megatron-Bridge's NemotronHBridge maps it to
  /// mtp_hybrid_override_pattern). Empty for the flat models, whose MTP layer is one decoder
  /// layer of the last layer's type. Each of mtp_num_layers MTP depths runs these blocks once.
  std::vector<LayerBlock> mtp_pattern;

  /// Non-empty exactly when architecture == kGeneric: what the model was taken for and what
  /// was ignored ("planned as a generic dense decoder from its standard fields: ..."). Every
  /// output of a plan, check or explain of this model repeats it as a warning.
  std::string generic_note;

  /// The layers one by one where they differ in kind (hybrid models: Nemotron-H's
  /// hybrid_override_pattern); empty for the flat architectures, whose every layer is attention
  /// plus the MLP num_dense_layers says (LayerPattern derives their pattern). num_layers is its
  /// length when set.
  std::vector<LayerBlock> layer_pattern;
  Mamba2Spec mamba;  ///< the Mamba-2 layers' sizes (layer_pattern has kMamba2 layers)
  GatedDeltaNetSpec gdn;  ///< the Gated DeltaNet layers' sizes (layer_pattern has kGatedDeltaNet layers)
  DeepseekV4Spec dsv4;    ///< DeepSeek-V4's attention and hyper-connection sizes (kDeepseekV4Attention layers)

  /// Non-empty for a vision-language config whose text backbone (text_config) is planned: what
  /// was left out ("the vision tower (vision_config) is not planned: ..."). Every output of a
  /// plan, check or explain repeats it as a warning (ModelWarning).
  std::string excluded_note;

  /// Where each config key was read (for messages that point into the user's file).
  std::map<std::string, SourceLoc> field_locs;

  bool is_moe() const { return num_experts > 0; }
  /// Layers differ in kind (a layer pattern is set): the cost model prices no such model yet.
  bool is_hybrid() const { return !layer_pattern.empty(); }
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
  /// LatentMoE's fc1_latent_proj and fc2_latent_proj of one MoE layer, 2·h·ℓ (replicated over
  /// TP as the router is); 0 without moe_latent_size. latent_proj: all MoE layers' (in total).
  int64_t latent_proj_per_layer = 0;
  int64_t latent_proj = 0;
  /// The MTP block's parameters (a hybrid model's mtp_pattern blocks, their norms, enorm, hnorm,
  /// eh_proj 2h·h and the final norm) once (the depths share them: Megatron-Bridge's
  /// mtp_use_repeated_layer); not in total, as the published counts of the main model.
  int64_t mtp = 0;

  int64_t gdn = 0;              ///< all Gated DeltaNet mixers (hybrid models; 0 otherwise)
  int64_t gdn_per_layer = 0;    ///< one Gated DeltaNet mixer
  int64_t mamba = 0;            ///< all Mamba-2 mixers (hybrid models; 0 otherwise)
  int64_t mamba_per_layer = 0;  ///< one Mamba-2 mixer: in_proj, conv1d, dt_bias, A_log, D, norm, out_proj
};

/// Counts parameters per component. Throws nothing (spec must be valid). A hybrid model's
/// (layer_pattern set) are summed block by block over its pattern.
ParamCounts CountParams(const ModelSpec& model);

/// DeepSeek-V4's parameters (elements, the decoder layers of the whole model, MTP excluded) in
/// the parts NeMo AutoModel stores apart (components/models/deepseek_v4/fsdp.py
/// fully_shard_deepseek_v4 keeps the hyper-connections, sinks and compressors in fp32;
/// utils/model_utils.py freeze_deepseek_v4_indexer_params freezes the indexers), each as
/// CountParams counts it: two hyper-connections per layer (2 + m)·m·(m·h + 1) + 3 each, the
/// attention sinks a per layer, a compressor per ratio-c layer (c > 0) wkv and wgate h·k·d each,
/// ape c·k·d, kv_norm d, an indexer per ratio-4 layer its compressor h·2·d_I x2 + 4·2·d_I + d_I,
/// wq_b r_q·n_I·d_I, weights_proj h·n_I. All 0 for other models.
struct Dsv4ParamParts {
  int64_t hyper_connections = 0, sinks = 0, compressors = 0, indexers = 0;
};
Dsv4ParamParts CountDsv4ParamParts(const ModelSpec& model);

/// The model's layers one by one: layer_pattern when set, else derived from the flat fields
/// (every layer attention; the first num_dense_layers dense, the rest MoE, as DeepSeek-V3's
/// first_k_dense_replace; sliding_window on the last num_sliding_window_layers, an order the
/// flat fields do not keep and no count depends on).
std::vector<LayerBlock> LayerPattern(const ModelSpec& model);

/// Forward + backward FLOPs per token of a hybrid model, summed over its pattern (Megatron-LM
/// training.py num_floating_point_operations, hybrid_flops: mamba_layer_flops, attn_layer_flops,
/// mlp_layer_flops, moe_layer_flops; x3 for forward and backward), for sequence length
/// `seq_len`. The Mamba-2 term uses the model's d_inner where Megatron-LM assumes 2·hidden_size.
double HybridFlopsPerToken(const ModelSpec& model, int64_t seq_len);

/// Forward + backward FLOPs per token of `mtp_layers` MTP depths of a hybrid model with an MTP
/// block pattern (ModelSpec::mtp_pattern; 0 without one): each depth runs the pattern's blocks
/// (the terms of HybridFlopsPerToken), eh_proj 2h -> h (4·h² forward) and its own logits 2·h·V
/// (Megatron-Core multi_token_prediction.py: every depth computes a loss through the shared
/// output layer; AutoModel flops_utils.py _nemotronh_mtp_flops counts the same: block x N, N
/// eh_proj, N lm_head), x3.
double HybridMtpFlopsPerToken(const ModelSpec& model, int64_t seq_len, int64_t mtp_layers);

/// How a model file is read.
struct ModelReadOptions {
  /// An architecture meshplan does not implement is planned as a generic decoder (kGeneric)
  /// from its standard fields instead of being refused (the CLI's --generic-decoder).
  bool generic_decoder = false;
};

/// Parses a HF config.json (JSON) or meshplan model YAML (same keys) held in `text`.
/// `filename` is used in messages only. Unknown architecture (unless
/// options.generic_decoder), missing or out-of-range fields, inconsistent MoE fields: throws
/// InputError with file, line, column and field.
ModelSpec ParseModel(std::string_view text, const std::string& filename, const ModelReadOptions& options = {});

/// A preset name (see ListModelPresets) or a path to a config.json / .yaml file.
/// Throws InputError for an unknown name (listing the presets) or a bad file.
ModelSpec LoadModel(const std::string& name_or_path, const ModelReadOptions& options = {});

/// The shape of a decoder as published tables give it (meshplan's `validate` CSV columns
/// layers, hidden, heads, kv_heads, ffn_hidden, vocab, experts, topk). Counts of elements.
struct DecoderShape {
  int64_t num_layers = 0, hidden_size = 0, num_attention_heads = 0;
  int64_t num_key_value_heads = 0;    ///< 0: as many as num_attention_heads (MHA)
  int64_t intermediate_size = 0;      ///< dense FFN width
  int64_t vocab_size = 0;
  int64_t num_experts = 0;            ///< 0: dense
  int64_t experts_per_token = 0;
  int64_t moe_intermediate_size = 0;  ///< 0: intermediate_size
  int64_t num_shared_experts = 0;     ///< each moe_intermediate_size wide
  int64_t max_position_embeddings = 0;  ///< 0: unknown (taken as unbounded)
  bool gated_mlp = true;              ///< ModelSpec::gated_mlp
};

/// A generic dense or MoE decoder (Architecture::kGeneric: GQA attention without biases,
/// SwiGLU MLP, RMSNorm, untied embeddings) of `shape`, named `name`, its generic_note set.
/// Throws InputError (file `where`, field of the bad size) for a size < 1 where one is needed,
/// heads not dividing hidden_size, KV heads not dividing heads, or top-k above the experts.
ModelSpec GenericDecoder(const DecoderShape& shape, const std::string& name, const SourceLoc& where);

/// Preset names of models/ (embedded), sorted.
std::vector<std::string> ListModelPresets();

/// HF architecture strings meshplan supports, in declaration order.
std::vector<std::string> SupportedArchitectures();

/// "" for a model of a supported architecture planned whole; for a generic decoder
/// (Architecture::kGeneric) or a vision-language config planned without its vision tower the
/// warning every output of it carries (plan table, YAML, JSON, report; check; explain):
/// "model <name>: <ModelSpec::generic_note or ModelSpec::excluded_note>".
std::string GenericModelWarning(const ModelSpec& model);

/// "" for a model whose every block kind the cost model prices under some framework; else why
/// plan, check, explain and validate refuse it. Priced (Megatron-Core runtime only, see
/// FrameworkHybridRefusal in framework.hpp): attention (GQA, full causal), Mamba-2, dense and
/// MoE MLP blocks of a layer pattern (LatentMoE included), Gated DeltaNet and DeepSeek-V4
/// attention blocks (cost/dsv4.hpp: their own window), MTP depths of an MTP block pattern.
/// Refused: a layer pattern with another mixer kind, MLA or
/// sliding-window attention inside a pattern, MTP layers on a hybrid model without an MTP block
/// pattern (docs/cost-model.md, "Hybrid models").
std::string HybridRefusal(const ModelSpec& model);

/// "LlamaForCausalLM" etc.; "generic decoder" for kGeneric.
const char* ArchitectureName(Architecture a);

}  // namespace meshplan
