#pragma once
/// \file dsv4.hpp
/// Cost terms of DeepSeek-V4's attention block (MixerKind::kDeepseekV4Attention: sliding-window
/// MQA, compressed sparse attention with its lightning indexer at compress ratio 4, heavily
/// compressed attention at 128, the grouped low-rank output projection, and the block's two
/// manifold-constrained hyper-connections over hc_mult residual streams). Private to
/// planner/cost. Units: elements, FLOP, bytes per token.
///
/// Sources, all read at these commits:
///  * NeMo AutoModel 36044ad3 nemo_automodel/components/models/deepseek_v4/layers.py
///    (DeepseekV4Attention.forward, DeepseekV4Compressor.forward, _pool_windows,
///    DeepseekV4Indexer.forward, DeepseekV4HyperConnection.compute_weights, DeepseekV4HyperHead)
///    and model.py (DeepseekV4Block.forward): the architecture's definition.
///  * Megatron-LM dev d48bd6be megatron/core/transformer/experimental_attention_variant/
///    deepseek_v4_hybrid_attention.py (DSv4HybridSelfAttention: q_down, q_layernorm, q_up,
///    _q_rms_norm, kv_proj, kv_layernorm, the mla_up_proj checkpoint, linear_o_group_proj,
///    linear_proj) and megatron/core/transformer/hyper_connection.py (HyperConnectionModule):
///    the tensors Megatron-Core keeps.
///  * Megatron-Bridge 067f987d src/megatron/bridge/training/utils/flop_utils.py
///    (num_floating_point_operations, the dsv4_hybrid branch): the published model FLOPs.
/// The window is sliding_window keys; a ratio-c compressor pools c consecutive tokens into one
/// key (ratio 4 in overlap mode: 2·c tokens, wkv / wgate 2·d wide); query t (1-based) sees
/// min(t, w) window keys, floor(t/c) pooled keys, of which a ratio-4 layer attends to at most
/// index_topk (the indexer scores all floor(t/4)). K = V: one latent of head_dim d.

#include <cstdint>

#include "cost/memory_megatron.hpp"
#include "meshplan/model.hpp"

