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
// way term by term (MegatronBound below): GEMMs at peak·MAMF divided by the system's fitted
// GEMM factor (LinearGemmFactor, ExpertGemmFactor <= 1), routed experts / tp, recompute only under full; the
// attention core at kFlashAttentionEfficiency x AttentionLengthFactor; the HBM-bound term exactly (it is linear in
// the tokens); kernels, bubble, DP, CP, PP and optimizer dropped; TP and EP communication
// without latency terms, in full without overlap; with tp_comm_overlap at least
// kTpOverlapExposedFraction of it (Pos(c − g) + f·min(c, g) >= f·c for f <= 1), with the EP
// all-to-all overlap at least HiddenCommCost of it (same argument, the unpaired share
// exposed in full). The least-cost layer kind (dense or MoE)
// is charged for every layer of the rank holding the most layers (>= L/pp), and the EP
// term counts only that rank's MoE layers (>= L/pp − dense layers). The step is also at least
// the host's time issuing those layers' kernels (same least-cost layer kind) for the fewest
// micro-batches a leaf can have (global batch / (dp · largest micro-batch)); the bound is the
// larger of the two.
#include <algorithm>

#include "cost/comm.hpp"
#include "cost/cp_comm.hpp"
#include "cost/flops.hpp"
#include "cost/tables.hpp"
#include "cost/time.hpp"
#include "meshplan/cost.hpp"

