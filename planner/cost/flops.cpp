// Model FLOPs (megatron.md 3.6). Units: FLOP.

#include "cost/flops.hpp"

#include <algorithm>
#include <cmath>

#include "cost/dsv4.hpp"
#include "cost/hybrid.hpp"
#include "meshplan/cost.hpp"

namespace meshplan::cost {

LayerMix ModelLayerMix(const ModelSpec& model) {
  LayerMix mix;
  if (!model.is_moe()) {
    mix.dense = model.num_layers;
    return mix;
  }
  mix.dense = model.num_dense_layers;
  mix.moe = model.num_layers - model.num_dense_layers;
  return mix;
}

/// Per-token terms of Megatron-LM's current formula (training.py::transformer_flops,
/// megatron.md 3.6), without MTP and without linear-attention layers:
///   F/token = 6·h·(c·f·L_d + c·f_e·k·L_m + c·f_s·L_m) + L·A_lin + 6·h·V + s·L·A_core
/// with c = 3 (SwiGLU; every supported architecture gates its MLP; c = 2 for a generic
/// decoder's two-matrix MLP, ModelSpec::gated_mlp), and
///   GQA/MHA: A_lin = 6·[h·(q + 2·d_k·g) + q·h],  A_core = 6·q   (q = a·d_k; causal /2 and
///            the 2 GEMMs QK^T, PV cancel); sliding-window layers 12·q·c/s instead, c the
///            average causal window context (Megatron-Bridge flop_utils.py), averaged over layers
///   MLA:     A_lin = 6·[q_term + r_kv·(h + a·(d_nope + d_v) + 1) + h·d_rope + a·d_v·h],
///            q_term = r_q·(h + a·(d_nope + d_rope) + 1), or h·a·(d_nope + d_rope) without q_lora
///            A_core = 6·[a·(d_nope + d_rope)/2 + a·d_v/2]
///   DSA (DeepSeek-V3.2, ModelSpec::index_n_heads > 0; DeepSeek-V3.2-Exp report §2.1): the
///            indexer's projections add 6·[r_q·n_I·d_I + h·d_I + h·n_I] to A_lin; each query
///            attends to at most k = index_topk keys, an average causal context of
///            c = k − k(k−1)/(2s) when k < s (the sliding-window average above with W = k),
///            s/2 otherwise, so s·A_core becomes 12·[a·(d_nope + d_rope)/2 + a·d_v/2]·c; the
///            indexer scores every causal key, 6·n_I·d_I·s/2 (its ReLU-weighted sum and top-k
///            selection not counted). The sparse core is timed at the dense core's rate.
/// Router, norms and embedding lookups are not counted (as in Megatron).
namespace {

/// The attention-core FLOPs per token averaged over the layers when
/// num_chunked_attention_layers of them attend in chunks of attention_chunk_size (see
/// ComputeFlopsPerToken); `full_core` is the full causal layers' term (6·q·s), `s` tokens.
double ChunkedCoreFlops(const ModelSpec& m, double full_core, double s) {
  const double chunk = double(m.attention_chunk_size), q = double(m.num_attention_heads) * double(m.head_dim);
  const double k = std::floor(s / chunk), r = s - k * chunk;
  const double context = s <= chunk ? s / 2.0 : (k * chunk * chunk / 2.0 + r * r / 2.0) / s;
  const double n = double(std::min(m.num_chunked_attention_layers, m.num_layers)), L = double(m.num_layers);
  return (full_core * (L - n) + 12.0 * q * context * n) / L;
}

}  // namespace

FlopsPerToken ComputeFlopsPerToken(const ModelSpec& m, int64_t seq_len) {
  FlopsPerToken f;
  const double h = double(m.hidden_size);
  const double a = double(m.num_attention_heads);
  const double s = double(seq_len);
  const double c = m.gated_mlp ? 3.0 : 2.0;  // SwiGLU; a two-matrix MLP (training.py: swiglu off)
  if (m.mla) {
    const MlaSpec& x = m.mla_spec;
    const double rq = double(x.q_lora_rank), rkv = double(x.kv_lora_rank);
    const double nope = double(x.qk_nope_head_dim), rope = double(x.qk_rope_head_dim),
                 dv = double(x.v_head_dim);
    const double q_term = rq > 0 ? rq * (h + a * (nope + rope) + 1) : h * a * (nope + rope);
    f.attn_linear_flops = 6.0 * (q_term + rkv * (h + a * (nope + dv) + 1) + h * rope + a * dv * h);
    f.attn_core_flops = s * 6.0 * (a * (nope + rope) / 2 + a * dv / 2);
    if (m.index_n_heads > 0) {
      const double ni = double(m.index_n_heads), di = double(m.index_head_dim), k = double(m.index_topk);
      f.attn_linear_flops += 6.0 * (rq * ni * di + h * di + h * ni);
      const double context = k < s ? k - k * (k - 1) / (2.0 * s) : s / 2.0;
      f.attn_core_flops = 12.0 * (a * (nope + rope) / 2 + a * dv / 2) * context + 6.0 * ni * di * s / 2.0;
    }
  } else {
    const double q = a * double(m.head_dim);
    const double kv = double(m.num_key_value_heads) * double(m.head_dim);
    f.attn_linear_flops = 6.0 * (h * (q + 2 * kv) + q * h);
    // An output gate (Qwen3-Next gated attention; Megatron-Core attention_output_gate): q_proj
    // twice as wide, 6·h·q more (as HybridFlopsPerToken).
    if (m.attention_output_gate) f.attn_linear_flops += 6.0 * h * q;
    f.attn_core_flops = s * 6.0 * q;
    // Sliding-window layers (Megatron-Bridge flop_utils.py, "exact average causal SWA
    // context"): a query sees on average c = W − W(W−1)/(2s) keys when W < s (s/2 otherwise),
    // so the core costs 3·2·2·q·c per token; the term is averaged over the model's layers.
    if (m.sliding_window > 0 && m.num_sliding_window_layers > 0 && m.num_layers > 0) {
      const double w = double(m.sliding_window);
      const double context = w < s ? w - w * (w - 1) / (2.0 * s) : s / 2.0;
      const double swa = 12.0 * q * context;
      const double n = double(std::min(m.num_sliding_window_layers, m.num_layers)), L = double(m.num_layers);
      f.attn_core_flops = (f.attn_core_flops * (L - n) + swa * n) / L;
    }
    // Chunked-attention layers (Llama 4 attention_chunk_size C; transformers masking_utils.py
    // chunked_causal_mask_function: kv_idx // C == q_idx // C and causal, on the layers
    // Llama4TextConfig.layer_types calls "chunked_attention";
    // Megatron-Bridge llama4_utils.py chunkify: each chunk an independent causal sequence): a
    // sequence of s = k·C + r tokens holds k full chunks and one of r, whose queries see on
    // average c = (k·C²/2 + r²/2)/s keys (s/2 when s <= C, the full causal term), so the core
    // costs 3·2·2·q·c per token on those layers; averaged over the model's layers.
    if (m.attention_chunk_size > 0 && m.num_chunked_attention_layers > 0 && m.num_layers > 0) {
      f.attn_core_flops = ChunkedCoreFlops(m, f.attn_core_flops, s);
    }
  }
  // DeepSeek-V4: its attention blocks' own terms (cost/dsv4.hpp Dsv4MeanAttentionFlops, from
  // AutoModel's deepseek_v4/layers.py), the mean over its layers.
  if (m.architecture == Architecture::kDeepseekV4) {
    const Dsv4Flops d = Dsv4MeanAttentionFlops(m, seq_len);
    f.attn_linear_flops = d.linear;
    f.attn_core_flops = d.core;
  }
  f.dense_mlp_flops = 6.0 * h * c * double(m.intermediate_size);
  if (m.is_moe()) {
    f.shared_flops = 6.0 * h * c * double(m.shared_expert_intermediate_size);
    // LatentMoE: the experts in the latent space, the two duplicated latent projections
    // (12·h·l, run on each rank's own tokens) priced with the shared expert's GEMMs.
    f.routed_flops = 6.0 * double(m.ExpertInputSize()) * c * double(m.moe_intermediate_size) * double(m.experts_per_token);
    if (m.moe_latent_size > 0) f.shared_flops += 12.0 * h * double(m.moe_latent_size);
  }
  f.logits_flops = 6.0 * h * double(m.vocab_size);
  f.mtp_extra_flops = 6.0 * (3.0 * h + 2.0 * h * h);
  if (m.is_hybrid()) {
    f.mamba_linear_flops = MambaLinearFlops(m);
    f.ssd_flops = SsdScanFlops(m);
    f.gdn_linear_flops = GdnLinearFlops(m);
    f.gdn_chunk_flops = GdnChunkFlops(m);
  }
  return f;
}

double FlopsPerToken::Total(const LayerMix& mix) const {
  const double layers = double(mix.dense + mix.moe);
  return double(mix.dense) * dense_mlp_flops + double(mix.moe) * (shared_flops + routed_flops) +
         layers * (attn_linear_flops + attn_core_flops) + logits_flops;
}

}  // namespace meshplan::cost