namespace meshplan::cost {

/// Mean over the queries t = 1..s of min(cap, floor(t / c)) (cap < 0: no cap): the pooled keys
/// a query of a causal sequence of s tokens sees at compress ratio c. Closed form of the sum.
double Dsv4MeanPooledKeys(int64_t seq_len, int64_t compress_ratio, int64_t cap);

/// Mean over the queries of min(t, w): the window keys (w − w(w−1)/(2s) when w <= s).
double Dsv4MeanWindowKeys(int64_t seq_len, int64_t window);

/// Forward FLOP per token of one DeepSeek-V4 attention block of compress ratio `c` (0, 4 or
/// 128) with its two hyper-connections, from the architecture's definition (AutoModel
/// layers.py), h hidden, a heads, d head_dim, r_q, r_o, g o_groups, n_I, d_I the indexer's
/// heads and head dim, m hc_mult:
///   linear (GEMMs): wq_a 2·h·r_q, wq_b 2·r_q·a·d, wkv 2·h·d, wo_a (grouped) 2·a·d·r_o,
///     wo_b 2·g·r_o·h; the compressor's wkv and wgate 2·2·h·k·d (k = 2 at c = 4, else 1);
///     the indexer (c = 4) its compressor 2·2·h·2·d_I, wq_b 2·r_q·n_I·d_I, weights_proj
///     2·h·n_I; each hyper-connection's fn (mix) projection 2·m·h·(2 + m)·m, x2 sites
///   core: QK^T and PV over the keys the query attends to, 4·a·d·(window + attended pooled
///     keys); the indexer's scores over every visible pooled key 2·n_I·d_I·floor(t/4)
///     (its ReLU weighting and top-k selection not counted, as for DSA)
/// The hyper-connections' collapse, expand and Sinkhorn steps are elementwise (priced as HBM
/// traffic, Dsv4BlockElements).
struct Dsv4Flops {
  double linear = 0;
  double core = 0;
};
Dsv4Flops Dsv4AttentionFwdFlops(const ModelSpec& model, int64_t compress_ratio, int64_t seq_len);

/// Forward + backward (x3: the backward computes both input gradients of every product, as the
/// other block kinds) FLOP per token of one attention block, the mean over the model's
/// kDeepseekV4Attention layers (FlopsPerToken::attn_linear_flops / attn_core_flops of a
/// DeepSeek-V4 model: a pipeline stage is priced with the mean, its own mix of ratio-4 and
/// ratio-128 layers differing from it by at most one layer's compressor and indexer).
Dsv4Flops Dsv4MeanAttentionFlops(const ModelSpec& model, int64_t seq_len);

/// HBM elements per token moved by the non-GEMM kernels of one attention block's forward, mean
/// over the model's layers (the backward about twice, as HybridBlockElements):
///   the two hyper-connections (hyper_connection.py): each reads the m streams for its mapping
///     (m·h), the collapse reads them again and writes h (m·h + h), the expand reads the
///     streams and the sublayer output and writes m streams (m·h + h + m·h): 4·m·h + 2h a site
///   the block's norm (read h, write h) 2h; q_layernorm 2·r_q; the per-head q RMSNorm 2·a·d;
///     kv_layernorm 2·d; RoPE on q and kv and the inverse RoPE of the output 2·(a·d + d) + 2·a·d
///   the compressor (c > 0): kv and gate in fp32 written and read by the pooling (2 x 2 x 2·k·d,
///     fp32 as 2 elements each), its kv_norm and RoPE on the pooled keys (4·d/c)
///   the indexer (c = 4): its compressor likewise at d_I (16·d_I), q's RoPE 2·n_I·d_I, the
///     top-k indices written and read (int32, 2 elements each: 4·index_topk)
///   FP8: the linear_proj input cast 1.5·g·r_o
double Dsv4BlockElements(const ModelSpec& model, bool fp8);

/// Saved activation bytes per token of one attention block under Megatron-Core (all on the
/// sequence dimension: DeepSeek-V4's hybrid attention runs with TP 1 only), mean over the
/// model's layers, q = QuantizedInputBytes(precision):
///   hyper-connections, x2 sites: the m bf16 streams (one tensor behind the mapping, collapse
///     and residual views, BroadcastTensorFused) 2·m·h, the fp32 mapping outputs
///     4·(m² + 2m) and the Sinkhorn input 4·m², the sublayer output for h_post's gradient 2h
///     (the unfused path's fp32 copy of the streams, 4·m·h, is not counted: Megatron-Bridge
///     turns use_fused_mhc on for Blackwell)
///   the norm input 2h and its output q·h (the input of q_down and kv_proj)
///   q_down's output (q_layernorm input) 2·r_q and q_up's input q·r_q
///   q_up's output (the per-head RMSNorm input) 2·a·d, kv_proj's output 2·d and the RoPE'd
///     q and kv the sparse attention keeps 2·a·d + 2·d: removed by the mla_up_proj
///     recompute (DSv4HybridSelfAttention's qkv_up_checkpoint)
///   the attention output 2·a·d and its fp32 log-sum-exp 4·a, the attended key indices
///     (int32) 4·(w + attended pooled keys), the inverse-RoPE'd output (wo_a's input) 2·a·d,
///     linear_proj's input 2·g·r_o (set_save_original_input)
///   compressor (c > 0): its fp32 kv and gate 2·4·k·d, the softmax output 4·k·d
///   indexer (c = 4): its compressor's 12·2·d_I, its q 2·n_I·d_I, its fp32 head weights 4·n_I
TeLayerBytes Dsv4BlockSavedBytes(const ModelSpec& model, Precision precision, uint32_t recompute_modules);

/// Kernels of one attention block, forward + backward: the two hyper-connections (mapping
/// GEMM, Sinkhorn, collapse, expand: about 6 forward, 8 backward each with the fused mHC
/// kernels), the norm, q_down, q_layernorm, q_up, the q RMSNorm, kv_proj, kv_layernorm,
/// RoPE, the sparse attention, inverse RoPE, the grouped wo_a, linear_proj (about 14 forward,
/// 20 backward), the compressor (wkv, wgate, pooling, norm, RoPE: 5 and 8) and the indexer
/// (its compressor, wq_b, weights_proj, scores, top-k: 9 and 12) on the layers that have them,
/// the mean over a Flash-like pattern (about half ratio-4, half ratio-128): about 90. An
/// estimate like kMambaBlockKernels.
inline constexpr double kDsv4BlockKernels = 90.0;

/// Model FLOPs per token as Megatron-Bridge reports them for a DeepSeek-V4 model
/// (flop_utils.py num_floating_point_operations, the dsv4_hybrid branch; the figure behind the
/// published model TFLOP/s), with mtp_layers MTP layers (each one more ratio-0 attention and
/// MoE layer, its norms and 2h² projections, its logits): per token of a sequence of s,
///   6·(L + N)·[r_q·(h + a·d + 1) + h·d + d + a·d·r_o + g·r_o·h]
///   + 6·[L_0·a·w·d·2 + L_128·a·w·d·2 + L_4·a·(w + c_4)·d·2 + L_4·h·2d·2 + L_128·h·d·2
///        + L_4·(h·2·d_I·2 + r_q·n_I·d_I + h·n_I)]
///   + 6·s·[L_128·a·d/128 + L_4·n_I·d_I/4]
///   + 6·h·3·(f_e·k + f_s)·(L + N) + 6·N·(3h + 2h²) + 6·h·V_p·(N + 1)
/// with c_4 = k'·(1 − 4k'/(2s)), k' = min(index_topk, s/4), L_c the layers (MTP included) of
/// ratio c, V_p the vocabulary padded to make_vocab_size_divisible_by 1280 (the bridge's).
double Dsv4ModelFlopsPerToken(const ModelSpec& model, int64_t seq_len, int64_t mtp_layers);

}  // namespace meshplan::cost

