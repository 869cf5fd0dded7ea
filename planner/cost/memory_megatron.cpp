// "megatron" memory profile: Megatron-LM's theoretical memory estimate, reproduced formula by
// formula (megatron.md 3.1-3.4), and Korthikanti et al. 2022 Table 2. Units: bytes.

#include "cost/memory_megatron.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "cost/hybrid.hpp"
#include "cost/last_values.hpp"
#include "cost/memory.hpp"
#include "cost/tables.hpp"
#include "cost/time.hpp"

namespace meshplan::cost {

int64_t MegatronPaddedVocab(int64_t vocab, int64_t divisible_by, int64_t tp) {
  const int64_t mult = std::max<int64_t>(1, divisible_by) * std::max<int64_t>(1, tp);
  return (vocab + mult - 1) / mult * mult;
}

/// Parameter counts (megatron.md 3.1, theoretical_memory_usage.py::
/// compute_weight_and_optimizer_memory), λ = 3/2 with SwiGLU, n = norm_size:
///   attn     = 2·h·h·((1 + g/a)·(q/h)), q = kv_channels·a        (GQA, no biases)
///   attn_MLA = q_term + r_kv·(h + a·(d_nope + d_v) + n) + h·d_rope + a·d_v·h,
///              q_term = h·a·(d_nope + d_rope) without q LoRA, r_q·(h + a·(d_nope + d_rope) + n) with
///   dense_mlp = 2·h·f·λ, shared = 2·h·f_s·λ, routed = 2·h·f_e·E·λ, layernorms = 2·h·n,
///   router = h·E (+E with a router linear bias), final_layernorm = n·h, embedding = h·V (V padded);
///   departures under bridge_estimator, from Megatron-Core's own model (tests/data/mcore/): q/k norms
///   (2·head_dim·n per layer) with qk_layernorm; no router term for DeepSeek's score-correction
///   bias (a buffer); MLA's q / kv down projections and their norms whole on every TP rank
///   (Transformer Engine's duplicated TELinear); per pipeline rank (MegatronArgs::final_norms)
///   the final layernorm on the rank with the output layer only
/// Most loaded shard (megatron.md 3.2, current Megatron-LM, first PP stage, no MTP):
///   P_tp  = ([(attn + dense_mlp)·L_d + (attn + shared)·L_m]/p + h·V)/t   (+ h·V/t untied, p = 1)
///   P_rep = [layernorms·L_d + (layernorms + router)·L_m + final_layernorm]/p
///   P_exp = routed·L_m/p / (etp·ep)
///   weight_and_optimizer = (P_tp + P_rep)·bytes(DP) + P_exp·bytes(EDP), EDP = world/(etp·ep·p)
///   bytes(d) = 18 without the distributed optimizer, 6 + 12/d with it (megatron.md 3.3)
/// Activation (megatron.md 3.4, first stage, s = seq_length, b = micro_batch_size):
///   (A) sequence_parallel and selective:
///       A = s·b·h·(18 + 4·f/h)·L + 8·s·b·p + s·b·h·p; × (1 + (p−1)/(p·v)) with VPP, else
///       × min(1, M/p) when p > 1 and M is known; + s·b·h·4·(1 + V/h) when p = 1; A / t
///   (B) otherwise: A = s·b·h·(10 + 24/t)·L + 8·s·b·p + s·b·h·p; same PP factors;
///       + 2·(s·b·V/t + s·b·h) when p = 1; × 1.05
/// bridge_estimator (Megatron-Bridge theoretical_memory_utils.py, megatron.md 3.5): bytes(d)
///   with d = DP·CP for dense parameters and EDP = DP·t·CP/(EP·ETP) for experts; activation
///   always by (A) with f/h replaced by r = (L_d·f + L_m·(f_e·k + f_s))/(L·h), divided by t·CP.
double EstimatorFfnRatio(const ModelSpec& m, const MegatronArgs& x) {
  const double h = double(m.hidden_size), f = double(m.intermediate_size);
  if (!x.bridge_estimator || !m.is_moe()) return f / h;
  const double L = double(m.num_layers), L_d = double(m.num_dense_layers), L_m = L - L_d;
  if (L <= 0) return f / h;  // a pipeline rank without decoder layers (a recipe's layout)
  return (L_d * f + L_m * (double(m.moe_intermediate_size) * double(m.experts_per_token) +
                           double(m.shared_expert_intermediate_size))) / (L * h);
}

MegatronEstimate MegatronWeightEstimate(const ModelSpec& m, const MegatronArgs& x) {
  const double h = double(m.hidden_size), a = double(m.num_attention_heads);
  const double g = double(m.num_key_value_heads);
  const double n = double(x.norm_size), lambda = x.swiglu ? 1.5 : 1.0;
  const double t = double(std::max<int64_t>(1, x.tp)), p = double(std::max<int64_t>(1, x.pp));
  MegatronEstimate e;
  e.padded_vocab = double(MegatronPaddedVocab(m.vocab_size, x.make_vocab_size_divisible_by, x.tp));
  const double V = e.padded_vocab;

  double attn = 0, mla_replicated = 0;
  if (m.mla) {
    const MlaSpec& s = m.mla_spec;
    const double nope = double(s.qk_nope_head_dim), rope = double(s.qk_rope_head_dim);
    const double q_term = s.q_lora_rank == 0 ? h * a * (nope + rope)
                                             : double(s.q_lora_rank) * (h + a * (nope + rope) + n);
    attn = q_term + double(s.kv_lora_rank) * (h + a * (nope + double(s.v_head_dim)) + n) + h * rope +
           (a * double(s.v_head_dim)) * h;
    // Megatron-Bridge builds MLA with Transformer Engine, whose down projections are TELinear in
    // parallel_mode "duplicated" (multi_latent_attention.py): q_down, kv_down and their norms are
    // whole on every TP rank. Megatron-LM's estimate splits them by TP with the rest.
    if (x.bridge_estimator) {
      const double r_q = double(s.q_lora_rank), r_kv = double(s.kv_lora_rank);
      mla_replicated = (r_q > 0 ? r_q * (h + n) : 0.0) + h * (r_kv + rope) + r_kv * n;
    }
  } else {
    const double q = double(m.head_dim) * a;
    attn = 2 * h * h * ((1 + (g / a)) * (q / h));
  }
  const bool moe = m.is_moe();
  const double L_d = moe ? double(m.num_dense_layers) : double(m.num_layers);
  const double L_m = moe ? double(m.num_layers - m.num_dense_layers) : 0.0;
  const double dense_mlp = 2 * h * double(m.intermediate_size) * lambda;
  const double shared = 2 * h * double(m.shared_expert_intermediate_size) * lambda;
  const double routed = moe ? 2 * h * double(m.moe_intermediate_size) * double(m.num_experts) * lambda : 0.0;
  // Input and pre-MLP norms; with qk_layernorm (Qwen3, not MLA) the q and k norms, head_dim
  // each (Megatron-Core attention.py q_layernorm / k_layernorm; counted from Megatron-Core's
  // model, tests/data/mcore/param_counts.json).
  const bool qk_norms = x.bridge_estimator && m.qk_norm && !m.mla;
  const double layernorms = 2 * h * n + (qk_norms ? 2.0 * double(m.head_dim) * n : 0.0);
  // Router: h·E, plus the linear's bias where the router has one (GPT-OSS). DeepSeek's
  // score-correction bias is Megatron-Core's expert_bias, a buffer (moe/router.py
  // register_buffer), not a parameter.
  const bool router_bias = x.bridge_estimator ? m.router_bias && m.expert_bias : m.router_bias;
  const double router = moe ? h * double(m.num_experts) + (router_bias ? double(m.num_experts) : 0.0) : 0.0;
  const double final_ln = n * h;
  const double embedding = h * V;

  const double attn_tp = attn - mla_replicated;
  if (x.vocab_tables >= 0) {
    e.p_tp = (((attn_tp + dense_mlp) * L_d + (attn_tp + shared) * L_m) / p + x.vocab_tables * embedding) / t;
  } else {
    e.p_tp = (((attn_tp + dense_mlp) * L_d + (attn_tp + shared) * L_m) / p + embedding) / t;
    if (!m.tie_word_embeddings && x.pp == 1) e.p_tp += embedding / t;
  }
  e.p_tp += x.extra_tp_params / t;
  const double rep_layer = layernorms + mla_replicated;
  e.p_rep = x.final_norms >= 0 ? (rep_layer * L_d + (rep_layer + router) * L_m) / p + x.final_norms * final_ln
                               : (rep_layer * L_d + (rep_layer + router) * L_m + final_ln) / p;
  const double etp_ep = double(std::max<int64_t>(1, x.etp)) * double(std::max<int64_t>(1, x.ep));
  e.p_exp = (routed * L_m / p) / etp_ep;
  const double cp = double(std::max<int64_t>(1, x.cp));
  const double dp = double(std::max<int64_t>(1, x.dp)) * (x.bridge_estimator ? cp : 1.0);
  const double edp = x.bridge_estimator ? std::max(1.0, double(std::max<int64_t>(1, x.dp)) * t * cp / etp_ep)
                                        : std::max(1.0, double(x.world) / (etp_ep * p));
  e.bytes_dense = x.distributed_optimizer ? 6 + (12 / dp) : 18;
  e.bytes_expert = x.distributed_optimizer ? 6 + (12 / edp) : 18;
  e.weight_and_optimizer = (e.p_tp + e.p_rep) * e.bytes_dense + e.p_exp * e.bytes_expert;
  return e;
}

void MegatronActivationEstimate(const ModelSpec& m, const MegatronArgs& x, MegatronEstimate& e) {
  const double h = double(m.hidden_size);
  const double t = double(std::max<int64_t>(1, x.tp)), p = double(std::max<int64_t>(1, x.pp));
  const double V = e.padded_vocab;
  const double cp = double(std::max<int64_t>(1, x.cp));
  const double s = double(x.seq_len), b = double(x.micro_batch);
  const double L = double(m.num_layers);
  const bool branch_a = x.bridge_estimator || (x.sequence_parallel && x.selective_recompute);
  const double ffn_ratio = EstimatorFfnRatio(m, x);
  double act = branch_a ? (s * b * h) * (18 + (4 * ffn_ratio)) * L : s * b * h * (10 + (24 / t)) * L;
  act += 8 * s * b * p;
  act += s * b * h * p;
  act *= InFlightFactor(x);
  double out = 0;
  if (x.pp == 1) out = branch_a ? s * b * h * 4 * (1 + (V / h)) : ((s * b * V) / t + s * b * h) * 2;
  if (branch_a) {
    const double div = x.bridge_estimator ? t * cp : t;
    e.activation_layers = act / div;
    e.activation_output = out / div;
  } else {
    e.activation_layers = act * 1.05;
    e.activation_output = out * 1.05;
  }
  e.activation = e.activation_layers + e.activation_output;
}

MegatronEstimate MegatronTheoreticalMemory(const ModelSpec& m, const MegatronArgs& x) {
  MegatronEstimate e = MegatronWeightEstimate(m, x);
  MegatronActivationEstimate(m, x, e);
  return e;
}

double QuantizedInputBytes(Precision p) {
  switch (p) {
    case Precision::kFp8: return 1.0;
    case Precision::kFp4: return 0.5 + 1.0 / 16.0;
    case Precision::kBf16: break;
  }
  return 2.0;
}

double QuantizedInputSaving(const ModelSpec& m, const MegatronArgs& x, Precision precision, bool routed) {
  const double q = QuantizedInputBytes(precision);
  if (q >= 2.0) return 0.0;
  const double s = double(x.seq_len), b = double(x.micro_batch), h = double(m.hidden_size);
  const double t = double(std::max<int64_t>(1, x.tp));
  const double L = double(m.num_layers);
  double r = EstimatorFfnRatio(m, x);
  if (!routed && x.bridge_estimator && m.is_moe() && L > 0) {
    r -= (L - double(m.num_dense_layers)) * double(m.moe_intermediate_size) * double(m.experts_per_token) / (L * h);
  }
  const bool branch_a = x.bridge_estimator || (x.sequence_parallel && x.selective_recompute);
  // QKV and fc1 inputs (norm outputs): 2 -> q each; fc2 input: 2r -> q·r. The output
  // projection saves the attention output the fused attention already keeps
  // (save_original_input, Megatron-Core attention.py, FP8 other than delayed scaling and FP4).
  const double replicated = 2.0 * (2.0 - q);    // norm outputs: sequence-sharded only with SP
  const double sharded = (2.0 - q) * r;         // fc2 input: always / t
  double per_layer = branch_a ? (replicated + sharded) / t
                              : replicated / (x.sequence_parallel ? t : 1.0) + sharded / t;
  if (x.bridge_estimator) per_layer /= double(std::max<int64_t>(1, x.cp));
  double saving = s * b * h * per_layer * L;
  saving *= InFlightFactor(x);
  return branch_a ? saving : saving * 1.05;
}

double RoutedExpertInputs(const ModelSpec& m, const MegatronArgs& x, int64_t etp, Precision precision,
                          bool moe_act_recompute) {
  if (!m.is_moe()) return 0.0;
  const double q = QuantizedInputBytes(precision);
  const double s = double(x.seq_len), b = double(x.micro_batch), h = double(m.hidden_size);
  const double t = double(std::max<int64_t>(1, x.tp)), cp = double(std::max<int64_t>(1, x.cp));
  const double k = double(m.experts_per_token), fe = double(m.moe_intermediate_size);
  const double e = double(std::max<int64_t>(1, etp));
  const double L_m = double(m.num_layers - m.num_dense_layers);
  // Per MoE layer and token of the rank's s·b/(t·CP): k copies of the fc1 input (the expert-TP
  // group gathers its members' tokens: × etp) and of the fc2 input (f_e/etp wide, × etp tokens),
  // the latter recomputed under moe_act recompute.
  const double per_token = k * (q * h * e + (moe_act_recompute ? 0.0 : q * fe));
  double bytes = s * b / (t * cp) * per_token * L_m;
  return bytes * InFlightFactor(x);
}

TeLayerBytes TeSavedBytesPerToken(const ModelSpec& m, bool moe_layer, Precision precision, int64_t etp,
                                  uint32_t recompute_modules) {
  const double q = QuantizedInputBytes(precision);  // a GEMM input's saved copy (2 in bf16)
  const bool quantized = q < 2.0;
  const double h = double(m.hidden_size), a = double(m.num_attention_heads);
  const bool rc_norm = (recompute_modules & kRecomputeLayernorm) != 0;
  TeLayerBytes b;
  // Norm inputs (the residual stream) of the attention and MLP norms.
  b.sequence += 4.0 * h;
  // Attention side.
  if (m.mla) {
    const MlaSpec& x = m.mla_spec;
    const double dq = double(x.qk_nope_head_dim + x.qk_rope_head_dim), dv = double(x.v_head_dim);
    const double qr = double(x.q_lora_rank), kr = double(x.kv_lora_rank), dr = double(x.qk_rope_head_dim);
    // The norm output feeds the q and kv down projections: one bf16 tensor, or one quantized
    // copy per Linear.
    if (!rc_norm) b.sequence += quantized ? (qr > 0 ? 2.0 : 1.0) * q * h : 2.0 * h;
    if (qr > 0) b.sequence += 2.0 * qr + q * qr;  // q_a norm input, q up-projection input
    b.sequence += 2.0 * kr + q * kr + 2.0 * dr;   // kv_a norm input, kv up-projection input, k_pe
    const bool up_rc = (recompute_modules & kRecomputeMlaUpProj) != 0;
    b.split += 2.0 * (up_rc ? 0.0 : 2.0 * a * dq + a * dv) + 2.0 * a * dv;  // q, k, v; output
  } else {
    const double d = double(m.head_dim), g = double(m.num_key_value_heads);
    if (!rc_norm) b.sequence += q * h;                          // QKV input (norm output)
    b.split += 2.0 * (2.0 * a * d + 2.0 * g * d);               // q, k, v, output
    if (m.qk_norm) b.split += 2.0 * (a * d + g * d);           // q and k norm inputs
  }
  b.split += 4.0 * a;  // fp32 log-sum-exp per head
  // MLP side (the output projection shares the attention output: save_original_input).
  if (!moe_layer) {
    const double f = double(m.intermediate_size);
    if (!rc_norm) b.sequence += q * h;                                  // fc1 input
    if ((recompute_modules & kRecomputeMlp) == 0) b.split += 4.0 * f + q * f;  // fc1 output, fc2 input
    return b;
  }
  const double E = double(m.num_experts), k = double(m.experts_per_token);
  const double fe = double(m.moe_intermediate_size), fs = double(m.shared_expert_intermediate_size);
  const double e = double(std::max<int64_t>(1, etp));
  // moe recompute: the whole MoE block is a checkpoint that keeps only its input.
  if (recompute_modules & kRecomputeMoe) {
    b.sequence += 2.0 * h;
    return b;
  }
  if (!rc_norm) b.sequence += 2.0 * h + (quantized && fs > 0 ? q * h : 0.0);  // router (bf16), shared fc1 copy
  b.sequence += 8.0 * E;  // router logits and probabilities, fp32
  const bool act_rc = (recompute_modules & kRecomputeMoeAct) != 0;
  b.split += k * (q * h * e + 4.0 * fe + (act_rc ? 0.0 : q * fe));  // routed fc1 in, fc1 out, fc2 in
  if (fs > 0 && (recompute_modules & kRecomputeSharedExperts) == 0) b.split += 4.0 * fs + q * fs;
  return b;
}

double KorthikantiLayerBytes(double h, double a, double f, double s, double b, double t, bool sp,
                             Recompute recompute, bool materialized_attention) {
  const double tsp = sp ? t : 1.0;
  const double sbh = s * b * h;
  if (recompute == Recompute::kFull) return 2.0 * sbh / tsp;
  double bytes = sbh * (10.0 / tsp + (8.0 + 4.0 * f / h) / t);
  if (recompute == Recompute::kNone && materialized_attention) bytes += 5.0 * a * s * s * b / t;
  return bytes;
}

double MainGradBytes(const CostView& layout) {
  return layout.main_grad_bytes;
}

double InterleaveFactor(int64_t pp, int64_t vpp) {
  if (pp <= 1 || vpp <= 0) return 1.0;
  return 1.0 + double(pp - 1) / (double(pp) * double(vpp));
}

double InFlightFactor(const MegatronArgs& x) {
  if (x.vpp > 0) return InterleaveFactor(x.pp, x.vpp);
  if (x.pp > 1 && x.num_microbatches > 0) return std::min(1.0, double(x.num_microbatches) / double(x.pp));
  return 1.0;
}

MemoryBreakdown MegatronMemoryFromEstimate(const Ctx& c, const MegatronEstimate& e, bool bridge_estimator,
                                           double inflight_share, double layers_on_rank) {
  const CostView& l = c.view;
  const double cp = bridge_estimator ? 1.0 : double(std::max<int64_t>(1, l.cp));  // bridge: already / CP
  MemoryBreakdown mem;
  const double pd = e.p_tp + e.p_rep, pe = e.p_exp;
  const double grad_bytes = MainGradBytes(l);
  mem.weights = 2.0 * (pd + pe);
  mem.gradients = grad_bytes * (pd + pe);
  // The sharded state: 12 bytes per parameter in fp32 (the estimator's), or the precision-aware
  // optimizer's (CostView::optimizer_state_bytes).
  const double state = l.optimizer_state_bytes / 12.0;
  mem.optimizer = state * ((e.bytes_dense - 6.0) * pd + (e.bytes_expert - 6.0) * pe);
  mem.activations = e.activation_layers / cp * inflight_share;
  // Activation offloading (model.cpu_offloading_num_layers, Megatron-Core cpu_offload.py): the
  // saved tensors of that many layers of the rank wait in host memory until backward.
  if (l.cpu_offload_layers > 0) {
    mem.activations *= std::max(0.0, 1.0 - double(l.cpu_offload_layers) / layers_on_rank);
  }
  mem.logits = e.activation_output / cp;
  // Megatron FSDP shards what its data_parallel_sharding_strategy says, over the same groups
  // as the distributed optimizer (Megatron-LM megatron_fsdp/param_and_grad_buffer.py
  // _init_each_parameter_group_buffers: is_model_weight_buffer_distributed,
  // is_main_weight_buffer_distributed, is_grad_buffer_distributed; megatron.md 3.3):
  //   optim_grads_params (ZeRO-3): bf16 weights, main gradients and the 12-byte state, (2 + g + 12)/d;
  //   optim_grads (ZeRO-2): the gradients and the state, 2 + (g + 12)/d;
  //   optim (ZeRO-1): the state only, 2 + g + 12/d, as the distributed optimizer;
  //   no_shard: nothing, 2 + g + 12 (the main weights are not distributed although Megatron-
  //   Bridge forces use_distributed_optimizer on).
  // torch FSDP2 (dist.use_torch_fsdp2; fully_shard per layer, no distributed optimizer, EP 1
  // and PP 1 by Megatron-Bridge's rules) shards the bf16 weights, the gradients and the fp32
  // master weights and Adam moments (12 bytes) over dp·cp. Gathered weights: the unit being
  // computed and the prefetched one, two layers of bf16 weights, where the weights are sharded
  // (both wrappers at once is refused by the rules). Megatron FSDP's double buffers hold the
  // unsharded gradients of those two units where the gradients are sharded, in the main-gradient
  // dtype (Megatron-LM docs/user-guide/features/megatron_fsdp.md, "Double Buffering": "no more
  // than two FSDP units are un-sharded", parameter and gradient buffers; optim and no_shard
  // reduce the whole buffer after the last micro-batch, megatron_fsdp.py is_delay_grad_reduce).
  // Planning estimate only: Megatron-LM's own estimate (kMegatron without the Bridge variant)
  // has no FSDP term and is reproduced as is.
  const bool bridge = bridge_estimator && l.runtime == CostRuntime::kMegatronCore;
  const bool mfsdp = bridge && l.dp_impl == DpImpl::kMegatronFsdp;
  const bool shard_params = mfsdp && l.fsdp_sharding == FsdpSharding::kOptimGradsParams;
  const bool shard_grads = shard_params || (mfsdp && l.fsdp_sharding == FsdpSharding::kOptimGrads);
  if (shard_grads) {
    const double d_dense = e.bytes_dense > 6.0 ? 12.0 / (e.bytes_dense - 6.0) : 1.0;
    const double d_expert = e.bytes_expert > 6.0 ? 12.0 / (e.bytes_expert - 6.0) : 1.0;
    const double sharded = pd / d_dense + pe / d_expert;
    if (shard_params) mem.weights = 2.0 * sharded;
    mem.gradients = grad_bytes * sharded;
  }
  if (mfsdp && l.fsdp_sharding == FsdpSharding::kNoShard) mem.optimizer = l.optimizer_state_bytes * (pd + pe);
  if (bridge && (l.dp_impl == DpImpl::kFsdpPerModule)) {
    const double shards = double(std::max<int64_t>(1, l.dp)) * double(std::max<int64_t>(1, l.cp));
    mem.weights = 2.0 * (pd + pe) / shards;
    mem.gradients = grad_bytes * (pd + pe) / shards;
    mem.optimizer = l.optimizer_state_bytes * (pd + pe) / shards;
  }
  if (bridge) {
    const int gathered = int(shard_params) + int((l.dp_impl == DpImpl::kFsdpPerModule));
    mem.buffers += double(gathered) * 2.0 * 2.0 * (pd + pe) / layers_on_rank;
    if (shard_grads) mem.buffers += 2.0 * grad_bytes * (pd + pe) / layers_on_rank;
  }
  mem.phase = "estimate";
  return mem;
}

/// Layout -> MegatronArgs: vpp from a Megatron layout (vpp > 1) or the interleaved stages
/// per rank of an AutoModel layout; dp = layout.dp; num_microbatches = micro-batches per
/// optimizer step; the distributed optimizer as the Megatron layout says (AutoModel
/// layouts: on). Terms: weights 2 B, gradients 4 B (fp32 main grads; 2 B when a Megatron-Bridge
/// layout sets grad_reduce_in_fp32 false, megatron.md 3.3), optimizer the rest of bytes(d) per
/// parameter; activations / logits = the estimator's two activation parts.
/// Departures from the estimator, each a no-op for the configurations it covers:
///   - full recompute replaces the per-layer term with Korthikanti's 2·s·b·h (/t with SP)
///     inside branch (B) (the estimator assumes selective recompute or flash attention); with
///     Megatron-Bridge's estimator, which has no full-recompute case, the recomputed share of
///     the layers (MegatronFullRecomputeShare: all, or recompute_num_layers per chunk with the
///     block method) keeps 2·s·b·h instead of (18 + 4r)·s·b·h, divided by t·CP;
///   - MemoryOptions::materialized_attention adds 5·a·s²·b/t per layer without recompute;
///   - CP divides the activations (Megatron-Bridge's estimator divides by t·CP, megatron.md
///     3.5; Megatron-LM ignores CP);
///   - cpu_offloading_num_layers removes that share of the rank's layers' activations;
///   - with Megatron-Bridge's estimator and MemoryOptions::moe_routed_activations (default),
///     the routed experts' fc1 and fc2 inputs, which its 4·k·f_e/h (the SwiGLU fc1 output)
///     leaves out, are added (RoutedExpertInputs);
///   - with FP8 / FP4 GEMMs and MemoryOptions::quantized_linear_inputs (default), the linear
///     inputs Transformer Engine saves quantized are counted at their quantized size
///     (QuantizedInputSaving; both estimators count them in bf16).
/// With MemoryOptions::megatron_bridge_estimator the Megatron-Bridge variant is used, with
/// the same departures; with MemoryOptions::te_saved_tensors too (the default for planning
/// Megatron-Bridge layouts), its per-layer term (18 + 4r)·s·b·h is replaced by the
/// Transformer Engine count TeSavedBytesPerToken (sequence part / t with SP, split part / t,
/// / CP), full recompute keeping 2h per token of the recomputed layers, and the three
/// departures above (full recompute, routed experts, quantized inputs) are part of that count.
namespace {

// TeSavedBytesPerToken(m, ...) of the model of the CostTables numbered `tables` (CostTables::Id;
// `m` is that model or its shape, whose fields the count reads alike: it reads no layer count),
// kept per thread in a hashed memo: a search asks it for the same few (layer kind, precision,
// ETP, recompute modules) at every pipeline rank of every layout.
TeLayerBytes TeSavedBytesCached(uint64_t tables, const ModelSpec& m, bool moe, Precision precision, int64_t etp,
                                uint32_t modules) {
  using Key = std::array<int64_t, 4>;
  const Key key{int64_t(tables), int64_t(moe) | int64_t(precision) << 8, etp, int64_t(modules)};
  thread_local HashedValues<Key, TeLayerBytes, 256> memo;
  const size_t slot = memo.SlotOf(key);
  if (const TeLayerBytes* hit = memo.Find(key, slot)) return *hit;
  return memo.Store(key, slot, TeSavedBytesPerToken(m, moe, precision, etp, modules));
}

// MegatronWeightEstimate(m, x) of the model of the CostTables numbered `tables` (`m` that model,
// or with `per_rank` its shape with the rank's layer counts), kept per thread for the last
// inputs: it reads the mesh, the rank's layers and tables and the optimizer, which every
// micro-batch and feature set of a mesh repeat. The key holds every input it reads beside the
// table's model: the layer counts and each MegatronArgs field of the parameter formulas.
MegatronEstimate WeightEstimateCached(uint64_t tables, bool per_rank, const ModelSpec& m, const MegatronArgs& x) {
  auto bits = [](double v) {
    int64_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  };
  const int64_t flags = int64_t(per_rank) | int64_t(x.swiglu) << 1 | int64_t(x.bridge_estimator) << 2 |
                        int64_t(x.distributed_optimizer) << 3;
  const std::array<int64_t, 16> key{int64_t(tables), m.num_layers, m.num_dense_layers, x.tp, x.pp, x.cp, x.ep, x.etp,
                                    x.dp, x.world, x.make_vocab_size_divisible_by, x.norm_size, flags,
                                    bits(x.vocab_tables), bits(x.final_norms), bits(x.extra_tp_params)};
  // A mesh's distinct pipeline ranks (first, middle, last, the MTP rank) and its memory probes'.
  thread_local HashedValues<std::array<int64_t, 16>, MegatronEstimate, 64> memo;
  const size_t slot = memo.SlotOf(key);
  if (const MegatronEstimate* hit = memo.Find(key, slot)) return *hit;
  return memo.Store(key, slot, MegatronWeightEstimate(m, x));
}

}  // namespace

MemoryBreakdown MegatronRankMemory(const Ctx& c, int64_t pp_rank, const MemoryOptions& opts) {
  if (c.model.is_hybrid()) return HybridRankMemory(c, pp_rank, opts);
  const CostView& l = c.view;
  // A recipe's pipeline_model_parallel_layout (SplitStages prices it: c.split.given): the
  // estimate of this rank, whose formulas read L / p as the layers of a stage, is made with
  // L = p · (the rank's decoder layers) and L_d = p · (its dense ones); the rank holds the
  // word embeddings if it holds E and the output layer if it holds L (both h·V; p > 1); and
  // its activations, the estimator's first-stage in-flight count, are scaled to its own
  // (InflightMicrobatches of the rank against rank 0's: pp - r against pp for 1F1B).
  // The rank holding MTP layers (RankParams::mtp_layers) is estimated the same way, from its own
  // layers (their decoder layers are in rp.Layers()), with their eh_proj and norms
  // (extra_tp_params) and, when it is not the embedding's rank, a copy of the word embeddings
  // (gpt_model.py builds one where pre_process or mtp_process); every other rank keeps the
  // estimate it has without MTP, and the most loaded of them all is reported.
  // One per thread, copied from the model's shape (CostTables::Shape) once per table (the copy
  // of the last table seen, CostTables::Id, is kept: only its layer counts are set per rank,
  // and nothing else of it is written), so a leaf's estimate neither allocates nor copies.
  thread_local ModelSpec rank_model;
  thread_local uint64_t rank_model_of = 0;  // CostTables::Id of the shape in rank_model; 0: none
  double vocab_tables = -1, final_norms = -1, inflight_share = 1.0, extra_tp_params = 0;
  // Megatron-Bridge's estimate prices the first stage only (its L/p layers, embedding and
  // p in-flight micro-batches); under the bridge profile every pipeline rank is priced from its
  // own layers, tables and in-flight micro-batches, so the heaviest is reported (the last
  // stage holds the output layer and the loss's logits).
  const bool ranks_apart = opts.megatron_bridge_estimator && l.pp > 1;
  const RankParams rp =
      c.split.given != nullptr || l.mtp_layers > 0 || ranks_apart ? ParamsOfRank(c, pp_rank) : RankParams{};
  const bool per_rank = c.split.given != nullptr || rp.mtp_layers > 0 || ranks_apart;
  if (per_rank) {
    const int64_t p = std::max<int64_t>(1, l.pp);
    if (c.tables == nullptr) {
      rank_model = c.model;
      rank_model_of = 0;
    } else if (rank_model_of != c.tables->Id()) {
      rank_model = c.tables->Shape();
      rank_model_of = c.tables->Id();
    }
    rank_model.num_layers = p * rp.Layers();
    rank_model.num_dense_layers = p * rp.dense_layers;
    if (p > 1) {
      vocab_tables = double(rp.has_embedding) + double(rp.has_head) + (rp.mtp_layers > 0 && !rp.has_embedding ? 1.0 : 0.0);
      final_norms = double(rp.has_head);  // TransformerBlock's final_layernorm: post_process only
    }
    const double h = double(c.model.hidden_size);
    extra_tp_params = double(rp.mtp_layers) * (3.0 * h + 2.0 * h * h);
    const double first = InflightMicrobatches(l, c.split, 0);
    if (first > 0) inflight_share = InflightMicrobatches(l, c.split, pp_rank) / first;
  }
  const ModelSpec& m = per_rank ? rank_model : c.model;
  MegatronArgs x;
  x.swiglu = m.gated_mlp;
  x.vocab_tables = vocab_tables;
  x.final_norms = final_norms;
  x.extra_tp_params = extra_tp_params;
  x.tp = l.tp;
  x.pp = l.pp;
  x.cp = l.cp;
  x.ep = l.ep;
  x.etp = l.etp;
  x.dp = l.dp;
  x.world = c.setup.num_gpus;
  x.micro_batch = l.micro_batch;
  x.seq_len = c.setup.seq_len;
  x.num_microbatches = c.mb_per_step;
  x.sequence_parallel = l.sequence_parallel;
  x.selective_recompute = l.recompute == Recompute::kSelective;
  x.bridge_estimator = opts.megatron_bridge_estimator;
  x.vpp = l.estimate_vpp;
  x.distributed_optimizer = l.distributed_optimizer;
  const bool te_count = x.bridge_estimator && opts.te_saved_tensors;
  MegatronEstimate e = c.tables != nullptr ? WeightEstimateCached(c.tables->Id(), per_rank, m, x)
                                           : MegatronWeightEstimate(m, x);
  // The Transformer Engine count below replaces both activation parts (it reads padded_vocab
  // only): the estimator's own are computed only where they are used.
  if (!te_count) MegatronActivationEstimate(m, x, e);
  const bool full = l.recompute == Recompute::kFull;
  const bool extra_scores = opts.materialized_attention && l.recompute == Recompute::kNone;
  if ((full || extra_scores) && !x.bridge_estimator) {
    const double s = double(x.seq_len), b = double(x.micro_batch), h = double(m.hidden_size);
    const double t = double(std::max<int64_t>(1, x.tp)), p = double(std::max<int64_t>(1, x.pp));
    const double L = double(m.num_layers);
    double layer = full ? 2.0 * s * b * h / (x.sequence_parallel ? t : 1.0) : s * b * h * (10 + 24 / t);
    if (extra_scores) layer += 5.0 * double(m.num_attention_heads) * s * s * b / t;
    double act = layer * L + 8 * s * b * p + s * b * h * p;
    act *= InFlightFactor(x);
    e.activation_layers = act * 1.05;
    if (!(x.sequence_parallel && x.selective_recompute) && x.pp == 1) {
      e.activation_output = ((s * b * e.padded_vocab) / t + s * b * h) * 2 * 1.05;
    }
  }
  // Share of the layers fully recomputed (Megatron-LM's branch above assumes all of them).
  const double recomputed = x.bridge_estimator ? MegatronFullRecomputeShare(l, m) : (full ? 1.0 : 0.0);
  if (te_count) {
    // Transformer Engine saved-tensor count per layer (TeSavedBytesPerToken) in place of the
    // estimator's (18 + 4r)·s·b·h; the estimator's pipeline terms 8·s·b·p + s·b·h·p are kept.
    const double s = double(x.seq_len), b = double(x.micro_batch), h = double(m.hidden_size);
    const double t = double(std::max<int64_t>(1, x.tp)), cp = double(std::max<int64_t>(1, x.cp));
    const double p = double(std::max<int64_t>(1, x.pp)), L = double(m.num_layers);
    const double L_m = m.is_moe() ? double(m.num_layers - m.num_dense_layers) : 0.0, L_d = L - L_m;
    const double seq_div = x.sequence_parallel ? t : 1.0;
    const uint32_t rm = MegatronSelectiveModules(l);
    auto per_token = [&](bool moe) {
      const TeLayerBytes tb = c.tables != nullptr ? TeSavedBytesCached(c.tables->Id(), m, moe, c.setup.precision, l.etp, rm)
                                                  : TeSavedBytesPerToken(m, moe, c.setup.precision, l.etp, rm);
      return tb.sequence / seq_div + tb.split / t;
    };
    const double dense_tok = L_d > 0 ? per_token(false) : 0.0, moe_tok = L_m > 0 ? per_token(true) : 0.0;
    const double layers = (1.0 - recomputed) * (L_d * dense_tok + L_m * moe_tok) + recomputed * L * 2.0 * h / seq_div;
    double act = s * b / cp * layers + (8 * s * b * p + s * b * h * p) / (t * cp);
    act *= InFlightFactor(x);
    // Under full recompute, the backward of a recomputed layer holds its rebuilt activations
    // once, beside every checkpoint: one layer of the larger kind for one micro-batch.
    if (recomputed > 0) act += s * b / cp * std::max(dense_tok, moe_tok);
    e.activation_layers = act;
    // The rank with the output layer (rank 0 without PP): one micro-batch's final-norm input
    // and output-layer input (2h each, sequence-sharded with SP) and the logits the loss keeps
    // for backward, V/t per token at CostView::loss_bytes_per_logit (fp32 exp-logits, or TE's
    // bf16 logits holding the gradient); Megatron-Core language_module.py
    // compute_language_model_loss, tensor_parallel/cross_entropy.py, TE parallel_cross_entropy.
    const bool head = per_rank ? rp.has_head : x.pp == 1;
    e.activation_output =
        head ? s * b / cp * (4.0 * h / seq_div + e.padded_vocab * l.loss_bytes_per_logit / t) : 0.0;
  }
  // Megatron-Bridge's estimator has no full-recompute case: the recomputed share of the layers
  // keeps only its input, 2·s·b·h (divided by t·CP like the rest of its formula).
  if (x.bridge_estimator && !te_count && recomputed > 0) {
    const double s = double(x.seq_len), b = double(x.micro_batch), h = double(m.hidden_size);
    double dropped = recomputed * double(m.num_layers) * s * b * h * (18 + 4 * EstimatorFfnRatio(m, x) - 2);
    dropped *= InFlightFactor(x);
    dropped /= double(std::max<int64_t>(1, x.tp)) * double(std::max<int64_t>(1, x.cp));
    e.activation_layers = std::max(0.0, e.activation_layers - dropped);
  }
  const bool routed_terms = x.bridge_estimator && !te_count && opts.moe_routed_activations && m.is_moe();
  if (routed_terms) {
    e.activation_layers += (1 - recomputed) * RoutedExpertInputs(m, x, l.etp, c.setup.precision,
                                                                 (MegatronSelectiveModules(l) & kRecomputeMoeAct) != 0);
  }
  if (!te_count && opts.quantized_linear_inputs && recomputed < 1) {
    e.activation_layers = std::max(0.0, e.activation_layers - (1 - recomputed) *
                                                                  QuantizedInputSaving(m, x, c.setup.precision,
                                                                                       !routed_terms));
  }
  const double layers_on_rank = std::max(1.0, double(m.num_layers) / double(std::max<int64_t>(1, x.pp)));
  return MegatronMemoryFromEstimate(c, e, x.bridge_estimator, inflight_share, layers_on_rank);
}

}  // namespace meshplan::cost
