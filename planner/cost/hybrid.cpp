// Cost terms of hybrid models (see hybrid.hpp for each formula and its source).

#include "cost/hybrid.hpp"

#include <algorithm>

#include "cost/dsv4.hpp"
#include "cost/memory.hpp"
#include "cost/memory_megatron.hpp"
#include "cost/time.hpp"

namespace meshplan::cost {

HybridBlocks HybridBlocksIn(const ModelSpec& m, int64_t first, int64_t count) {
  HybridBlocks b;
  const int64_t n = int64_t(m.layer_pattern.size());
  const int64_t lo = std::clamp<int64_t>(first, 0, n), hi = std::clamp<int64_t>(first + count, lo, n);
  for (int64_t i = lo; i < hi; ++i) {
    const LayerBlock& x = m.layer_pattern[size_t(i)];
    // DeepSeek-V4's attention blocks are priced as attention blocks with their own terms
    // (cost/dsv4.hpp, through FlopsPerToken and the kAttention cases below).
    b.attention += x.mixer == MixerKind::kAttention || x.mixer == MixerKind::kDeepseekV4Attention;
    b.mamba += x.mixer == MixerKind::kMamba2;
    b.dense += x.mlp == MlpKind::kDense;
    b.moe += x.mlp == MlpKind::kMoe;
    b.gdn += x.mixer == MixerKind::kGatedDeltaNet;
  }
  return b;
}

double GdnLinearFlops(const ModelSpec& m) {
  const GatedDeltaNetSpec& x = m.gdn;
  const double h = double(m.hidden_size), qk = double(x.key_dim()), v = double(x.value_dim());
  return 6.0 * h * (2.0 * qk + 2.0 * v + 2.0 * double(x.num_value_heads)) + 6.0 * v * h;
}

double GdnChunkFlops(const ModelSpec& m) {
  const GatedDeltaNetSpec& x = m.gdn;
  const double c = kGdnChunk, dk = double(x.key_head_dim), dv = double(x.value_head_dim);
  const double fwd = 2.0 * c * dk + 2.0 * c * c / 3.0 + 2.0 * c * (dk + dv) + 4.0 * dk * dv + 2.0 * dk * dv +
                     2.0 * c * (dk + dv);
  const double recomputed = 4.0 * dk * dv + 2.0 * c * (dk + dv);
  return double(x.num_value_heads) * (3.0 * fwd + recomputed);
}

double MambaLinearFlops(const ModelSpec& m) {
  const Mamba2Spec& x = m.mamba;
  const double h = double(m.hidden_size), di = double(x.d_inner());
  const double in = 2.0 * di + 2.0 * double(x.n_groups) * double(x.state_size) + double(x.num_heads);
  return 6.0 * h * in + 6.0 * di * h;
}

double SsdScanFlops(const ModelSpec& m) {
  const Mamba2Spec& x = m.mamba;
  const double q = double(std::max<int64_t>(1, x.chunk_size)), n = double(x.state_size), p = double(x.head_dim);
  const double nh = double(x.num_heads), ng = double(x.n_groups);
  const double fwd = 2.0 * ng * q * n + 2.0 * nh * q * p + 4.0 * nh * n * p + 2.0 * nh * n * p / q;
  return 3.0 * fwd;
}

double HybridBlockElements(const ModelSpec& m, MixerKind mixer, MlpKind mlp, bool fp8, bool sorts_local_experts) {
  const double h = double(m.hidden_size);
  const double act = m.gated_mlp ? 3.0 : 2.0;  // SwiGLU read 2f write f; squared ReLU read f write f
  double e = 0.0;
  if (mixer == MixerKind::kAttention && m.architecture == Architecture::kDeepseekV4) {
    e += Dsv4BlockElements(m, fp8);
  } else if (mixer == MixerKind::kAttention) {
    e += 5.0 * h + 2.0 * double(QDim(m) + KDim(m)) + (fp8 ? 1.5 * double(AttnOutDim(m)) : 0.0);
  } else if (mixer == MixerKind::kMamba2) {
    const Mamba2Spec& x = m.mamba;
    const double di = double(x.d_inner()), gn = double(x.n_groups) * double(x.state_size);
    const double q = double(std::max<int64_t>(1, x.chunk_size));
    const double in = 2.0 * di + 2.0 * gn + double(x.num_heads);
    e += 5.0 * h + in + 2.0 * (di + 2.0 * gn) + 4.0 * di * double(x.state_size) / q + di + 2.0 * di +
         (fp8 ? 1.5 * di : 0.0);
  } else if (mixer == MixerKind::kGatedDeltaNet) {
    const GatedDeltaNetSpec& x = m.gdn;
    const double qk = double(x.key_dim()), v = double(x.value_dim()), nv = double(x.num_value_heads);
    const double qkr = nv * double(x.key_head_dim), c = kGdnChunk;
    e += 5.0 * h + 2.0 * (2.0 * qk + v) + 4.0 * qk + (2.0 * qk + 2.0 * qkr) + (2.0 * nv + 4.0 * nv) +
         (2.0 * qkr + v + 2.0 * c * nv + 2.0 * (qkr + v) + 4.0 * nv * double(x.key_head_dim) *
                                                              double(x.value_head_dim) / c +
          2.0 * v + v) +
         2.0 * v + 10.0 * v + (fp8 ? 1.5 * v : 0.0);
  }
  if (mlp == MlpKind::kDense) {
    const double f = double(m.intermediate_size);
    e += 5.0 * h + act * f + (fp8 ? 1.5 * f : 0.0);
  } else if (mlp == MlpKind::kMoe) {
    const double k = double(m.experts_per_token);
    const double ffn = k * double(m.moe_intermediate_size) + double(m.shared_expert_intermediate_size);
    // LatentMoE permutes l-wide tokens (ExpertInputSize); the alltoall dispatcher's local-expert
    // sort and unsort as MegatronMoeBlockElements.
    const double copies = k * double(m.ExpertInputSize());
    e += 5.0 * h + 4.0 * double(m.num_experts) + (sorts_local_experts ? 8.0 : 4.0) * copies + act * ffn +
         (fp8 ? 1.5 * ffn : 0.0);
  }
  return e;
}

TeLayerBytes HybridBlockSavedBytes(const ModelSpec& m, MixerKind mixer, MlpKind mlp, Precision precision, int64_t etp,
                                   uint32_t rm) {
  const double q = QuantizedInputBytes(precision);
  const double h = double(m.hidden_size);
  const double c = m.gated_mlp ? 2.0 : 1.0;  // fc1 output width over f
  const bool rc_norm = (rm & kRecomputeLayernorm) != 0;
  TeLayerBytes b;
  if (mixer == MixerKind::kAttention && m.architecture == Architecture::kDeepseekV4) {
    b = Dsv4BlockSavedBytes(m, precision, rm);
  } else if (mixer == MixerKind::kAttention) {
    const double a = double(m.num_attention_heads), d = double(m.head_dim), g = double(m.num_key_value_heads);
    b.sequence += 2.0 * h + (rc_norm ? 0.0 : q * h);
    b.split += 2.0 * (2.0 * a * d + 2.0 * g * d) + 4.0 * a;
    if (m.qk_norm) b.split += 2.0 * (a * d + g * d);
    // Output gate (Megatron-Core attention.py attention_output_gate: core_attn_out ·
    // sigmoid(gate)): the sigmoid's output 2·a·d and linear_proj's input, the product, q·a·d.
    if (m.attention_output_gate) b.split += 2.0 * a * d + q * a * d;
  } else if (mixer == MixerKind::kMamba2) {
    const Mamba2Spec& x = m.mamba;
    const double di = double(x.d_inner()), gn = double(x.n_groups) * double(x.state_size);
    b.sequence += 2.0 * h + (rc_norm ? 0.0 : q * h);
    b.split += 2.0 * (2.0 * di + 2.0 * gn + double(x.num_heads)) + 2.0 * di + 2.0 * di + 4.0 * double(x.n_groups) +
               q * di;
  } else if (mixer == MixerKind::kGatedDeltaNet) {
    const GatedDeltaNetSpec& x = m.gdn;
    const double qk = double(x.key_dim()), v = double(x.value_dim()), nv = double(x.num_value_heads);
    const double qkr = nv * double(x.key_head_dim);
    b.sequence += 2.0 * h + (rc_norm ? 0.0 : q * h);
    b.split += 2.0 * (2.0 * qk + v) + (4.0 * qk + 8.0 * double(x.num_key_heads)) + 4.0 * nv +
               (4.0 * qkr + 2.0 * v + 4.0 * nv + 2.0 * nv + 2.0 * kGdnChunk * nv) + (2.0 * v + 4.0 * nv) + 4.0 * v +
               (2.0 * v + 4.0 * v) + q * v;
  }
  if (mlp == MlpKind::kDense) {
    const double f = double(m.intermediate_size);
    b.sequence += 2.0 * h + (rc_norm ? 0.0 : q * h);
    if ((rm & kRecomputeMlp) == 0) b.split += 2.0 * c * f + q * f;
  } else if (mlp == MlpKind::kMoe) {
    b.sequence += 2.0 * h;
    if (rm & kRecomputeMoe) return b;  // the block is one checkpoint: its input only
    const double E = double(m.num_experts), k = double(m.experts_per_token);
    const double fe = double(m.moe_intermediate_size), fs = double(m.shared_expert_intermediate_size);
    const double e = double(std::max<int64_t>(1, etp));
    if (!rc_norm) b.sequence += 2.0 * h + (q < 2.0 && fs > 0 ? q * h : 0.0);
    b.sequence += 8.0 * E;
    const bool act_rc = (rm & kRecomputeMoeAct) != 0;
    // LatentMoE: the experts' fc1 input is l wide; fc1_latent_proj saves its input (the router's,
    // a quantized copy q·h under FP8) and fc2_latent_proj the combined output q·l, both on the
    // rank's own tokens (duplicated weights: the sequence part).
    const double in = double(m.ExpertInputSize());
    if (m.moe_latent_size > 0) b.sequence += q * double(m.moe_latent_size) + (q < 2.0 ? q * h : 0.0);
    b.split += k * (q * in * e + 2.0 * c * fe + (act_rc ? 0.0 : q * fe));
    if (fs > 0 && (rm & kRecomputeSharedExperts) == 0) b.split += 2.0 * c * fs + q * fs;
  }
  return b;
}

HybridKernels HybridKernelsPerBlock(const ModelSpec& m, const CostView& l, const MegatronUnfused& unfused) {
  const double ep = double(std::max<int64_t>(1, l.ep));
  const double experts = double(m.num_experts) / ep * kGroupedGemmKernelsPerExpert;
  const double attn = (m.architecture == Architecture::kDeepseekV4 ? kDsv4BlockKernels : kAttnBlockKernels) + unfused.kernels,
               mamba = kMambaBlockKernels, mlp = kMlpBlockKernels;
  const double moe = kMoeLayerKernels - kAttnBlockKernels + experts, pre = kMoeRouterKernels + kMoePreprocessKernels;
  const uint32_t scope = l.cuda_graph_scope;
  const bool all = l.cuda_graph == CudaGraphCapture::kFullIteration ||
                   (l.cuda_graph == CudaGraphCapture::kPerLayer && scope == 0);
  const bool some = l.cuda_graph == CudaGraphCapture::kPerLayer && scope != 0;
  auto graphed = [&](double kernels, uint32_t bit) { return all || (some && (scope & bit)) ? kernels : 0.0; };
  const double gdn = kGdnBlockKernels, g_gdn = graphed(gdn, kGraphAttn);
  const double g_attn = graphed(attn, kGraphAttn), g_mamba = graphed(mamba, kGraphMamba), g_mlp = graphed(mlp, kGraphMlp);
  double g_moe = graphed(moe, kGraphMoe), g_pre = graphed(pre, kGraphMoe);
  if (some && !(scope & kGraphMoe)) {
    g_pre = ((scope & kGraphMoeRouter) ? kMoeRouterKernels : 0.0) + ((scope & kGraphMoePreprocess) ? kMoePreprocessKernels : 0.0);
    g_moe = g_pre;
  }
  const double keep = 1.0 - kGraphedKernelShare;
  HybridKernels k;
  k.attn = attn - keep * g_attn;
  k.attn_host = attn - g_attn;
  k.mamba = mamba - keep * g_mamba;
  k.mamba_host = mamba - g_mamba;
  k.gdn = gdn - keep * g_gdn;
  k.gdn_host = gdn - g_gdn;
  k.mlp.dense = mlp - keep * g_mlp;
  k.mlp.dense_host = mlp - g_mlp;
  k.mlp.moe = moe - keep * g_moe;
  k.mlp.moe_host = moe - g_moe;
  k.mlp.moe_pre = pre - keep * g_pre;
  k.mlp.moe_pre_host = pre - g_pre;
  return k;
}

/// Parameters on the rank (ParamsOfRank: its blocks, norms, and the embedding / output layer /
/// final norm where it holds them), split as Megatron-Core splits them:
///   P_tp  = (attention, Mamba-2 mixers, dense MLPs, shared experts, h·V_padded tables) / t
///           (MambaMixer shards in_proj, conv1d, dt_bias, A_log, D and its gated norm by heads
///           and groups over TP: nheads_local_tp, ngroups_local_tp, mamba_mixer.py)
///   P_rep = the blocks' pre-norms, routers and the final norm (replicated over TP)
///   P_exp = routed experts / (EP·ETP)
/// bytes per parameter: 6 + 12/(DP·CP) dense, 6 + 12/EDP experts (distributed optimizer; 18
/// without), as Megatron-Bridge's estimator (megatron.md 3.5).
/// Activations: s·b/CP · Σ_blocks (sequence/t_sp + split/t) (HybridBlockSavedBytes), with
/// full recompute (MegatronFullRecomputeShare) keeping 2h/t_sp per recomputed block plus one
/// block's rebuilt activations, times the in-flight micro-batches (InFlightFactor on rank 0,
/// InflightMicrobatches of the rank against rank 0's), and on the rank with the output layer
/// one micro-batch's final-norm and output-layer inputs and the loss's logits (as
/// MegatronRankMemory's Transformer Engine count).
MemoryBreakdown HybridRankMemory(const Ctx& c, int64_t pp_rank, const MemoryOptions&) {
  const CostView& l = c.view;
  const ModelSpec& m = c.model;
  const ParamCounts& pc = c.params;
  const RankParams rp = ParamsOfRank(c, pp_rank);
  const double h = double(m.hidden_size);
  const double t = double(std::max<int64_t>(1, l.tp)), cp = double(std::max<int64_t>(1, l.cp));
  const double p = double(std::max<int64_t>(1, l.pp));
  const double etp_ep = double(std::max<int64_t>(1, l.etp)) * double(std::max<int64_t>(1, l.ep));
  MegatronEstimate e;
  e.padded_vocab = double(MegatronPaddedVocab(m.vocab_size, 128, l.tp));
  const double table = h * e.padded_vocab;
  const double A = double(rp.attention_mixers), M = double(rp.mamba_mixers), D = double(rp.dense_layers),
               E = double(rp.moe_layers), G = double(rp.gdn_mixers);
  const double tables = (rp.has_embedding ? 1.0 : 0.0) + (rp.has_head && !m.tie_word_embeddings ? 1.0 : 0.0) +
                        (rp.has_head && m.tie_word_embeddings && !rp.has_embedding ? 1.0 : 0.0);
  // Gated DeltaNet: in_proj, conv1d, dt_bias, A_log and out_proj split by heads over TP
  // (gdn common.py: tensor_model_parallel on each); its out_norm (d_v) counted with them.
  e.p_tp = (A * double(pc.attention_per_layer) + M * double(pc.mamba_per_layer) + G * double(pc.gdn_per_layer) +
            D * double(pc.dense_mlp_per_layer) +
            E * double(pc.shared_per_layer) + tables * table) / t;
  const double final_norm = rp.has_head ? h : 0.0;
  e.p_rep = double(rp.Blocks()) * h + E * double(pc.router_per_layer + pc.latent_proj_per_layer) + final_norm +
            (rp.mtp_layers > 0 ? 3.0 * h : 0.0);
  if (rp.mtp_layers > 0) e.p_tp += 2.0 * h * h / t;  // eh_proj (column-parallel)
  e.p_exp = E * double(m.num_experts) * double(pc.expert_per_layer) / etp_ep;
  const double dp = double(std::max<int64_t>(1, l.dp)) * cp;
  const double edp = std::max(1.0, double(std::max<int64_t>(1, l.dp)) * t * cp / etp_ep);
  e.bytes_dense = l.distributed_optimizer ? 6 + 12 / dp : 18;
  e.bytes_expert = l.distributed_optimizer ? 6 + 12 / edp : 18;
  e.weight_and_optimizer = (e.p_tp + e.p_rep) * e.bytes_dense + e.p_exp * e.bytes_expert;

  const double s = double(c.setup.seq_len), b = double(l.micro_batch);
  const double seq_div = l.sequence_parallel ? t : 1.0;
  const uint32_t rm = MegatronSelectiveModules(l);
  auto per_token = [&](MixerKind mixer, MlpKind mlp) {
    const TeLayerBytes tb = HybridBlockSavedBytes(m, mixer, mlp, c.setup.precision, l.etp, rm);
    return tb.sequence / seq_div + tb.split / t;
  };
  const double attn_tok = per_token(MixerKind::kAttention, MlpKind::kNone);
  const double mamba_tok = per_token(MixerKind::kMamba2, MlpKind::kNone);
  const double dense_tok = per_token(MixerKind::kNone, MlpKind::kDense);
  const double moe_tok = per_token(MixerKind::kNone, MlpKind::kMoe);
  const double gdn_tok = per_token(MixerKind::kGatedDeltaNet, MlpKind::kNone);
  const double recomputed = MegatronFullRecomputeShare(l, m);
  const double blocks = double(rp.Blocks());
  const double kept = A * attn_tok + M * mamba_tok + D * dense_tok + E * moe_tok + G * gdn_tok;
  double act = s * b / cp * ((1.0 - recomputed) * kept + recomputed * blocks * 2.0 * h / seq_div);
  MegatronArgs x;
  x.pp = l.pp;
  x.vpp = l.estimate_vpp;
  x.num_microbatches = c.mb_per_step;
  act *= InFlightFactor(x);
  if (recomputed > 0) {
    const double largest = std::max({A > 0 ? attn_tok : 0.0, M > 0 ? mamba_tok : 0.0, D > 0 ? dense_tok : 0.0,
                                     E > 0 ? moe_tok : 0.0, G > 0 ? gdn_tok : 0.0});
    act += s * b / cp * largest;
  }
  e.activation_layers = act;
  e.activation_output =
      rp.has_head ? s * b / cp * (4.0 * h / seq_div + e.padded_vocab * l.loss_bytes_per_logit / t) : 0.0;
  e.activation = e.activation_layers + e.activation_output;
  double inflight_share = 1.0;
  if (l.pp > 1) {
    const double first = InflightMicrobatches(l, c.split, 0);
    if (first > 0) inflight_share = InflightMicrobatches(l, c.split, pp_rank) / first;
  }
  const double layers_on_rank = std::max(1.0, blocks > 0 ? blocks : double(m.num_layers) / p);
  return MegatronMemoryFromEstimate(c, e, true, inflight_share, layers_on_rank);
}

}  // namespace meshplan::cost