namespace meshplan::cost {

/// DeepSeek-V4 as NeMo AutoModel trains it (nemo_automodel/components/models/deepseek_v4 at
/// 36044ad3: model.py DeepseekV4Block.forward, layers.py DeepseekV4Attention /
/// DeepseekV4Compressor / DeepseekV4Indexer / DeepseekV4HyperConnection, moe/layers.py Gate and
/// MLP, moe/experts.py GroupedExpertsDeepEP, moe/parallelizer.py apply_ac), per token of a
/// micro-batch, the mean over the model's layers (`full`: the largest layer). TP is 1 (the model
/// has no TP plan). Derived from the source (which tensors autograd saves, which kernels run),
/// not measured. Symbols as dsv4.hpp above, f the routed and f_s the shared expert width, E
/// experts, k top-k, S the local and S_f = cp·S the full sequence, P = floor(S_f/c) pooled keys,
/// K' = min(index_topk, floor(S_f/4)).
struct Dsv4PytorchTerms {
  /// Bytes a layer keeps for backward. Without checkpointing:
  ///   hyper-connections, both sites: the fp32 copy of the m streams and its normalised fp32
  ///     value (the fp32 mapping GEMM's input) 8·m·h each, the bf16 streams behind the collapse
  ///     and expand 2·m·h each, the collapsed norm input and the sublayer output 2h + 2h each,
  ///     the mapping outputs and Sinkhorn input 2·(4(2+m)m + 10m + 2m² + 8 + 4m²)
  ///   attention: norm output 2h, wq_a output and q_residual 4·r_q, wkv output 2d, the norms'
  ///     rstd 8, wq_b output 2·a·d and its per-head rstd 4a, the fp32 RoPE tables of three calls
  ///     12·r_d, wo_a's input 2·a·d, wo_b's input 2·g·r_o, and the attention kernel's tensors:
  ///     tilelang (Miles sparse MQA): q 2·a·d, the gathered kv 2d·(S_f + P)/S, int32 key indices
  ///     4·(min(w, S_f) + P'), output 2·a·d, fp32 lse 4a (P' = 0, K', P at c = 0, 4, 128);
  ///     any other backend (eager_attention_with_sink): q 2·a·d, K and V repeated to the heads
  ///     4·a·d·(S_f + P)/S, fp32 softmax 4a·(S_f + P + 1), bf16 probabilities 2a·(S_f + P), 12a
  ///   compressor (c > 0): its fp32 input 4h, at c = 4 the overlap-transformed fp32 kv and the
  ///     window softmax 8d·cp + 8d, at c = 128 4d + 4d; the indexer keeps nothing (its
  ///     parameters are frozen and its output is top-k indices)
  ///   MoE: the norm output 2h, the gate's fp32 softplus input and sqrt output 8E and top-k
  ///     12k + 4 (hash layers: their fp32 F.linear's input 4h more), per routed copy the permuted input 2h, the
  ///     gate-up output 4f, the clamped SwiGLU output 2f and the fp32 prob 4, the shared expert's
  ///     fp32 clamped SwiGLU 5·4·f_s plus its down input 2·f_s.
  /// Whole-block checkpoint (AutoModel wraps every DeepseekV4Block; ignore_router_for_ac
  /// must-saves the router projection and aten.topk): the block input 2·m·h, the router logits
  /// (2E bf16, 4E on the fp32 hash layers) and top-k 12k (score layers),
  /// the indexer's top-k 12·K' (c = 4). "selective" (every other matmul saved) is priced as the
  /// whole-block checkpoint plus half the saved bytes of its bf16 matmul outputs.
  double saved = 0;
  double full = 0;           ///< the largest layer's bytes without checkpointing (one layer recomputed)
  /// Bytes per token of each in-flight micro-batch outside the layers, held by every checkpoint
  /// frame: the 4-D bf16 additive mask 2·S_f and the two rotary tables' cos and sin 8·r_d.
  double per_microbatch = 0;
  /// FLOP per token of a layer's bf16 GEMMs, forward + backward (+ the forward again under
  /// full or selective recompute): wq_a, wq_b, wkv, wo_a, wo_b x3; the frozen indexer's wq_b
  /// and weights_proj forward only (x1).
  double bf16_linear = 0;
  /// FLOP per token of a layer's fp32 GEMMs (torch runs them on the CUDA cores: AutoModel sets
  /// no TF32): the two hyper-connection mappings 2·2·m·h·(2+m)·m and the compressor's wkv and
  /// wgate 2·2·h·k_c·d x3, the indexer's compressor 2·2·h·2·d_I x1 (+ recompute's forward).
  double fp32_linear = 0;
  /// FLOP per token of a layer's attention core: tilelang's sparse kernel over a fixed
  /// T_k = roundup64(min(w, S_f) + P') keys per query, 4·a·d·T_k forward and 10·a·d·T_k backward
  /// (tilelang_sparse_mla_fwd/bwd.py: masked slots are computed too), the tilelang indexer's
  /// scores 2·n_I·d_I·(S_f/8 + 128) forward only; other backends dense: 12·a·d·(S_f + P) and the
  /// torch indexer 2·n_I·d_I·floor(S_f/4).
  double core = 0;
  /// HBM bytes per token of a layer's eager kernels, forward, backward (about twice) and any
  /// recomputed forward: per hyper-connection site 40·m·h + 12·h (the fp32 copy, norm, mapping
  /// read, collapse, cast, expand), the RoPE calls 2·(4a(d − r_d) + 30·a·r_d), the q / output
  /// copies 20·a·d, the compressor 6h + 120d (c = 4) or 6h + 40d (c = 128), the indexer (forward
  /// only) 6h + 120·d_I + 4·n_I·d_I + 30·n_I·r_d + 12P, the per-layer mask 4·S_f + 20P or + 8P,
  /// the top-k index build 130·T_k, the shared expert's fp32 SwiGLU 54·f_s and the gate 30E.
  /// Estimates from the op sequence, not timed.
  double eager_bytes = 0;
  /// CP (cp > 1; deepseek_v4/cp.py dsv4_cp_all_gather, layers.py): bytes per local token a rank
  /// contributes to a layer's all-gathers over the CP group, blocking on the compute stream:
  /// the kv latent 2d, the pooled kv 2d/c, at c = 4 the overlap windows' fp32 kv and gate 16d
  /// (`cp_bytes`: differentiable, reduce-scattered in backward) and the indexer's fp32 windows
  /// 16·d_I plus its pooled keys d_I/2 (`cp_fwd_only_bytes`: no backward).
  double cp_bytes = 0, cp_fwd_only_bytes = 0;
  /// Parameters (elements, whole model) AutoModel keeps in fp32 (fully_shard_deepseek_v4's fp32
  /// units: the hyper-connections, hc_head, attention sinks, the compressors, lm_head) and
  /// those it freezes (the indexers: no gradient, no optimizer state).
  double fp32_params = 0, frozen_params = 0;
};

/// The terms above for a micro-batch of `seq_len` tokens per sequence over `cp` CP ranks, under
/// `recompute`, with the tilelang attention backend or not. The score gate is priced in bf16
/// (backend.gate_precision float32, which AutoModel's GB200 benchmark sets, is not read).
Dsv4PytorchTerms Dsv4Pytorch(const ModelSpec& model, Recompute recompute, int64_t seq_len, int64_t cp, bool tilelang);

}  // namespace meshplan::cost
