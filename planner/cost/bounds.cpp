// Lower bound of the step time over every batch and schedule choice of a layout whose mesh
// axes, strategy, sequence parallelism and recompute mode are fixed. Used by the search to
// skip subtrees that cannot enter the top-k (branch-and-bound).
//
// Why it is a bound on CostModel::Evaluate (time.cpp::RankTime), term by term, for the PP
// rank with the most layers (its step is <= the reported maximum over ranks):
//   - that rank holds at least L/pp layers (the max is >= the mean) and each of its layers
//     costs at least min(dense layer, MoE layer) FLOP per token;
//   - it processes global_batch·seq_len/(dp·cp) tokens per step whatever the micro-batch;
//   - compute runs at most at peak·matmul_efficiency·compute_efficiency (LinearGemmFactor, ExpertGemmFactor <= 1),
//     the attention core at most at the faster of the GEMM and bf16 rates; recompute adds
//     1/3 (full) or 1/6 of the matmul work (selective) exactly as RankTime does;
//   - TP all-reduces move at least (7, or 9 under full recompute, for dense models; 4 or 6
//     with MoE layers) · layers · tokens·h·2
//     bytes · 2(tp−1)/tp at the TP group's bus bandwidth (latency terms dropped), and EP
//     all-to-alls likewise for the MoE layers; the eager HBM-bound kernels of those layers
//     exactly as RankTime charges them (linear in the tokens); every other term (CP, PP, bubble, DP,
//     optimizer) is >= 0 and dropped.
// Megatron-Bridge layouts are scored by time_megatron.cpp (MegatronTime), bounded the same
// way term by term (MegatronBound below), as a function of the micro-batches per step n
// (StepLowerBound): GEMMs at peak·MAMF divided by the system's fitted GEMM factor
// (LinearGemmFactor, ExpertGemmFactor <= 1), routed experts / tp, recompute only under full;
// the attention core at kFlashAttentionEfficiency x AttentionLengthFactor; the HBM-bound term
// exactly (it is linear in the tokens); the kernels' gaps (fit.kernel_overhead per kernel, n
// times a layer's kernels); DP, PP and optimizer dropped. A collective of one micro-batch's
// tokens costs its latency plus a part linear in the tokens, so over n micro-batches it costs
// n latencies plus the bytes of the step's tokens: TP all-reduces (with tp_comm_overlap at
// least kTpOverlapExposedFraction of them: Pos(c − g) + f·min(c, g) >= f·c for f <= 1), the
// EP dispatch and combine (EpAllToAllSeconds; with the all-to-all overlap at least
// HiddenCommCost of it, same argument, the unpaired share exposed in full) and the CP exchange
// (CpLayerStepPieces: the exposed types exactly; the p2p rings max(0, comm − core) per
// micro-batch, and n·max(0, a + b·T/n) = max(0, n·a + b·T) exactly). The pipeline bubble is
// bubble_fraction x (compute + TP + CP + EP) with bubble_fraction >= (pp − 1)/(vpp·n). The
// least-cost layer kind (dense or MoE) is charged for every layer of the rank holding the most
// layers (>= L/pp), and the EP term counts only that rank's MoE layers (>= L/pp − dense
// layers). The step is also at least the host's time issuing those layers' kernels (same
// least-cost layer kind), n times; the bound is the larger of the two. Every part but the
// bubble grows with n, so a subtree's least bound is its GPU part at the fewest micro-batches
// (global batch / (dp · largest micro-batch)) with the bubble at the most (one sequence each).
#include <algorithm>
#include <array>
#include <cstring>

#include "cost/comm.hpp"
#include "cost/cp_comm.hpp"
#include "cost/flops.hpp"
#include "cost/last_values.hpp"
#include "cost/tables.hpp"
#include "cost/time.hpp"
#include "meshplan/cost.hpp"

