// Per-GPU memory of one pipeline rank. "pytorch" profile = NeMo AutoModel: Hugging Face
// modules, FSDP2 / Megatron-FSDP / DDP, DTensor TP, SDPA flash attention. Units: bytes.
// Activation formulas: memory_pytorch.cpp; the "megatron" profile: memory_megatron.cpp.
//
// Checked against tests/data/measured/ (H200, torch 2.11, transformers 5.17; AutoModel's
// parallelisation reproduced by tools/measure/): the peak allocated memory of all 37 cases
// (1 and 2 GPUs; plain, FSDP2 bf16 and fp32, DDP, TP 2; no / full / selective AC; grad
// accumulation with and without defer_fsdp_grad_sync; 74 measurements) within 0.1%; the 25
// fp32-weight runs of h200_1gpu_fp32.jsonl (FSDP2 and DDP on a one-rank group) as the
// accuracy test prints them.
//
// Dtypes (AutoModel defaults, automodel.md 1.2; AutoModel loads `torch_dtype: bf16` and
// trains with torch Adam(W), whose state takes the parameter dtype): weights, gradients
// and exp_avg / exp_avg_sq are bf16 (2 B each), or fp32 with MemoryOptions::fp32_params.
// An fp32 model computes in bf16 under FSDP2 (MixedPrecisionPolicy(param bf16, reduce fp32))
// and in fp32 under DDP, which casts nothing, and on one GPU unwrapped with the FSDP2
// strategy (AutoModel runs no autocast outside FP8; its DDP path casts the model to bf16 at
// world size 1): fp32 activations and SDPA's math kernel for GQA (PytorchCompute).

#include "cost/memory.hpp"

#include <algorithm>

#include "cost/hybrid.hpp"
#include "cost/memory_megatron.hpp"
#include "cost/tables.hpp"

