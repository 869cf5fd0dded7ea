// CountParams: parameter counts per component.
// Base formulas: Megatron-LM theoretical_memory_usage.py::compute_weight_and_optimizer_memory
// (megatron.md 3.1): attention 2·h·q + 2·h·d_k·g, MLA q_term + kv terms, SwiGLU MLP 3·h·f,
// router h·E (+E), norms 2·h per layer + h final, embedding h·V (x2 untied).
// Extended with the biases, q/k norms and sinks of the transformers implementations.

#include <algorithm>

#include "model/model_internal.hpp"

namespace meshplan {
namespace model {
namespace {

/// Counts with the same formulas in any arithmetic type (int64_t for results, long double
/// for the overflow check in the parser).
template <class T>
struct Counts {
  T embedding{}, attention{}, dense_mlp{}, routed_experts{}, shared_experts{}, router{}, norms{},
      output_head{}, total{}, active{};
  T attention_per_layer{}, dense_mlp_per_layer{}, expert_per_layer{}, shared_per_layer{},
      router_per_layer{}, norms_per_layer{};
  T mamba{}, mamba_per_layer{}, gdn{}, gdn_per_layer{};
  T latent_proj{}, latent_proj_per_layer{}, mtp{};
};

/// Attention of one layer.
/// GQA (LlamaAttention and relatives): q h·a·d, k and v h·g·d each, o a·d·h (megatron.md 3.1
/// `attn`), + biases a·d + 2·g·d on q,k,v and h on o, + 2·d for Qwen3's q_norm/k_norm,
/// + a sink logits (GptOssAttention.sinks).
/// MLA (DeepseekV3Attention, megatron.md 3.1 `attn_MLA` with n = 1 for RMSNorm):
///   q: h·r_q + r_q (q_a_layernorm) + r_q·a·(d_nope+d_rope), or h·a·(d_nope+d_rope) without q_lora
///   kv: h·(r_kv+d_rope) + r_kv (kv_a_layernorm) + r_kv·a·(d_nope+d_v);  o: a·d_v·h
///   attention_bias: biases on q_a_proj (r_q), kv_a_proj_with_mqa (r_kv+d_rope), o_proj (h).
///   DSA indexer (DeepSeek-V3.2, DeepseekV32Indexer): wq_b r_q·n_I·d_I, wk h·d_I, k_norm
///   LayerNorm 2·d_I, weights_proj h·n_I.
/// attention_output_gate (Qwen3NextAttention): q_proj h·2·a·d, the gate half.
template <class T>
T AttentionPerLayer(const ModelSpec& m) {
  const T h = m.hidden_size, a = m.num_attention_heads;
  if (m.mla) {
    const MlaSpec& s = m.mla_spec;
    const T rq = s.q_lora_rank, rkv = s.kv_lora_rank, nope = s.qk_nope_head_dim, rope = s.qk_rope_head_dim,
            dv = s.v_head_dim;
    T q = rq > 0 ? h * rq + rq + rq * a * (nope + rope) : h * a * (nope + rope);
    T kv = h * (rkv + rope) + rkv + rkv * a * (nope + dv);
    T o = a * dv * h;
    T bias = m.attention_bias ? (rq > 0 ? rq : T{0}) + rkv + rope : T{0};
    if (m.attention_out_bias) bias += h;
    const T ni = m.index_n_heads, di = m.index_head_dim;
    const T indexer = ni > 0 ? rq * ni * di + h * di + 2 * di + h * ni : T{0};
    return q + kv + o + bias + indexer;
  }
  const T d = m.head_dim, g = m.num_key_value_heads;
  T total = h * a * d + 2 * h * g * d + a * d * h;
  if (m.attention_output_gate) total += h * a * d;
  if (m.attention_bias) total += a * d + 2 * g * d;
  if (m.attention_out_bias) total += h;
  if (m.qk_norm) total += 2 * d;
  if (m.qk_norm_full) total += a * d + g * d;
  if (m.attention_sinks) total += a;
  return total;
}

/// One Mamba-2 mixer (Megatron-Core megatron/core/ssm/mamba_mixer.py MambaMixer; the same
/// tensors as transformers' NemotronHMamba2Mixer): in_proj h -> 2·d_inner + 2·ngroups·d_state +
/// nheads (z, x, B, C, dt), conv1d depthwise over conv_dim = d_inner + 2·ngroups·d_state
/// (conv_dim·d_conv weights + conv_dim bias), dt_bias, A_log and D (nheads each), the gated
/// RMSNorm (d_inner), out_proj d_inner -> h; biases on in_proj and out_proj with proj_bias.
template <class T>
T MambaPerLayer(const ModelSpec& m) {
  const Mamba2Spec& x = m.mamba;
  const T h = m.hidden_size, di = x.d_inner(), g = x.n_groups, n = x.state_size, nh = x.num_heads;
  const T in_out = 2 * di + 2 * g * n + nh, conv_dim = di + 2 * g * n;
  T p = h * in_out + conv_dim * T(x.conv_kernel) + 3 * nh + di + di * h;
  if (x.conv_bias) p += conv_dim;
  if (x.proj_bias) p += in_out + h;
  return p;
}

/// One Gated DeltaNet mixer (transformers Qwen3NextGatedDeltaNet; Yang et al. 2024 eq. 10's
/// q, k, v, alpha (decay) and beta (write strength) projections with a short conv and an output
/// gate): in_proj_qkvz h -> 2·key_dim + 2·value_dim (q, k, v and the output gate z),
/// in_proj_ba h -> 2·n_v (beta and alpha per value head), conv1d depthwise without bias over
/// conv_dim = 2·key_dim + value_dim (conv_dim·kernel), dt_bias and A_log (n_v each), the gated
/// RMSNorm of one value head (d_v, shared by the heads), out_proj value_dim -> h; no biases.
template <class T>
T GatedDeltaNetPerLayer(const ModelSpec& m) {
  const GatedDeltaNetSpec& x = m.gdn;
  const T h = m.hidden_size, kd = x.key_dim(), vd = x.value_dim(), nv = x.num_value_heads;
  const T conv_dim = 2 * kd + vd;
  return h * (2 * kd + 2 * vd) + h * 2 * nv + conv_dim * T(x.conv_kernel) + 2 * nv + T(x.value_head_dim) + vd * h;
}

/// One DeepSeek-V4 attention layer of compress ratio `c` with its two hyper-connections (NeMo
/// AutoModel components/models/deepseek_v4/layers.py): wq_a h·r_q, q_norm r_q, wq_b r_q·a·d,
/// wkv h·d, kv_norm d, wo_a (a·d/g)·(g·r_o), wo_b g·r_o·h, sinks a; a Compressor for c > 0:
/// wkv and wgate h·k·d each, ape c·k·d, kv_norm d (k = 2 in overlap mode, c = 4; else 1); the
/// Indexer for c = 4: wkv and wgate h·2·d_I each, ape 4·2·d_I, kv_norm d_I, wq_b r_q·n_I·d_I,
/// weights_proj h·n_I; two DeepseekV4HyperConnection: (2 + m)·m·(m·h + 1) + 3 each.
/// Its parts, as Dsv4ParamParts (model.hpp) lists them: the two hyper-connections, the
/// compressor of ratio `compress_ratio`, the indexer (ratio 4).
template <class T>
T Dsv4HyperConnections(const ModelSpec& m) {
  const T h = m.hidden_size, hc = m.dsv4.hc_mult;
  return 2 * ((2 + hc) * hc * (hc * h + 1) + 3);
}
template <class T>
T Dsv4Compressor(const ModelSpec& m, int64_t compress_ratio) {
  if (compress_ratio <= 0) return T{0};
  const T h = m.hidden_size, d = m.head_dim, c = compress_ratio, k = compress_ratio == 4 ? T{2} : T{1};
  return 2 * h * k * d + c * k * d + d;
}
template <class T>
T Dsv4Indexer(const ModelSpec& m, int64_t compress_ratio) {
  if (compress_ratio != 4) return T{0};
  const DeepseekV4Spec& v = m.dsv4;
  const T h = m.hidden_size, rq = v.q_lora_rank, ni = v.index_n_heads, di = v.index_head_dim;
  return 2 * h * 2 * di + 4 * 2 * di + di + rq * ni * di + h * ni;
}
template <class T>
T DeepseekV4AttentionLayer(const ModelSpec& m, int64_t compress_ratio) {
  const DeepseekV4Spec& v = m.dsv4;
  const T h = m.hidden_size, a = m.num_attention_heads, d = m.head_dim, rq = v.q_lora_rank, ro = v.o_lora_rank,
          g = v.o_groups;
  T p = h * rq + rq + rq * a * d + h * d + d + (a * d / g) * (g * ro) + g * ro * h + a;
  return p + Dsv4Compressor<T>(m, compress_ratio) + Dsv4Indexer<T>(m, compress_ratio) + Dsv4HyperConnections<T>(m);
}

/// A hybrid model, block by block over its layer pattern: each layer one RMSNorm (h) per
/// present block, its mixer (attention as AttentionPerLayer, Mamba-2 as MambaPerLayer) and
/// its MLP (dense mats·h·f; MoE: experts, shared experts, router); embeddings and the final
/// norm as for the flat models.
template <class T>
Counts<T> ComputeHybrid(const ModelSpec& m) {
  Counts<T> c;
  const T h = m.hidden_size, mats = m.gated_mlp ? T{3} : T{2};
  // DeepSeek-V4: one sliding-window layer's attention until the pattern loop below (each layer
  // by its compress ratio) replaces it by the mean.
  c.attention_per_layer = m.dsv4.hc_mult > 0 ? DeepseekV4AttentionLayer<T>(m, 0) : AttentionPerLayer<T>(m);
  c.dense_mlp_per_layer = mats * h * T(m.intermediate_size);
  T mamba_per_layer = MambaPerLayer<T>(m), mamba{};
  T gdn_per_layer = GatedDeltaNetPerLayer<T>(m), gdn{};
  if (m.is_moe()) {
    // LatentMoE: each expert l -> f -> l, and fc1_latent_proj h·l + fc2_latent_proj l·h per
    // layer (Megatron-Core moe_layer.py; no biases, add_bias_linear false).
    c.expert_per_layer = mats * T(m.ExpertInputSize()) * T(m.moe_intermediate_size);
    c.latent_proj_per_layer = m.moe_latent_size > 0 ? 2 * h * T(m.moe_latent_size) : T{0};
    c.shared_per_layer = mats * h * T(m.shared_expert_intermediate_size) + (m.shared_expert_gate ? h : T{0});
    c.router_per_layer = h * T(m.num_experts) + (m.router_bias ? T(m.num_experts) : T{0});
  }
  // The MTP block, once (mtp_use_repeated_layer shares it between depths): its blocks with
  // their pre-norms, enorm, hnorm and the final norm 3h, eh_proj 2h·h (Megatron-Core
  // multi_token_prediction.py MultiTokenPredictionLayer).
  if (!m.mtp_pattern.empty()) {
    T mtp = 3 * h + 2 * h * h;
    for (const LayerBlock& b : m.mtp_pattern) {
      if (b.mixer != MixerKind::kNone || b.mlp != MlpKind::kNone) mtp += h;
      if (b.mixer == MixerKind::kAttention) mtp += c.attention_per_layer;
      if (b.mixer == MixerKind::kDeepseekV4Attention) mtp += DeepseekV4AttentionLayer<T>(m, b.compress_ratio);
      if (b.mixer == MixerKind::kMamba2) mtp += mamba_per_layer;
      if (b.mlp == MlpKind::kDense) mtp += c.dense_mlp_per_layer;
      if (b.mlp == MlpKind::kMoe) {
        mtp += T(m.num_experts) * c.expert_per_layer + c.shared_per_layer + c.router_per_layer +
               c.latent_proj_per_layer;
      }
    }
    c.mtp = mtp;
  }
  T moe_layers{}, dsv4_layers{};
  for (const LayerBlock& b : m.layer_pattern) {
    dsv4_layers += b.mixer == MixerKind::kDeepseekV4Attention ? T{1} : T{0};
    if (b.mixer != MixerKind::kNone) c.norms += h;
    if (b.mlp != MlpKind::kNone) c.norms += h;
    if (b.mixer == MixerKind::kAttention) c.attention += c.attention_per_layer;
    if (b.mixer == MixerKind::kMamba2) mamba += mamba_per_layer;
    if (b.mixer == MixerKind::kGatedDeltaNet) gdn += gdn_per_layer;
    // DeepSeek-V4: the layer's attention by its compress ratio, with its hyper-connections.
    if (b.mixer == MixerKind::kDeepseekV4Attention) c.attention += DeepseekV4AttentionLayer<T>(m, b.compress_ratio);
    if (b.mlp == MlpKind::kDense) c.dense_mlp += c.dense_mlp_per_layer;
    if (b.mlp == MlpKind::kMoe) moe_layers += 1;
  }
  c.routed_experts = moe_layers * T(m.num_experts) * c.expert_per_layer;
  c.shared_experts = moe_layers * c.shared_per_layer;
  c.router = moe_layers * c.router_per_layer;
  // DeepSeek-V4's hash-routed layers: a gate weight without the expert bias (AutoModel
  // deepseek_v4/model.py DeepseekV4HashGate: bias None; the tid2eid table is a buffer).
  if (m.router_bias) c.router -= T(std::min<int64_t>(m.dsv4.num_hash_layers, m.num_layers)) * T(m.num_experts);
  // DeepSeek-V4: attention_per_layer is the mean over its layers (their compressors differ by
  // compress ratio), what a rank's share of the attention parameters is counted with.
  if (dsv4_layers > T{0}) c.attention_per_layer = c.attention / dsv4_layers;
  c.latent_proj = moe_layers * c.latent_proj_per_layer;
  c.norms += h;  // final norm (norm_f)
  // DeepSeek-V4's output contraction of the hc_mult streams (DeepseekV4HyperHead): m·m·h + m + 1.
  if (m.dsv4.hc_mult > 0) c.norms += T(m.dsv4.hc_mult) * T(m.dsv4.hc_mult) * h + T(m.dsv4.hc_mult) + 1;
  c.norms_per_layer = h;
  c.embedding = T(m.vocab_size) * h;
  c.output_head = m.tie_word_embeddings ? T{0} : T(m.vocab_size) * h;
  c.mamba = mamba;
  c.mamba_per_layer = mamba_per_layer;
  c.gdn = gdn;
  c.gdn_per_layer = gdn_per_layer;
  c.total = c.embedding + c.attention + mamba + gdn + c.dense_mlp + c.routed_experts + c.shared_experts + c.router +
            c.latent_proj + c.norms + c.output_head;
  c.active = c.total - c.routed_experts + moe_layers * T(m.experts_per_token) * c.expert_per_layer;
  return c;
}

template <class T>
Counts<T> Compute(const ModelSpec& m) {
  if (m.is_hybrid()) return ComputeHybrid<T>(m);
  Counts<T> c;
  const T h = m.hidden_size, layers = m.num_layers, dense_layers = m.num_dense_layers,
          moe_layers = m.num_moe_layers(), experts = m.num_experts, topk = m.experts_per_token;
  c.attention_per_layer = AttentionPerLayer<T>(m);
  // SwiGLU: gate and up h->f, down f->h = 3·h·f (megatron.md 3.1 dense_mlp with λ = 3/2);
  // a two-matrix MLP (gated_mlp false) 2·h·f (λ = 1).
  const T mats = m.gated_mlp ? T{3} : T{2};
  c.dense_mlp_per_layer = dense_layers > 0 ? mats * h * T(m.intermediate_size) : T{0};
  if (m.is_moe()) {
    const T fe = m.moe_intermediate_size;
    c.expert_per_layer = mats * h * fe;
    if (m.expert_bias) c.expert_per_layer += 2 * fe + h;  // gate_up_proj_bias 2·f, down_proj_bias h
    c.shared_per_layer = mats * h * T(m.shared_expert_intermediate_size) + (m.shared_expert_gate ? h : T{0});
    c.router_per_layer = h * experts + (m.router_bias ? experts : T{0});
  }
  // input_layernorm + post_attention_layernorm (RMSNorm: weight only); Gemma's sandwich adds
  // pre_feedforward_layernorm and post_feedforward_layernorm.
  c.norms_per_layer = (m.sandwich_norms ? 4 : 2) * h;

  c.embedding = T(m.vocab_size) * h;
  c.output_head = m.tie_word_embeddings ? T{0} : T(m.vocab_size) * h;
  c.attention = layers * c.attention_per_layer;
  c.dense_mlp = dense_layers * c.dense_mlp_per_layer;
  c.routed_experts = moe_layers * experts * c.expert_per_layer;
  c.shared_experts = moe_layers * c.shared_per_layer;
  c.router = moe_layers * c.router_per_layer;
  c.norms = layers * c.norms_per_layer + h;  // + final norm
  c.total = c.embedding + c.attention + c.dense_mlp + c.routed_experts + c.shared_experts + c.router +
            c.norms + c.output_head;
  // Megatron N_active: routed experts replaced by top-k of them; everything else counts.
  c.active = c.total - c.routed_experts + moe_layers * topk * c.expert_per_layer;
  return c;
}

}  // namespace

long double ApproxTotalParams(const ModelSpec& m) { return Compute<long double>(m).total; }

}  // namespace model

/// See ParamCounts (model.hpp) for each component; formulas in model::Compute above.
Dsv4ParamParts CountDsv4ParamParts(const ModelSpec& m) {
  Dsv4ParamParts p;
  for (const LayerBlock& b : m.layer_pattern) {
    if (b.mixer != MixerKind::kDeepseekV4Attention) continue;
    p.hyper_connections += model::Dsv4HyperConnections<int64_t>(m);
    p.sinks += m.num_attention_heads;
    p.compressors += model::Dsv4Compressor<int64_t>(m, b.compress_ratio);
    p.indexers += model::Dsv4Indexer<int64_t>(m, b.compress_ratio);
  }
  return p;
}

ParamCounts CountParams(const ModelSpec& model) {
  model::Counts<int64_t> c = model::Compute<int64_t>(model);
  ParamCounts p;
  p.embedding = c.embedding;
  p.attention = c.attention;
  p.dense_mlp = c.dense_mlp;
  p.routed_experts = c.routed_experts;
  p.shared_experts = c.shared_experts;
  p.router = c.router;
  p.norms = c.norms;
  p.output_head = c.output_head;
  p.total = c.total;
  p.active = c.active;
  p.attention_per_layer = c.attention_per_layer;
  p.dense_mlp_per_layer = c.dense_mlp_per_layer;
  p.expert_per_layer = c.expert_per_layer;
  p.shared_per_layer = c.shared_per_layer;
  p.router_per_layer = c.router_per_layer;
  p.norms_per_layer = c.norms_per_layer;
  p.mamba = c.mamba;
  p.mamba_per_layer = c.mamba_per_layer;
  p.gdn = c.gdn;
  p.gdn_per_layer = c.gdn_per_layer;
  p.latent_proj = c.latent_proj;
  p.latent_proj_per_layer = c.latent_proj_per_layer;
  p.mtp = c.mtp;
  return p;
}

}  // namespace meshplan