namespace meshplan {

namespace {

// MegatronLayerElements of a dense and a MoE layer (no local-expert sort), per model and
// precision, kept per thread for the last inputs (as the EP pass is: EpAllToAllCached).
std::array<double, 2> LayerElementsOf(uint64_t tables_id, const ModelSpec& m, bool fp8) {
  const std::array<int64_t, 2> key{int64_t(tables_id), fp8 ? 1 : 0};
  thread_local cost::LastValues<std::array<int64_t, 2>, std::array<double, 2>, 2> last;
  if (const std::array<double, 2>* hit = last.Find(key)) return *hit;
  return last.Store(key, {cost::MegatronLayerElements(m, false, fp8, false), cost::MegatronLayerElements(m, true, fp8, false)});
}

// The least of a dense and a MoE layer's `dense` and `moe` over the layer kinds `m` has.
double LeastKind(const ModelSpec& m, double dense, double moe) {
  return !m.is_moe() ? dense : m.num_dense_layers > 0 ? std::min(dense, moe) : moe;
}

// A Megatron layout's axis sizes (at least 1), the tokens per rank per step and the layers per
// pipeline rank (L/pp), as MegatronBound's terms read them.
struct MeshSizes {
  double tp, dp, cp, pp, etp, tokens, layers;
};
MeshSizes MeshSizesOf(const ModelSpec& m, const TrainSetup& setup, const CostView& l) {
  MeshSizes z;
  z.tp = double(std::max<int64_t>(1, l.tp));
  z.dp = double(std::max<int64_t>(1, l.dp));
  z.cp = double(std::max<int64_t>(1, l.cp));
  z.pp = double(std::max<int64_t>(1, l.pp));
  z.etp = double(std::max<int64_t>(1, l.etp));
  z.tokens = double(setup.global_batch) * double(setup.seq_len) / (z.dp * z.cp);
  z.layers = double(m.num_layers) / z.pp;
  return z;
}

// The terms of MegatronBound that read no recompute field of the view (recompute,
// recompute_modules, recompute_block_layers) and no DP-flavour field (dp_impl, fsdp_sharding,
// main_grad_bytes: MegatronDpPerMicroBatch): the feature sets of a mesh (its recompute variants,
// Space::Features) and its DP flavours share them.
struct MegatronMeshTerms {
  double gemm_s_per_flop = 0;
  double core_rate = 0;  ///< the attention core's rate in core_s (FLOP/s)
  cost::MegatronLayerKernels kernels;
  cost::Link tp_link;
  double kv_bytes = 0, qkv_bytes = 0, o_bytes = 0;  ///< CpLayerInputs' per-token bytes
  double cp_core_rate = 0;                          ///< MegatronCoreRate (FLOP/s)
  cost::CpLinks cp_links;
  double ep_per_step = 0, ep_latency = 0, ep_share = 1;  ///< the EP all-to-all's parts and the share left exposed
  double bubble = 0;
};

MegatronMeshTerms MegatronMeshTermsOf(const ModelSpec& m, const SystemSpec& sys, const TrainSetup& setup,
                                      const cost::MegatronUnfused& u, const cost::LinkTable* links,
                                      uint64_t tables_id, const CostView& l) {
  MegatronMeshTerms t;
  const MeshSizes z = MeshSizesOf(m, setup, l);
  const double tp = z.tp, pp = z.pp, etp = z.etp, tokens = z.tokens;
  const GpuSpec& gpu = sys.gpu;
  const MegatronTimeFit& fit = sys.megatron_fit;
  t.gemm_s_per_flop = cost::MegatronGemmFactor(fit, setup.precision) /
                      (cost::PeakFlops(gpu, setup.precision) * cost::MatmulEfficiency(gpu, setup.precision));
  t.core_rate = gpu.bf16_flops * cost::kFlashAttentionEfficiency *
                cost::AttentionLengthFactor(setup.seq_len, cost::CpRingRanks(l));
  t.kernels = cost::MegatronKernelsPerLayer(m, l, u);
  const cost::MeshGroups g = cost::LayoutGroups(l, setup.num_gpus);
  if (l.tp > 1) t.tp_link = cost::RingLink(sys, links, g.tp);
  if (l.cp > 1) {
    t.kv_bytes = double(cost::KDim(m) + cost::VDim(m)) / tp * 2.0;
    t.qkv_bytes = double(cost::QDim(m) + cost::KDim(m) + cost::VDim(m)) / tp * 2.0;
    t.o_bytes = double(cost::AttnOutDim(m)) / tp * 2.0;
    t.cp_core_rate = cost::MegatronCoreRate(gpu, m, setup.seq_len, l);
    t.cp_links = cost::CpLinksOf(sys, links, l, g.cp);
  }
  if (l.ep > 1 && m.is_moe()) {
    const cost::EpA2aSeconds a = cost::EpAllToAllCached(tables_id, l, m, sys, setup.num_gpus, links, tokens / tp);
    t.ep_per_step = std::max(0.0, 0.5 * (a.dispatch + a.combine) - a.latency);
    t.ep_latency = a.latency;
    // With the EP all-to-all overlap at least HiddenCommCost of it stays (Pos(c − g) +
    // κ·min(c, g) >= κ·c for κ <= 1, the unpaired share exposed in full).
    t.ep_share = l.ep_a2a_overlap ? cost::HiddenCommCost(1.0, cost::A2aLink(sys, links, cost::Group{l.ep, static_cast<int64_t>(etp)}))
                                  : 1.0;
  }
  // The fill and drain: (pp − 1)/(vpp · n) of the stage work (MegatronRankTerms'
  // bubble_fraction, at least that: its stage factor is >= 1).
  if (l.pp > 1) t.bubble = (pp - 1.0) / double(std::max<int64_t>(1, l.vpp));
  return t;
}

// MegatronBound's data-parallel term per micro-batch: the only part of the mesh's terms that
// reads the DP flavour (dp_impl, fsdp_sharding, the main-gradient bytes), computed apart so that
// the flavours of a mesh share the rest (MegatronMeshTermsCached).
double MegatronDpPerMicroBatch(const ModelSpec& m, const SystemSpec& sys, const TrainSetup& setup,
                               const ParamCounts& params, const cost::LinkTable* links, const CostView& l,
                               const MeshSizes& z) {
  double dp_per_micro_batch = 0;
  // Sharded data parallelism: Megatron FSDP's optim_grads_params and torch FSDP2 gather the
  // weights twice and reduce-scatter the gradients in every micro-batch, optim_grads
  // reduce-scatters them (MegatronRankTerms' DP term). Each is Pos(comm − window) +
  // HiddenShareCost(comm, window, cost) >= cost, the cost of hiding all of it (HiddenCommCost
  // <= the seconds it prices), plus for the ZeRO-3 path the first layer's exposed gather; per
  // micro-batch, over the rank's parameters, at least those of L/pp layers of the lighter kind
  // and the routed experts of L/pp − dense layers.
  const bool mfsdp = l.dp_impl == DpImpl::kMegatronFsdp;
  const bool delayed_reduce =
      mfsdp && (l.fsdp_sharding == FsdpSharding::kNoShard || l.fsdp_sharding == FsdpSharding::kOptim);
  if (l.dp_impl != DpImpl::kReplicated && !delayed_reduce) {
    const double tp = z.tp, etp = z.etp, layers = z.layers;
    const double attn = double(params.attention_per_layer + params.norms_per_layer);
    const double dense_params = attn + double(params.dense_mlp_per_layer);
    const double moe_params = attn + double(params.shared_per_layer + params.router_per_layer);
    const double layer_dense = LeastKind(m, dense_params, moe_params);
    const double moe_layers = m.is_moe() ? std::max(0.0, layers - double(m.num_dense_layers)) : 0.0;
    const double ep = double(std::max<int64_t>(1, l.ep));
    const double one_layer_experts = double(m.num_experts) * double(params.expert_per_layer);
    const double dense_local = layers * layer_dense / tp;
    const double expert_local = moe_layers * one_layer_experts / (ep * etp);
    const double g_bytes = l.main_grad_bytes;
    const cost::MegatronDpGroups dpg = cost::MegatronDpGroupsOf(l, setup.num_gpus);
    const cost::Group gd = dpg.dense, ge = dpg.expert;
    const cost::Link ld = cost::RingLink(sys, links, gd), le = cost::RingLink(sys, links, ge);
    const double ag_d = cost::AllGatherSeconds(2.0 * dense_local, gd.n, ld);
    const double ag_e = cost::AllGatherSeconds(2.0 * expert_local, ge.n, le);
    const double rs_d = cost::ReduceScatterSeconds(g_bytes * dense_local, gd.n, ld);
    const double rs_e = cost::ReduceScatterSeconds(g_bytes * expert_local, ge.n, le);
    if (mfsdp && l.fsdp_sharding == FsdpSharding::kOptimGrads) {
      dp_per_micro_batch = cost::HiddenCommCost(rs_d, ld) + cost::HiddenCommCost(rs_e, le);
    } else {
      const double first_ag = cost::AllGatherSeconds(2.0 * layer_dense / tp, gd.n, ld) +
                              (moe_layers > 0 ? cost::AllGatherSeconds(2.0 * one_layer_experts / (ep * etp), ge.n, le) : 0.0);
      dp_per_micro_batch = first_ag + cost::HiddenCommCost(2.0 * ag_d + rs_d, ld) + cost::HiddenCommCost(2.0 * ag_e + rs_e, le);
    }
  }
  return dp_per_micro_batch;
}

// MegatronMeshTermsOf for the meshes bounded on this thread, one per slot of a hash of the key
// (HashedValues): keyed by every input it reads, the view's fields (all but the recompute and
// DP-flavour ones) and the CostModel's (its tables' Id, fixing model and system, and the setup a
// WithSetup copy changes), so a hit returns the very terms the computation would. A mesh's
// feature sets, and its DP flavours (a few meshes apart in the walk: Megatron-Bridge's Block
// emits every dispatcher and CP exchange type of one flavour before the next), share them.
const MegatronMeshTerms& MegatronMeshTermsCached(const ModelSpec& m, const SystemSpec& sys, const TrainSetup& setup,
                                                 const cost::MegatronUnfused& u, const cost::LinkTable* links,
                                                 uint64_t tables_id, const CostView& l) {
  using Key = std::array<int64_t, 20>;
  const Key key{int64_t(tables_id),      setup.num_gpus,         setup.global_batch,     setup.seq_len,
                int64_t(setup.precision), l.tp,                   l.dp,                   l.cp,
                l.pp,                    l.ep,                   l.etp,                  l.vpp,
                l.dp_replicate,          int64_t(l.cp_comm),     l.cp_a2a,               int64_t(l.cuda_graph),
                int64_t(l.cuda_graph_scope), int64_t(l.dispatcher), int64_t(l.flex_backend), l.ep_a2a_overlap ? 1 : 0};
  thread_local cost::HashedValues<Key, MegatronMeshTerms, 64> memo;
  // The slot of the last lookup first: a mesh's feature sets are bounded one after the other.
  thread_local size_t last = 0;
  if (const MegatronMeshTerms* hit = memo.Find(key, last)) return *hit;
  last = memo.SlotOf(key);
  if (const MegatronMeshTerms* hit = memo.Find(key, last)) return *hit;
  return memo.Store(key, last, MegatronMeshTermsOf(m, sys, setup, u, links, tables_id, l));
}

StepLowerBound MegatronBound(const ModelSpec& m, const SystemSpec& sys, const TrainSetup& setup,
                             const ParamCounts& params, const cost::FlopsPerToken& f, const cost::MegatronUnfused& u,
                             const cost::LinkTable* links, uint64_t tables_id, const CostView& l) {
  StepLowerBound b;
  const MegatronMeshTerms& t = MegatronMeshTermsCached(m, sys, setup, u, links, tables_id, l);
  const MeshSizes z = MeshSizesOf(m, setup, l);
  const double tp = z.tp, etp = z.etp, tokens = z.tokens, layers = z.layers;
  const bool full = l.recompute == Recompute::kFull;
  const bool fp8 = setup.precision != Precision::kBf16;
  // Recompute as the time model charges it (block full recompute repeats only some layers;
  // selective recompute repeats the core only when core_attn is among its modules).
  const double e = cost::MegatronFullRecomputeShare(l, m) / 3.0;
  const double e_core = full ? e : cost::MegatronRecomputesCore(l) ? 1.0 / 3.0 : 0.0;
  const GpuSpec& gpu = sys.gpu;
  const MegatronTimeFit& fit = sys.megatron_fit;
  const double gemm_s_per_flop = t.gemm_s_per_flop;
  const double core_s = f.attn_core_flops / tp * (1 + e_core) / t.core_rate;
  const double mem_s_per_elem =
      gpu.hbm_bandwidth > 0 ? fit.memory_bound * 3.0 * (1 + e) * 2.0 / tp / gpu.hbm_bandwidth : 0.0;
  const double unfused_s = mem_s_per_elem * (u.fwd_elements * (1 + 3 * e) + u.bwd_elements) / (3.0 * (1 + e));
  const std::array<double, 2> elements = LayerElementsOf(tables_id, m, fp8);
  const double dense_layer = f.DenseLayerLinear() / tp * (1 + e) * gemm_s_per_flop + core_s +
                             elements[0] * mem_s_per_elem + unfused_s;
  const double moe_layer = (f.attn_linear_flops + f.shared_flops + f.routed_flops) / tp * (1 + e) * gemm_s_per_flop +
                           core_s + elements[1] * mem_s_per_elem + unfused_s;
  b.fixed = tokens * layers * LeastKind(m, dense_layer, moe_layer);
  // Every layer's kernels leave a gap (fit.kernel_overhead each) per micro-batch.
  const cost::MegatronLayerKernels& k = t.kernels;
  b.per_micro_batch = std::max(0.0, fit.kernel_overhead) * layers * LeastKind(m, k.dense, k.moe) * (1 + e);
  const double h = double(m.hidden_size);
  if (l.tp > 1) {
    const cost::Link& link = t.tp_link;
    // As MegatronRankTerms: per dense layer 5 all-reduce volumes with sequence parallel (4
    // without), per MoE layer 2.5 (5 with expert-TP); the forward's again under full recompute
    // (7 and 6; x1.4 for MoE). Each volume is an all-reduce of one micro-batch's tokens:
    // α·2(tp − 1) per micro-batch plus the bytes of the step's tokens.
    const double dense_v = l.sequence_parallel ? (full ? 7.0 : 5.0) : (full ? 6.0 : 4.0);
    const double moe_v = (etp > 1 ? 5.0 : 2.5) * (full ? 1.4 : 1.0);
    const double volumes = LeastKind(m, dense_v, moe_v) * layers;
    const double bytes = link.busbw_bytes_per_s > 0
                             ? volumes * tokens * h * 2.0 * 2.0 * (tp - 1) / tp / link.busbw_bytes_per_s
                             : 0.0;
    const double lat = volumes * link.latency_s * 2.0 * (tp - 1);
    // With tp_comm_overlap at least kTpOverlapExposedFraction of it stays.
    const double share = l.tp_comm_overlap ? cost::kTpOverlapExposedFraction : 1.0;
    b.fixed += share * bytes;
    b.per_micro_batch += share * lat;
  }
  if (l.cp > 1) {
    // The attention's exchange (CpLayerExposedSeconds) of every micro-batch, in closed form
    // (CpLayerStepPieces), with the inputs and links MegatronLayoutShared gives it.
    cost::CpLayerInputs in;
    in.kv_bytes = t.kv_bytes;
    in.qkv_bytes = t.qkv_bytes;
    in.o_bytes = t.o_bytes;
    in.core_seconds = f.attn_core_flops / tp / t.cp_core_rate * (1.0 + e_core);
    in.cp = l.cp;
    in.a2a = l.cp_a2a;
    in.full = full;
    const cost::CpStepPieces c = cost::CpLayerStepPieces(l.cp_comm, in, t.cp_links);
    b.fixed += layers * tokens * c.linear_per_token;
    b.per_micro_batch += layers * c.linear_per_micro_batch;
    b.ring_fixed = layers * tokens * c.ring_per_token;
    b.ring_per_micro_batch = layers * c.ring_per_micro_batch;
  }
  if (l.ep > 1 && m.is_moe()) {
    const double moe_layers = std::max(0.0, layers - double(m.num_dense_layers));
    // MegatronRankTerms: 2·(2, or 3 when full or MoE recompute repeats the forward) dispatch
    // and combine passes per MoE layer and micro-batch, each the mean of a dispatch and a
    // combine (EpAllToAllSeconds, whose parts are linear in the tokens past its latency).
    const bool moe_recompute = (cost::MegatronSelectiveModules(l) & kRecomputeMoe) != 0;
    const double passes = 2.0 * (full || moe_recompute ? 3.0 : 2.0) * moe_layers;
    b.fixed += t.ep_share * passes * t.ep_per_step;
    b.per_micro_batch += t.ep_share * passes * t.ep_latency;
  }
  b.dp_per_micro_batch = MegatronDpPerMicroBatch(m, sys, setup, params, links, l, z);
  b.bubble = t.bubble;
  // The host's issue time (MegatronHostBound adds what the GPU's work does not cover): per
  // micro-batch the rank's layers x the fewer host kernels of the two layer kinds, at
  // kHostSecondsPerKernel.
  b.host_per_micro_batch = cost::kHostSecondsPerKernel * layers * LeastKind(m, k.dense_host, k.moe_host) * (1 + e);
  return b;
}

}  // namespace

double StepLowerBound::At(double n) const {
  const double gpu = fixed + n * per_micro_batch + std::max(0.0, ring_fixed + n * ring_per_micro_batch);
  return std::max(gpu * (1.0 + bubble / n) + n * dp_per_micro_batch, n * host_per_micro_batch);
}

double StepLowerBound::Least(double n_min, double n_max) const {
  const double gpu = fixed + n_min * per_micro_batch + std::max(0.0, ring_fixed + n_min * ring_per_micro_batch);
  return std::max(gpu * (1.0 + bubble / n_max) + n_min * dp_per_micro_batch, n_min * host_per_micro_batch);
}

MicroBatchRange MicroBatchesPerStep(int64_t global_batch, int64_t dp_size, int64_t max_micro_batch) {
  const double dp = double(std::max<int64_t>(1, dp_size));
  MicroBatchRange r;
  r.fewest = max_micro_batch > 0 ? std::max(1.0, double(global_batch) / (dp * double(max_micro_batch))) : 1.0;
  r.most = std::max(r.fewest, double(global_batch) / dp);
  return r;
}

double CostModel::StepSecondsLowerBound(const CostView& l, int64_t max_micro_batch) const {
  const MicroBatchRange n = MicroBatchesPerStep(setup_.global_batch, l.dp, max_micro_batch);
  return StepLowerBoundOf(l).Least(n.fewest, n.most);
}

StepLowerBound CostModel::StepLowerBoundOf(const CostView& l) const {
  StepLowerBound out;
  // A hybrid model's blocks are cheaper than the flat layers the bounds below assume (an
  // attention or MLP block is half a dense layer): no bound, so nothing is pruned wrongly.
  if (model_.is_hybrid()) return out;
  if (l.runtime == CostRuntime::kMegatronCore) {
    return MegatronBound(model_, system_, setup_, params_, *flops_, tables_->Unfused(), links_.get(), tables_->Id(), l);
  }
  const ModelSpec& m = model_;
  const cost::FlopsPerToken& f = *flops_;
  const double tp = double(std::max<int64_t>(1, l.tp));
  const double dp = double(std::max<int64_t>(1, l.dp));
  const double cp = double(std::max<int64_t>(1, l.cp));
  const double pp = double(std::max<int64_t>(1, l.pp));
  const double tokens = double(setup_.global_batch) * double(setup_.seq_len) / (dp * cp);
  const double layers = double(m.num_layers) / pp;

  double e_mm = 0, e_core = 0;
  if (l.recompute == Recompute::kFull) {
    e_mm = e_core = 1.0 / 3.0;
  } else if (l.recompute == Recompute::kSelective) {
    e_mm = 1.0 / 6.0;
  }
  const double core = f.attn_core_flops / tp * (1 + e_core);
  const double dense_layer = f.DenseLayerLinear() / tp * (1 + e_mm) + core;
  const double moe_layer = (f.attn_linear_flops + f.shared_flops) / tp * (1 + e_mm) + f.routed_flops * (1 + e_mm) + core;
  const double per_layer = LeastKind(m, dense_layer, moe_layer);
  const GpuSpec& gpu = system_.gpu;
  const double eff = system_.compute_efficiency > 0 ? system_.compute_efficiency : 1.0;
  const double rate = std::max(cost::PeakFlops(gpu, setup_.precision) * cost::MatmulEfficiency(gpu, setup_.precision),
                               gpu.bf16_flops * cost::MatmulEfficiency(gpu, Precision::kBf16)) *
                      eff;
  double bound = tokens * layers * per_layer / rate;
  // Eager HBM-bound kernels as RankTime charges them (linear in the tokens; the loss dropped:
  // the rank with the most layers may not hold the head).
  if (gpu.hbm_bandwidth > 0) {
    double passes = cost::EagerLayerPasses(m, tp);
    if (m.is_moe()) {
      const double dense = cost::HfMoeModel(m) ? passes : cost::MoeModelDenseLayerPasses(m, tp);
      passes = m.num_dense_layers > 0 ? std::min(dense, cost::MoeLayerPasses(m, l.ep, l.dispatcher))
                                    : cost::MoeLayerPasses(m, l.ep, l.dispatcher);
    }
    bound += 2.0 * tokens * layers * passes * cost::EagerRecomputeFactor(l) / gpu.hbm_bandwidth;
  }

  const bool full = l.recompute == Recompute::kFull;
  const cost::MeshGroups g = cost::LayoutGroups(l, setup_.num_gpus);
  const double h = double(m.hidden_size);
  if (l.tp > 1) {
    const cost::Link link = cost::RingLink(system_, links_.get(), g.tp);
    // RankTime's volumes per layer: 7 (9) dense, 4 (6) MoE; the least for the model's kinds.
    const double volumes = !m.is_moe() ? (full ? 9.0 : 7.0) : (full ? 6.0 : 4.0);
    bound += volumes * layers * tokens * h * 2.0 * 2.0 * (tp - 1) / tp / link.busbw_bytes_per_s;
    // Each volume is an all-reduce of one micro-batch: α·2(tp − 1) per micro-batch.
    out.per_micro_batch += volumes * layers * link.latency_s * 2.0 * (tp - 1);
  }
  if (l.cp > 1) {
    // RankTime's ring (RingCpExposedSeconds): per layer and micro-batch of t tokens,
    // (3, 4 under full recompute)·(cp − 1)·max(0, α + t·kv/bw − core(t)/cp), the core's forward
    // at core_rate·GemmSizeFactor(t)·(the chunks' length factor). GemmSizeFactor grows with t,
    // and t >= seq/cp (one sequence), so core(t) <= t·c with c at seq/cp; then over n
    // micro-batches of T tokens in all the exchange is at least
    // (3|4)(cp − 1)·max(0, n·α + T·(kv/bw − c/cp)).
    const cost::Link link = cost::GroupLink(system_, g.cp);
    const double seq_cp = double(setup_.seq_len) / cp;
    const double cp_chunk =
        cost::AttentionLengthFactor(setup_.seq_len, l.cp) / cost::AttentionLengthFactor(setup_.seq_len, 1);
    const double slowest_core_rate = gpu.bf16_flops * cost::kSdpaAttentionEfficiency *
                                     cost::AttentionHeadDimFactor(cost::QkHeadDim(m)) *
                                     cost::GemmSizeFactor(seq_cp, 0.0) * cp_chunk;
    const double fwd_core_per_token = f.attn_core_flops / tp / slowest_core_rate / 3.0;
    const double kv_per_token = double(cost::KDim(m) + cost::VDim(m)) / tp * 2.0;
    const double steps = (full ? 4.0 : 3.0) * (cp - 1.0) * layers;
    const double per_byte = link.busbw_bytes_per_s > 0 ? 1.0 / link.busbw_bytes_per_s : 0.0;
    out.ring_per_micro_batch = steps * link.latency_s;
    out.ring_fixed = steps * tokens * (kv_per_token * per_byte - fwd_core_per_token / cp);
  }
  if (l.ep > 1 && m.is_moe()) {
    const double moe_layers = std::max(0.0, layers - double(m.num_dense_layers));
    // RankTime's AutoModelEpPass over all the step's tokens at once (its latency once).
    const cost::AutoModelEp e = cost::AutoModelEpPass(system_, setup_.num_gpus, cost::A2aLink(system_, links_.get(), g.ep),
                                                      cost::RingLink(system_, links_.get(), g.ep), m, l, tokens);
    bound += ((full ? 2.0 : 1.0) * e.forward + e.backward) * moe_layers;
  }
  out.fixed = bound;
  return out;
}

}  // namespace meshplan
