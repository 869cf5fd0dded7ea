#pragma once
/// \file memory_megatron.hpp
/// The "megatron" memory profile: Megatron-LM's theoretical memory estimate
/// (megatron/training/theoretical_memory_usage.py; megatron.md 3.1-3.4) and Korthikanti et
/// al. 2022 Table 2 per-layer activations (groundtruth.md B.3). Private to planner/cost.
/// Units: bytes (Megatron-LM prints MiB = bytes / 2^20).

#include <cstdint>

#include "cost/context.hpp"

namespace meshplan::cost {

/// The `args` Megatron-LM's estimator reads. Sizes are mesh-axis sizes (>= 1).
struct MegatronArgs {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t vpp = 0;     ///< virtual_pipeline_model_parallel_size; 0 = None
  int64_t cp = 1;      ///< not read by the estimator (kept for the caller)
  int64_t ep = 1;
  int64_t etp = 1;     ///< expert_tensor_parallel_size (already resolved: tp when unset)
  int64_t dp = 1;      ///< data_parallel_size = world / (tp·pp·cp)
  int64_t world = 1;   ///< world size (for expert DP = world / (etp·ep·pp))
  int64_t micro_batch = 1;
  int64_t seq_len = 0;
  int64_t num_microbatches = 0;  ///< 0 = None
  int64_t make_vocab_size_divisible_by = 128;
  bool sequence_parallel = false;
  bool selective_recompute = false;  ///< recompute_granularity == 'selective'
  bool distributed_optimizer = true;
  bool swiglu = true;     ///< gated_linear_unit with SiLU (λ = 3/2)
  int64_t norm_size = 1;  ///< 1 RMSNorm, 2 LayerNorm
  /// Megatron-Bridge's estimator (megatron.md 3.5) instead of Megatron-LM's.
  bool bridge_estimator = false;
  /// Embedding-sized tables (h·V: word embeddings, output layer) on the rank; -1: the
  /// estimator's own (the first stage's embedding, and the untied output layer when p = 1).
  /// A recipe's pipeline layout sets it per rank: one for its E stage, one for its L stage.
  double vocab_tables = -1;
  /// Final norms on the rank (the decoder's final layernorm, on the rank with the output layer):
  /// -1 = the estimator's final_layernorm / p on every rank; >= 0 = that many whole norms.
  double final_norms = -1;
  /// Parameters the layer formulas do not count, split by TP like the attention and MLP ones
  /// (elements on the rank, before TP): the eh_proj and norms of the rank's MTP layers.
  double extra_tp_params = 0;
};

/// The estimate and its parts, bytes.
struct MegatronEstimate {
  double padded_vocab = 0;
  double p_tp = 0, p_rep = 0, p_exp = 0;  ///< parameters on the most loaded shard (megatron.md 3.2)
  double bytes_dense = 0, bytes_expert = 0;  ///< bytes per parameter, bytes(DP) and bytes(EDP)
  double weight_and_optimizer = 0;
  double activation_layers = 0;  ///< activation minus the output-layer term
  double activation_output = 0;  ///< output layer + loss term (pp == 1 only)
  double activation = 0;
  double Total() const { return weight_and_optimizer + activation; }
};

/// Vocabulary padded as Megatron does: to a multiple of make_vocab_size_divisible_by · tp.
int64_t MegatronPaddedVocab(int64_t vocab, int64_t divisible_by, int64_t tp);

/// Megatron-LM report_theoretical_memory for `model` (formulas at the definition).
MegatronEstimate MegatronTheoreticalMemory(const ModelSpec& model, const MegatronArgs& args);
/// The parameter part of MegatronTheoreticalMemory (padded_vocab, p_tp, p_rep, p_exp,
/// bytes_dense, bytes_expert, weight_and_optimizer; the activation fields left 0): it reads
/// the mesh, the rank's layers and tables and the optimizer, not the micro-batch, sequence or
/// recompute, so a search keeps it per mesh and rank. Bytes; throws nothing.
MegatronEstimate MegatronWeightEstimate(const ModelSpec& model, const MegatronArgs& args);
/// The activation part of MegatronTheoreticalMemory (activation_layers, activation_output,
/// activation), written into `e`, which holds MegatronWeightEstimate(model, args) (its
/// padded_vocab is read). Bytes; throws nothing.
void MegatronActivationEstimate(const ModelSpec& model, const MegatronArgs& args, MegatronEstimate& e);

/// Korthikanti et al. 2022 Table 2, generalised to an FFN of width f (ffn = 4h gives 34):
/// bytes of one layer for s·b tokens with t-way TP:
///   none:      s·b·h·(10/t_sp + (8 + 4f/h)/t) + [5·a·s²·b/t if materialised attention]
///   selective: s·b·h·(10/t_sp + (8 + 4f/h)/t)
///   full:      2·s·b·h / t_sp
/// t_sp = t with sequence parallelism, else 1. (The 10 sbh are the LayerNorm inputs, the
/// QKV and FFN inputs and the dropout masks that TP replicates and SP splits.)
double KorthikantiLayerBytes(double h, double a, double f, double s, double b, double t, bool sp,
                             Recompute recompute, bool materialized_attention);

/// FFN width ratio r of the estimator's activation formula: f/h, or with Megatron-Bridge's
/// estimator on an MoE model the layer average (L_d·f + L_m·(f_e·k + f_s))/(L·h) (megatron.md 3.5).
double EstimatorFfnRatio(const ModelSpec& m, const MegatronArgs& x);

/// Bytes per element of the copy Transformer Engine saves of a Linear / LayerNormLinear input
/// for the weight-gradient GEMM when the GEMMs run quantized: bf16 2, FP8 (delayed, current
/// scaling, MXFP8) 1 (the 1/32 MXFP8 scale byte is ignored), NVFP4 0.5 + 1/16 (E4M3 scale per
/// 16 elements). Source: transformer_engine/pytorch/module/linear.py and layernorm_linear.py
/// (the quantized input is saved with update_usage(rowwise_usage=False, columnwise_usage=True),
/// or row-wise only when sequence parallelism re-gathers it; one copy either way).
double QuantizedInputBytes(Precision precision);

/// Activation bytes the estimator of MegatronTheoreticalMemory counts in bf16 that Transformer
/// Engine keeps quantized (q = QuantizedInputBytes) under FP8 / FP4 GEMMs, for the same layers,
/// in-flight factor and divisions as the estimate (x.bridge_estimator: / t·CP; branch A / t;
/// branch B: norm outputs / t only with SP, × 1.05). Per layer, in units of s·b·h:
///   (2 − q)·(2 + r): the QKV and fc1 inputs (the norm outputs) and the fc2 input (r = f/h, or
///   the Bridge estimator's average MoE ratio). The output projection saves nothing extra:
///   Megatron-Core sets save_original_input on it for FP8 recipes other than delayed scaling
///   and for FP4 (attention.py), so it shares the attention output the fused attention keeps.
///   FP8: 2 + r; bf16: 0. (Delayed scaling would add q for the projection's FP8 copy.)
/// With `routed` false and the Bridge estimator on an MoE model, r leaves out the routed
/// experts' k·f_e/h (their quantized inputs are priced by RoutedExpertInputs instead).
double QuantizedInputSaving(const ModelSpec& m, const MegatronArgs& x, Precision precision, bool routed = true);

/// Saved activation bytes of the routed experts that Megatron-Bridge's estimator leaves out
/// (megatron.md 3.5 counts 4·k·f_e/h per MoE layer, which is the SwiGLU fc1 output that the
/// weighted SwiGLU keeps): Transformer Engine's GroupedLinear also saves its inputs, k permuted
/// copies of each token for fc1 (h wide) and the probability-weighted SwiGLU output for fc2
/// (f_e/etp wide), each at q = QuantizedInputBytes bytes per element (2 in bf16). Per MoE layer:
///   s·b/(t·CP) · k · (q·h·etp + q·f_e)   (the fc2 term is 0 under moe_act recompute),
/// times the estimator's in-flight factor. Sources: Megatron-Core moe/experts.py (TEGroupedMLP:
/// probabilities applied in the activation, fc1 → weighted SwiGLU → fc2), moe/moe_utils.py
/// (unpermute without probabilities saves only the row map), Transformer Engine
/// module/grouped_linear.py and permutation.py. Bytes; 0 for dense models.
double RoutedExpertInputs(const ModelSpec& m, const MegatronArgs& x, int64_t etp, Precision precision,
                          bool moe_act_recompute);

/// Saved activation bytes per token of one transformer layer under Megatron-Core with
/// Transformer Engine, split into the part on the sequence dimension (`sequence`: norm inputs
/// and outputs, router input; divided by TP only with sequence parallelism) and the part split
/// by TP (`split`: attention heads, FFN widths, routed experts). Counted tensor by tensor
/// (bytes per token; q = QuantizedInputBytes, 2 in bf16; a heads, g KV heads, d head_dim):
///   norm inputs 4h; norm outputs saved by the next GEMM q·h each (MLA in FP8: one quantized
///   copy per down projection); attention q, k, v and output 2·(2ad + 2gd), plus 2·(ad + gd)
///   for q/k norms, plus the fp32 log-sum-exp 4a; MLA: q, k 2·a·(d_nope + d_rope), v and output
///   2·a·d_v, the q_a / kv_a norm inputs (2·r) and up-projection inputs (q·r), k_pe 2·d_rope;
///   the output projection shares the attention output (save_original_input);
///   dense SwiGLU: fc1 output 4f, fc2 input q·f; MoE: router input 2h, router logits and
///   probabilities 8E, shared-expert fc1 copy q·h (FP8) and 4f_s + q·f_s, routed experts
///   k·(q·h·etp + 4f_e + q·f_e) (fc1 input per routed copy, gathered over expert-TP; weighted
///   SwiGLU input; fc2 input).
/// Full recompute keeps 2h per token of each recomputed layer plus, once, the rebuilt
/// activations of one layer (the larger kind) for one micro-batch.
/// Selective recompute modules remove what they recompute: layernorm the norm outputs, mlp the
/// dense fc1 output and fc2 input, moe_act the routed fc2 input, shared_experts the shared
/// expert's, moe everything of the MoE block but its bf16 input (2h), mla_up_proj MLA's q, k and v (core_attn changes nothing: flash attention already
/// keeps only its inputs and output). Dropout is off in every supported model (no masks).
/// Sources: Transformer Engine module/linear.py, layernorm_linear.py, grouped_linear.py,
/// attention; Megatron-Core transformer/attention.py, multi_latent_attention.py, moe/experts.py,
/// moe/router.py; recompute modules from TransformerConfig.recompute_modules.
struct TeLayerBytes {
  double sequence = 0;  ///< bytes per token on the sequence dimension
  double split = 0;     ///< bytes per token split by TP
};
TeLayerBytes TeSavedBytesPerToken(const ModelSpec& m, bool moe_layer, Precision precision, int64_t etp,
                                  uint32_t recompute_modules);

/// Interleaved-schedule activation factor 1 + (p − 1)/(p·v) (Korthikanti §4.2.3).
double InterleaveFactor(int64_t pp, int64_t vpp);

/// The estimator's in-flight activation factor (megatron.md 3.4) for `x`: InterleaveFactor with
/// VPP, else min(1, M/p) when p > 1 and the micro-batch count M is known, else 1.
double InFlightFactor(const MegatronArgs& x);

/// Bytes per parameter of the main-gradient buffer, which is also the dtype of the DP gradient
/// reduction: 4 (fp32) unless a Megatron-Bridge layout sets grad_reduce_in_fp32 false, then 2
/// (bf16). megatron.md 3.3 ("grad_reduce_in_fp32=False ... makes the main-grad buffer bf16").
double MainGradBytes(const CostView& layout);

/// Memory of the megatron profile for a layout: the estimate of the most loaded (first) PP
/// stage for every rank, split into MemoryBreakdown terms (see memory_megatron.cpp). With a
/// recipe's pipeline layout (c.split.given) the estimate of rank `pp_rank` itself: its own
/// decoder layers in place of L / p, its own embedding-sized tables, and its activations scaled
/// by its in-flight micro-batches against the first stage's.
MemoryBreakdown MegatronRankMemory(const Ctx& c, int64_t pp_rank, const MemoryOptions& opts);

/// MegatronRankMemory's last step: the MemoryBreakdown of an estimate `e` of the rank (its
/// P_tp, P_rep, P_exp, bytes per parameter and activation parts): weights 2 B, main gradients
/// MainGradBytes, the sharded optimizer state, activations / CP (unless `bridge_estimator`, whose
/// activations are already / CP) scaled by `inflight_share`, cpu_offloading_num_layers out of
/// `layers_on_rank`, and the Megatron FSDP / torch FSDP2 sharding and buffers (see the
/// definition). Bytes.
MemoryBreakdown MegatronMemoryFromEstimate(const Ctx& c, const MegatronEstimate& e, bool bridge_estimator,
                                           double inflight_share, double layers_on_rank);

}  // namespace meshplan::cost