namespace meshplan {

namespace {

double MegatronBound(const ModelSpec& m, const SystemSpec& sys, const TrainSetup& setup,
                     const cost::FlopsPerToken& f, const cost::MegatronUnfused& u, const cost::LinkTable* links,
                     const CostView& l, int64_t max_micro_batch) {
  const double tp = double(std::max<int64_t>(1, l.tp));
  const double dp = double(std::max<int64_t>(1, l.dp));
  const double cp = double(std::max<int64_t>(1, l.cp));
  const double pp = double(std::max<int64_t>(1, l.pp));
  const double etp = double(std::max<int64_t>(1, l.etp));
  const double tokens = double(setup.global_batch) * double(setup.seq_len) / (dp * cp);
  const double layers = double(m.num_layers) / pp;
  const bool full = l.recompute == Recompute::kFull;
  const bool fp8 = setup.precision != Precision::kBf16;
  // Recompute as the time model charges it (block full recompute repeats only some layers;
  // selective recompute repeats the core only when core_attn is among its modules).
  const double e = cost::MegatronFullRecomputeShare(l, m) / 3.0;
  const double e_core = full ? e : cost::MegatronRecomputesCore(l) ? 1.0 / 3.0 : 0.0;
  const GpuSpec& gpu = sys.gpu;
  const MegatronTimeFit& fit = sys.megatron_fit;
  const double gemm_s_per_flop = cost::MegatronGemmFactor(fit, setup.precision) /
                                 (cost::PeakFlops(gpu, setup.precision) * cost::MatmulEfficiency(gpu, setup.precision));
  const double core_s = f.attn_core_flops / tp * (1 + e_core) /
                        (gpu.bf16_flops * cost::kFlashAttentionEfficiency *
                         cost::AttentionLengthFactor(setup.seq_len, cost::CpRingRanks(l)));
  const double mem_s_per_elem =
      gpu.hbm_bandwidth > 0 ? fit.memory_bound * 3.0 * (1 + e) * 2.0 / tp / gpu.hbm_bandwidth : 0.0;
  const double unfused_s = mem_s_per_elem * (u.fwd_elements * (1 + 3 * e) + u.bwd_elements) / (3.0 * (1 + e));
  const double dense_layer = f.DenseLayerLinear() / tp * (1 + e) * gemm_s_per_flop + core_s +
                             cost::MegatronLayerElements(m, false, fp8, false) * mem_s_per_elem + unfused_s;
  const double moe_layer = (f.attn_linear_flops + f.shared_flops + f.routed_flops) / tp * (1 + e) * gemm_s_per_flop +
                           core_s + cost::MegatronLayerElements(m, true, fp8, false) * mem_s_per_elem + unfused_s;
  // The least of the layer kinds the model has.
  auto least_kind = [&](double dense, double moe) {
    return !m.is_moe() ? dense : m.num_dense_layers > 0 ? std::min(dense, moe) : moe;
  };
  double bound = tokens * layers * least_kind(dense_layer, moe_layer);
  const cost::MeshGroups g = cost::LayoutGroups(l, setup.num_gpus);
  const double h = double(m.hidden_size);
  if (l.tp > 1) {
    const cost::Link link = cost::RingLink(sys, links, g.tp);
    // As MegatronRankTerms: 5 all-reduce volumes per layer (2.5 for a MoE layer with expert-TP
    // 1), plus the forward's again under full recompute (7 and 3.5).
    const double volumes = m.is_moe() && etp <= 1 ? (full ? 3.5 : 2.5) : (full ? 7.0 : 5.0);
    const double comm = volumes * layers * tokens * h * 2.0 * 2.0 * (tp - 1) / tp / link.busbw_bytes_per_s;
    bound += l.tp_comm_overlap ? cost::kTpOverlapExposedFraction * comm : comm;
  }
  if (l.ep > 1 && m.is_moe()) {
    const double moe_layers = std::max(0.0, layers - double(m.num_dense_layers));
    const double ep = double(l.ep);
    const cost::Link link = cost::A2aLink(sys, links, cost::Group{l.ep, static_cast<int64_t>(etp)});
    // flex (EpAllToAllSeconds): at least the NVLink part, every received copy at the link's
    // nominal rate (the backends' measured NVLink shares are below 1; the RDMA part runs
    // concurrently and only adds).
    const double bytes = (full ? 6.0 : 4.0) * moe_layers * tokens / tp * cost::DispatchCopies(l, m) * h * 2.0;
    const double comm = l.dispatcher != TokenDispatch::kFlex ? bytes * (ep - 1) / ep / link.busbw_bytes_per_s
                        : sys.scaleup_bandwidth > 0          ? bytes / sys.scaleup_bandwidth
                                                             : 0.0;
    bound += l.ep_a2a_overlap ? cost::HiddenCommCost(comm, link) : comm;
  }
  // The step is at least the host's issue time (MegatronHostBound adds what the GPU's work
  // does not cover, the bubble stretching both): the rank's micro-batches x its layers x the
  // fewer host kernels of the two layer kinds, at kHostSecondsPerKernel.
  const cost::MegatronLayerKernels k = cost::MegatronKernelsPerLayer(m, l, u);
  const double host_per_layer = least_kind(k.dense_host, k.moe_host);
  // Micro-batches per step: at least global batch / (dp · the largest micro-batch), else 1.
  const double n_mb =
      max_micro_batch > 0 ? std::max(1.0, double(setup.global_batch) / (dp * double(max_micro_batch))) : 1.0;
  const double host = cost::kHostSecondsPerKernel * n_mb * layers * host_per_layer * (1 + e);
  return std::max(bound, host);
}

}  // namespace

double CostModel::StepSecondsLowerBound(const CostView& l, int64_t max_micro_batch) const {
  // A hybrid model's blocks are cheaper than the flat layers the bounds below assume (an
  // attention or MLP block is half a dense layer): no bound, so nothing is pruned wrongly.
  if (model_.is_hybrid()) return 0.0;
  if (l.runtime == CostRuntime::kMegatronCore) {
    return MegatronBound(model_, system_, setup_, *flops_, tables_->Unfused(), links_.get(), l, max_micro_batch);
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
  double per_layer = dense_layer;
  if (m.is_moe()) per_layer = m.num_dense_layers > 0 ? std::min(dense_layer, moe_layer) : moe_layer;
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
  }
  if (l.ep > 1 && m.is_moe()) {
    const double moe_layers = std::max(0.0, layers - double(m.num_dense_layers));
    // RankTime's AutoModelEpPass over all the step's tokens at once (its latency once).
    const cost::AutoModelEp e = cost::AutoModelEpPass(system_, setup_.num_gpus, cost::A2aLink(system_, links_.get(), g.ep),
                                                      cost::RingLink(system_, links_.get(), g.ep), m, l, tokens);
    bound += ((full ? 2.0 : 1.0) * e.forward + e.backward) * moe_layers;
  }
  return bound;
}

}  // namespace meshplan
