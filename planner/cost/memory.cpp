// Per-GPU memory of one pipeline rank, "pytorch" profile = NeMo AutoModel: Hugging Face
// modules, FSDP2 / Megatron-FSDP / DDP, DTensor TP, SDPA flash attention. Units: bytes.
//
// Dtype assumptions (AutoModel defaults, automodel.md 1.2):
//   FSDP2 MixedPrecisionPolicy(param bf16, reduce fp32): sharded parameters are the fp32
//   master copy, gradients are reduced and kept sharded in fp32, Adam exp_avg/exp_avg_sq fp32;
//   compute uses bf16 unsharded copies. Activations are bf16 (2 B) except FlashAttention's
//   softmax statistics (fp32) and router logits (fp32). Logits are upcast to fp32 for the loss.

#include "cost/memory.hpp"

#include <algorithm>

namespace meshplan::cost {

namespace {

/// Matmul outputs of one layer (bytes per token), grouped like ActBytes. Used by the
/// selective policy, which saves every other matmul output.
ActBytes MatmulOutputs(const ModelSpec& m, bool moe_layer) {
  const double h = double(m.hidden_size);
  ActBytes o;
  if (m.mla) {
    const MlaSpec& x = m.mla_spec;
    if (x.q_lora_rank > 0) o.rep += 2.0 * double(x.q_lora_rank);                   // q_a_proj
    o.rep += 2.0 * double(x.kv_lora_rank + x.qk_rope_head_dim);                     // kv_a_proj
    o.split += 2.0 * double(QDim(m));                                               // q_b / q_proj
    o.split += 2.0 * double(m.num_attention_heads) * double(x.qk_nope_head_dim + x.v_head_dim);  // kv_b
  } else {
    o.split += 2.0 * double(QDim(m) + KDim(m) + VDim(m));  // q, k, v projections
  }
  o.rep += 2.0 * h;  // o_proj (row-parallel: full-width partial sums before the all-reduce)
  if (moe_layer) {
    const double k = double(m.experts_per_token), fe = double(m.moe_intermediate_size);
    o.unsplit += 2.0 * double(m.num_experts);         // router linear
    o.unsplit += 2.0 * k * (2.0 * fe) + 2.0 * k * h;  // routed gate, up, down (top-k copies)
    o.split += 2.0 * 2.0 * double(m.shared_expert_intermediate_size);
    if (m.shared_expert_intermediate_size > 0) o.rep += 2.0 * h;  // shared down_proj
  } else {
    o.split += 2.0 * 2.0 * double(m.intermediate_size);  // gate, up
    o.rep += 2.0 * h;                                     // down
  }
  return o;
}

/// All activations of one layer without recompute (bytes per token). Derived modern-model
/// formula (groundtruth.md B.3, ours): no dropout, RMSNorm, SwiGLU, FlashAttention (no s²
/// term), bf16:
///   GQA:  2h norm1-in + 2h QKV-in + 2·h_q Q + 4·h_kv K,V + 2·h_q attn-out + 4·a softmax stats
///   MLA:  2h + 2h, compressed 2·r_q (q_a out) + 2·r_q (q_b in) + 2·(r_kv + d_rope) (kv_a out)
///         + 2·r_kv (kv_b in), up-projected Q, K (a·(d_nope+d_rope) each), V (a·d_v),
///         attn-out 2·a·d_v, stats 4·a
///   dense FFN: 2h norm2-in + 2h fc1-in + 8f (gate, up, act(gate), fc2-in)
///   MoE FFN:   2h + 2h + 8·k·f_e (routed, top-k copies) + 8·f_s (shared) + 4·E router logits
///              (fp32) + 2·(k·h·2) dispatch/combine buffers
/// TP (Korthikanti Table 2 with DTensor TP): the norm inputs and the inputs of the
/// column-parallel linears (8h; plus MLA's compressed tensors, produced by replicated
/// linears) are replicated without sequence parallelism and split with it; per-head and
/// FFN-width tensors are split; routed-expert tensors are never split by TP (AutoModel keeps
/// experts EP-owned, automodel.md 2.3). CP divides the tokens (applied by the caller).
ActBytes NoRecompute(const ModelSpec& m, bool moe_layer) {
  const double h = double(m.hidden_size), a = double(m.num_attention_heads);
  ActBytes b;
  b.rep += 2.0 * h + 2.0 * h;  // norm1 input, attention input
  if (m.mla) {
    const MlaSpec& x = m.mla_spec;
    b.rep += 4.0 * double(x.q_lora_rank);
    b.rep += 2.0 * double(x.kv_lora_rank + x.qk_rope_head_dim) + 2.0 * double(x.kv_lora_rank);
  }
  b.split += 2.0 * double(QDim(m) + KDim(m) + VDim(m)) + 2.0 * double(AttnOutDim(m)) + 4.0 * a;
  b.rep += 2.0 * h + 2.0 * h;  // norm2 input, FFN input
  if (moe_layer) {
    const double k = double(m.experts_per_token);
    b.unsplit += 8.0 * k * double(m.moe_intermediate_size) + 4.0 * double(m.num_experts) +
                 2.0 * (k * h * 2.0);
    b.split += 8.0 * double(m.shared_expert_intermediate_size);
  } else {
    b.split += 8.0 * double(m.intermediate_size);
  }
  return b;
}

}  // namespace

/// kNone: NoRecompute above.
/// kFull: only the checkpointed layer input, 2h per token (replicated without SP, split
///   with SP; Korthikanti Table 2 "full recompute"). The caller adds one layer's full
///   activations transiently (the layer being recomputed in backward).
/// kSelective: AutoModel's selective checkpointing is TorchTitan-style op-level SAC on whole
///   blocks (components/distributed/activation_checkpointing.py,
///   make_selective_checkpoint_context_fn): attention (SDPA) outputs, collectives and every
///   other matmul output are saved, element-wise ops are recomputed. Modelled as: layer input
///   2h + attention output + softmax stats (4a) + half of all matmul outputs + (MoE) the
///   all-to-all dispatch/combine buffers. This is our reading of the code, not a
///   measurement; calibrate against groundtruth.md B.1 (torchtitan selective-AC rows).
ActBytes LayerActivationBytes(const ModelSpec& m, bool moe_layer, Recompute recompute) {
  const double h = double(m.hidden_size);
  ActBytes b;
  switch (recompute) {
    case Recompute::kNone:
      return NoRecompute(m, moe_layer);
    case Recompute::kFull:
      b.rep = 2.0 * h;
      return b;
    case Recompute::kSelective: {
      const ActBytes mm = MatmulOutputs(m, moe_layer);
      b.rep = 2.0 * h + 0.5 * mm.rep;
      b.split = 2.0 * double(AttnOutDim(m)) + 4.0 * double(m.num_attention_heads) + 0.5 * mm.split;
      b.unsplit = 0.5 * mm.unsplit;
      if (moe_layer) b.unsplit += 2.0 * (double(m.experts_per_token) * h * 2.0);
      return b;
    }
  }
  return b;
}

/// Source: groundtruth.md B.4 (Korthikanti §4.2.3; Narayanan §2.2). In units of the rank's
/// whole layer set, for m = micro-batches per schedule call, v = stages per rank:
///   no PP: 1.
///   1F1B (v = 1): rank r holds min(pp − r, m) micro-batches (rank 0: min(pp, m)).
///   interleaved: rank r runs 2·(pp−r−1) + (v−1)·pp warm-up chunk forwards (torch
///     ScheduleInterleaved1F1B / Megatron), so it holds (2·(pp−r−1) + (v−1)·pp + 1)/v
///     rank-equivalents, capped at m. For rank 0 this is pp·(1 + (pp−1)/(pp·v)).
double InflightMicrobatches(const Layout& l, const StageSplit& split, int64_t r) {
  if (l.pp <= 1) return 1.0;
  const double pp = double(l.pp), m = double(std::max<int64_t>(1, l.pp_microbatches()));
  const double v = double(std::max<int64_t>(1, split.stages_per_rank));
  if (l.pp_schedule == PpSchedule::k1F1B || v <= 1.0) return std::min(pp - double(r), m);
  return std::min(m, (2.0 * (pp - double(r) - 1.0) + (v - 1.0) * pp + 1.0) / v);
}

/// Model state, by strategy (P_d = non-expert params of the rank's layers plus its
/// embedding/lm_head, divided by tp; P_e = its routed-expert params divided by ep):
///   fsdp2 (ZeRO-3, automodel.md 2.4/3): 4 (fp32 master) + 4 (fp32 grad) + 8 (Adam m, v)
///     = 16 B/param over the shard group: P_d / (dp_shard·cp) + P_e / ep_shard,
///     ep_shard = dp·cp·tp/ep (HSDP replicates over dp_replicate). Transient buffers:
///     - no PP: bf16 unsharded params of the layer being computed and the prefetched one,
///       that layer's unsharded fp32 grad before the reduce-scatter, and the root module
///       (embedding, final norm, lm_head), which AutoModel wraps with
///       reshard_after_forward=False (parallelizer.py), in bf16 with its bf16 grad;
///       with ep > 1 and ep_shard > 1 AutoModel's moe.reshard_after_forward=false keeps all
///       of the rank's experts gathered in bf16.
///     - PP: the reshard_after_forward heuristic keeps every layer of the rank unsharded in
///       bf16 (automodel.md 1.2), and torch pipelining
///       (stage.py::backward_maybe_with_nosync: set_reshard_after_backward(False),
///       set_requires_gradient_sync(False), reduce-scatter after the last backward)
///       accumulates unsharded grads, upcast to the fp32 reduce dtype, across the schedule:
///       6 B per unsharded param of the rank.
///     defer_fsdp_grad_sync is assumed false in the emitted recipe (no extra term).
///   megatron_fsdp (zero_dp_strategy 3, optim_grads_params; megatron.md 3.3): 2 (bf16 param)
///     + 4 (fp32 grad) + 12 (fp32 master + Adam) = 18 B/param over dp·cp, plus two gathered
///     bf16 units and one unsharded fp32 grad unit (unit = largest layer or the root module).
///   ddp: replicated 4 + 4 + 8 = 16 B/param, plus bucket_cap_mb buckets in flight and the
///     bf16 weight copies autocast keeps for backward (2 B/param). Assumes the recipe sets
///     gradient_as_bucket_view: true (else torch DDP adds another 4 B/param of buckets).
/// Activations: LayerActivationBytes · tokens of one micro-batch (micro_batch·seq/cp) ·
///   in-flight micro-batches, plus one layer's full activations under kFull.
/// Logits (rank holding lm_head, one micro-batch): bf16 logits 2 + fp32 upcast 4 + its fp32
///   grad 4 = 10 B per token per vocab entry; vocab / tp when tp > 1 (DTensor TP shards
///   lm_head's output, Shard(-1)).
/// Overhead: kRuntimeOverheadBytes + kNcclBytesPerGroup per communicator with > 1 rank.
MemoryBreakdown RankMemory(const Ctx& c, int64_t pp_rank) {
  const Layout& l = c.layout;
  const ModelSpec& m = c.model;
  const RankParams rp = ParamsOfRank(c, pp_rank);
  const double tp = double(std::max<int64_t>(1, l.tp)), ep = double(std::max<int64_t>(1, l.ep));
  const double dense_local = (rp.layer_dense + rp.root) / tp;
  const double expert_local = rp.layer_expert / ep;
  const double layer_local = rp.max_layer_dense / tp + rp.max_layer_expert / ep;
  const double root_local = rp.root / tp;
  MemoryBreakdown mem;

  switch (l.strategy) {
    case Strategy::kFsdp2: {
      const double shard = dense_local / double(c.groups.dp_shard_cp.n) +
                           expert_local / double(c.groups.ep_shard.n);
      mem.weights = 4.0 * shard;
      mem.gradients = 4.0 * shard;
      mem.optimizer = 8.0 * shard;
      if (l.pp > 1) {
        mem.buffers = (2.0 + 4.0) * (dense_local + expert_local);
      } else {
        mem.buffers = 2.0 * 2.0 * layer_local + 4.0 * layer_local + 2.0 * 2.0 * root_local;
        if (!kMoeReshardAfterForward && l.ep > 1 && c.groups.ep_shard.n > 1) {
          mem.buffers += 2.0 * std::max(0.0, expert_local - rp.max_layer_expert / ep);
        }
      }
      break;
    }
    case Strategy::kMegatronFsdp: {
      const double n = double(std::max<int64_t>(1, l.dp)) * double(std::max<int64_t>(1, l.cp));
      const double shard = (dense_local + expert_local) / n;
      mem.weights = 2.0 * shard;
      mem.gradients = 4.0 * shard;
      mem.optimizer = 12.0 * shard;
      const double unit = std::max(layer_local, root_local);
      mem.buffers = 2.0 * 2.0 * unit + 4.0 * unit;
      break;
    }
    case Strategy::kDdp: {
      const double p = dense_local + expert_local;
      mem.weights = 4.0 * p;
      mem.gradients = 4.0 * p;
      mem.optimizer = 8.0 * p;
      mem.buffers = kDdpBucketsInFlight * kDdpBucketBytes + 2.0 * p;
      break;
    }
  }

  const double t = c.tokens_per_mb;
  const bool sp = l.sequence_parallel;
  const double dense_act = LayerActivationBytes(m, false, l.recompute).PerRank(l.tp, sp);
  const double moe_act = LayerActivationBytes(m, true, l.recompute).PerRank(l.tp, sp);
  const double inflight = InflightMicrobatches(l, c.split, pp_rank);
  mem.activations =
      inflight * t * (double(rp.dense_layers) * dense_act + double(rp.moe_layers) * moe_act);
  if (l.recompute == Recompute::kFull && rp.Layers() > 0) {
    const double full_dense = LayerActivationBytes(m, false, Recompute::kNone).PerRank(l.tp, sp);
    const double full_moe = LayerActivationBytes(m, true, Recompute::kNone).PerRank(l.tp, sp);
    mem.activations += t * std::max(rp.dense_layers > 0 ? full_dense : 0.0,
                                    rp.moe_layers > 0 ? full_moe : 0.0);
  }
  if (rp.has_head) mem.logits = 10.0 * t * double(m.vocab_size) / tp;

  const MeshGroups& g = c.groups;
  int groups = 0;
  if (l.strategy == Strategy::kDdp) {
    groups = g.ddp.n > 1 ? 1 : 0;
  } else {
    for (const Group* x : {&g.tp, &g.cp, &g.dp_shard_cp, &g.dp_replicate, &g.pp}) groups += x->n > 1;
    if (m.is_moe()) groups += (g.ep.n > 1) + (g.ep_shard.n > 1);
  }
  mem.overhead = kRuntimeOverheadBytes + kNcclBytesPerGroup * double(groups);
  return mem;
}

}  // namespace meshplan::cost