namespace meshplan::cost {

/// Source: groundtruth.md B.4 (Korthikanti §4.2.3; Narayanan §2.2). In units of the rank's
/// whole layer set, for m = micro-batches per schedule call, v = stages per rank:
///   no PP: 1.
///   1F1B (v = 1): rank r holds min(pp − r, m) micro-batches (rank 0: min(pp, m)).
///   interleaved: rank r runs 2·(pp−r−1) + (v−1)·pp warm-up chunk forwards (torch
///     ScheduleInterleaved1F1B / Megatron), so it holds (2·(pp−r−1) + (v−1)·pp + 1)/v
///     rank-equivalents, capped at m. For rank 0 this is pp·(1 + (pp−1)/(pp·v)).
double InflightMicrobatches(const CostView& l, const StageSplit& split, int64_t r) {
  if (l.pp <= 1) return 1.0;
  const double pp = double(l.pp), m = double(std::max<int64_t>(1, l.mb_per_call));
  const double v = double(std::max<int64_t>(1, split.stages_per_rank));
  if (!l.interleaved || v <= 1.0) return std::min(pp - double(r), m);
  return std::min(m, (2.0 * (pp - double(r) - 1.0) + (v - 1.0) * pp + 1.0) / v);
}

namespace {

bool UseMegatron(const CostView& l, const MemoryOptions& o) {
  if (o.profile == MemoryProfile::kMegatron) return true;
  if (o.profile == MemoryProfile::kPyTorch) return false;
  return l.runtime == CostRuntime::kMegatronCore;
}

/// Megatron-Bridge's estimator variant: asked for, or implied by planning Megatron-Bridge
/// layouts (kAuto), which RankMemory prices with it.
bool BridgeEstimator(const MemoryOptions& o) {
  return o.megatron_bridge_estimator || o.profile == MemoryProfile::kAuto;
}

/// LayerActivationBytes, from the CostModel's table when the context has one.
ActBytes Act(const Ctx& c, bool moe_layer, AcWrap wrap) {
  return c.tables != nullptr ? c.tables->Act(moe_layer, wrap) : LayerActivationBytes(c.model, moe_layer, wrap);
}

/// CUDA context + one NCCL communicator per process group of more than one rank that the
/// rank uses: the default group, plus (FSDP2 / Megatron-FSDP) the mesh groups. DDP uses the
/// default group only (AutoModel builds no mesh for it). One GPU: the context alone. Plus the
/// flex dispatcher's DeepEP / HybridEP buffers (EpDispatcherBufferBytes).
double Overhead(const Ctx& c) {
  const CostView& l = c.view;
  const MeshGroups& g = c.groups;
  int groups = 0;
  if (c.setup.num_gpus > 1) {
    groups = 1;
    if (l.dp_impl != DpImpl::kReplicated) {
      for (const Group* x : {&g.tp, &g.cp, &g.dp_shard_cp, &g.dp_replicate, &g.pp}) groups += x->n > 1;
      if (c.model.is_moe()) groups += (g.ep.n > 1) + (g.ep_shard.n > 1);
    }
  }
  return kCudaContextBytes + kNcclBytesPerGroup * double(groups) + EpDispatcherBufferBytes(c);
}

}  // namespace

double PytorchTpWholeParams(const Ctx& c, const RankParams& rp) {
  if (c.model.architecture != Architecture::kNemotronH || c.view.tp <= 1) return 0.0;
  const double mlp = double(rp.dense_layers) * double(c.params.dense_mlp_per_layer);
  const double head = rp.has_head ? double(c.params.output_head) : 0.0;
  return std::max(0.0, rp.layer_dense + rp.root - mlp - head);
}

bool PytorchUnwrappedOneGpu(const Ctx& c, bool wrap_one_gpu) {
  return c.setup.num_gpus <= 1 && c.view.dp_impl != DpImpl::kMegatronFsdp && !wrap_one_gpu;
}

bool NemotronChecksEveryBlock(const Ctx& c, bool unwrapped_one_gpu) { return c.view.ep > 1 || unwrapped_one_gpu; }

PytorchRankTerms PytorchTerms(const Ctx& c, const MemoryOptions& opts) {
  const CostView& l = c.view;
  const double tp = double(std::max<int64_t>(1, l.tp));
  const bool one_gpu = PytorchUnwrappedOneGpu(c, opts.wrap_one_gpu);
  const bool sp = l.sequence_parallel;
  PytorchRankTerms x;
  if (l.recompute == Recompute::kSelective) x.wrap = AcWrap::kSelective;
  if (l.recompute == Recompute::kFull) {
    x.wrap = (l.dp_impl == DpImpl::kReplicated && !one_gpu) ? AcWrap::kSubmodule : AcWrap::kLayer;
  }
  // An fp32 model computes in fp32 under DDP (torch DDP casts nothing) and on one GPU
  // unwrapped with the FSDP2 strategy (fsdp2.py::fsdp2_sharding_enabled: the plain model as
  // loaded); FSDP2's MixedPrecisionPolicy and AutoModel's world-size-1 DDP path compute in bf16.
  const bool fp32_compute =
      opts.fp32_params && (one_gpu ? l.dp_impl == DpImpl::kFsdpPerModule : l.dp_impl == DpImpl::kReplicated);
  x.compute = PytorchCompute(c.model, fp32_compute, c.setup.seq_len);
  auto act = [&](bool moe, AcWrap w) {  // the table holds the bf16 figures
    return fp32_compute ? LayerActivationBytes(c.model, moe, w, x.compute) : Act(c, moe, w);
  };
  x.dense_act = act(false, x.wrap).PerRank(l.tp, sp);
  x.moe_act = act(true, x.wrap).PerRank(l.tp, sp);
  if (x.wrap == AcWrap::kLayer || x.wrap == AcWrap::kSubmodule) {  // read only then
    x.dense_full = act(false, AcWrap::kNone).PerRank(l.tp, sp);
    x.moe_full = act(true, AcWrap::kNone).PerRank(l.tp, sp);
  }
  if (HasGdnMixers(c.model)) {
    auto delta = [&](AcWrap w) {
      return LayerActivationBytes(c.model, true, w, x.compute, MixerKind::kGatedDeltaNet).PerRank(l.tp, sp) -
             LayerActivationBytes(c.model, true, w, x.compute).PerRank(l.tp, sp);
    };
    x.gdn_delta = delta(x.wrap);
    x.gdn_delta_full = delta(AcWrap::kNone);
  }
  if (c.model.architecture == Architecture::kNemotronH) {
    // AutoModel's wrap of each block kind (NemotronChecksEveryBlock); under the MoE parallelizer
    // the router's outputs are saved (ignore_router_for_ac, its default) and "selective" applies
    // the selective policy to every block.
    const bool every_block = NemotronChecksEveryBlock(c, one_gpu);
    bool has[4] = {false, false, false, false};  // attention, Mamba-2, MLP, MoE
    for (const LayerBlock& b : c.model.layer_pattern) {
      has[0] |= b.mixer == MixerKind::kAttention;
      has[1] |= b.mixer == MixerKind::kMamba2;
      has[2] |= b.mlp == MlpKind::kDense;
      has[3] |= b.mlp == MlpKind::kMoe;
    }
    const MixerKind mixers[4] = {MixerKind::kAttention, MixerKind::kMamba2, MixerKind::kNone, MixerKind::kNone};
    const MlpKind mlps[4] = {MlpKind::kNone, MlpKind::kNone, MlpKind::kDense, MlpKind::kMoe};
    double* out[4] = {&x.nem_attn, &x.nem_mamba, &x.nem_mlp, &x.nem_moe};
    for (int i = 0; i < 4; ++i) {
      const bool wrapped = x.wrap != AcWrap::kNone && (every_block || i == 1 || i == 2);
      AcWrap w = wrapped ? x.wrap : AcWrap::kNone;
      if (w == AcWrap::kSelective && !every_block) w = AcWrap::kLayer;
      if (w == AcWrap::kSubmodule) w = AcWrap::kLayer;
      *out[i] = NemotronBlockActivationBytes(c.model, mixers[i], mlps[i], w, l.ep > 1).PerRank(l.tp, sp);
      if (wrapped && has[i] && (w == AcWrap::kLayer)) {
        x.nem_recompute = std::max(
            x.nem_recompute,
            NemotronBlockActivationBytes(c.model, mixers[i], mlps[i], AcWrap::kNone, false).PerRank(l.tp, sp));
      }
    }
  }
  const bool dsv4 = c.model.architecture == Architecture::kDeepseekV4;
  if (dsv4) {
    // AutoModel's deepseek_v4 model (Dsv4PytorchTerms): no TP plan, every block wrapped whole.
    x.dsv4 = Dsv4Pytorch(c.model, l.recompute, c.setup.seq_len, l.cp, l.attn_tilelang);
    x.moe_act = x.dsv4.saved;
    x.moe_full = x.dsv4.full;
    x.dense_act = x.dense_full = 0.0;
  }
  const double e = x.compute.elem;
  x.final_norm = FinalNormBytesPerToken(c.model, e);
  // LlamaRotaryEmbedding.forward returns cos.to(x.dtype), sin.to(x.dtype).
  // (NemotronV3Attention has no rotary embedding.)
  x.rope = c.model.architecture == Architecture::kNemotronH
               ? 0.0
               : 2.0 * e * double(c.model.mla ? c.model.mla_spec.qk_rope_head_dim : c.model.head_dim);
  // DeepSeek-V4: the 4-D mask and both rotary tables each checkpoint frame holds (Dsv4PytorchTerms).
  if (dsv4) x.rope = x.dsv4.per_microbatch;
  x.logits = LogitsBytesPerTokenVocab(l.tp, opts.loss_parallel, e, l.loss_fp32_upcast);
  x.held_logits = e / tp;
  if (x.compute.Math()) {
    const MathAttnBackward ab = MathAttentionBackwardBytes(c.model, x.wrap, x.compute);
    x.attn_held = ab.held.PerRank(l.tp, sp);
    x.attn_transient = ab.transient.PerRank(l.tp, sp);
  }
  x.overhead = Overhead(c);
  return x;
}

/// pytorch profile. P_d = non-expert params of the rank's layers plus its embedding /
/// final norm / lm_head, divided by tp; P_e = its routed-expert params divided by ep;
/// pb = 2 (bf16 model) or 4 (fp32_params).
/// Model state, by strategy:
///   one GPU (any strategy but megatron_fsdp): AutoModel skips FSDP2 and DDP wrapping
///     (fsdp2.py::fsdp2_sharding_enabled, ddp.py): weights pb·P, Adam 2·pb·P, gradients pb·P
///     from the backward on.
///   fsdp2 (ZeRO-3): weights pb, grads pb (reduce-scattered in fp32, cast back), Adam 2·pb per
///     param of the shard P_d/(dp_shard·cp) + P_e/ep_shard (HSDP replicates over dp_replicate).
///     Resident during forward and backward (no PP): the root module (embedding, final norm,
///     lm_head; reshard_after_forward=False, parallelizer.py) and the last layer (the
///     heuristic reshards all but the last layer) unsharded in bf16: 2·(root + one layer);
///     with ep > 1 and ep_shard > 1 moe.reshard_after_forward=false keeps every expert
///     gathered. PP: the heuristic keeps all the rank's layers unsharded (2 B) and torch
///     pipelining accumulates unsharded fp32 grads over the schedule (4 B).
///     Gradient accumulation: later micro-batches start with the sharded grads (pb), or with
///     defer_fsdp_grad_sync unsharded fp32 grads of every param (4·(P_d + P_e); measured).
///   megatron_fsdp (zero_dp_strategy 3, optim_grads_params; megatron.md 3.3): 2 + 4 + 12 B over
///     dp·cp plus two gathered bf16 units and one fp32 grad unit (unit = largest layer or the
///     root module); 2 (optim_grads): 2 + (4 + 12)/d and the grad unit; 1 (optim): 2 + 4 + 12/d;
///     0 (no_shard): 2 + 4 + 12 (Megatron-LM param_and_grad_buffer.py
///     _init_each_parameter_group_buffers).
///   ddp: replicated pb + 2·pb, gradients pb, plus the persistent bucket copy pb
///     (AutoModel gradient_as_bucket_view: false). Accumulation keeps param.grad (pb).
/// Activations: LayerActivationBytes in the compute dtype (PytorchTerms; full AC: whole-layer
///   wrap for FSDP2 and one GPU, the four-submodule wrap for DDP) · tokens of a micro-batch
///   (micro_batch·seq/cp) · in-flight micro-batches; plus RoPE cos/sin (2·e·d per token) and
///   the final norm on the head rank.
/// Logits: LogitsBytesPerTokenVocab(tp, loss_parallel, e, fp32_upcast) · tokens · vocab on the rank holding lm_head.
/// Peak = the largest of four moments (each seen as the phase peak in the measurements):
///   backward start: state + earlier micro-batches' grads + resident + activations + logits;
///   recompute (full AC): the same with one layer's full activations instead of the loss
///     buffers (only the logits are still held);
///   attention backward (SDPA's math kernel, fp32): the softmax backward of the rank's last
///     layer (the first its backward reaches) or of its first layer (the last), whichever is
///     higher: activations less the final norm's, with that layer's MathAttentionBackwardBytes
///     held and transient (the first layer: every other layer's activations released), the
///     logits, and the gradients produced by then (replicated / one GPU; with accumulation they
///     add into param.grad in place): at the last layer lm_head's (its own, or the tied
///     embedding's waiting in its AccumulateGrad input buffer), the final norm's and the
///     layer's but q, k, v and norm1; at the first layer all but those and an untied
///     embedding. Measured: without checkpointing the last layer is higher (its activations
///     outweigh its gradients), with full AC the first (Llama 3.2 3B);
///   optimizer step: state + all grads + Adam's temporary (MemoryOptions::adam_impl):
///     foreach (torch's default) one state-sized copy (sqrt(exp_avg_sq) over all tensors, pb
///     per param; 4 B for megatron_fsdp), fused none, for-loop one tensor's worth (the
///     rank's largest: its share of the vocabulary table, else of a layer's widest matrix).
///     Measured on H200: the fused step peaks 4 B per fp32 param below the foreach one.
/// Every moment adds the cuBLAS workspaces; overhead = Overhead() above.
MemoryBreakdown RankMemory(const Ctx& c, int64_t pp_rank, const MemoryOptions& opts) {
  if (UseMegatron(c.view, opts)) {
    // Planning Megatron-Bridge layouts (kAuto) uses Megatron-Bridge's own estimator, which
    // shards dense optimizer state over DP·CP and experts over EDP as Megatron-Core does;
    // Megatron-LM's estimate (kMegatron) over-states the published 70B recipe of megatron.md
    // 1.9(a) at 125.9 GiB against 73.8 GiB, and stays available for reproduction.
    MemoryOptions effective = opts;
    effective.megatron_bridge_estimator = BridgeEstimator(opts);
    MemoryBreakdown mem = MegatronRankMemory(c, pp_rank, effective);
    mem.overhead = Overhead(c);
    mem.step_gradients = mem.gradients;
    return mem;
  }
  const CostView& l = c.view;
  const ModelSpec& m = c.model;
  const RankParams rp = ParamsOfRank(c, pp_rank);
  const double tp = double(std::max<int64_t>(1, l.tp)), ep = double(std::max<int64_t>(1, l.ep));
  // Nemotron-H under TP: what the plan leaves whole (PytorchTpWholeParams) is not divided.
  const double whole = PytorchTpWholeParams(c, rp);
  const double dense_local = (rp.layer_dense + rp.root - whole) / tp + whole;
  const double expert_local = rp.layer_expert / ep;
  const double layer_local = (whole > 0 ? rp.max_layer_dense : rp.max_layer_dense / tp) + rp.max_layer_expert / ep;
  const double root_local = whole > 0 ? rp.root - (rp.has_head ? double(c.params.output_head) * (1.0 - 1.0 / tp) : 0.0)
                                      : rp.root / tp;
  const bool one_gpu = PytorchUnwrappedOneGpu(c, opts.wrap_one_gpu);
  // AutoModel's DDP path at world size 1 casts the model to bf16 (ddp.py DDPManager.parallelize:
  // model.to(torch.bfloat16)), so an fp32 model trains with bf16 weights, gradients and Adam state.
  const bool cast_to_bf16 = one_gpu && l.dp_impl == DpImpl::kReplicated;
  const double pb = opts.fp32_params && !cast_to_bf16 ? 4.0 : 2.0;
  const bool accum = c.mb_per_step > 1;
  // The Adam step's temporary (AdamTemporaryShare): a state-sized copy (foreach), none
  // (fused) or one tensor's (for-loop: the largest the rank holds, the vocabulary table
  // where it holds one, else a layer's widest matrix).
  const double h = double(m.hidden_size);
  const double widest = (rp.has_embedding || rp.has_head)
                            ? double(m.vocab_size) * h / tp
                            : h * double(std::max(m.intermediate_size, m.moe_intermediate_size)) / tp;
  auto adam_temp = [&](double bytes_per_param, double shard_params, double shards) {
    switch (opts.adam_impl) {
      case AdamImpl::kForeach: return bytes_per_param * shard_params;
      case AdamImpl::kFused: return 0.0;
      case AdamImpl::kForLoop: return bytes_per_param * widest / shards;
    }
    return 0.0;
  };

  double weights = 0, optimizer = 0, grads_final = 0, grads_prev = 0, bucket = 0, resident = 0;
  double temp = 0;
  if (one_gpu || l.dp_impl == DpImpl::kReplicated) {
    const double p = dense_local + expert_local;
    weights = pb * p;
    optimizer = 2.0 * pb * p;
    grads_final = pb * p;
    grads_prev = accum ? pb * p : 0.0;
    bucket = one_gpu ? 0.0 : pb * p;
    temp = adam_temp(pb, p, 1.0);
  } else if (l.dp_impl == DpImpl::kFsdpPerModule) {
    const double shard = dense_local / double(c.groups.dp_shard_cp.n) + expert_local / double(c.groups.ep_shard.n);
    weights = pb * shard;
    optimizer = 2.0 * pb * shard;
    grads_final = pb * shard;
    temp = adam_temp(pb, shard, double(c.groups.dp_shard_cp.n));
    if (l.pp > 1) {
      resident = 2.0 * (dense_local + expert_local);
      grads_prev = 4.0 * (dense_local + expert_local);
    } else {
      resident = 2.0 * (layer_local + root_local);
      if (!l.moe_reshard_after_forward && l.ep > 1 && c.groups.ep_shard.n > 1) {
        resident += 2.0 * std::max(0.0, expert_local - rp.max_layer_expert / ep);
      }
      const bool defer = opts.defer_fsdp_grad_sync || l.defer_fsdp_grad_sync;
      // The deferred unsharded fp32 gradients are FSDP's: with ep_shard 1 the experts are not
      // FSDP parameters (components/moe/parallelizer.py apply_fsdp: fully_shard on the experts only
      // when ep_shard > 1, else ignored_params of their block), so their param.grad accumulates
      // in the parameters' own dtype.
      const double expert_deferred = c.groups.ep_shard.n > 1 ? 4.0 : pb;
      if (accum) grads_prev = defer ? 4.0 * dense_local + expert_deferred * expert_local : grads_final;
    }
  } else {  // megatron_fsdp: what zero_dp_strategy shards (CostView::fsdp_sharding)
    const double n = double(std::max<int64_t>(1, l.dp)) * double(std::max<int64_t>(1, l.cp));
    const double local = dense_local + expert_local, shard = local / n;
    const bool shard_params = l.fsdp_sharding == FsdpSharding::kOptimGradsParams;
    const bool shard_grads = shard_params || l.fsdp_sharding == FsdpSharding::kOptimGrads;
    const bool shard_state = l.fsdp_sharding != FsdpSharding::kNoShard;
    weights = 2.0 * (shard_params ? shard : local);
    grads_final = 4.0 * (shard_grads ? shard : local);
    optimizer = 12.0 * (shard_state ? shard : local);
    temp = adam_temp(4.0, shard_state ? shard : local, shard_state ? n : 1.0);
    const double unit = std::max(layer_local, root_local);
    resident = (shard_params ? 2.0 * 2.0 * unit : 0.0) + (shard_grads ? 4.0 * unit : 0.0);
    grads_prev = accum ? grads_final : 0.0;
  }

  const PytorchRankTerms terms = c.pytorch_terms != nullptr ? *c.pytorch_terms : PytorchTerms(c, opts);
  // DeepSeek-V4 (a bf16 model): its fp32 units (Dsv4PytorchTerms::fp32_params; deepseek_v4/fsdp.py
  // fully_shard_deepseek_v4 keeps them in fp32) hold 4-byte weights and gradients and 8-byte Adam
  // state, 8 B per parameter more; its frozen indexers no gradient and no Adam state, 6 B less;
  // the rank's share by its layers, lm_head on the head rank. Under FSDP2 without PP the
  // unsharded root keeps lm_head in fp32 (2 B per parameter more). Megatron FSDP's state is
  // fp32 already.
  if (m.architecture == Architecture::kDeepseekV4 && pb == 2.0 && l.dp_impl != DpImpl::kMegatronFsdp) {
    const double vh = double(m.vocab_size) * h;
    const double frac = double(rp.Layers()) / double(std::max<int64_t>(1, m.num_layers));
    const double fp32 = std::max(0.0, terms.dsv4.fp32_params - vh) * frac + (rp.has_head ? vh : 0.0);
    const double frozen = terms.dsv4.frozen_params * frac;
    const bool sharded = !one_gpu && l.dp_impl == DpImpl::kFsdpPerModule;
    const double shards = sharded ? double(c.groups.dp_shard_cp.n) : 1.0;
    weights += 2.0 * fp32 / shards;
    grads_final += (2.0 * fp32 - 2.0 * frozen) / shards;
    optimizer += (4.0 * fp32 - 4.0 * frozen) / shards;
    if (sharded && l.pp == 1 && rp.has_head) resident += 2.0 * vh;
  }

  // Activations of the in-flight micro-batches.
  const double t = c.tokens_per_mb;
  const bool sp = l.sequence_parallel;
  const AcWrap wrap = terms.wrap;
  const double dense_act = terms.dense_act;
  const double moe_act = terms.moe_act;
  const double inflight = InflightMicrobatches(l, c.split, pp_rank);
  // A Gated DeltaNet layer is an attention layer with its mixer swapped (PytorchRankTerms::gdn_delta).
  // A Nemotron-H rank: its blocks by kind (PytorchRankTerms::nem_*).
  const bool nemotron = m.architecture == Architecture::kNemotronH;
  double acts = nemotron ? inflight * t *
                               (double(rp.attention_mixers) * terms.nem_attn + double(rp.mamba_mixers) * terms.nem_mamba +
                                double(rp.dense_layers) * terms.nem_mlp + double(rp.moe_layers) * terms.nem_moe)
                         : inflight * t *
                               (double(rp.dense_layers) * dense_act + double(rp.moe_layers) * moe_act +
                                double(rp.gdn_mixers) * terms.gdn_delta + terms.rope);
  double logits = 0, held_logits = 0;
  if (rp.has_head) {
    acts += t * terms.final_norm / (sp ? tp : 1.0);
    // FusedLinearCrossEntropy computes lm_head and the loss blockwise (cut-cross-entropy): no
    // logits outlive a block (its fp32 log-sum-exp per token aside).
    if (!l.loss_fused_linear) {
      logits = terms.logits * t * double(m.vocab_size);
      held_logits = terms.held_logits * t * double(m.vocab_size);
    }
  }

  const double base = weights + optimizer + bucket + kCublasWorkspaceBytes;
  MemoryBreakdown mem;
  mem.weights = weights;
  mem.optimizer = optimizer;
  mem.workspace = kCublasWorkspaceBytes;
  mem.overhead = terms.overhead;
  mem.step_gradients = grads_final;
  // Moment 1: start of backward (the loss backward of the last micro-batch).
  double best = base + grads_prev + resident + acts + logits;
  mem.gradients = bucket + grads_prev;
  mem.buffers = resident;
  mem.activations = acts;
  mem.logits = logits;
  mem.phase = "backward start";
  // Moment 2: recompute of one layer under full checkpointing.
  if (wrap == AcWrap::kLayer || wrap == AcWrap::kSubmodule) {
    const double layer_full = nemotron ? t * terms.nem_recompute : t * std::max({rp.dense_layers > 0 ? terms.dense_full : 0.0,
                                            rp.moe_layers > 0 ? terms.moe_full : 0.0,
                                            rp.gdn_mixers > 0 ? terms.moe_full + terms.gdn_delta_full : 0.0});
    const double total = base + grads_prev + resident + acts + layer_full + held_logits;
    if (total > best) {
      best = total;
      mem.activations = acts + layer_full;
      mem.logits = held_logits;
      mem.phase = "recompute";
    }
  }
  // Moment 4: the softmax backward of SDPA's math kernel, in the rank's last and first layer.
  if (terms.compute.Math() && (one_gpu || l.dp_impl == DpImpl::kReplicated)) {
    const double final_norm = rp.has_head ? t * terms.final_norm / (sp ? tp : 1.0) : 0.0;
    const double vocab_h = double(m.vocab_size) * h / tp;
    const bool tied = c.params.output_head == 0;
    // q, k, v (and their norms, biases) and norm1 of a layer: attention less o_proj, plus h.
    const double o_proj = h * double(AttnOutDim(m)) + (m.attention_out_bias ? h : 0.0);
    const double qkv_norm1 = (double(c.params.attention_per_layer) - o_proj) / tp + h;
    double new_last = 0, new_first = 0;
    if (!accum) {
      new_last = pb * ((rp.has_head ? vocab_h + h : 0.0) + layer_local - qkv_norm1);
      new_first = grads_final - pb * (qkv_norm1 + ((rp.has_embedding && !(tied && rp.has_head)) ? vocab_h : 0.0));
    } else if (tied && rp.has_head && rp.has_embedding) {
      new_last = new_first = pb * vocab_h;  // the AccumulateGrad input buffer
    }
    const double last_act = rp.moe_layers > 0 ? moe_act : dense_act;
    const double one_mb = t * (double(rp.dense_layers) * dense_act + double(rp.moe_layers) * moe_act);
    const double acts_last = acts - final_norm + t * (terms.attn_held - last_act + terms.attn_transient);
    const double acts_first = acts - final_norm - one_mb + t * (terms.attn_held + terms.attn_transient);
    const double at_last = base + grads_prev + resident + acts_last + held_logits + new_last;
    const double at_first = base + grads_prev + resident + acts_first + held_logits + new_first;
    const bool first = at_first > at_last;
    const double total = first ? at_first : at_last;
    if (total > best) {
      best = total;
      mem.gradients = bucket + grads_prev + (first ? new_first : new_last);
      mem.buffers = resident;
      mem.activations = first ? acts_first : acts_last;
      mem.logits = held_logits;
      mem.phase = "attention backward";
    }
  }
  // Moment 3: optimizer step.
  const double total_opt = base + grads_final + temp;
  if (total_opt > best) {
    mem.gradients = bucket + grads_final;
    mem.buffers = temp;
    mem.activations = 0;
    mem.logits = 0;
    mem.phase = "optimizer step";
  }
  return mem;
}

MemoryBreakdown RankMemory(const Ctx& c, int64_t pp_rank) { return RankMemory(c, pp_rank, MemoryOptions{}); }

bool RankMemoryIsUniform(const Ctx& c, const MemoryOptions& opts) {
  // Megatron-LM's estimate is the first stage's for every rank; the bridge profile prices the
  // pipeline ranks apart (MegatronRankMemory).
  return UseMegatron(c.view, opts) && c.split.given == nullptr && !(BridgeEstimator(opts) && c.view.pp > 1);
}

bool RankMemoryUsesPytorchTerms(const Ctx& c, const MemoryOptions& opts) { return !UseMegatron(c.view, opts); }

}  // namespace meshplan::cost
