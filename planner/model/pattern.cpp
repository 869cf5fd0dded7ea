// LayerPattern (a model's layers one by one) and the FLOPs of a hybrid model summed over it.

#include <algorithm>
#include <string>

#include "meshplan/model.hpp"

namespace meshplan {

/// See model.hpp.
std::vector<LayerBlock> LayerPattern(const ModelSpec& m) {
  if (m.is_hybrid()) return m.layer_pattern;
  std::vector<LayerBlock> out(static_cast<size_t>(std::max<int64_t>(0, m.num_layers)));
  const int64_t dense = m.is_moe() ? m.num_dense_layers : m.num_layers;
  const int64_t sliding = m.sliding_window > 0 ? m.num_sliding_window_layers : 0;
  for (int64_t i = 0; i < m.num_layers; ++i) {
    LayerBlock& b = out[size_t(i)];
    b.mixer = MixerKind::kAttention;
    b.mlp = i < dense ? MlpKind::kDense : MlpKind::kMoe;
    b.sliding_window = i >= m.num_layers - sliding ? m.sliding_window : 0;
  }
  return out;
}

/// See model.hpp. The block kinds the cost model prices are those cost/hybrid.cpp has terms for.
std::string HybridRefusal(const ModelSpec& m) {
  if (!m.is_hybrid()) return "";
  for (const LayerBlock& b : m.layer_pattern) {
    if (b.mixer != MixerKind::kNone && b.mixer != MixerKind::kAttention && b.mixer != MixerKind::kMamba2 &&
        b.mixer != MixerKind::kGatedDeltaNet && b.mixer != MixerKind::kDeepseekV4Attention) {
      return m.architecture_name + " has a layer pattern with a token mixer meshplan's cost model has no terms for "
             "(it prices attention, Mamba-2 and Gated DeltaNet mixers only): its parameters are counted, but no "
             "layout of it is planned, checked or priced";
    }
  }
  // DeepSeek-V4's window is part of its own block kind (cost/dsv4.hpp prices it).
  const bool dsv4 = m.architecture == Architecture::kDeepseekV4;
  bool windowed = m.sliding_window > 0 && !dsv4;
  for (const LayerBlock& b : m.layer_pattern) {
    windowed = windowed || (b.sliding_window > 0 && b.mixer != MixerKind::kDeepseekV4Attention);
  }
  const char* what = m.mla ? "MLA attention" : windowed ? "sliding-window attention"
                     : m.mtp_num_layers > 0 && m.mtp_pattern.empty() ? "MTP layers without an MTP block pattern"
                                                                     : nullptr;
  if (what != nullptr) {
    return m.architecture_name + " is a hybrid model with " + what + ": meshplan's hybrid cost terms (attention, "
           "Mamba-2, MLP and MoE blocks) do not model those, so no layout of it is planned, checked or priced";
  }
  return "";
}

/// Megatron-LM (d98e8a6) megatron/training/training.py num_floating_point_operations, hybrid_flops,
/// per token (batch_size = 1, one token of a seq_len sequence):
///   attention  4·h·p·(h + h·g/a + s/2),  p = d_k·a/h                    (attn_layer_flops)
///   MLP        4·h·f·λ,                  λ = 3/2 with SwiGLU, else 1     (mlp_layer_flops)
///   MoE        4·h·f_e·k·λ + 4·h·f_s·λ                                   (moe_layer_flops)
///   Mamba-2    2·h·(2·d_in + 2·ng·N + nh) + 7·d_in·N + 2·d_in·h          (mamba_layer_flops)
///   Gated DeltaNet 2·[h·(2·qk + 2·v + 2·n_v) + K·(2·qk + v) + 4·n_v·d_v² + v·h]   (gdn_layer_flops)
///              qk = n_k·d_k, v = n_v·d_v, K the conv kernel: in_proj, conv1d, the gated delta
///              rule (KK^T, VK^T, S(a(I-bKK^T)), SQ), out_proj
///   logits     2·h·V
/// summed over the pattern and x3 (forward and backward). Megatron-LM's mamba_layer_flops
/// takes d_in = 2·hidden_size; here d_in is the model's own d_inner = nheads·head_dim (Nemotron
/// 3 Nano: 4096, not 2·2688), the width its in_proj and out_proj GEMMs have. The scan term
/// 7·d_in·N is Megatron-LM's estimate for the selective scan (its own note: to be updated for
/// the SSD kernels of Mamba-2, Dao & Gu 2024, "a small percent of overall layer flops").
/// Attention with an output gate (attention_output_gate) adds its gate projection, 2·h·a·d_k,
/// which attn_layer_flops does not have.
namespace {

/// Forward FLOPs per token of one block (the terms above).
double BlockFwdFlops(const ModelSpec& m, const LayerBlock& b, int64_t seq_len) {
  const double h = double(m.hidden_size), a = double(m.num_attention_heads), s = double(seq_len);
  const double g = double(m.num_key_value_heads), p = double(m.head_dim) * a / h;
  const double lambda = m.gated_mlp ? 1.5 : 1.0;
  const Mamba2Spec& x = m.mamba;
  const double di = double(x.d_inner()), n = double(x.state_size), ng = double(x.n_groups), nh = double(x.num_heads);
  double fwd = 0.0;
  {
    if (b.mixer == MixerKind::kAttention) {
      fwd += 4.0 * h * p * (h + h * g / a + s / 2.0);
      if (m.attention_output_gate) fwd += 2.0 * h * a * double(m.head_dim);
    }
    if (b.mixer == MixerKind::kGatedDeltaNet) {
      const GatedDeltaNetSpec& y = m.gdn;
      const double qk = double(y.key_dim()), v = double(y.value_dim()), nv = double(y.num_value_heads),
                   dv = double(y.value_head_dim);
      fwd += 2.0 * (h * (2.0 * qk + 2.0 * v + 2.0 * nv) + double(y.conv_kernel) * (2.0 * qk + v) +
                    4.0 * nv * dv * dv + v * h);
    }
    if (b.mixer == MixerKind::kMamba2) fwd += 2.0 * h * (2.0 * di + 2.0 * ng * n + nh) + 7.0 * di * n + 2.0 * di * h;
    if (b.mlp == MlpKind::kDense) fwd += 4.0 * h * double(m.intermediate_size) * lambda;
    if (b.mlp == MlpKind::kMoe) {
      // LatentMoE (Megatron-Bridge flop_utils.py moe_layer_flops with moe_latent_size): the
      // routed experts 4·l·f_e·k·λ in the latent space, the two latent projections 4·h·l.
      const double in = double(m.ExpertInputSize());
      fwd += 4.0 * in * double(m.moe_intermediate_size) * double(m.experts_per_token) * lambda +
             4.0 * h * double(m.shared_expert_intermediate_size) * lambda +
             (m.moe_latent_size > 0 ? 4.0 * h * double(m.moe_latent_size) : 0.0);
    }
  }
  return fwd;
}

}  // namespace

double HybridFlopsPerToken(const ModelSpec& m, int64_t seq_len) {
  double fwd = 2.0 * double(m.hidden_size) * double(m.vocab_size);
  for (const LayerBlock& b : LayerPattern(m)) fwd += BlockFwdFlops(m, b, seq_len);
  return 3.0 * fwd;
}

/// See model.hpp.
double HybridMtpFlopsPerToken(const ModelSpec& m, int64_t seq_len, int64_t mtp_layers) {
  if (mtp_layers <= 0 || m.mtp_pattern.empty()) return 0.0;
  const double h = double(m.hidden_size);
  double fwd = 4.0 * h * h + 2.0 * h * double(m.vocab_size);  // eh_proj 2h -> h, the depth's logits
  for (const LayerBlock& b : m.mtp_pattern) fwd += BlockFwdFlops(m, b, seq_len);
  return 3.0 * double(mtp_layers) * fwd;
}

}  // namespace meshplan
