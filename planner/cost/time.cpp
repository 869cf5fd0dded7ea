// Step time of one pipeline rank. Units: FLOP, FLOP/s, bytes, seconds.

#include "cost/time.hpp"

#include "cost/hybrid.hpp"
#include "cost/memory.hpp"
#include "cost/last_values.hpp"
#include "meshplan/topology.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

namespace meshplan::cost {

double AttentionHeadDimFactor(int64_t head_dim) {
  constexpr double kAt64 = 0.81;
  if (head_dim >= 128) return 1.0;
  if (head_dim <= 64) return kAt64;
  return kAt64 + (1.0 - kAt64) * double(head_dim - 64) / 64.0;
}

double AttentionLengthFactor(int64_t seq_len, int64_t cp) {
  auto rate = [](double length, double k) { return length > 0 ? length / (length + k) : 1.0; };
  const double ref = rate(8192.0, kAttnCausalK);
  const double s = double(std::max<int64_t>(1, seq_len));
  if (cp <= 1) return rate(s, kAttnCausalK) / ref;
  const double n = double(cp), diag = 1.0 / n;
  return 1.0 / (diag * ref / rate(s / n, kAttnCausalK) + (1.0 - diag) * ref / rate(s / (2.0 * n), kAttnFullK));
}

double GemmSizeFactor(double tokens, double width) {
  const double ft = tokens > 0 ? tokens / (tokens + kGemmTokensK0) : 1.0;
  const double fw = width > 0 ? width / (width + kGemmWidthK0) : 1.0;
  return ft * fw;
}

double GemmSeconds(double tokens, double k, double n, double rate, double hbm_bandwidth, bool fp8, bool grouped) {
  if (tokens <= 0 || k <= 0 || n <= 0 || rate <= 0) return 0.0;
  const double flop = 2.0 * tokens * k * n;
  const double bytes = (tokens * k + k * n) * (fp8 ? 1.0 : 2.0) + tokens * n * 2.0;
  const double share = grouped ? (fp8 ? kGroupedGemmOperandBwShareFp8 : kGroupedGemmOperandBwShareBf16)
                               : (fp8 ? kGemmOperandBwShareFp8 : kGemmOperandBwShareBf16);
  const double latency = grouped ? (fp8 ? kGroupedGemmLatencyFp8 : kGroupedGemmLatencyBf16)
                                 : (fp8 ? kGemmLatencyFp8 : kGemmLatencyBf16);
  const double memory = share * hbm_bandwidth > 0 ? bytes / (share * hbm_bandwidth) : 0.0;
  return std::max(flop / rate, memory) + latency;
}

// The GEMM shapes of a search: its (tp or etp) x (micro-batch x seq / cp) token counts, asked
// for again by every feature set and DP flavour of a mesh and by the subtrees' bounds in between;
// 1024 slots hold a DeepSeek-V3 search's shapes where 64 missed about half the lookups.
constexpr size_t kGemmFactorSlots = 1024;

double ExpertGemmFactor(const ModelSpec& m, double tokens, double etp, double rate, double hbm_bandwidth, bool fp8) {
  const double h = double(m.hidden_size), f = double(m.moe_intermediate_size) / std::max(1.0, etp);
  if (hbm_bandwidth <= 0 || rate <= 0 || tokens <= 0 || f <= 0) return 1.0;
  thread_local HashedValues<std::array<double, 6>, double, kGemmFactorSlots> last;
  const std::array<double, 6> key{h, f, tokens, rate, hbm_bandwidth, fp8 ? 1.0 : 0.0};
  const size_t slot = last.SlotOf(key);
  if (const double* hit = last.Find(key, slot)) return *hit;
  const double flop = 2.0 * tokens * h * 3.0 * f;  // fc1 (gated: 2f) and fc2
  const double seconds = GemmSeconds(tokens, h, 2.0 * f, rate, hbm_bandwidth, fp8, true) +
                         GemmSeconds(tokens, f, h, rate, hbm_bandwidth, fp8, true);
  return last.Store(key, slot, std::min(1.0, flop / rate / seconds));
}

double LinearGemmFactor(const ModelSpec& m, double tokens, double tp, double rate, double hbm_bandwidth, bool fp8) {
  if (hbm_bandwidth <= 0 || rate <= 0 || tokens <= 0) return 1.0;
  const double h = double(m.hidden_size), q = double(QDim(m)), kv = double(KDim(m)), o = double(AttnOutDim(m));
  const double f = m.is_moe() ? double(m.shared_expert_intermediate_size) : double(m.intermediate_size);
  thread_local HashedValues<std::array<double, 10>, double, kGemmFactorSlots> last;
  const std::array<double, 10> key{h, q, kv, o, f, tokens, tp, rate, hbm_bandwidth, fp8 ? 1.0 : 0.0};
  const size_t slot = last.SlotOf(key);
  if (const double* hit = last.Find(key, slot)) return *hit;
  double flop = 0.0, seconds = 0.0;
  auto add = [&](double k, double n) {
    if (k <= 0 || n <= 0) return;
    flop += 2.0 * tokens * k * n;
    seconds += GemmSeconds(tokens, k, n, rate, hbm_bandwidth, fp8);
  };
  add(h, (q + 2.0 * kv) / tp);
  add(o / tp, h);
  add(h, 2.0 * f / tp);
  add(f / tp, h);
  return last.Store(key, slot, seconds > 0 ? std::min(1.0, flop / rate / seconds) : 1.0);
}

double EagerLayerPasses(const ModelSpec& m, double tp) {
  const double qk = m.qk_norm ? double(QDim(m) + KDim(m)) : 0.0;
  return kEagerHiddenPasses * double(m.hidden_size) +
         (kEagerQkNormPasses * qk + kEagerFfnPasses * double(m.intermediate_size)) / tp;
}

double MoeLayerPasses(const ModelSpec& m, int64_t ep, TokenDispatch dispatcher) {
  const double h = double(m.hidden_size), k = double(m.experts_per_token), fe = double(m.moe_intermediate_size);
  if (HfMoeModel(m)) {
    const double qk = m.qk_norm ? double(QDim(m) + KDim(m)) : 0.0;
    return kEagerHiddenPasses * h + kEagerQkNormPasses * qk + kHfMoeCopyFfnPasses * k * fe +
           kHfMoeCopyHiddenPasses * k * h;
  }
  const bool fused = ep > 1 && dispatcher == TokenDispatch::kFlex;
  const double permute = fused ? kMoeFusedPermutePasses(k) : kMoePermutePasses + kMoeUnpermutePasses;
  return kMoeNormAddPasses * h + k * permute * h + k * kMoeActPasses * fe +
         kMoeRouterPasses * double(m.num_experts) + kEagerFfnPasses * double(m.shared_expert_intermediate_size);
}

double MoeModelDenseLayerPasses(const ModelSpec& m, double tp) {
  return kMoeNormAddPasses * double(m.hidden_size) + kEagerFfnPasses * double(m.intermediate_size) / tp;
}

double GdnMixerPasses(const ModelSpec& m) {
  const GatedDeltaNetSpec& x = m.gdn;
  const double qk = double(x.key_dim()), v = double(x.value_dim()), nv = double(x.num_value_heads);
  const double qkr = nv * double(x.key_head_dim), c = kGdnChunk;
  const double reorder = m.architecture == Architecture::kQwen3Next
                             ? 2.0 * (2.0 * qk + 2.0 * v) + 4.0 * nv + 2.0 * (2.0 * qk + v)
                             : 0.0;
  const double conv = 2.0 * (2.0 * qk + v), gates = 17.0 * nv, copies = 2.0 * qk + 2.0 * qkr + 2.0 * v;
  const double chunk = 4.0 * qkr + 4.0 * nv + (2.0 * qkr + v) + 2.0 * c * nv + 2.0 * (qkr + v) +
                       4.0 * nv * double(x.key_head_dim) * double(x.value_head_dim) / c + 2.0 * v + v;
  const double norm = 3.0 * v;
  return 3.0 * (reorder + conv + gates + copies + chunk + norm) * kElementwiseSlowdown;
}

double NemotronBlockPasses(const ModelSpec& m, MixerKind mixer, MlpKind mlp, int64_t ep, TokenDispatch dispatcher,
                           double tp) {
  const double h = double(m.hidden_size);
  double passes = 0.5 * kMoeNormAddPasses * h;  // the block's norm and residual add
  if (mixer == MixerKind::kMamba2) {
    // The mixer's share of HybridBlockElements (less its 5h of norm and add), x3 for forward +
    // backward, at kElementwiseSlowdown.
    passes += 3.0 * kElementwiseSlowdown *
              (HybridBlockElements(m, MixerKind::kMamba2, MlpKind::kNone, false, false) - 5.0 * h);
  }
  if (mlp == MlpKind::kDense) passes += kEagerFfnPasses * double(m.intermediate_size) / tp;
  if (mlp == MlpKind::kMoe) {
    const double k = double(m.experts_per_token), fe = double(m.moe_intermediate_size);
    const double x = double(m.ExpertInputSize());
    const bool fused = ep > 1 && dispatcher == TokenDispatch::kFlex;
    const double permute = fused ? kMoeFusedPermutePasses(k) : kMoePermutePasses + kMoeUnpermutePasses;
    passes += k * permute * x + k * kRelu2ActShare * kMoeActPasses * fe + kMoeRouterPasses * double(m.num_experts) +
              kEagerFfnPasses * double(m.shared_expert_intermediate_size);
  }
  return passes;
}

double ConsecutiveDispatchCopies(int64_t num_experts, int64_t top_k, int64_t ep, int64_t ranks_per_group) {
  const int64_t e = num_experts, k = std::min(top_k, num_experts), d = std::max<int64_t>(1, ranks_per_group);
  if (ep <= d || e <= 0 || k <= 0) return 1.0;
  const int64_t local = std::max<int64_t>(1, e / ep);  // experts per EP rank
  const int64_t period = e / std::gcd(e, k);            // starts t·k mod E repeat after P tokens
  std::vector<int64_t> seen;
  double total = 0.0;
  for (int64_t t = 0; t < period; ++t) {
    seen.clear();
    for (int64_t j = 0; j < k; ++j) {
      const int64_t group = ((t * k + j) % e) / local / d;
      if (std::find(seen.begin(), seen.end(), group) == seen.end()) seen.push_back(group);
    }
    total += double(seen.size());
  }
  return total / double(period);
}

AutoModelEp AutoModelEpPass(const SystemSpec& sys, int64_t num_gpus, const Link& a2a_link, const Link& ring_link,
                            const ModelSpec& m, const CostView& v, double tokens) {
  AutoModelEp out;
  const int64_t ep = v.ep;
  if (ep <= 1 || tokens <= 0 || !m.is_moe()) return out;
  // The experts' input width: LatentMoE dispatches fc1_latent_proj's output (components/moe/
  // layers.py MoE.forward: experts(x_latent, ...)), else the hidden state.
  const double h = double(m.ExpertInputSize());
  const int64_t domain = PlacedDomainGpus(sys, num_gpus);
  out.domains = ep <= domain ? 1 : (ep + domain - 1) / domain;
  if (v.dispatcher != TokenDispatch::kFlex) {
    // GroupedExperts: all-gather of the bf16 tokens, all-reduce of the fp32 output; backward
    // the output gradient's all-reduce and the all-gather's backward all-reduce (bf16).
    const double gathered = double(ep) * tokens * h;
    out.rank_copies = double(ep);
    out.forward = AllGatherSeconds(gathered * 2.0, ep, ring_link) + AllReduceSeconds(gathered * 4.0, ep, ring_link);
    out.backward = AllReduceSeconds(gathered * 4.0, ep, ring_link) + AllReduceSeconds(gathered * 2.0, ep, ring_link);
    return out;
  }
  const bool hybrid = v.flex_backend == FlexBackend::kHybridEP;
  const bool consecutive = v.routing == MoeRouting::kConsecutive;
  const int64_t E = m.num_experts, k = m.experts_per_token;
  out.rank_copies = consecutive ? ConsecutiveDispatchCopies(E, k, ep, 1) : RoutedDispatchCopies(m, ep);
  const double row = h * 2.0;  // bf16: AutoModel dispatches the activations unquantised
  const double nvl = sys.scaleup_bandwidth;
  auto nvl_seconds = [&](bool combine) {
    const double share = hybrid ? HybridEpNvlinkShare(ep, combine)
                                : (combine ? kDeepEpNvlinkCombineShare : kDeepEpNvlinkDispatchShare);
    return nvl > 0 ? tokens * out.rank_copies * row / (nvl * share) : 0.0;
  };
  const double nd = nvl_seconds(false), nc = nvl_seconds(true);
  out.nvlink = 2.0 * (nd + nc);
  if (out.domains == 1) {
    out.forward = out.backward = 2.0 * a2a_link.latency_s + nd + nc;
    return out;
  }
  out.node_copies = consecutive ? ConsecutiveDispatchCopies(E, k, ep, domain) : RoutedDispatchCopies(m, out.domains);
  const double nic = sys.NicBandwidthPerGpu() > 0 ? sys.NicBandwidthPerGpu() : kDeepEpNicRate;
  auto rdma_seconds = [&](bool combine) {
    const double share = hybrid ? HybridEpRdmaShare(ep, combine) : DeepEpRdmaShare(ep, combine);
    return tokens * out.node_copies * row / (nic * share);
  };
  const double rd = rdma_seconds(false), rc = rdma_seconds(true);
  out.rdma = 2.0 * (rd + rc);
  out.forward = out.backward = 2.0 * a2a_link.latency_s + std::max(rd, nd) + std::max(rc, nc);
  return out;
}

double HiddenCommCost(double seconds, const Link& link) {
  if (seconds <= 0) return 0.0;
  return seconds * kHiddenCommKappa * std::min(1.0, link.busbw_bytes_per_s / kHiddenCommRefBusbw);
}

}  // namespace meshplan::cost

