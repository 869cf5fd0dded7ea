// Step time of one pipeline rank of a Megatron-Core (Megatron-Bridge) layout. Units: FLOP,
// bytes, seconds. Each term is first computed physically at the datasheet rates
// (MegatronRankTerms); the system's fitted constants (SystemSpec::megatron_fit) then scale
// the compute terms (MegatronTime). The fit itself is planner/accuracy/megatron_fit.cpp.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "cost/cp_comm.hpp"
#include "cost/hybrid.hpp"
#include "cost/last_values.hpp"
#include "cost/memory.hpp"
#include "cost/memory_megatron.hpp"
#include "cost/tables.hpp"
#include "cost/time.hpp"
#include "meshplan/topology.hpp"

namespace meshplan::cost {

namespace {

double Pos(double x) { return x > 0 ? x : 0.0; }

}  // namespace

double MegatronFullRecomputeShare(const CostView& l, const ModelSpec& m) {
  if (l.recompute != Recompute::kFull) return 0.0;
  if (l.recompute_block_layers <= 0) return 1.0;
  const double chunks = double(std::max<int64_t>(1, l.pp)) * double(std::max<int64_t>(1, l.vpp));
  return std::min(1.0, double(l.recompute_block_layers) * chunks / double(std::max<int64_t>(1, m.num_layers)));
}

uint32_t MegatronSelectiveModules(const CostView& l) {
  if (l.recompute != Recompute::kSelective) return 0u;
  return l.recompute_modules != 0 ? l.recompute_modules : uint32_t(kRecomputeCoreAttn);
}

bool MegatronRecomputesCore(const CostView& l) {
  return l.recompute == Recompute::kFull || (MegatronSelectiveModules(l) & kRecomputeCoreAttn) != 0;
}

double DispatchCopies(const CostView& l, const ModelSpec& m) {
  return l.dispatcher == TokenDispatch::kFlex ? RoutedDispatchCopies(m, l.ep) : double(m.experts_per_token);
}

double MegatronEpUnpairedShare(int64_t pp, int64_t vpp, int64_t micro_batches) {
  const double v = double(std::max<int64_t>(1, vpp)), p = double(std::max<int64_t>(1, pp));
  const double chunks = v * double(std::max<int64_t>(1, micro_batches));
  const double warmup = pp > 1 ? 2.0 * (p - 1.0) + (v - 1.0) * p : 1.0;
  return std::min(1.0, warmup / chunks);
}

int64_t MegatronWarmupMicrobatches(int64_t pp, int64_t vpp, int64_t micro_batches, bool ep_overlap) {
  if (pp <= 1) return 0;
  const int64_t v = std::max<int64_t>(1, vpp), m = std::max<int64_t>(1, micro_batches);
  int64_t w = pp - 1;
  if (v > 1) w = 2 * (pp - 1) + (v - 1) * pp + (ep_overlap ? 1 : 0);
  return std::min(w, v * m);
}

MegatronPpComm MegatronPipelineComm(int64_t pp, int64_t vpp, int64_t micro_batches, double per_send, const Link& link,
                                    bool overlap_p2p, bool batch_sync, bool ep_overlap, bool host_issues) {
  MegatronPpComm out;
  if (pp <= 1) return out;
  const double v = double(std::max<int64_t>(1, vpp)), m = double(std::max<int64_t>(1, micro_batches));
  out.exchanges = 2.0 * v * m;
  if (overlap_p2p) {
    out.blocking = std::min(out.exchanges, 2.0 * double(MegatronWarmupMicrobatches(pp, vpp, micro_batches, ep_overlap)));
    out.hidden = (out.exchanges - out.blocking) * per_send;
    out.hidden_cost = HiddenCommCost(out.hidden, link);
  } else {
    out.blocking = out.exchanges;
    if (batch_sync) out.sync_gap = out.exchanges * kHostSecondsPerKernel;
  }
  out.exposed = out.blocking * per_send;
  if (host_issues) out.host = kPpP2pOpsPerStageMicrobatch * v * m * kHostSecondsPerKernel;
  return out;
}

MegatronTimeFit MegatronPhysicalFit() {
  MegatronTimeFit f;
  f.gemm_bf16 = kMamfSustainedBf16;
  f.gemm_fp8 = f.gemm_fp4 = kMamfSustainedFp8;
  f.memory_bound = 1.0 / kElementwiseHbmShare;
  f.kernel_overhead = 4e-6;
  f.borrowed_from = "the physical model";
  f.physical = true;
  return f;
}

MegatronUnfusedCoreSeconds MegatronUnfusedCore(double micro_batch, double heads_per_rank, double seq_len,
                                               double head_dim, double core_recomputes, double rate,
                                               double hbm_bandwidth) {
  MegatronUnfusedCoreSeconds out;
  if (micro_batch <= 0 || heads_per_rank <= 0 || seq_len < 1 || head_dim < 1) return out;
  const double rows = micro_batch * heads_per_rank * seq_len;  // (b·n·s) rows of the batched GEMMs
  const double forward = GemmSeconds(rows, head_dim, seq_len, rate, hbm_bandwidth, false) +  // QK^T
                         GemmSeconds(rows, seq_len, head_dim, rate, hbm_bandwidth, false);   // probabilities x V
  out.gemm = (3.0 + core_recomputes) * forward;
  const double scores = rows * seq_len;
  out.scores_bytes = scores * (9.0 * (1.0 + core_recomputes) + 11.0);
  return out;
}

int64_t MegatronMaxStageLayers(int64_t num_layers, const StageSplit& split, SplitPlaces places, int64_t mtp_layers) {
  const int64_t n = split.num_stages;
  if (n <= 0) return 0;
  int64_t most = 0;
  if (split.given != nullptr) {
    for (size_t i = 0; i < split.given->stages.size(); ++i) {
      most = std::max(most, split.given->CountIn(i, 't') + split.given->CountIn(i, 'm'));
    }
    return most;
  }
  const OwnSplit own = OwnStageSplit(num_layers, places, n);
  // first, last, and the middle stages' base (+1 for the first `extra` of them)
  most = std::max(own.Layers(0), own.Layers(n - 1) + std::max<int64_t>(0, mtp_layers));
  if (n > 2) most = std::max(most, own.Layers(1));
  return most;
}

double FlexDispatchCopies(int64_t num_experts, int64_t top_k, int64_t ep) {
  if (ep <= 1 || num_experts <= 0 || top_k <= 0) return double(std::max<int64_t>(top_k, 0));
  // Kept per thread for up to 64 inputs: a search asks for the same (E, k, ep) at every
  // layout of a mesh, EpAllToAllSeconds asks in turn for the EP size and the domain count, and
  // the subtrees' step-time lower bounds for every EP size of the walk.
  thread_local HashedValues<std::array<int64_t, 3>, double, 64> memo;
  const std::array<int64_t, 3> key{num_experts, top_k, ep};
  const size_t slot = memo.SlotOf(key);
  if (const double* hit = memo.Find(key, slot)) return *hit;
  // A rank holds E/ep experts; it receives no copy of a token when none of the token's k
  // distinct experts is among them: C(E − E/ep, k) / C(E, k).
  const double e = double(num_experts), local = e / double(ep);
  double miss = 1.0;
  for (int64_t i = 0; i < top_k; ++i) miss *= std::max(0.0, (e - local - double(i)) / (e - double(i)));
  return memo.Store(key, slot, double(ep) * (1.0 - miss));
}

double GroupLimitedDispatchCopies(int64_t num_experts, int64_t top_k, int64_t groups, int64_t group_topk,
                                  int64_t units) {
  const int64_t E = num_experts, G = groups, M = std::min(group_topk, groups);
  if (units <= 1 || E <= 0 || top_k <= 0) return units <= 1 ? 1.0 : double(std::max<int64_t>(top_k, 0));
  if (G <= 1 || M >= G || E % G != 0) return FlexDispatchCopies(E, top_k, units);
  // Kept per thread for up to 64 inputs, as FlexDispatchCopies' (the sum below walks every unit).
  thread_local HashedValues<std::array<int64_t, 5>, double, 64> memo;
  const std::array<int64_t, 5> key{E, top_k, G, M, units};
  const size_t slot = memo.SlotOf(key);
  if (const double* hit = memo.Find(key, slot)) return *hit;
  const int64_t g = E / G;                          // experts per group
  const double q = double(top_k) / double(M);       // experts a chosen group supplies
  // P(a chosen group supplies none of the `o` of its experts a unit holds): q of its g experts
  // drawn without replacement (real q: the binomial form).
  auto group_miss = [&](int64_t o) {
    if (o <= 0) return 1.0;
    if (o >= g) return 0.0;
    if (top_k % M == 0) {
      double p = 1.0;
      for (int64_t i = 0; i < top_k / M; ++i) p *= std::max(0.0, double(g - o - i) / double(g - i));
      return p;
    }
    return std::pow(1.0 - double(o) / double(g), q);
  };
  // C(n, r) as a double (0 outside 0 <= r <= n).
  auto choose = [](int64_t n, int64_t r) {
    if (r < 0 || r > n) return 0.0;
    double c = 1.0;
    for (int64_t i = 0; i < r; ++i) c = c * double(n - i) / double(i + 1);
    return c;
  };
  const double all = choose(G, M);
  double copies = 0.0;
  std::vector<double> miss, e;  // per touched group; elementary symmetric sums e_j of `miss`
  for (int64_t u = 0; u < units; ++u) {
    const int64_t lo = u * E / units, hi = (u + 1) * E / units;  // the unit's experts [lo, hi)
    miss.clear();
    for (int64_t grp = lo / g; grp * g < hi; ++grp) {
      miss.push_back(group_miss(std::min(hi, (grp + 1) * g) - std::max(lo, grp * g)));
    }
    const int64_t t = int64_t(miss.size());
    e.assign(size_t(t + 1), 0.0);
    e[0] = 1.0;
    for (int64_t i = 0; i < t; ++i) {
      for (int64_t j = std::min(i + 1, M); j >= 1; --j) e[size_t(j)] += e[size_t(j - 1)] * miss[size_t(i)];
    }
    // j of the t touched groups chosen (the other M − j among the G − t untouched), each of
    // the j supplying nothing to the unit: sum over j of e_j · C(G − t, M − j) / C(G, M).
    double p_none = 0.0;
    for (int64_t j = 0; j <= std::min(t, M); ++j) p_none += e[size_t(j)] * choose(G - t, M - j);
    copies += 1.0 - p_none / all;
  }
  return memo.Store(key, slot, copies);
}

double RoutedDispatchCopies(const ModelSpec& m, int64_t units) {
  if (!m.group_limited_routing()) return FlexDispatchCopies(m.num_experts, m.experts_per_token, units);
  return GroupLimitedDispatchCopies(m.num_experts, m.experts_per_token, m.router_num_groups, m.router_group_topk,
                                    units);
}

namespace {

// Piecewise-constant lookup of a measured figure by EP size: the value of the largest
// measured size at most `ep` (the first below it). sizes ascending.
template <size_t N>
double ByEpSize(int64_t ep, const int64_t (&sizes)[N], const double (&values)[N]) {
  double v = values[0];
  for (size_t i = 0; i < N; ++i) {
    if (ep >= sizes[i]) v = values[i];
  }
  return v;
}

}  // namespace

double DeepEpRdmaShare(int64_t ep, bool combine) {
  // EP 16, 32, 64 measured; nearer size between (24 -> 16's, 48 -> 32's: the largest at most ep).
  static constexpr int64_t kSizes[] = {16, 32, 64};
  static constexpr double kDispatch[] = {43.0 / 50.0, 58.0 / 50.0, 51.0 / 50.0};
  static constexpr double kCombine[] = {43.0 / 50.0, 57.0 / 50.0, 50.0 / 50.0};
  return ByEpSize(ep, kSizes, combine ? kCombine : kDispatch);
}

double HybridEpRdmaShare(int64_t ep, bool combine) {
  static constexpr int64_t kSizes[] = {16, 32, 64};
  static constexpr double kDispatch[] = {54.47 / 50.0, 47.36 / 50.0, 41.24 / 50.0};
  static constexpr double kCombine[] = {53.35 / 50.0, 52.53 / 50.0, 46.57 / 50.0};
  return ByEpSize(ep, kSizes, combine ? kCombine : kDispatch);
}

double HybridEpNvlinkShare(int64_t ep, bool combine) {
  static constexpr int64_t kSizes[] = {8, 16, 24, 32, 36};
  static constexpr double kDispatch[] = {535.94 / 900.0, 472.84 / 900.0, 441.89 / 900.0, 485.50 / 900.0, 469.96 / 900.0};
  static constexpr double kCombine[] = {530.86 / 900.0, 474.48 / 900.0, 444.40 / 900.0, 423.19 / 900.0, 418.27 / 900.0};
  return ByEpSize(ep, kSizes, combine ? kCombine : kDispatch);
}

double MegatronCoreRate(const GpuSpec& gpu, const ModelSpec& m, int64_t seq_len, const CostView& l) {
  return gpu.bf16_flops * kFlashAttentionEfficiency * AttentionHeadDimFactor(QkHeadDim(m)) *
         AttentionLengthFactor(seq_len, CpRingRanks(l));
}

MegatronDpGroups MegatronDpGroupsOf(const CostView& l, int64_t num_gpus) {
  const int64_t world = std::max<int64_t>(1, num_gpus);
  const int64_t non_pp = world / std::max<int64_t>(1, l.pp);
  const double dp_cp = double(std::max<int64_t>(1, l.dp)) * double(std::max<int64_t>(1, l.cp));
  const double ep = double(std::max<int64_t>(1, l.ep)), etp = double(std::max<int64_t>(1, l.etp));
  MegatronDpGroups g;
  g.dense = Group{static_cast<int64_t>(dp_cp), std::max<int64_t>(1, l.tp)};
  const int64_t edp_n = std::max<int64_t>(1, non_pp / std::max<int64_t>(1, int64_t(ep * etp)));
  g.expert = Group{edp_n, static_cast<int64_t>(ep * etp)};
  return g;
}

EpA2aSeconds EpAllToAllSeconds(const Ctx& c, double tokens) {
  return EpAllToAllSeconds(c.view, c.model, c.system, c.setup.num_gpus, c.links, tokens);
}

EpA2aSeconds EpAllToAllSeconds(const CostView& l, const ModelSpec& m, const SystemSpec& sys, int64_t num_gpus,
                               const LinkTable* links, double tokens) {
  EpA2aSeconds out;
  if (l.ep <= 1 || !m.is_moe() || tokens <= 0) return out;
  const int64_t ep = l.ep, etp = std::max<int64_t>(1, l.etp);
  // BF16 payload, ExpertInputSize wide: LatentMoE dispatches and combines the tokens after
  // fc1_latent_proj, l wide (Megatron-Core moe_layer.py MoELayer.dispatch_preprocess).
  const double h = double(m.ExpertInputSize()), bytes = 2.0;
  // The EP group {ep, stride etp} covers ep·etp consecutive ranks; it spans that many
  // scale-up domains (at least one).
  const int64_t domain = PlacedDomainGpus(sys, num_gpus);
  const int64_t span = ep * etp;
  const int64_t domains = span <= domain ? 1 : (span + domain - 1) / domain;
  const double per_domain = double(ep) / double(domains);  // group ranks in a rank's domain
  out.domains = domains;
  const double nvl = sys.scaleup_bandwidth, nic = sys.NicBandwidthPerGpu();
  if (l.dispatcher != TokenDispatch::kFlex) {
    const double s = tokens * double(m.experts_per_token) * h * bytes;
    const Group g{ep, etp};
    const Link link = A2aLink(sys, links, g);
    const double one = AllToAllSeconds(s, ep, link);
    out.dispatch = out.combine = one;
    out.latency = link.latency_s * double(ep - 1);  // AllToAllSeconds' α·(n − 1)
    const double nvl_eff = nvl * (sys.scaleup_busbw_efficiency > 0 ? sys.scaleup_busbw_efficiency : 1.0);
    const double nic_eff = nic * (sys.scaleout_busbw_efficiency > 0 ? sys.scaleout_busbw_efficiency : 1.0);
    if (nvl_eff > 0) out.nvlink = 2.0 * s * (per_domain - 1.0) / double(ep) / nvl_eff;
    if (nic_eff > 0) out.rdma = 2.0 * s * (double(ep) - per_domain) / double(ep) / nic_eff;
    return out;
  }
  const bool hybrid = l.flex_backend == FlexBackend::kHybridEP;
  const double rank_copies = RoutedDispatchCopies(m, ep);
  const double nvl_bytes = tokens * rank_copies * h * bytes;
  auto nvl_seconds = [&](bool combine) {
    const double share = hybrid ? HybridEpNvlinkShare(ep, combine)
                                : (combine ? kDeepEpNvlinkCombineShare : kDeepEpNvlinkDispatchShare);
    return nvl > 0 ? nvl_bytes / (nvl * share) : 0.0;
  };
  if (domains == 1) {
    out.dispatch = sys.scaleup_latency + nvl_seconds(false);
    out.combine = sys.scaleup_latency + nvl_seconds(true);
    out.nvlink = out.dispatch + out.combine - 2.0 * sys.scaleup_latency;
    out.latency = sys.scaleup_latency;
    return out;
  }
  out.node_copies = RoutedDispatchCopies(m, domains);
  const double rdma_bytes = tokens * out.node_copies * h * bytes;
  auto rdma_seconds = [&](bool combine) {
    const double share = hybrid ? HybridEpRdmaShare(ep, combine) : DeepEpRdmaShare(ep, combine);
    return nic > 0 ? rdma_bytes / (nic * share) : 0.0;
  };
  const double rd = rdma_seconds(false), rc = rdma_seconds(true), nd = nvl_seconds(false), nc = nvl_seconds(true);
  out.dispatch = sys.scaleout_latency + std::max(rd, nd);
  out.combine = sys.scaleout_latency + std::max(rc, nc);
  out.nvlink = nd + nc;
  out.rdma = rd + rc;
  out.latency = sys.scaleout_latency;
  return out;
}

// Elements moved to or from HBM per token by the non-GEMM kernels of one decoder layer's
// forward pass, before the division by TP (sequence parallel shards the hidden-size ops,
// TP the head and FFN widths). Counted op by op for Transformer Engine's fused kernels:
//   2 RMSNorms (read h, write h)                         4h
//   2 residual adds (read 2h, write h)                   6h
//   RoPE on q and k (read, write)                        2(q + k)
//   SwiGLU (read 2f, write f) of the dense MLP           3f
//   MoE: router softmax/top-k over E experts             4E
//        token permute and unpermute (read, write k·h)   4kh
//        SwiGLU of the k routed and the shared experts   3(k·f_e + f_s)
//        with the alltoall dispatcher and more than one local expert, "permutation 2" after
//        the all-to-all and its inverse before the combine (Megatron-Core d98e8a6
//        transformer/moe/token_dispatcher.py MoEAlltoAllTokenDispatcher.dispatch_postprocess
//        and combine_preprocess: sort_chunks_by_idxs, or the drop-and-pad transpose
//        .contiguous(), each reads and writes the rank's k·h token copies)       4kh
//   FP8 casts of the GEMM inputs not fused into a norm   1.5(o + f) (read 2 bytes, write 1)
//        Not priced: the cast of the routed experts' fc1 input (the permuted k·h copies, which
//        Transformer Engine's GroupedLinear quantizes), 1.5kh under FP8: with it the fitted
//        transfer errors of validate --transfer got worse in 5 of 7 columns (docs/accuracy.md).
// The backward pass moves about twice the forward's bytes (gradients of each input), so a
// layer's forward + backward is 3x these; bytes = elements x 2 (BF16 activations).
double MegatronLayerElements(const ModelSpec& m, bool moe, bool fp8, bool sorts_local_experts) {
  const double h = double(m.hidden_size);
  const double q = double(QDim(m)), k = double(KDim(m)), o = double(AttnOutDim(m));
  double e = 10.0 * h + 2.0 * (q + k);
  double ffn = 0.0;
  if (moe) {
    e += 4.0 * double(m.num_experts) + MegatronMoeBlockElements(m, fp8, sorts_local_experts);
  } else {
    ffn = double(m.intermediate_size);
    e += 3.0 * ffn;
  }
  if (fp8) e += 1.5 * (o + ffn);
  return e;
}

double MegatronMoeBlockElements(const ModelSpec& m, bool fp8, bool sorts_local_experts) {
  if (!m.is_moe()) return 0.0;
  const double topk = double(m.experts_per_token), h = double(m.hidden_size);
  const double ffn = topk * double(m.moe_intermediate_size) + double(m.shared_expert_intermediate_size);
  return 4.0 * topk * h + (sorts_local_experts ? 4.0 * topk * h : 0.0) + 3.0 * ffn + (fp8 ? 1.5 * ffn : 0.0);
}

bool MegatronSortsLocalExperts(const ModelSpec& m, TokenDispatch dispatcher, int64_t ep) {
  return m.is_moe() && dispatcher == TokenDispatch::kAlltoall && m.num_experts / std::max<int64_t>(1, ep) > 1;
}

bool MegatronRopeFused(const ModelSpec& m) { return m.mla || m.rope_scaling_type != "yarn"; }

bool MegatronBiasDropoutFused(const ModelSpec& m) { return m.architecture != Architecture::kGptOss; }

// Unfused RoPE (Megatron-Core models/common/embeddings/rope_utils.py,
// _apply_rotary_pos_emb_bshd, called once for q and once for k), per element of the rotated
// tensor, reads + writes:
//   forward:  t·cos 2, -x2 of rotate_half 1, cat(-x2, x1) 2, ·sin 2, add 3, cat(t, t_pass) 2
//             = 12 in 6 kernels, plus 6 small kernels making cos/sin (cos, sin, ·mscale, cast)
//   backward: grad·sin 2, neg 1, cat of the chunk halves 2, grad·cos 2, sum of the two paths 3,
//             the slice t[..., :rot_dim] (zeros + copy) 3 = 13 in 7 kernels
// against 2 and 2 elements in one kernel each for TE's fused RoPE. The eager passes are
// weighted by kEagerOpSlowdown (measured), the fused ones not.
// Unfused bias-dropout-add (megatron/core/fusions/fused_bias_dropout.py,
// _bias_dropout_add_func) after the biased attention projection: x + bias 2h more than the
// fused kernel's one pass (dropout with p = 0 returns its input, measured), one more
// kernel, weighted by kEagerOpSlowdown; the backward is the same (measured). MoE layers return no MLP bias, so only the attention BDA changes.
MegatronUnfused MegatronUnfusedOps(const ModelSpec& m) {
  MegatronUnfused u;
  if (!MegatronRopeFused(m)) {
    const double rotated = double(QDim(m) + KDim(m));
    // The fused kernel's passes run at the typical rate; the eager ones are slower.
    u.fwd_elements += (12.0 * kEagerOpSlowdown - 2.0) * rotated;
    u.bwd_elements += (13.0 * kEagerOpSlowdown - 2.0) * rotated;
    u.kernels += 2.0 * ((6.0 + 6.0 - 1.0) + (7.0 - 1.0));
  }
  if (!MegatronBiasDropoutFused(m) && m.attention_out_bias) {
    u.fwd_elements += 2.0 * kEagerOpSlowdown * double(m.hidden_size);
    u.kernels += 1.0;
  }
  return u;
}

MegatronLayerKernels MegatronKernelsPerLayer(const ModelSpec& m, const CostView& l, const MegatronUnfused& unfused) {
  const double ep = double(std::max<int64_t>(1, l.ep));
  const double expert_kernels = double(m.num_experts) / ep * kGroupedGemmKernelsPerExpert;
  const double attn_kernels = kAttnBlockKernels + unfused.kernels;
  double dense_graphed = 0.0, moe_graphed = 0.0;
  const uint32_t scope = l.cuda_graph_scope;
  if (l.cuda_graph == CudaGraphCapture::kFullIteration ||
      (l.cuda_graph == CudaGraphCapture::kPerLayer && scope == 0)) {
    dense_graphed = kDenseLayerKernels + unfused.kernels;
    moe_graphed = kMoeLayerKernels + unfused.kernels + expert_kernels;
  } else if (l.cuda_graph == CudaGraphCapture::kPerLayer) {
    const double attn = (scope & kGraphAttn) ? attn_kernels : 0.0;
    dense_graphed = attn + ((scope & kGraphMlp) ? kMlpBlockKernels : 0.0);
    // "moe" captures the whole MoE block (router, dispatch, experts, combine); otherwise
    // its router and preprocessing parts.
    moe_graphed = attn + ((scope & kGraphMoe) ? kMoeLayerKernels - kAttnBlockKernels + expert_kernels
                                              : ((scope & kGraphMoeRouter) ? kMoeRouterKernels : 0.0) +
                                                    ((scope & kGraphMoePreprocess) ? kMoePreprocessKernels : 0.0));
  }
  // The part before the dispatcher's host sync (attention block, router, preprocessing) and
  // what of it the graphs capture.
  const double pre = attn_kernels + kMoeRouterKernels + kMoePreprocessKernels;
  double pre_graphed = 0.0;
  if (l.cuda_graph == CudaGraphCapture::kFullIteration ||
      (l.cuda_graph == CudaGraphCapture::kPerLayer && scope == 0)) {
    pre_graphed = pre;
  } else if (l.cuda_graph == CudaGraphCapture::kPerLayer) {
    pre_graphed = ((scope & kGraphAttn) ? attn_kernels : 0.0) + ((scope & kGraphMoeRouter) ? kMoeRouterKernels : 0.0) +
                  ((scope & kGraphMoePreprocess) ? kMoePreprocessKernels : 0.0);
  }
  MegatronLayerKernels k;
  k.moe_pre = pre - (1.0 - kGraphedKernelShare) * pre_graphed;
  k.moe_pre_host = pre - pre_graphed;
  k.dense = kDenseLayerKernels + unfused.kernels - (1.0 - kGraphedKernelShare) * dense_graphed;
  k.moe = kMoeLayerKernels + unfused.kernels + expert_kernels - (1.0 - kGraphedKernelShare) * moe_graphed;
  // The host launches the kernels a graph does not replay (a replay is one launch).
  k.dense_host = kDenseLayerKernels + unfused.kernels - dense_graphed;
  k.moe_host = kMoeLayerKernels + unfused.kernels + expert_kernels - moe_graphed;
  return k;
}

namespace {

// The part of MegatronLayoutShared that does not depend on the micro-batch: the mesh, the
// features and the step's tokens per rank (c.tokens_per_mb · c.mb_per_step), not
// c.tokens_per_mb or c.mb_per_step apart. Every field it sets is set as MegatronLayoutShared
// sets it; MegatronLayoutShared's micro-batch part (SharedMicroBatchPart) sets the rest.
MegatronShared SharedFeaturePart(const Ctx& c) {
  const ModelSpec& m = c.model;
  const CostView& l = c.view;
  const SystemSpec& sys = c.system;
  const GpuSpec& gpu = sys.gpu;
  MegatronShared s;
  s.tp = double(std::max<int64_t>(1, l.tp));
  s.ep = double(std::max<int64_t>(1, l.ep));
  s.etp = double(std::max<int64_t>(1, l.etp));
  const double h = double(m.hidden_size);
  s.tokens = c.tokens_per_mb * double(c.mb_per_step);
  s.full = l.recompute == Recompute::kFull;
  s.extra = MegatronFullRecomputeShare(l, m) / 3.0;
  const uint32_t rm = MegatronSelectiveModules(l);
  s.core_extra = s.full ? s.extra : MegatronRecomputesCore(l) ? 1.0 / 3.0 : 0.0;
  {
    const FlopsPerToken& f = c.flops;
    double up = 0.0;  // MLA up-projection forward FLOP per token
    if (m.mla) {
      const MlaSpec& x = m.mla_spec;
      const double a = double(m.num_attention_heads);
      up = 2.0 * (double(x.q_lora_rank) * a * double(x.qk_nope_head_dim + x.qk_rope_head_dim) +
                  double(x.kv_lora_rank) * a * double(x.qk_nope_head_dim + x.v_head_dim));
    }
    const double norms = (rm & kRecomputeLayernorm) ? 4.0 * h : 0.0;
    const double mla = (rm & kRecomputeMlaUpProj) ? up : 0.0;
    s.recompute_dense_flops = mla + ((rm & kRecomputeMlp) ? f.dense_mlp_flops / 3.0 : 0.0);
    s.recompute_moe_flops = mla + ((rm & (kRecomputeSharedExperts | kRecomputeMoe)) ? f.shared_flops / 3.0 : 0.0);
    s.recompute_routed_flops = (rm & kRecomputeMoe) ? f.routed_flops / 3.0 : 0.0;
    s.moe_recompute = (rm & kRecomputeMoe) != 0;
    s.recompute_dense_elems = norms;
    s.recompute_moe_elems =
        norms + ((rm & (kRecomputeMoeAct | kRecomputeMoe)) ? 3.0 * double(m.experts_per_token) * double(m.moe_intermediate_size) : 0.0);
  }
  const bool fp8 = c.setup.precision != Precision::kBf16;
  s.core_rate = MegatronCoreRate(gpu, m, c.setup.seq_len, l);
  const double per_elem = gpu.hbm_bandwidth > 0 ? 3.0 * (1.0 + s.extra) * 2.0 * s.tokens / s.tp / gpu.hbm_bandwidth : 0.0;
  const MegatronUnfused unfused = c.tables ? c.tables->Unfused() : MegatronUnfusedOps(m);
  // Unfused paths: their forward runs again under full recompute (3·extra = the share).
  const double unfused_s = gpu.hbm_bandwidth > 0 ? (unfused.fwd_elements * (1.0 + 3.0 * s.extra) + unfused.bwd_elements) *
                                                       2.0 * s.tokens / s.tp / gpu.hbm_bandwidth
                                                 : 0.0;
  const bool sorts = MegatronSortsLocalExperts(m, l.dispatcher, l.ep);
  s.dense_mem_s = MegatronLayerElements(m, false, fp8, false) * per_elem + unfused_s;
  s.moe_mem_s = m.is_moe() ? MegatronLayerElements(m, true, fp8, sorts) * per_elem + unfused_s : 0.0;
  if (m.is_moe() && s.moe_mem_s > 0) {
    s.moe_block_share = MegatronMoeBlockElements(m, fp8, sorts) * per_elem / s.moe_mem_s;
  }
  s.layer_kernels = MegatronKernelsPerLayer(m, l, unfused);
  s.head_mem_s = gpu.hbm_bandwidth > 0
                     ? kCrossEntropyBytesPerLogit * double(m.vocab_size) * s.tokens / s.tp / gpu.hbm_bandwidth
                     : 0.0;
  if (m.is_hybrid()) {
    // Per block kind (HybridBlockElements, HybridKernelsPerBlock); the unfused ops belong to
    // the attention block.
    s.attn_mem_s = HybridBlockElements(m, MixerKind::kAttention, MlpKind::kNone, fp8, false) * per_elem + unfused_s;
    s.mamba_mem_s = HybridBlockElements(m, MixerKind::kMamba2, MlpKind::kNone, fp8, false) * per_elem;
    s.dense_mem_s = HybridBlockElements(m, MixerKind::kNone, MlpKind::kDense, fp8, false) * per_elem;
    s.moe_mem_s = m.is_moe() ? HybridBlockElements(m, MixerKind::kNone, MlpKind::kMoe, fp8, sorts) * per_elem : 0.0;
    s.moe_block_share = m.is_moe() ? 1.0 : 0.0;
    const HybridKernels hk = HybridKernelsPerBlock(m, l, unfused);
    s.layer_kernels = hk.mlp;
    s.attn_kernels = hk.attn;
    s.attn_host = hk.attn_host;
    s.mamba_kernels = hk.mamba;
    s.mamba_host = hk.mamba_host;
    s.gdn_mem_s = HybridBlockElements(m, MixerKind::kGatedDeltaNet, MlpKind::kNone, fp8, false) * per_elem;
    s.gdn_kernels = hk.gdn;
    s.gdn_host = hk.gdn_host;
    // The SSD scan's matmuls run in BF16 Triton kernels on the tensor cores at the efficiency
    // of the fused attention (Dao & Gu 2024 §9.3, Figure 10: the SSD kernels run about as
    // fast as FlashAttention-2 at 2K tokens and faster beyond). An assumption, not fitted;
    // the chunked gated delta rule's Triton kernels (fla) are priced at the same rate.
    s.ssd_rate = gpu.bf16_flops * kFlashAttentionEfficiency;
  }
  if (l.tp > 1) s.tp_moe_volumes = s.etp > 1 ? 5.0 : 2.5;
  if (l.ep > 1 && m.is_moe()) {
    s.a2a_copies = DispatchCopies(l, m);
    const Group gep{l.ep, static_cast<int64_t>(s.etp)};
    s.ep_hidden_cost = HiddenCommCost(1.0, A2aLink(sys, c.links, gep));
  }
  s.v = double(std::max<int64_t>(1, c.split.stages_per_rank));
  if (l.pp > 1) s.max_stage_layers = double(MegatronMaxStageLayers(m.num_layers, c.split, l.places, l.mtp_layers));
  const MegatronDpGroups dpg = MegatronDpGroupsOf(l, c.setup.num_gpus);
  s.gd = dpg.dense;
  s.ge = dpg.expert;
  s.ld = RingLink(sys, c.links, s.gd);
  s.le = RingLink(sys, c.links, s.ge);
  return s;
}

// SharedFeaturePart(c), kept per thread for the last inputs when c has CostTables and the
// layout has no recipe pipeline layout (c.split.given): a subtree's micro-batches and a mesh's
// feature sets repeat it. The key holds every input it reads beside the CostModel's model,
// system and flops (fixed by CostTables::Id, which WithSetup copies) and its link table
// (fixed by the tables and num_gpus): the setup's seq_len, precision and num_gpus, the step's
// tokens per rank, the layout fields and the split it reads.
MegatronShared SharedFeaturePartCached(const Ctx& c) {
  const CostView& l = c.view;
  if (c.tables == nullptr || c.split.given != nullptr) return SharedFeaturePart(c);
  int64_t tokens_bits;
  const double tokens = c.tokens_per_mb * double(c.mb_per_step);
  std::memcpy(&tokens_bits, &tokens, sizeof tokens_bits);
  const std::array<int64_t, 28> key{int64_t(c.tables->Id()),
                                    c.setup.seq_len,
                                    int64_t(c.setup.precision),
                                    c.setup.num_gpus,
                                    tokens_bits,
                                    l.tp,
                                    l.pp,
                                    l.cp,
                                    l.ep,
                                    l.etp,
                                    l.dp,
                                    l.vpp,
                                    int64_t(l.recompute),
                                    int64_t(l.recompute_modules),
                                    l.recompute_block_layers,
                                    int64_t(l.cp_comm),
                                    l.cp_a2a,
                                    int64_t(l.cuda_graph),
                                    int64_t(l.cuda_graph_scope),
                                    int64_t(l.dispatcher),
                                    int64_t(l.flex_backend),
                                    l.mtp_layers,
                                    l.places.first,
                                    l.places.last,
                                    c.split.stages_per_rank,
                                    c.split.num_stages,
                                    int64_t(l.unfused_attention),
                                    c.model.num_layers};
  thread_local HashedValues<std::array<int64_t, 28>, MegatronShared, 64> memo;
  const size_t slot = memo.SlotOf(key);
  if (const MegatronShared* hit = memo.Find(key, slot)) return *hit;
  return memo.Store(key, slot, SharedFeaturePart(c));
}

// EpAllToAllSeconds(c, tokens), kept per thread for the last inputs when c has CostTables: a
// mesh's feature sets repeat its micro-batches' token counts. The key holds every input it
// reads beside the CostModel's model and system (fixed by CostTables::Id) and its link table
// (fixed by the tables and num_gpus): num_gpus, the EP group, the dispatcher and the tokens.

}  // namespace

EpA2aSeconds EpAllToAllCached(uint64_t tables_id, const CostView& l, const ModelSpec& m, const SystemSpec& sys,
                              int64_t num_gpus, const LinkTable* links, double tokens) {
  int64_t tokens_bits;
  std::memcpy(&tokens_bits, &tokens, sizeof tokens_bits);
  const std::array<int64_t, 7> key{int64_t(tables_id), num_gpus, l.ep, l.etp, int64_t(l.dispatcher),
                                   int64_t(l.flex_backend), tokens_bits};
  thread_local LastValues<std::array<int64_t, 7>, EpA2aSeconds, 8> last;
  if (const EpA2aSeconds* hit = last.Find(key)) return *hit;
  return last.Store(key, EpAllToAllSeconds(l, m, sys, num_gpus, links, tokens));
}

EpA2aSeconds EpAllToAllCached(const Ctx& c, double tokens) {
  if (c.tables == nullptr) return EpAllToAllSeconds(c, tokens);
  return EpAllToAllCached(c.tables->Id(), c.view, c.model, c.system, c.setup.num_gpus, c.links, tokens);
}

/// Physical terms (see time.hpp). Per pipeline rank, per optimizer step:
///   T = micro_batch·seq/cp tokens per micro-batch, M micro-batches per step, v virtual stages.
///   gemm = FLOP / (peak(precision) · MAMF(precision) · size factor):
///     linear layers (attention projections, dense MLP, shared experts) and lm_head / tp at
///     LinearGemmFactor (the layer's GEMM shapes, measured on H200);
///     routed experts / tp (sequence parallel gives each TP rank T/tp tokens to route, or
///     expert-TP splits the expert width) at ExpertGemmFactor of the tokens per local expert
///     T·k·ep·etp/(tp·E) and the expert width / etp (grouped GEMM, measured on H200).
///   attention = causal core FLOP / tp at kFlashAttentionEfficiency (x AttentionHeadDimFactor x
///     AttentionLengthFactor(seq_len, cp): shorter sequences and CP ring chunks run slower) of the BF16 peak
///     (Transformer Engine runs the core in BF16 under FP8 recipes).
///   memory_bound = 3 · MegatronLayerElements · 2 bytes · T·M / tp / HBM bandwidth, plus the fused
///     cross-entropy on the lm_head rank (kCrossEntropyBytesPerLogit per logit / tp), plus
///     the unfused RoPE and bias-dropout-add of models Megatron-Bridge runs unfused
///     (MegatronUnfusedOps; their kernels count in the attention block).
///   kernels = M · (dense layers · kDenseLayerKernels
///                  + MoE layers · (kMoeLayerKernels + E/ep · kGroupedGemmKernelsPerExpert)),
///     the ones a CUDA graph replays (cuda_graph_impl full_iteration: all; transformer_engine:
///     the parts in cuda_graph_scope, kAttnBlockKernels ... kMoePreprocessKernels, or the
///     whole layer when the scope is empty) weighted by kGraphedKernelShare.
///   MTP layers (RankParams::mtp_layers, on the rank of the last stage): each is one more
///     decoder layer of the model's last type in every term above and below, plus its eh_proj
///     and norms (FlopsPerToken::mtp_extra_flops) and its logits (6·h·V) as GEMMs and one more
///     fused cross-entropy, all / tp.
///   Recompute: full adds one forward (1/3 of gemm, attention, memory_bound, kernels; with
///   recompute_method block only recompute_num_layers per (virtual) stage);
///   selective adds one forward of each module in recompute_modules (Megatron-Core's default
///   core_attn: 1/3 of attention; mlp: the dense MLP GEMMs; shared_experts; mla_up_proj: the
///   q and kv up-projections, 2·(r_q·a·(d_nope + d_rope) + r_kv·a·(d_nope + d_v)) FLOP per
///   token; layernorm: 4h elements; moe_act: 3·k·f_e elements).
/// Communication, exposed part (groups in Megatron's order tp-cp-ep-dp-pp, megatron.md 2.1):
///   TP with sequence parallel: per layer per micro-batch all-gather + reduce-scatter of T·h·2
///     bytes before and after attention and the MLP, forward and backward, and in backward
///     the all-gathers of the QKV and FC1 inputs again for their weight gradients (the layer
///     keeps only its sequence shard: Megatron-Core tensor_parallel/layers.py,
///     LinearWithGradAccumulationAndAsyncCommunication.backward; Transformer Engine's
///     LayerNormLinear does the same): 5 all-reduce volumes per dense layer, 2.5 per MoE
///     layer with expert-TP 1 (whose MLP is reached by the all-to-all instead), 7 and 3.5
///     under full recompute (without sequence parallel, which the search drops only where it
///     cannot split the sequence: 4 and 6 per dense layer, all-reduces with no re-gather); all at 2 bytes per element (under FP8 recipes Transformer Engine
///     gathers the quantized inputs, 1 byte: not modelled, an over-count of those gathers); with tp_comm_overlap (TE userbuffers) the part that the layer's
///     GEMMs cannot hide plus kTpOverlapExposedFraction of the rest.
///   CP: per attention layer per micro-batch the exchange of model.cp_comm_type
///     (CpLayerExposedSeconds: the p2p ring hidden behind the attention core, the exposed K/V
///     all-gather, the exposed Ulysses all-to-all of Q, K, V and the output, or the all-to-all
///     inside the a2a level with the ring between the levels); the core's length factor is
///     that of the chunks it attends (CpRingRanks).
///   EP: dispatch + combine forward and backward per MoE layer per micro-batch, (T/tp)·c·h·2
///     bytes each, over the EP group {ep, stride etp}; c = k token copies with the alltoall
///     dispatcher (one per routed expert), or the expected number of distinct destination
///     ranks with the flex dispatcher (DeepEP / HybridEP send a token once per rank:
///     FlexDispatchCopies); exposed unless overlap_moe_expert_parallel_comm, and with it the
///     unpaired warm-up / cool-down share (MegatronEpUnpairedShare) plus what the compute of
///     the paired chunks cannot hide.
///   PP: (T/tp)·h·2 bytes per micro-batch per virtual stage forward and backward;
///     kPpP2pExposedFraction exposed with overlap_p2p_comm (interleaved), all without.
///   DP, distributed optimizer: reduce-scatter of the main gradients (FP32, or BF16 with
///     grad_reduce_in_fp32 false: MainGradBytes) and all-gather of BF16
///     parameters over dp·cp (stride tp) for dense parameters and over the expert-DP group
///     for experts; with overlap_grad_reduce / overlap_param_gather the reduce-scatter hides
///     behind the last micro-batch's backward and the all-gather behind the first forward,
///     except one bucket each. Without the distributed optimizer: one all-reduce, same
///     overlap. Megatron FSDP no_shard / optim: as DDP without / with the distributed optimizer,
///     overlapped; optim_grads: a reduce-scatter per micro-batch and one all-gather per step,
///     kFsdpOverlapFraction of the compute hides them. Megatron FSDP optim_grads_params / torch
///     FSDP2: per micro-batch gathers and reduce-scatters,
///     kFsdpOverlapFraction of the compute hides them; torch FSDP2 also copies every gathered
///     parameter out of, and every gradient into, its flat collective buffers (HBM-bound).
///   Every hidden DP / FSDP / EP second adds HiddenCommCost (the compute it hides behind runs
///     slower, measured); TP overlap keeps kTpOverlapExposedFraction instead.
///   bubble_fraction = (pp−1)/(v·M) (interleaved 1F1B, Narayanan et al. 2021 eq. 3), of the
///     stage work: compute plus the exposed TP, CP and EP communication inside the layers.
///   host = kHostSecondsPerKernel · M · (dense layers · dense host kernels + MoE layers · MoE
///     host kernels) · (1 + recompute share): the layer kernels a CUDA graph does not replay
///     (kDenseLayerKernels / kMoeLayerKernels + E/ep · kGroupedGemmKernelsPerExpert, less the
///     graphed ones), each issued by the host (MegatronHostBound).
///   optimizer: as in RankTime.
MegatronShared MegatronLayoutShared(const Ctx& c) {
  const ModelSpec& m = c.model;
  const CostView& l = c.view;
  const SystemSpec& sys = c.system;
  const GpuSpec& gpu = sys.gpu;
  MegatronShared s = SharedFeaturePartCached(c);
  const double h = double(m.hidden_size);
  const double t_mb = c.tokens_per_mb;
  s.n_mb = double(c.mb_per_step);
  const bool fp8 = c.setup.precision != Precision::kBf16;
  const double rate = PeakFlops(gpu, c.setup.precision) * MatmulEfficiency(gpu, c.setup.precision);
  const double expert_tokens =
      m.num_experts > 0 ? t_mb * double(m.experts_per_token) * s.ep * s.etp / (s.tp * double(m.num_experts)) : t_mb;
  s.linear_rate = rate * LinearGemmFactor(m, t_mb, s.tp, rate, gpu.hbm_bandwidth, fp8);
  s.expert_rate = rate * ExpertGemmFactor(m, expert_tokens, s.etp, rate, gpu.hbm_bandwidth, fp8);
  if (l.unfused_attention) {
    // The core's forward runs again under full recompute (3·extra of a forward) or selective
    // core_attn recompute (core_extra 1/3 = one forward).
    const double seq = double(c.setup.seq_len) / double(std::max<int64_t>(1, l.cp));
    s.unfused_core = MegatronUnfusedCore(double(std::max<int64_t>(1, l.micro_batch)),
                                         double(m.num_attention_heads) / s.tp, seq, double(QkHeadDim(m)),
                                         3.0 * s.core_extra, gpu.bf16_flops * MatmulEfficiency(gpu, Precision::kBf16),
                                         gpu.hbm_bandwidth);
  }
  const MeshGroups& g = c.groups;
  if (m.is_hybrid() && l.cp > 1) {
    // Megatron-Core MambaContextParallel (ssm/mamba_context_parallel.py): pre_conv_ssm turns
    // z, x, B, C and dt from sequence- to head-parallel (all_to_all_cp2hp), post_conv_ssm
    // turns y back (all_to_all_hp2cp): (2·d_in + 2·ng·N + nh + d_in)/t elements per token
    // in BF16, forward and backward (the forward again under full recompute), not overlapped.
    const Mamba2Spec& x = m.mamba;
    const double di = double(x.d_inner()), gn = double(x.n_groups) * double(x.state_size);
    const Link la = A2aLink(sys, c.links, g.cp);
    const double one = AllToAllSeconds(t_mb * (2.0 * di + 2.0 * gn + double(x.num_heads)) / s.tp * 2.0, l.cp, la) +
                       AllToAllSeconds(t_mb * di / s.tp * 2.0, l.cp, la);
    s.mamba_cp_mb = (s.full ? 3.0 : 2.0) * one;
    // Gated DeltaNet (gdn.py): a2a_cp_to_hp of in_proj's output (2·qk + 2·v + 2·n_v) and
    // a2a_hp_to_cp of the gated norm's output (v), per token / t, in BF16, as for Mamba-2.
    const GatedDeltaNetSpec& y = m.gdn;
    const double qk = double(y.key_dim()), v = double(y.value_dim()), nv = double(y.num_value_heads);
    const double gdn_one = AllToAllSeconds(t_mb * (2.0 * qk + 2.0 * v + 2.0 * nv) / s.tp * 2.0, l.cp, la) +
                           AllToAllSeconds(t_mb * v / s.tp * 2.0, l.cp, la);
    s.gdn_cp_mb = (s.full ? 3.0 : 2.0) * gdn_one;
  }
  if (l.tp > 1) s.tp_per = AllReduceSeconds(t_mb * h * 2.0, l.tp, RingLink(sys, c.links, g.tp));
  if (l.cp > 1) {
    // The attention's exchange of its cp_comm_type (CpLayerExposedSeconds) over the CP group's
    // links, and for a2a+p2p over its a2a level {a, stride} and ring level {cp/a, stride·a}.
    CpLayerInputs in;
    in.kv_bytes = t_mb * double(KDim(m) + VDim(m)) / s.tp * 2.0;
    in.qkv_bytes = t_mb * double(QDim(m) + KDim(m) + VDim(m)) / s.tp * 2.0;
    in.o_bytes = t_mb * double(AttnOutDim(m)) / s.tp * 2.0;
    in.core_seconds = t_mb * c.flops.attn_core_flops / s.tp / s.core_rate * (1.0 + s.core_extra);
    in.cp = l.cp;
    in.a2a = l.cp_a2a;
    in.full = s.full;
    s.cp_layer_mb = CpLayerExposedSeconds(l.cp_comm, in, CpLinksOf(sys, c.links, l, g.cp));
  }
  if (l.ep > 1 && m.is_moe()) {
    s.ep_a2a = EpAllToAllCached(c, t_mb / s.tp);
    // Mean of a dispatch and a combine: forward and backward each run one of both.
    s.ep_per = 0.5 * (s.ep_a2a.dispatch + s.ep_a2a.combine);
  }
  if (l.pp > 1) {
    // The tensor sent between stages is [seq/cp (/tp with sequence parallel), mbs, h] in
    // BF16 (schedules.py get_tensor_shapes).
    const Link lpp = RingLink(sys, c.links, g.pp);
    const double send_bytes = t_mb * h * 2.0;
    double per = P2pSeconds(send_bytes / (l.sequence_parallel ? s.tp : 1.0), lpp);
    if (l.pp_scatter_gather && !l.sequence_parallel && l.tp > 1) {
      // Megatron-LM 2021's scatter / gather (Narayanan et al. 2021 section 4.1,
      // p2p_communication.py split_tensor_into_1d_equal_chunks / gather_split_1d_tensor): each
      // TP rank sends its 1/tp chunk over its own link, the receiver all-gathers the tensor
      // over the TP group's link.
      per = P2pSeconds(send_bytes / s.tp, lpp) + AllGatherSeconds(send_bytes, l.tp, RingLink(sys, c.links, g.tp));
    }
    const MegatronPpComm pc = MegatronPipelineComm(
        l.pp, static_cast<int64_t>(s.v), static_cast<int64_t>(s.n_mb), per, lpp, l.overlap_p2p, l.batch_p2p_sync,
        l.ep_a2a_overlap && m.is_moe(), l.cuda_graph != CudaGraphCapture::kFullIteration);
    s.pp = pc.Seconds();
    s.pp_host = pc.host;
    s.bubble_fraction = double(l.pp - 1) / (s.v * s.n_mb);
  }
  return s;
}

MegatronTerms MegatronRankTerms(const Ctx& c, const MegatronShared& s, int64_t pp_rank, const MemoryBreakdown& mem) {
  const CostView& l = c.view;
  const GpuSpec& gpu = c.system.gpu;
  const RankParams rp = ParamsOfRank(c, pp_rank);
  const FlopsPerToken& f = c.flops;
  const double tp = s.tp, ep = s.ep, etp = s.etp, tokens = s.tokens, n_mb = s.n_mb, extra = s.extra;
  const double dense_layers = double(rp.dense_layers), moe_layers = double(rp.moe_layers);
  const double layers = dense_layers + moe_layers;
  MegatronTerms t;
  // A hybrid model's layers are single blocks (cost/hybrid.hpp): attention and Mamba-2 mixers
  // apart from the MLP (dense_layers) and MoE (moe_layers) blocks; a flat model's every layer
  // has attention.
  const bool hybrid = c.model.is_hybrid();
  const double attn_layers = hybrid ? double(rp.attention_mixers) : layers;
  const double mamba_layers = double(rp.mamba_mixers);
  const double gdn_layers = double(rp.gdn_mixers);

  // --- compute ---
  const double linear =
      hybrid ? tokens * (attn_layers * f.attn_linear_flops + mamba_layers * f.mamba_linear_flops +
                         gdn_layers * f.gdn_linear_flops +
                         dense_layers * f.dense_mlp_flops + moe_layers * f.shared_flops) / tp
             : tokens * (dense_layers * f.DenseLayerLinear() + moe_layers * (f.attn_linear_flops + f.shared_flops)) / tp;
  // The rank's MTP layers (their decoder layers are in dense_layers / moe_layers): eh_proj
  // and norms, and the logits of each through the shared output layer.
  const double mtp = double(rp.mtp_layers);
  const double head = (rp.has_head ? tokens * f.logits_flops / tp : 0.0) +
                      mtp * tokens * (f.mtp_extra_flops + f.logits_flops) / tp;
  const double experts = tokens * moe_layers * f.routed_flops / tp;
  const double recompute_linear = tokens * (dense_layers * s.recompute_dense_flops + moe_layers * s.recompute_moe_flops) / tp;
  const double linear_s = (linear * (1.0 + extra) + head + recompute_linear) / s.linear_rate;
  const double expert_s = (experts * (1.0 + extra) + tokens * moe_layers * s.recompute_routed_flops / tp) / s.expert_rate;
  t.gemm = linear_s + expert_s;
  t.attention = tokens * attn_layers * f.attn_core_flops / tp * (1.0 + s.core_extra) / s.core_rate;
  // The SSD scan's matmuls (SsdScanFlops), repeated with the block under full recompute.
  if (hybrid && s.ssd_rate > 0) t.attention += tokens * mamba_layers * f.ssd_flops / tp * (1.0 + extra) / s.ssd_rate;
  // The chunked gated delta rule (GdnChunkFlops), likewise.
  if (hybrid && s.ssd_rate > 0) t.attention += tokens * gdn_layers * f.gdn_chunk_flops / tp * (1.0 + extra) / s.ssd_rate;
  t.memory_bound = dense_layers * s.dense_mem_s + moe_layers * s.moe_mem_s +
                   ((rp.has_head ? 1.0 : 0.0) + mtp) * s.head_mem_s;  // one cross-entropy per MTP layer too
  if (hybrid) t.memory_bound += attn_layers * s.attn_mem_s + mamba_layers * s.mamba_mem_s + gdn_layers * s.gdn_mem_s;
  if (gpu.hbm_bandwidth > 0) {
    t.memory_bound += 2.0 * tokens / tp * (dense_layers * s.recompute_dense_elems + moe_layers * s.recompute_moe_elems) /
                      gpu.hbm_bandwidth;
  }
  if (l.unfused_attention) {
    // Unfused core (MegatronUnfusedCore): its batched GEMMs replace the flash kernel, its
    // softmax / dropout passes over the s x s scores are HBM-bound work.
    t.attention = n_mb * layers * s.unfused_core.gemm;
    if (gpu.hbm_bandwidth > 0) t.memory_bound += n_mb * layers * s.unfused_core.scores_bytes / gpu.hbm_bandwidth;
  }
  const MegatronLayerKernels& lk = s.layer_kernels;
  t.kernels = n_mb * (dense_layers * lk.dense + moe_layers * lk.moe) * (1.0 + extra);
  t.host = kHostSecondsPerKernel * n_mb * (dense_layers * lk.dense_host + moe_layers * lk.moe_host) * (1.0 + extra) +
           s.pp_host;
  if (hybrid) {
    t.kernels += n_mb * (attn_layers * s.attn_kernels + mamba_layers * s.mamba_kernels + gdn_layers * s.gdn_kernels) *
                 (1.0 + extra);
    t.host += kHostSecondsPerKernel * n_mb *
              (attn_layers * s.attn_host + mamba_layers * s.mamba_host + gdn_layers * s.gdn_host) * (1.0 + extra);
  }
  // Unfitted compute time, used only to bound what overlap can hide.
  const double compute0 = t.gemm + t.attention + t.memory_bound;
  const double fwd_mb = compute0 / n_mb / (3.0 + 3.0 * extra);
  const double bwd_mb = 2.0 * fwd_mb;

  // --- TP ---
  if (l.tp > 1 && (layers > 0 || hybrid)) {
    // Full recompute runs the forward's collectives (2 volumes of the 5, 1 of a MoE layer's
    // 2.5) again.
    // Without sequence parallel (only where it cannot split the sequence) TP all-reduces the
    // attention and MLP outputs forward and their input gradients backward: 4 volumes, 6 under
    // full recompute, and no re-gather.
    const double dense_volumes = l.sequence_parallel ? (s.full ? 7.0 : 5.0) : (s.full ? 6.0 : 4.0);
    double volumes = dense_layers * dense_volumes + moe_layers * s.tp_moe_volumes * (s.full ? 1.4 : 1.0);
    // A hybrid model's blocks: each attention, Mamba-2 and MLP block gathers its input and
    // reduce-scatters its output as half a dense layer does (MambaMixer's in_proj is a
    // ColumnParallelLinear, its out_proj a RowParallelLinear: mamba_mixer.py); a MoE block
    // what a MoE layer has beyond its attention half (expert-TP only).
    if (hybrid) {
      volumes = (attn_layers + mamba_layers + gdn_layers + dense_layers) * dense_volumes / 2.0 +
                moe_layers * (s.tp_moe_volumes - 2.5) * (s.full ? 1.4 : 1.0);
    }
    const double comm = volumes * n_mb * s.tp_per;
    t.tp = l.tp_comm_overlap
               ? Pos(comm - linear_s) + kTpOverlapExposedFraction * std::min(comm, linear_s)
               : comm;
  }
  // --- CP ---
  if (l.cp > 1 && layers > 0 && !hybrid) t.cp = s.cp_layer_mb * layers * n_mb;
  if (l.cp > 1 && hybrid) {
    t.cp = (s.cp_layer_mb * attn_layers + s.mamba_cp_mb * mamba_layers + s.gdn_cp_mb * gdn_layers) * n_mb;
  }
  // --- EP ---
  if (l.ep > 1 && moe_layers > 0) {
    // Dispatch and combine, forward and backward; full and moe recompute repeat the forward.
    const double passes = (s.full || s.moe_recompute ? 3.0 : 2.0) * moe_layers * n_mb;  // dispatch + combine pairs
    const double comm = 2.0 * passes * s.ep_per;
    t.ep_busy = comm;
    t.ep_nvlink = passes * s.ep_a2a.nvlink;
    t.ep_rdma = passes * s.ep_a2a.rdma;
    if (l.ep_a2a_overlap) {
      // The combined 1F1B schedule pairs one chunk's forward with another's backward; the
      // warm-up forwards and cool-down backwards have no partner (MegatronEpUnpairedShare).
      const double unpaired = MegatronEpUnpairedShare(l.pp, static_cast<int64_t>(s.v), static_cast<int64_t>(n_mb));
      t.ep = unpaired * comm +
             (1.0 - unpaired) * (Pos(comm - compute0) + s.ep_hidden_cost * std::min(comm, compute0));
    } else {
      t.ep = comm;
    }
  }
  // --- dropless MoE host syncs (MegatronHostSync) ---
  // One per MoE layer forward per micro-batch, again where recompute repeats the forward. A
  // whole-iteration CUDA graph issues no kernels from the host; whole-layer graphs capture
  // only capacity-padded MoE layers (Megatron-Core's MoE guide: dropless layers have dynamic
  // shapes and cannot be captured), which do not sync.
  if (l.moe_host_sync && moe_layers > 0 && l.cuda_graph != CudaGraphCapture::kFullIteration) {
    MegatronHostSync& y = t.sync;
    const double repeats = 1.0 + 3.0 * extra + (s.moe_recompute ? 1.0 : 0.0);
    const double mb_layers = moe_layers * n_mb;
    y.segments = mb_layers * repeats;
    const MegatronLayerKernels& k = s.layer_kernels;
    y.host_b = kHostSecondsPerKernel * kForwardShare * k.moe_pre_host;
    y.host_a = kHostSecondsPerKernel * kForwardShare * (k.moe_host - k.moe_pre_host);
    const double t_mb = tokens / n_mb;
    y.gemm_a = kForwardShare * t_mb * (f.routed_flops / s.expert_rate + f.shared_flops / s.linear_rate) / tp;
    // A hybrid MoE block has no attention before its dispatch (its router only).
    y.gemm_b = hybrid ? 0.0 : kForwardShare * t_mb * f.attn_linear_flops / tp / s.linear_rate;
    y.attention_b = hybrid ? 0.0 : kForwardShare * t_mb * f.attn_core_flops / tp / s.core_rate;
    // s.moe_mem_s is a layer's forward + backward HBM time over the step's tokens; the MoE
    // block's share of its elements (MegatronMoeBlockElements) is phase A's.
    const double layer_mem = kForwardShare * s.moe_mem_s / n_mb;
    y.mem_a = layer_mem * s.moe_block_share;
    y.mem_b = layer_mem - y.mem_a;
    y.kernels_a = kForwardShare * (k.moe - k.moe_pre);
    y.kernels_b = kForwardShare * k.moe_pre;
    // The forward's dispatch and combine, as exposed as the step's (t.ep over its pairs).
    const double pairs = (s.full || s.moe_recompute ? 3.0 : 2.0) * mb_layers;
    y.comm_a = l.ep > 1 && pairs > 0 ? t.ep / pairs : 0.0;
  }
  // --- PP ---
  t.pp = s.pp;
  // The fill and drain pass pp − 1 virtual stages of the slowest size. Without interleaving a
  // stage is a rank, and the slowest rank (which sets the step) pays its own; with it, the
  // rank's mean stage (layers / v) is scaled up to the largest stage of the split.
  const double mean_stage = layers / s.v;
  t.bubble_fraction = s.bubble_fraction * (s.v > 1 && mean_stage > 0 ? std::max(1.0, s.max_stage_layers / mean_stage) : 1.0);
  // --- DP ---
  const Group gd = s.gd, ge = s.ge;
  const Link ld = s.ld, le = s.le;
  const double v = s.v;
  const double dense_local = (rp.layer_dense + rp.root) / tp;
  const double expert_local = rp.layer_expert / (ep * etp);
  const double g = MainGradBytes(l);  // bytes per gradient element reduced
  // Megatron FSDP's no_shard and optim strategies reduce the whole gradient buffer after the
  // last micro-batch's backward (megatron_fsdp.py is_delay_grad_reduce) as Megatron-Core's DDP
  // does: all-reduce (no_shard) or, with the main weights distributed (optim), reduce-scatter
  // and the all-gather of the updated weights, as the distributed optimizer.
  const bool mfsdp = l.dp_impl == DpImpl::kMegatronFsdp;
  const bool delayed_reduce = mfsdp && (l.fsdp_sharding == FsdpSharding::kNoShard || l.fsdp_sharding == FsdpSharding::kOptim);
  if (l.dp_impl == DpImpl::kReplicated || delayed_reduce) {
    const bool overlap = l.overlap_grad_reduce;
    const bool sharded_state = mfsdp ? l.fsdp_sharding == FsdpSharding::kOptim : l.distributed_optimizer;
    double rs = 0, ag = 0, tail = 0, rs_cost = 0, ag_cost = 0;  // *_cost: HiddenCommCost if all hidden
    if (sharded_state) {
      const double rs_d = ReduceScatterSeconds(g * dense_local, gd.n, ld);
      const double rs_e = ReduceScatterSeconds(g * expert_local, ge.n, le);
      const double ag_d = AllGatherSeconds(2.0 * dense_local, gd.n, ld);
      const double ag_e = AllGatherSeconds(2.0 * expert_local, ge.n, le);
      rs = rs_d + rs_e;
      ag = ag_d + ag_e;
      rs_cost = HiddenCommCost(rs_d, ld) + HiddenCommCost(rs_e, le);
      ag_cost = HiddenCommCost(ag_d, ld) + HiddenCommCost(ag_e, le);
    } else {
      const double ar_d = AllReduceSeconds(g * dense_local, gd.n, ld);
      const double ar_e = AllReduceSeconds(g * expert_local, ge.n, le);
      rs = ar_d + ar_e;
      rs_cost = HiddenCommCost(ar_d, ld) + HiddenCommCost(ar_e, le);
    }
    const double bucket = l.bucket_size > 0 ? g * double(l.bucket_size) : kDdpBucketBytes;
    tail = gd.n > 1 ? ReduceScatterSeconds(std::min(bucket, g * dense_local), gd.n, ld) : 0.0;
    if (overlap) {
      t.dp = std::max(Pos(rs - bwd_mb * v), tail) + (ag > 0 ? std::max(Pos(ag - fwd_mb * v), 0.5 * tail) : 0.0);
      // The hidden share slows the compute it hides behind.
      t.dp += HiddenShareCost(rs, bwd_mb * v, rs_cost) + HiddenShareCost(ag, fwd_mb * v, ag_cost);
    } else {
      t.dp = rs + ag;
    }
  } else {
    const double ag_d = AllGatherSeconds(2.0 * dense_local, gd.n, ld);
    const double ag_e = AllGatherSeconds(2.0 * expert_local, ge.n, le);
    const double rs_d = ReduceScatterSeconds(g * dense_local, gd.n, ld);
    const double rs_e = ReduceScatterSeconds(g * expert_local, ge.n, le);
    if (mfsdp && l.fsdp_sharding == FsdpSharding::kOptimGrads) {
      // optim_grads (ZeRO-2): the weights stay whole, so nothing is gathered per micro-batch;
      // each micro-batch's backward reduce-scatters its gradients into the shards (megatron_fsdp.py
      // grad_reduce_every_bprop), and the updated weights are all-gathered once per step
      // (mcore_fsdp_adapter.py: "optim_grads: additionally, RS communication groups on all
      // microbatches"). kFsdpOverlapFraction of the compute hides them, as under optim_grads_params.
      const double comm = n_mb * (rs_d + rs_e) + ag_d + ag_e;
      const double cost = n_mb * (HiddenCommCost(rs_d, ld) + HiddenCommCost(rs_e, le)) + HiddenCommCost(ag_d, ld) +
                          HiddenCommCost(ag_e, le);
      t.dp = Pos(comm - kFsdpOverlapFraction * compute0) + HiddenShareCost(comm, kFsdpOverlapFraction * compute0, cost);
    } else {
      const double first_ag = AllGatherSeconds(2.0 * rp.max_layer_dense / tp, gd.n, ld) +
                              AllGatherSeconds(2.0 * rp.max_layer_expert / (ep * etp), ge.n, le);
      const double comm = n_mb * (2.0 * (ag_d + ag_e) + rs_d + rs_e);
      const double cost = n_mb * (HiddenCommCost(2.0 * ag_d + rs_d, ld) + HiddenCommCost(2.0 * ag_e + rs_e, le));
      t.dp = Pos(comm - kFsdpOverlapFraction * compute0) + n_mb * first_ag +
             HiddenShareCost(comm, kFsdpOverlapFraction * compute0, cost);
      // torch FSDP2 gathers into a flat buffer and copies out to each parameter (forward and
      // backward), and copies each gradient into a flat buffer before the reduce-scatter
      // (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py: foreach_all_gather_copy_out,
      // foreach_reduce); Megatron FSDP's parameters and gradients live in its buffers. Per
      // micro-batch: 2 x (read + write 2 bytes) + read + write of the gradient, per parameter.
      if ((l.dp_impl == DpImpl::kFsdpPerModule) && gpu.hbm_bandwidth > 0) {
        t.memory_bound += n_mb * (2.0 * 4.0 + 2.0 * g) * (dense_local + expert_local) / gpu.hbm_bandwidth;
      }
    }
  }
  // --- optimizer ---
  const double state = mem.weights + mem.step_gradients + mem.optimizer;
  t.optimizer = gpu.hbm_bandwidth > 0 ? (2.0 * state - mem.step_gradients) / gpu.hbm_bandwidth : 0.0;
  return t;
}

MegatronTerms MegatronRankTerms(const Ctx& c, int64_t pp_rank, const MemoryBreakdown& mem) {
  return MegatronRankTerms(c, MegatronLayoutShared(c), pp_rank, mem);
}

double MegatronSegmentHostBound(double host_a, double host_b, double gpu_a, double gpu_b) {
  return std::max({0.0, host_a - gpu_a, host_a + host_b - gpu_a - gpu_b});
}

double MegatronSyncGpuA(const MegatronHostSync& y, const MegatronTimeFit& fit, Precision precision) {
  return MegatronGemmFactor(fit, precision) * y.gemm_a + fit.memory_bound * y.mem_a + fit.kernel_overhead * y.kernels_a +
         y.comm_a;
}

double MegatronSyncGpuB(const MegatronHostSync& y, const MegatronTimeFit& fit, Precision precision) {
  return MegatronGemmFactor(fit, precision) * y.gemm_b + y.attention_b + fit.memory_bound * y.mem_b +
         fit.kernel_overhead * y.kernels_b;
}

double MegatronHostBound(double host, double bubble_fraction, double gpu_seconds, const MegatronHostSync& sync,
                         const MegatronTimeFit& fit, Precision precision) {
  const double stretch = 1.0 + bubble_fraction;
  if (sync.segments <= 0) return Pos(host * stretch - gpu_seconds);
  const double ga = MegatronSyncGpuA(sync, fit, precision), gb = MegatronSyncGpuB(sync, fit, precision);
  // The segments run on their own; the rest of the host's work races the rest of the GPU's.
  const double segments = sync.segments * MegatronSegmentHostBound(sync.host_a, sync.host_b, ga, gb) * stretch;
  const double host_rest = Pos(host - sync.segments * (sync.host_a + sync.host_b));
  const double gpu_rest = Pos(gpu_seconds - sync.segments * (ga + gb) * stretch);
  return segments + Pos(host_rest * stretch - gpu_rest);
}

double MegatronGemmFactor(const MegatronTimeFit& fit, Precision p) {
  return p == Precision::kFp4 ? fit.gemm_fp4 : p == Precision::kFp8 ? fit.gemm_fp8 : fit.gemm_bf16;
}

TimeBreakdown MegatronTime(const MegatronTerms& t, const MegatronTimeFit& fit, Precision precision) {
  TimeBreakdown out;
  out.compute = MegatronGemmFactor(fit, precision) * t.gemm + t.attention + fit.memory_bound * t.memory_bound +
                fit.kernel_overhead * t.kernels;
  out.tp_comm = t.tp;
  out.cp_comm = t.cp;
  out.dp_comm = t.dp;
  out.ep_comm = t.ep;
  out.pp_comm = t.pp;
  // The idle ticks of the pipeline fill and drain last as long as a micro-batch's stage work,
  // which includes the TP, CP and EP communication exposed inside its layers.
  out.bubble = t.bubble_fraction * (out.compute + out.tp_comm + out.cp_comm + out.ep_comm);
  out.optimizer = t.optimizer;
  out.host = MegatronHostBound(t.host, t.bubble_fraction, out.GpuSeconds(), t.sync, fit, precision);
  return out;
}

}  // namespace meshplan::cost