namespace meshplan {

/// F = T · F/token with T = global_batch·seq_len tokens; the attention core term uses
/// S2 = global_batch·seq_len² (BSHD, no packing). Source: megatron.md 3.6; reproduces the
/// published Megatron-Bridge "Model TFLOP/s/GPU" rows (see tests/cost/flops_test.cpp).
/// A hybrid model: T · HybridFlopsPerToken (Megatron-LM training.py hybrid_flops, the figure
/// its model TFLOP/s are reported with).
/// DeepSeek-V4: T · Dsv4ModelFlopsPerToken (Megatron-Bridge flop_utils.py's dsv4_hybrid branch,
/// the figure its published model TFLOP/s are reported with).
double ModelFlopsPerStep(const ModelSpec& model, const TrainSetup& setup, int64_t mtp_layers) {
  if (model.architecture == Architecture::kDeepseekV4) {
    return double(setup.global_batch) * double(setup.seq_len) * cost::Dsv4ModelFlopsPerToken(model, setup.seq_len, mtp_layers);
  }
  if (model.is_hybrid()) {
    return double(setup.global_batch) * double(setup.seq_len) *
           (HybridFlopsPerToken(model, setup.seq_len) + HybridMtpFlopsPerToken(model, setup.seq_len, mtp_layers));
  }
  const cost::FlopsPerToken f = cost::ComputeFlopsPerToken(model, setup.seq_len);
  const double tokens = double(setup.global_batch) * double(setup.seq_len);
  return tokens * (f.Total(cost::ModelLayerMix(model)) + f.Mtp(model, mtp_layers));
}

}  // namespace meshplan