namespace meshplan {

Precision PeakPrecision(const GpuSpec& gpu, Precision precision) {
  if (precision == Precision::kFp4 && gpu.fp4_flops > 0) return Precision::kFp4;
  if ((precision == Precision::kFp8 || precision == Precision::kFp4) && gpu.fp8_flops > 0) return Precision::kFp8;
  return Precision::kBf16;
}

}  // namespace meshplan

namespace meshplan::cost {

double PeakFlops(const GpuSpec& gpu, Precision precision) {
  switch (PeakPrecision(gpu, precision)) {
    case Precision::kFp4:
      return gpu.fp4_flops;
    case Precision::kFp8:
      return gpu.fp8_flops;
    case Precision::kBf16:
      break;
  }
  return gpu.bf16_flops;
}

double MatmulEfficiency(const GpuSpec& gpu, Precision precision) {
  double e = gpu.matmul_efficiency_bf16;
  // No FP4 MAMF is published (groundtruth C.3): FP4 GEMMs take the FP8 fraction.
  if (precision != Precision::kBf16 && gpu.fp8_flops > 0 && gpu.matmul_efficiency_fp8 > 0) {
    e = gpu.matmul_efficiency_fp8;
  }
  return e > 0 ? e : 1.0;
}

namespace {
double Positive(double x) { return x > 0 ? x : 1.0; }
}  // namespace

double RingCpExposedSeconds(double chunk_bytes, const Link& link, double forward_core_seconds, int64_t cp, bool full) {
  if (cp <= 1) return 0.0;
  const double send = P2pSeconds(chunk_bytes, link);
  const double chunk_compute = forward_core_seconds / double(cp);
  // Forward, and backward at twice the bytes (K, V and their gradients) under twice the
  // compute, and a repeated forward under full recompute: 3 (4) forward-sized steps.
  return (full ? 4.0 : 3.0) * double(cp - 1) * std::max(0.0, send - chunk_compute);
}


/// Compute: FLOP of this GPU / achieved rate, per class of work.
///   FLOP of the rank per step (tokens = micro-batches per step · micro_batch · seq/cp):
///     linear = tokens · (Σ layers' attention + dense-MLP + shared-expert terms) / tp
///              + tokens · 6hV / tp on the rank holding lm_head
///     experts = tokens · moe_layers · 6·h·3·f_e·k   (not / tp: AutoModel replicates routed
///              experts over TP ranks, so TP ranks repeat the routed work; = the fair share
///              when tp = 1, expert work spread evenly over EP ranks)
///     core = tokens · layers · s·A_core / tp        (CP balances the causal work)
///   Summed over all ranks this is ModelFlopsPerStep (tp = 1, even stages); the most
///   loaded rank sets the step (uneven stages, lm_head).
///   Recompute: kFull adds one forward of the layers (1/3 of linear + experts + core);
///   kSelective (op-level SAC, see memory.cpp) recomputes every other matmul forward
///   (1/6 of the layers' linear and expert FLOP); attention is saved, not recomputed.
///   Rate = peak(precision) · matmul_efficiency(precision) · system.compute_efficiency
///   · the size factors below; the attention core runs in bf16 (PyTorch SDPA) even under fp8, at
///   kSdpaAttentionEfficiency of the bf16 peak (measured, time.hpp), x GemmSizeFactor of the
///   micro-batch's tokens, x the ring-chunk slowdown under CP (AttentionLengthFactor(seq, cp) /
///   AttentionLengthFactor(seq, 1)).
///   LinearGemmFactor(T, tp) for the linear work (the layer's GEMM shapes, measured),
///   ExpertGemmFactor(T·k·ep/E) for the experts (tokens per local expert, grouped GEMM,
///   measured), GemmSizeFactor(T, 0) for the core; T = micro_batch·seq/cp.
///   Eager HBM-bound kernels: 2 bytes · tokens · (layers' kEager*Passes elements, x 4/3
///   under recompute, + kEagerLossVocabPasses·V on the head's rank) / HBM bandwidth (time.hpp).
/// Communication (exposed parts; groups and links from comm.cpp):
///   TP (DTensor, no overlap in AutoModel): all-reduces of T·h·2 bytes per micro-batch; per
///     dense layer 2 forward (o_proj, down_proj outputs) and 5 backward (the input gradient of
///     each ColwiseParallel module, q, k, v, gate and up, made Replicate on its own), +2 under
///     full recompute; per MoE layer 2 and 2 (+2); one more for the vocabulary-parallel
///     embedding's output and one for the lm_head's input gradient, and an all-gather of the
///     T·V·2-byte logits for the loss (full_tensor()). Measured: 2 H200 with NCCL held to 1
///     and 2 channels, tests/data/measured/h200_2gpu_ch*.jsonl (4 volumes per layer priced
///     Llama 3.1 8B with TP 2 31% and 22% too fast; 7 gives -2.5% and -1.7%).
///   CP (ring attention, RingCpExposedSeconds): per layer per micro-batch (cp−1) p2p steps of
///     T·(d_K+d_V)/tp·2 bytes forward and twice that backward (+1 forward under full
///     recompute), each hidden only under the attention of the one chunk computed meanwhile:
///     exposed = max(0, transfer − chunk compute) per ring step.
///   EP (AutoModelEpPass): per MoE layer per micro-batch dispatch + combine forward and backward
///     (+ forward again under full recompute); flex (DeepEP / HybridEP): each token sent once
///     per distinct destination rank (NVLink domain) or node (across nodes), at the backend's
///     published bandwidths, for the learned gate's uniform or the fake gate's consecutive
///     experts; torch: the all-gather / all-reduce of GroupedExperts; fully exposed
///     (AutoModel's dispatcher blocks the compute stream).
///   PP: T·h·2 bytes p2p per micro-batch per virtual stage, forward and backward;
///     kPpP2pExposedFraction exposed. Bubble = (pp−1)/(v·m) · (compute + exposed TP, CP and EP
///     communication) (groundtruth.md B.4),
///     m = micro-batches per schedule call, v = stages per rank, for every schedule call.
///   FSDP2 / Megatron-FSDP: per micro-batch all-gather of bf16 params forward
///     and again backward (root module and, with moe.reshard_after_forward=false, experts
///     once), reduce-scatter of fp32 grads (with FSDP2's defer_fsdp_grad_sync only in the
///     last micro-batch of the step: measured, tests/data/measured/h200_2gpu_ch*.jsonl
///     ga2-defer against ga2-sync), over dp_shard·cp (dense) and ep_shard (experts);
///     HSDP all-reduces the fp32 shard over dp_replicate with every reduce-scatter.
///     exposed = max(0, comm − kFsdpOverlapFraction · compute) + first layer's all-gather per
///     micro-batch + torch FSDP2's root-module reduce-scatter (it runs when the backward is
///     done). Under PP torch pipelining gathers once per schedule call and
///     reduce-scatters once after the last backward: that reduce-scatter is fully exposed.
///   DDP: one all-reduce of the grads (bf16, fp32 with fp32_params) per step over all ranks,
///     overlapped with the backward of the last micro-batch: exposed = max(0, t − backward of
///     one micro-batch) + the last bucket, the input embedding's gradient (done when the
///     backward ends; above the 25 MiB cap it is a bucket of its own) or 25 MiB.
///   FSDP and DDP: the hidden part adds HiddenCommCost (the compute it hides behind runs
///     slower while the collective is in flight; measured, time.hpp).
/// Optimizer: Adam reads master params, grads, m, v and writes params, m, v of this rank:
///   (2·state − grads) bytes / hbm_bandwidth.
TimeBreakdown RankTime(const Ctx& c, int64_t pp_rank, const MemoryBreakdown& mem) {
  const ModelSpec& m = c.model;
  const CostView& l = c.view;
  const SystemSpec& sys = c.system;
  const GpuSpec& gpu = sys.gpu;
  const RankParams rp = ParamsOfRank(c, pp_rank);
  const FlopsPerToken& f = c.flops;
  const double tp = double(std::max<int64_t>(1, l.tp));
  const double ep = double(std::max<int64_t>(1, l.ep));
  const double h = double(m.hidden_size);
  const double t_mb = c.tokens_per_mb;
  const double n_mb = double(c.mb_per_step);
  const double tokens = t_mb * n_mb;
  const double layers = double(rp.Layers());
  const double moe_layers = double(rp.moe_layers);
  // A Gated DeltaNet hybrid (Qwen3-Next, Qwen3.5): each layer is a token mixer (attention or
  // Gated DeltaNet) and an MLP; its GDN layers' mixer replaces attention's GEMMs, core and
  // eager ops by its own (GdnLinearFlops, GdnChunkFlops, GdnMixerPasses). 0 for other models.
  const double gdn_layers = double(rp.gdn_mixers);
  // Nemotron-H (single-block layers, nemotron_v3): its attention and Mamba-2 blocks apart from
  // the MLP (dense_layers) and MoE (moe_layers) ones; AutoModel's TP plan splits only the MLP
  // blocks and lm_head (NemotronHParallelizationStrategy).
  const bool nemotron = m.architecture == Architecture::kNemotronH;
  const double attn_layers = nemotron ? double(rp.attention_mixers) : layers - gdn_layers;
  const double mamba_layers = nemotron ? double(rp.mamba_mixers) : 0.0;
  TimeBreakdown t;

  // --- compute ---
  double extra_mm = 0.0, extra_core = 0.0;
  if (l.recompute == Recompute::kFull) {
    extra_mm = 1.0 / 3.0;
    extra_core = 1.0 / 3.0;
  } else if (l.recompute == Recompute::kSelective) {
    extra_mm = 1.0 / 6.0;
  }
  // Nemotron-H: which blocks AutoModel recomputes (NemotronChecksEveryBlock): every block, or the
  // mlp and mamba blocks only ("selective" taken as a full wrap there). Each recomputed block
  // repeats its forward (extra_mm of its GEMMs, extra_core of its attention or scan); the rest
  // runs once.
  const bool nem_every = NemotronChecksEveryBlock(c, PytorchUnwrappedOneGpu(c, false));
  double nem_mm = extra_mm, nem_core = extra_core;
  if (nemotron && !nem_every && l.recompute == Recompute::kSelective) nem_mm = nem_core = 1.0 / 3.0;
  const double nem_other_mm = nem_every ? extra_mm : 0.0, nem_other_core = nem_every ? extra_core : 0.0;
  // Linear FLOP of the rank's layers already weighted by their recompute (`linear_w`), for
  // Nemotron-H block by block; the flat and Gated DeltaNet models' layers all alike.
  const double linear =
      nemotron ? tokens * (attn_layers * f.attn_linear_flops + mamba_layers * f.mamba_linear_flops +
                           moe_layers * f.shared_flops + double(rp.dense_layers) * f.dense_mlp_flops / tp)
               : tokens * (double(rp.dense_layers) * f.DenseLayerLinear() + moe_layers * (f.attn_linear_flops + f.shared_flops) +
                           gdn_layers * (f.gdn_linear_flops - f.attn_linear_flops)) / tp;
  // DeepSeek-V4 (AutoModel's deepseek_v4 model, Dsv4PytorchTerms): its attention's bf16 GEMMs
  // (the frozen indexer's forward only), fp32 GEMMs, attention core and eager kernels per layer,
  // the recomputed forward included; every layer is a MoE layer, TP is 1.
  const bool dsv4 = m.architecture == Architecture::kDeepseekV4;
  // (the layout's PytorchRankTerms::dsv4 where the caller computed them, CostModel's rank loop)
  const Dsv4PytorchTerms d4 = !dsv4                        ? Dsv4PytorchTerms{}
                              : c.pytorch_terms != nullptr ? c.pytorch_terms->dsv4
                                                           : Dsv4Pytorch(m, l.recompute, c.setup.seq_len, l.cp, l.attn_tilelang);
  const double linear_w =
      dsv4 ? tokens * moe_layers * (d4.bf16_linear + f.shared_flops * (1.0 + extra_mm)) :
      nemotron ? tokens * (attn_layers * f.attn_linear_flops * (1.0 + nem_other_mm) +
                           mamba_layers * f.mamba_linear_flops * (1.0 + nem_mm) +
                           moe_layers * f.shared_flops * (1.0 + nem_other_mm) +
                           double(rp.dense_layers) * f.dense_mlp_flops / tp * (1.0 + nem_mm))
               : linear * (1.0 + extra_mm);
  // FusedLinearCrossEntropy (cut-cross-entropy) recomputes the logits blockwise in its
  // backward: one more forward of lm_head (a third of its FLOP).
  const double head_flops = rp.has_head ? tokens * f.logits_flops / tp * (l.loss_fused_linear ? 4.0 / 3.0 : 1.0) : 0.0;
  // DeepSeek-V4's lm_head is an fp32 module on fp32 input (deepseek_v4/model.py: dtype float32,
  // compute_lm_head_logits fp32_lm_head=True): priced with its fp32 GEMMs below.
  const double head = dsv4 ? 0.0 : head_flops;
  const double experts = tokens * moe_layers * f.routed_flops;
  const double experts_w = experts * (1.0 + (nemotron ? nem_other_mm : extra_mm));
  const double core = tokens * attn_layers * (dsv4 ? d4.core : f.attn_core_flops) / (nemotron ? 1.0 : tp);
  if (nemotron) extra_core = nem_other_core;
  if (dsv4) extra_core = 0.0;  // d4.core has the recomputed forward
  const double sys_eff = Positive(sys.compute_efficiency);
  const double linear_rate = PeakFlops(gpu, c.setup.precision) *
                             MatmulEfficiency(gpu, c.setup.precision) * sys_eff;
  const double core_rate = gpu.bf16_flops * kSdpaAttentionEfficiency * AttentionHeadDimFactor(QkHeadDim(c.model));
  const double expert_tokens =
      m.num_experts > 0 ? t_mb * double(m.experts_per_token) * ep / double(m.num_experts) : t_mb;
  const double linear_s =
      (linear_w + head) /
      (linear_rate * LinearGemmFactor(m, t_mb, tp, linear_rate / sys_eff, gpu.hbm_bandwidth,
                                      c.setup.precision != Precision::kBf16));
  const double expert_s =
      experts_w /
      (linear_rate * ExpertGemmFactor(m, expert_tokens, 1.0, linear_rate / sys_eff, gpu.hbm_bandwidth,
                                      c.setup.precision != Precision::kBf16));
  // The ring of a context-parallel group runs the core as cp steps over seq/cp-token chunks:
  // slower than one sequence (AttentionLengthFactor against the unsplit sequence; 1 at cp 1).
  const double cp_chunk = l.cp > 1 ? AttentionLengthFactor(c.setup.seq_len, l.cp) /
                                         AttentionLengthFactor(c.setup.seq_len, 1)
                                   : 1.0;
  const double core_rate_eff = core_rate * GemmSizeFactor(t_mb, 0.0) * cp_chunk;
  const double core_s = core * (1.0 + extra_core) / core_rate_eff;
  t.compute = linear_s + expert_s + core_s;
  // DeepSeek-V4's fp32 GEMMs (Dsv4PytorchTerms::fp32_linear and the fp32 lm_head) on the CUDA
  // cores: torch runs fp32 matmuls without TF32 unless told (allow_tf32 is off by default and
  // AutoModel does not set it), at GpuSpec::fp32_flops times the BF16 MAMF share (an assumption);
  // at the BF16 rate where the GPU's FP32 peak is not known.
  if (dsv4) {
    const double fp32_rate = gpu.fp32_flops > 0 ? gpu.fp32_flops * MatmulEfficiency(gpu, Precision::kBf16) : linear_rate;
    t.compute += (tokens * moe_layers * d4.fp32_linear + head_flops) / fp32_rate;
  }
  // The chunked gated delta rule's Triton kernels (fla), at the rate the Megatron-Core terms
  // price them (MegatronRankTerms' ssd_rate: the fused attention's efficiency, an assumption);
  // both recompute modes run them again (selective AC saves no output of a custom autograd
  // Function: its saved tensors are recomputed).
  if (gdn_layers > 0) {
    const double gdn_extra = l.recompute == Recompute::kNone ? 0.0 : 1.0 / 3.0;
    t.compute += tokens * gdn_layers * f.gdn_chunk_flops * (1.0 + gdn_extra) / (gpu.bf16_flops * kFlashAttentionEfficiency);
  }
  // The SSD scan's Triton kernels (SsdScanFlops) at the rate the Megatron-Core terms price them
  // (kFlashAttentionEfficiency of the BF16 peak, an assumption), again where the block is
  // recomputed; not split by TP.
  if (mamba_layers > 0) {
    t.compute += tokens * mamba_layers * f.ssd_flops * (1.0 + nem_core) / (gpu.bf16_flops * kFlashAttentionEfficiency);
  }
  // Eager HBM-bound kernels (kEagerHiddenPasses..., measured) of the Hugging Face modules
  // AutoModel trains dense models with. TP (no sequence parallel in AutoModel's plans) splits
  // the FFN and head widths, not the norms and residual adds; the loss runs on the full
  // vocabulary (the logits are gathered). Both recompute modes repeat the forward's
  // elementwise ops (a third of forward + backward).
  // MoE models: their MoE layers' eager kernels (router, permute, unpermute, weighted SwiGLU,
  // norms and adds; MoeLayerPasses, measured) and for AutoModel's own implementations the dense
  // layers' norms, adds and SwiGLU (MoeModelDenseLayerPasses); a Hugging Face MoE model's dense
  // layers are the dense eager ones.
  // The eager fp32 loss over the vocabulary (FusedLinearCrossEntropy's kernel replaces the eager
  // softmax and its backward).
  const double loss = rp.has_head && !l.loss_fused_linear ? kEagerLossVocabPasses * double(m.vocab_size) : 0.0;
  if (gpu.hbm_bandwidth > 0 && nemotron) {
    // Nemotron-H's blocks (NemotronBlockPasses), each recomputed block's forward again.
    const double rf = EagerRecomputeFactor(l);
    const double every = nem_every ? rf : 1.0;
    const double elems =
        attn_layers * NemotronBlockPasses(m, MixerKind::kAttention, MlpKind::kNone, l.ep, l.dispatcher, tp) * every +
        mamba_layers * NemotronBlockPasses(m, MixerKind::kMamba2, MlpKind::kNone, l.ep, l.dispatcher, tp) * rf +
        double(rp.dense_layers) * NemotronBlockPasses(m, MixerKind::kNone, MlpKind::kDense, l.ep, l.dispatcher, tp) * rf +
        moe_layers * NemotronBlockPasses(m, MixerKind::kNone, MlpKind::kMoe, l.ep, l.dispatcher, tp) * every;
    t.compute += 2.0 * tokens * (elems + loss) / gpu.hbm_bandwidth + moe_layers * n_mb * kMoeRouterFixedSeconds * every;
  } else if (gpu.hbm_bandwidth > 0) {
    double elems = double(rp.dense_layers) *
                   (m.is_moe() && !HfMoeModel(m) ? MoeModelDenseLayerPasses(m, tp) : EagerLayerPasses(m, tp));
    double fixed = 0.0;
    if (m.is_moe()) {
      elems += moe_layers * MoeLayerPasses(m, l.ep, l.dispatcher);
      if (!HfMoeModel(m)) fixed = moe_layers * n_mb * kMoeRouterFixedSeconds;
    }
    // Gated DeltaNet hybrids: their layer norms are the eager fp32 Qwen3NextRMSNorm (HF-style
    // ops, priced as the dense layers' kEagerHiddenPasses·h in place of the MoE layers'
    // Transformer Engine kMoeNormAddPasses·h), the attention layers' q/k norms likewise
    // (kEagerQkNormPasses), the GDN layers' mixer GdnMixerPasses. An assumption, not measured.
    if (gdn_layers > 0) {
      elems += layers * (kEagerHiddenPasses - kMoeNormAddPasses) * h +
               attn_layers * kEagerQkNormPasses * double(QDim(m) + KDim(m)) / tp + gdn_layers * GdnMixerPasses(m);
    }
    t.compute += 2.0 * tokens * (elems * EagerRecomputeFactor(l) + loss) / gpu.hbm_bandwidth +
                 fixed * EagerRecomputeFactor(l);
    // DeepSeek-V4's own eager kernels (hyper-connections, RoPE, compressor, indexer, masks, the
    // fp32 shared SwiGLU; Dsv4PytorchTerms::eager_bytes, bytes with backward and recompute).
    if (dsv4) t.compute += tokens * moe_layers * d4.eager_bytes / gpu.hbm_bandwidth;
  }

  const bool full = l.recompute == Recompute::kFull;
  const MeshGroups& g = c.groups;
  // --- TP ---
  if (l.tp > 1 && layers > 0) {
    const Link ltp = RingLink(sys, c.links, g.tp);
    const double per = AllReduceSeconds(t_mb * h * 2.0, l.tp, ltp);
    // Dense layer (AutoModel's Llama-style plan, no SP): the RowwiseParallel o_proj and
    // down_proj all-reduce their outputs (2); in backward every ColwiseParallel module turns
    // its Partial input gradient into a Replicate one on its own (DTensor from_local backward):
    // q, k, v, gate and up, 5 more. Full recompute repeats the forward's 2. MoE layers: 4 (6).
    const double dense_volumes = full ? 9.0 : 7.0, moe_volumes = full ? 6.0 : 4.0;
    t.tp_comm = (double(rp.dense_layers) * dense_volumes + moe_layers * moe_volumes) * n_mb * per;
    // Nemotron-H: only the MLP blocks are split (mixer.up_proj Colwise, mixer.down_proj
    // Rowwise): down_proj's output all-reduce (again under full recompute) and up_proj's input
    // gradient; the embedding is not split.
    if (nemotron) t.tp_comm = double(rp.dense_layers) * (full ? 3.0 : 2.0) * n_mb * per;
    // The vocabulary-parallel embedding all-reduces its output, the ColwiseParallel lm_head its
    // input gradient, and the loss gathers the vocabulary-sharded logits (full_tensor()).
    if (rp.has_embedding && !nemotron) t.tp_comm += n_mb * per;
    if (rp.has_head) {
      t.tp_comm += n_mb * (per + AllGatherSeconds(t_mb * double(m.vocab_size) * 2.0, l.tp, ltp));
    }
  }
  // --- CP ---
  if (l.cp > 1 && layers > 0) {
    // The ring's slowest hop is one GPU's send to its neighbour: NVLink within a scale-up
    // domain, across domains the sending GPU's own NIC (GroupLink's tier: a send/recv pair
    // does not stripe over the node's rails the way NCCL's ring collectives do).
    const double attn_tp = nemotron ? 1.0 : tp;  // NemotronV3Attention is not TP-split
    // DeepSeek-V4 (Dsv4PytorchTerms::cp_bytes): all-gathers of the kv, the pooled kv and the
    // windows per layer and micro-batch, forward (again where recomputed), the differentiable
    // ones reduce-scattered in backward; on the compute stream (exposed). No ring.
    if (dsv4) {
      const Link lcp = RingLink(sys, c.links, g.cp);
      const double cpn = double(l.cp), again = full ? 2.0 : 1.0;
      t.cp_comm = moe_layers * n_mb *
                  (again * AllGatherSeconds(cpn * t_mb * d4.cp_bytes, l.cp, lcp) +
                   ReduceScatterSeconds(cpn * t_mb * d4.cp_bytes, l.cp, lcp) +
                   again * AllGatherSeconds(cpn * t_mb * d4.cp_fwd_only_bytes, l.cp, lcp));
    } else {
      t.cp_comm = RingCpExposedSeconds(t_mb * double(KDim(m) + VDim(m)) / attn_tp * 2.0, GroupLink(sys, g.cp),
                                       t_mb * f.attn_core_flops / attn_tp / core_rate_eff / 3.0, l.cp, full) *
                  attn_layers * n_mb;
    }
    // Qwen3.5's CPAwareGatedDeltaNet (qwen3_5_moe/cp_linear_attn.py _forward_with_cp): the
    // layer input and its output are all-gathered over the CP group (_AllGatherConcatFn, to undo
    // and redo the attention's load balancing), whose backward all-reduces the gathered
    // gradient: per GDN layer and micro-batch 2 all-gathers of cp·T·h·2 bytes forward (again
    // under full recompute) and 2 all-reduces of as many backward, on the compute stream
    // (exposed). fla's CP context passes each rank's chunk state (n_v·d_k·d_v fp32), not counted.
    // Nemotron-H's Mamba-2 blocks (distributed/context_parallel/mamba.py MambaContextParallel):
    // pre_conv_ssm all-to-alls the in_proj output (2·d_in + 2·ng·N + nh) from sequence- to
    // head-parallel, post_conv_ssm the scan output (d_in) back, in BF16, forward and backward
    // (the forward again where the block is recomputed), on the compute stream (exposed).
    if (mamba_layers > 0) {
      const Mamba2Spec& x = m.mamba;
      const Link la = A2aLink(sys, c.links, g.cp);
      const double di = double(x.d_inner());
      const double one =
          AllToAllSeconds(t_mb * (2.0 * di + 2.0 * double(x.n_groups * x.state_size) + double(x.num_heads)) * 2.0, l.cp,
                          la) +
          AllToAllSeconds(t_mb * di * 2.0, l.cp, la);
      t.cp_comm += mamba_layers * n_mb * (full ? 3.0 : 2.0) * one;
    }
    if (gdn_layers > 0) {
      const Link lcp = RingLink(sys, c.links, g.cp);
      const double gathered = double(l.cp) * t_mb * h * 2.0;
      t.cp_comm += gdn_layers * n_mb *
                   ((full ? 2.0 : 1.0) * 2.0 * AllGatherSeconds(gathered, l.cp, lcp) +
                    2.0 * AllReduceSeconds(gathered, l.cp, lcp));
    }
  }
  // --- EP ---
  if (l.ep > 1 && moe_layers > 0) {
    const AutoModelEp e =
        AutoModelEpPass(sys, c.setup.num_gpus, A2aLink(sys, c.links, g.ep), RingLink(sys, c.links, g.ep), m, l, t_mb);
    t.ep_comm = ((full ? 2.0 : 1.0) * e.forward + e.backward) * moe_layers * n_mb;
    // Forward and backward move the same bytes: a recomputed forward adds half of a pair's.
    const double pairs = (full ? 1.5 : 1.0) * moe_layers * n_mb;
    t.ep = EpTraffic{t.ep_comm, e.nvlink * pairs, e.rdma * pairs, t.ep_comm, e.domains, e.rank_copies, e.node_copies};
  }
  // --- PP ---
  const double v = double(std::max<int64_t>(1, c.split.stages_per_rank));
  if (l.pp > 1) {
    // DeepSeek-V4 sends its hc_mult residual streams between stages (model.py get_pipeline_stage_metas).
    const double streams = dsv4 ? double(std::max<int64_t>(1, m.dsv4.hc_mult)) : 1.0;
    const double per = P2pSeconds(t_mb * h * 2.0 * streams, RingLink(sys, c.links, g.pp));
    t.pp_comm = kPpP2pExposedFraction * 2.0 * v * n_mb * per;
    // Of the stage work: compute and the TP, CP and EP communication exposed in the layers.
    t.bubble = double(l.pp - 1) / (v * double(c.mb_per_call)) * (t.compute + t.tp_comm + t.cp_comm + t.ep_comm);
  }
  // --- DP ---
  const double whole = PytorchTpWholeParams(c, rp);  // Nemotron-H: not split by its TP plan
  const double dense_local = (rp.layer_dense + rp.root - whole) / tp + whole;
  const double expert_local = rp.layer_expert / ep;
  if (l.dp_impl == DpImpl::kReplicated) {
    const Link link = RingLink(sys, c.links, g.ddp);
    // torch DDP all-reduces the gradients in the parameters' dtype: bf16 as AutoModel loads
    // the model (torch_dtype bf16), fp32 with fp32_params.
    const double grad_bytes = c.fp32_params ? 4.0 : 2.0;
    const double ar = AllReduceSeconds(grad_bytes * (dense_local + expert_local), g.ddp.n, link);
    const double bwd_mb = t.compute / n_mb * (2.0 / 3.0);
    // The last bucket to fill is the first module's: the input embedding's gradient is done
    // only when the backward ends, and a parameter above the 25 MiB cap is a bucket of its
    // own, so its all-reduce is exposed whole (measured: tests/data/measured/h200_2gpu_ch*).
    const double embedding = rp.has_embedding ? double(m.vocab_size) * h / tp : 0.0;
    const double tail = std::max(kDdpBucketBytes, grad_bytes * embedding);
    t.dp_comm = g.ddp.n > 1 ? std::max(0.0, ar - bwd_mb) + AllReduceSeconds(tail, g.ddp.n, link) +
                                  HiddenCommCost(std::min(ar, bwd_mb), link)
                            : 0.0;
  } else {
    Group gd = g.dp_shard_cp, ge = g.ep_shard;
    if (l.dp_impl == DpImpl::kMegatronFsdp) {
      gd = Group{std::max<int64_t>(1, l.dp) * std::max<int64_t>(1, l.cp), std::max<int64_t>(1, l.tp)};
      ge = gd;
    }
    const Link ld = RingLink(sys, c.links, gd), le = RingLink(sys, c.links, ge);
    const Link lr = RingLink(sys, c.links, g.dp_replicate);
    const double layers_dense = rp.layer_dense / tp, root = rp.root / tp;
    const double first_ag = AllGatherSeconds(2.0 * rp.max_layer_dense / tp, gd.n, ld) +
                            AllGatherSeconds(2.0 * rp.max_layer_expert / ep, ge.n, le);
    const double rs_d = ReduceScatterSeconds(4.0 * dense_local, gd.n, ld);
    const double rs_e = ReduceScatterSeconds(4.0 * expert_local, ge.n, le);
    const double rs_r = AllReduceSeconds(4.0 * dense_local / double(gd.n), g.dp_replicate.n, lr);
    const double rs = rs_d + rs_e + rs_r;
    // Hidden collectives slow the compute they hide behind: `*_cost` is HiddenCommCost were
    // all of it hidden, HiddenShareCost takes the hidden share.
    if (l.pp > 1) {
      const double calls = double(c.grad_accum);
      const double ag_d = AllGatherSeconds(2.0 * dense_local, gd.n, ld);
      const double ag_e = AllGatherSeconds(2.0 * expert_local, ge.n, le);
      const double ag = calls * (ag_d + ag_e);
      const double ag_cost = calls * (HiddenCommCost(ag_d, ld) + HiddenCommCost(ag_e, le));
      t.dp_comm = std::max(0.0, ag - kFsdpOverlapFraction * t.compute) + calls * first_ag + calls * rs +
                  HiddenShareCost(ag, kFsdpOverlapFraction * t.compute, ag_cost);
    } else {
      const bool experts_kept = !l.moe_reshard_after_forward && l.ep > 1 && ge.n > 1;
      const double ag_d = 2.0 * AllGatherSeconds(2.0 * layers_dense, gd.n, ld) + AllGatherSeconds(2.0 * root, gd.n, ld);
      const double ag_e = (experts_kept ? 1.0 : 2.0) * AllGatherSeconds(2.0 * expert_local, ge.n, le);
      // defer_fsdp_grad_sync (FSDP2 set_requires_gradient_sync(False) before the last
      // micro-batch): one reduce-scatter per step instead of one per micro-batch.
      const double rs_calls = c.defer_fsdp_grad_sync && l.dp_impl == DpImpl::kFsdpPerModule ? 1.0 : n_mb;
      // torch FSDP2's root module (embedding, final norm, lm_head) reduce-scatters when the
      // whole backward is done: nothing is left to hide it (measured, h200_2gpu_ch*.jsonl).
      const double rs_root = l.dp_impl == DpImpl::kFsdpPerModule && root > 0
                                 ? std::min(rs_d, ReduceScatterSeconds(4.0 * root, gd.n, ld))
                                 : 0.0;
      const double comm = n_mb * (ag_d + ag_e) + rs_calls * (rs - rs_root);
      const double cost = n_mb * (HiddenCommCost(ag_d, ld) + HiddenCommCost(ag_e, le)) +
                          rs_calls * (HiddenCommCost(rs_d - rs_root, ld) + HiddenCommCost(rs_e, le) +
                                      HiddenCommCost(rs_r, lr));
      t.dp_comm = std::max(0.0, comm - kFsdpOverlapFraction * t.compute) + n_mb * first_ag + rs_calls * rs_root +
                  HiddenShareCost(comm, kFsdpOverlapFraction * t.compute, cost);
    }
  }
  // --- optimizer ---
  const double state = mem.weights + mem.step_gradients + mem.optimizer;
  t.optimizer = gpu.hbm_bandwidth > 0 ? (2.0 * state - mem.step_gradients) / gpu.hbm_bandwidth : 0.0;
  // --- host ---
  // The host issues every micro-batch's layers while the GPU runs them; when it needs longer
  // than the GPU's work (compute, exposed communication, bubble), the GPU waits for the rest.
  // Dense Hugging Face models only, like the eager term above.
  if (!m.is_moe() && !nemotron && rp.dense_layers > 0) {
    const double host = n_mb * double(rp.dense_layers) * HostLayerSecondsOf(l, c.setup.num_gpus);
    t.host = std::max(0.0, host - t.GpuSeconds());
  }
  return t;
}

double HostLayerSecondsOf(const CostView& l, int64_t num_gpus) {
  const HostLayerSeconds& h = num_gpus <= 1                   ? kHostPlain
                              : l.dp_impl == DpImpl::kReplicated ? kHostDdp
                              : l.tp > 1                      ? kHostFsdp2Tp
                                                              : kHostFsdp2;
  return l.recompute == Recompute::kFull ? h.full : l.recompute == Recompute::kSelective ? h.selective : h.none;
}

}  // namespace meshplan::cost
