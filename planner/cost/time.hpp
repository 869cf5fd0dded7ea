#pragma once
/// \file time.hpp
/// Step time of one pipeline rank (seconds). Private to planner/cost.

#include <cstdint>

#include "cost/context.hpp"

namespace meshplan::cost {

/// Small-GEMM efficiency factor in (0, 1]:
///   factor = T/(T + kGemmTokensK0) · w/(w + kGemmWidthK0)
/// T = rows of the GEMM (tokens), w = the TP-sliced width. Assumption, uncalibrated. Now used
/// only with w = 0, for the tokens of the AutoModel attention core; GEMMs use
/// LinearGemmFactor and ExpertGemmFactor (measured).
double GemmSizeFactor(double tokens, double width);
inline constexpr double kGemmTokensK0 = 256.0;
inline constexpr double kGemmWidthK0 = 128.0;

/// One GEMM of a linear layer's training step (forward T x K x N, or its dgrad or wgrad,
/// which move the same FLOP and bytes), on one stream:
///   seconds = max(2·T·K·N / rate, bytes / (share · HBM bandwidth)) + latency
///   bytes = (T·K + K·N) · (2 BF16 | 1 FP8 operands) + T·N · 2 (BF16 output)
/// rate = peak(precision) x MAMF (FLOP/s), HBM bandwidth in bytes/s. Measured on one H200
/// (tools/measure/gemm_size.py, tests/data/measured/h200_gemm_size.jsonl: torch.matmul and
/// torch._scaled_mm replayed from a CUDA graph, T 256-32768, K 2048-8192, N 256-16384, two
/// runs): least squares on log time with the rate fixed at hwdb's MAMF and a free level
/// (large GEMMs sustain 1/1.15 (BF16) and 1/1.20 (FP8) of MAMF, which MatmulEfficiency and
/// the fitted constants carry); rms error 7% (BF16) and 10% (FP8) of the time, against 25%
/// and 37% for GemmSizeFactor. tests/cost/gemm_size_test.cpp refits the four constants.
/// The shares and latencies of other GPUs are assumed equal to H200's (not measured).
inline constexpr double kGemmOperandBwShareBf16 = 0.570;
inline constexpr double kGemmOperandBwShareFp8 = 0.359;
inline constexpr double kGemmLatencyBf16 = 2.93e-6;  ///< seconds per GEMM
inline constexpr double kGemmLatencyFp8 = 2.51e-6;   ///< seconds per GEMM
/// The same model for routed experts as Transformer Engine's grouped GEMM runs them: the
/// experts' GEMMs issued round-robin on 4 compute streams (general_grouped_gemm,
/// transformer_engine/common/util/multi_stream.h num_compute_streams; the default grouped path
/// of the releases Megatron-Bridge's published runs used). Measured on one H200
/// (tools/measure/grouped_gemm.py, tests/data/measured/h200_grouped_gemm.jsonl: 4 and 16
/// experts, 128-8192 tokens each, hidden / expert width 2048/768, 4096/1536, 7168/2048,
/// 2880/2880, fc1 and fc2 forward, dgrad and wgrad, two runs): rms 7% (BF16) and 6% (FP8);
/// the streams overlap one GEMM's fixed cost and memory traffic with the next expert's.
/// The same GEMMs on one stream give back the dense constants above within 10%
/// (tests/cost/gemm_size_test.cpp refits both).
inline constexpr double kGroupedGemmOperandBwShareBf16 = 0.620;
inline constexpr double kGroupedGemmOperandBwShareFp8 = 0.421;
inline constexpr double kGroupedGemmLatencyBf16 = 2.01e-6;  ///< seconds per GEMM
inline constexpr double kGroupedGemmLatencyFp8 = 1.82e-6;   ///< seconds per GEMM
/// Seconds of one GEMM of `tokens` x `k` x `n` (above); `grouped`: an expert GEMM of a
/// grouped GEMM (the kGroupedGemm* constants). 0 when a size or the rate is not positive.
double GemmSeconds(double tokens, double k, double n, double rate, double hbm_bandwidth, bool fp8,
                   bool grouped = false);
/// Achieved fraction of `rate` over the dense GEMMs of one decoder layer at T tokens per
/// micro-batch: Σ FLOP / rate ÷ Σ GemmSeconds over q/k/v (K = h, N = (q + 2k)/tp), the
/// output projection (K = o/tp, N = h) and the MLP's up/gate (K = h, N = 2f/tp) and down
/// (K = f/tp, N = h) projections; f = the dense FFN width, or for MoE models the shared
/// experts' width (none: attention only). In (0, 1]; 1 without HBM bandwidth or GEMMs.
double LinearGemmFactor(const ModelSpec& model, double tokens, double tp, double rate, double hbm_bandwidth,
                        bool fp8);
/// Achieved fraction of `rate` over one routed expert's GEMMs (grouped): fc1 (K = h,
/// N = 2·f_e/etp) and fc2 (K = f_e/etp, N = h) at `tokens` per local expert. In (0, 1]; 1
/// without HBM bandwidth, tokens or experts.
double ExpertGemmFactor(const ModelSpec& model, double tokens, double etp, double rate, double hbm_bandwidth,
                        bool fp8);

/// Fraction of FSDP all-gather / reduce-scatter time that prefetch can hide behind the
/// compute of the same step. Assumption, uncalibrated.
inline constexpr double kFsdpOverlapFraction = 0.8;
/// Communication hidden behind compute is not free: NCCL's kernels hold SMs (one CTA per
/// channel) and move every byte through HBM, so the kernels that hide a collective run slower
/// while it is in flight, and the collective runs slower beside them. Measured on 2 H200
/// (tools/measure/overlap.py, tests/data/measured/h200_overlap*.jsonl: BF16 8192^3 GEMM,
/// causal flash attention fwd+bwd, residual add, each beside a 512 MiB all-gather,
/// reduce-scatter or all-to-all): with s_compute and s_comm the two slowdowns, each second of
/// hidden collective costs kappa = s_comm·(1 − 1/s_compute) seconds of extra step time.
/// kappa at the full NVLink rate (busbw 246-297 GB/s): median 0.266 of 9 points (0.17-0.43);
/// with NCCL_MAX_NCHANNELS 8 (112-134 GB/s) 0.161, with 2 (29-36 GB/s) 0.046: the cost
/// follows the bytes moved, so a link of busbw B below kHiddenCommRefBusbw costs
/// kHiddenCommKappa·B/kHiddenCommRefBusbw (no faster link was measured: not extrapolated
/// above). tests/cost/megatron_runtime_test.cpp reproduces the constants from the data.
inline constexpr double kHiddenCommKappa = 0.266;
inline constexpr double kHiddenCommRefBusbw = 257e9;  ///< bytes/s: median busbw of those 9 points
/// Extra step time (s) when `seconds` of a collective on `link` are hidden behind compute:
/// seconds · kHiddenCommKappa · min(1, link busbw / kHiddenCommRefBusbw). 0 for seconds <= 0.
double HiddenCommCost(double seconds, const Link& link);

/// Exposed seconds of one layer's context-parallel ring for one micro-batch under the PyTorch
/// runtime (AutoModel's torch context_parallel: torch/distributed/tensor/experimental/
/// _attention.py, the ring of Liu et al. 2023 "Ring Attention with Blockwise Transformers"):
/// cp steps each compute the attention of one query chunk against one K/V chunk while the next
/// chunk of `chunk_bytes` (T·(d_K+d_V)/tp·2) is passed on over `link`; cp−1 transfers, each
/// hidden only under the one step's compute, forward_core_seconds / cp (the layer's forward
/// attention core of the rank, load-balanced over the steps). Exposed per step
/// max(0, transfer − chunk compute); backward passes twice the bytes (K, V and their gradients)
/// under twice the compute, full recompute repeats the forward: (full ? 4 : 3)·(cp−1)·that.
/// 0 at cp <= 1. Throws nothing.
double RingCpExposedSeconds(double chunk_bytes, const Link& link, double forward_core_seconds, int64_t cp, bool full);
/// The part of `cost_all_hidden` (HiddenCommCost summed over a collective's parts, as if all
/// `comm` seconds were hidden) for the share of `comm` that `window` seconds of compute hide:
/// cost_all_hidden · min(comm, window) / comm; 0 when comm <= 0.
inline double HiddenShareCost(double comm, double window, double cost_all_hidden) {
  return comm > 0 ? cost_all_hidden * (comm < window ? comm : window) / comm : 0.0;
}
/// Fraction of pipeline p2p time left exposed (the rest overlaps compute) in AutoModel's
/// torch.distributed.pipelining schedules (RankTime). Assumption. Megatron-Core layouts are
/// priced by their schedule instead (MegatronPipelineComm).
inline constexpr double kPpP2pExposedFraction = 0.2;

/// PyTorch scaled_dot_product_attention (the AutoModel attention path), causal, BF16: achieved
/// fraction of the BF16 dense peak over forward + backward. Measured on H200 with torch 2.11
/// (tools/measure/kernels.py, tests/data/measured/h200_kernels.jsonl): head dim 128, 32-64
/// heads, 4096-8192 tokens: 0.41-0.46 (forward alone 0.59-0.64); head dim 64: 0.33-0.36.
/// The median of the head-dim-128 points; used for every GPU (no other GPU measured).
inline constexpr double kSdpaAttentionEfficiency = 0.43;

/// AutoModel trains Hugging Face decoders in eager PyTorch: RMSNorm in fp32 op by op, RoPE,
/// SwiGLU, residual adds, q/k norms, each a chain of HBM-bound kernels, forward and autograd
/// backward, and a loss that upcasts the logits to fp32. Their GPU time, measured per decoder
/// layer with torch.profiler on H200 (tools/measure/eager_profile.py,
/// tests/data/measured/h200_eager_profile.jsonl: 6 Llama / Qwen2 / Qwen3 configs, 8192 tokens,
/// kernels that are neither GEMMs nor attention), expressed as 2-byte element passes per token
/// at the HBM peak and fitted by least squares to h, f and (q + kv) of models with q/k norms:
/// within 5% on all six. Per token per layer, forward + backward:
///   kEagerHiddenPasses·h + kEagerFfnPasses·f + kEagerQkNormPasses·(q + kv)·[qk_norm].
/// The lm_head's loss path (fp32 upcast, cross entropy, its backward): kEagerLossVocabPasses·V
/// per token (median of the six, 32.9-38.8). tests/cost/eager_ops_test.cpp refits both from the
/// data. Dense models only: AutoModel's MoE models are its own Transformer Engine implementations.
inline constexpr double kEagerHiddenPasses = 341.4;
inline constexpr double kEagerFfnPasses = 15.8;
inline constexpr double kEagerQkNormPasses = 159.2;
inline constexpr double kEagerLossVocabPasses = 35.7;
/// Eager element passes per token of one decoder layer of a dense `model`, forward + backward,
/// on a TP rank: kEagerHiddenPasses·h (norms and residual adds are not split: AutoModel's
/// plans have no sequence parallelism) + (kEagerQkNormPasses·(q + kv) with q/k norms +
/// kEagerFfnPasses·f) / tp. Used by RankTime and the search's lower bound alike.
double EagerLayerPasses(const ModelSpec& model, double tp);
/// 4/3 when a recompute mode repeats the forward's elementwise ops (a third of forward +
/// backward), else 1.
inline double EagerRecomputeFactor(const CostView& layout) {
  return layout.recompute == Recompute::kNone ? 1.0 : 4.0 / 3.0;
}

/// AutoModel's own MoE decoder layers (nemo_automodel/components/moe/: layers.py Gate and MoE,
/// experts.py GroupedExpertsDeepEP with torch._grouped_mm, megatron/moe_utils.py permute,
/// unpermute and the torch.compile'd weighted SwiGLU; Transformer Engine RMSNorm), the kernels
/// that are neither GEMMs nor attention, measured per EP rank on one H200 with plain-torch
/// reimplementations (tools/measure/moe_layer.py, tests/data/measured/h200_moe_layer.jsonl:
/// Mixtral-8x7B, Qwen3-30B-A3B with 16 and 128 local experts, DeepSeek-V3 with 4 and 32, 4096
/// and 8192 tokens, forward + backward, two runs), expressed as 2-byte element passes at the
/// HBM peak (median over the 20 points of each part; spread in brackets):
///   per token and hidden element: two RMSNorms and two residual adds  kMoeNormAddPasses [35-40]
///   per routed token copy and hidden element: permute (index gather)  kMoePermutePasses [7.9-10.1]
///     and unpermute (fp32 scatter-add, bf16 cast)                      kMoeUnpermutePasses [21.8-29.8]
///   per routed token copy and expert FFN element: weighted SwiGLU     kMoeActPasses [41.5-56.0]
///   router (gate GEMM, score function, top-k, renormalise, routing bookkeeping): least
///     squares over its 20 points, kMoeRouterFixedSeconds per MoE layer per micro-batch plus
///     kMoeRouterPasses per token and routed expert (within 35% of each point; 1-3% of a layer).
/// The measured permute and unpermute are the unfused ones (GroupedExperts' torch_mm path, which
/// AutoModel runs without EP: x[sorted ids], fp32 scatter_add_). With EP AutoModel's DeepEP /
/// HybridEP path uses Transformer Engine's fused permute and unpermute (init_token_dispatcher:
/// moe_permute_fusion=True), not measured (not installed there): counted instead as
/// kMoeFusedPermutePasses(k). The shared experts' eager silu · up takes the dense kEagerFfnPasses. tests/cost/moe_ops_test.cpp keeps the constants equal to the data.
inline constexpr double kMoeNormAddPasses = 38.7;
inline constexpr double kMoePermutePasses = 9.0;
inline constexpr double kMoeUnpermutePasses = 24.1;
inline constexpr double kMoeActPasses = 47.3;
inline constexpr double kMoeRouterPasses = 640.0;
inline constexpr double kMoeRouterFixedSeconds = 1.32e-4;
/// Median achieved time of single elementwise kernels over their ideal HBM time on H200
/// (tests/data/measured/h200_kernels.jsonl, tests/cost/megatron_runtime_test.cpp).
inline constexpr double kElementwiseSlowdown = 1.48;
/// Element passes per routed token copy and hidden element of Transformer Engine's fused
/// permute and unpermute, forward + backward, counted: the permute writes each copy after
/// reading its token (2), its backward sums a token's k copies (1 + 1/k), the unpermute sums
/// them (1 + 1/k) and its backward spreads the token gradient back (1 + 1/k): 5 + 3/k, at
/// kElementwiseSlowdown of the HBM peak.
inline double kMoeFusedPermutePasses(double top_k) { return (5.0 + 3.0 / top_k) * kElementwiseSlowdown; }
/// Mixtral has no AutoModel implementation: AutoModel trains it as the Hugging Face model
/// (transformers MixtralSparseMoeBlock, experts_implementation grouped_mm in transformers 5.17).
/// Its layer's eager kernels, measured like the dense ones (tools/measure/eager_profile.py
/// --models, tests/data/measured/h200_eager_profile_moe.jsonl, 8192 tokens), beyond the dense
/// layer's norm, RoPE and residual passes (kEagerHiddenPasses·h, kEagerQkNormPasses·(q + kv)):
/// per token, kHfMoeCopyFfnPasses·k·f_e + kHfMoeCopyHiddenPasses·k·h, solved exactly from the
/// two Hugging Face MoE decoders measured (Mixtral-8x7B and Qwen3-30B-A3B's HF class; no third
/// to check it against). tests/cost/moe_ops_test.cpp solves them again from the data.
inline constexpr double kHfMoeCopyFfnPasses = 92.7;
inline constexpr double kHfMoeCopyHiddenPasses = 71.1;
/// Whether AutoModel trains `model` with a Hugging Face MoE block (Mixtral) rather than its own
/// MoE implementation (DeepSeek-V3, Kimi-K2, Qwen3-MoE, GPT-OSS: nemo_automodel/components/models/).
inline bool HfMoeModel(const ModelSpec& model) { return model.architecture == Architecture::kMixtral; }
/// Eager element passes per token of one MoE decoder layer, forward + backward, on one EP rank
/// under balanced routing (each rank computes T·k token copies): for AutoModel's own layers
/// kMoeNormAddPasses·h + k·P·h + k·kMoeActPasses·f_e + kMoeRouterPasses·E +
/// kEagerFfnPasses·f_shared, P = kMoePermutePasses + kMoeUnpermutePasses at ep 1 (torch path),
/// kMoeFusedPermutePasses(k) with EP and a flex dispatcher (DeepEP / HybridEP path; AutoModel's
/// torch dispatcher runs the ep 1 code on the gathered tokens); for a Hugging Face MoE model
/// (HfMoeModel) the dense layer's h and q/k-norm passes + kHfMoeCopyFfnPasses·k·f_e +
/// kHfMoeCopyHiddenPasses·k·h. The router's fixed time is not included
/// (kMoeRouterFixedSeconds per layer per micro-batch).
double MoeLayerPasses(const ModelSpec& model, int64_t ep, TokenDispatch dispatcher = TokenDispatch::kFlex);
/// Eager element passes per token of a dense decoder layer of a MoE model AutoModel runs with
/// its own implementation (DeepSeek-V3's first layers): kMoeNormAddPasses·h + kEagerFfnPasses·f/tp.
double MoeModelDenseLayerPasses(const ModelSpec& model, double tp);
/// Eager element passes per token of one Gated DeltaNet mixer under AutoModel (Qwen3-Next's
/// Qwen3NextFp32GatedDeltaNet, Qwen3.5's CPAwareGatedDeltaNet; the causal-conv1d and
/// flash-linear-attention kernels they call), forward + backward: 3 · E_fwd · kElementwiseSlowdown,
/// the backward moving about twice the forward's bytes (as HybridBlockElements assumes), E_fwd the
/// 2-byte element reads and writes per token of the forward's non-GEMM kernels (fp32 as two),
/// qk = n_k·d_k, v = n_v·d_v, qk' = n_v·d_k, C = kGdnChunk:
///   Qwen3-Next only: fix_query_key_value_ordering's copies of q, k, v, z and b, a (the reshapes
///     cannot view the split): 2·(2qk + 2v) + 4·n_v; the q, k, v concat 2·(2qk + v)
///     (Qwen3.5's separate projections feed the conv and the gates without copies)
///   causal conv1d: read and write 2·(2qk + v)
///   beta = sigmoid(b) and the fp32 gate (a.float(), + dt_bias, softplus, · −exp(A_log)): 17·n_v
///   repeat_interleave of q and k to the value heads (or fla's input_guard copies of their views):
///     read 2qk, write 2qk'; input_guard's copy of v: 2v
///   fla: the q/k L2 norm 4qk', the fp32 chunk-local cumsum of g 4·n_v, the chunk kernels as
///     HybridBlockElements counts them (read q, k, v 2qk' + v; A written and read 2·C·n_v; w, u
///     written and read 2·(qk' + v); the fp32 chunk states 4·n_v·d_k·d_v/C; v_new 2v; o v)
///   FusedRMSNormGated: read o and z, write y: 3v.
/// The layer's norms and residual adds are not included. Counted from the source, not measured.
double GdnMixerPasses(const ModelSpec& model);

/// The prob-weighted squared ReLU's traffic as a share of the weighted SwiGLU's
/// (kMoeActPasses, measured): relu2_deepep (components/moe/experts.py: F.relu(x).pow(2) ·
/// probs) reads f_e and writes f_e per routed copy where the SwiGLU reads 2·f_e and writes
/// f_e, so 2/3 of its bytes, forward and backward alike. Counted, not measured.
inline constexpr double kRelu2ActShare = 2.0 / 3.0;
/// Eager element passes per token of one Nemotron-H block under AutoModel (nemotron_v3,
/// single-block layers), forward + backward: half a MoE layer's norms and adds
/// (kMoeNormAddPasses·h / 2: one norm, one add); a Mamba-2 mixer's mamba_ssm kernels as
/// HybridBlockElements counts them (3x its forward, at kElementwiseSlowdown); a relu2 MLP
/// kEagerFfnPasses·f / tp (relu and pow, as the SwiGLU's two ops; TP-split); a MoE block as
/// MoeLayerPasses with the permute on the experts' input width (moe_latent_size under
/// LatentMoE) and the activation at kRelu2ActShare; attention adds nothing beyond its norm
/// (no RoPE; the kernel is counted as the core). The router's fixed time is not included.
/// Assumptions built from the measured AutoModel constants, not measured on Nemotron-H.
double NemotronBlockPasses(const ModelSpec& model, MixerKind mixer, MlpKind mlp, int64_t ep, TokenDispatch dispatcher,
                           double tp);

/// Expected distinct destination groups of one token under AutoModel's FakeBalancedGate with
/// noise 0 (components/moe/layers.py FakeBalancedGate.forward: token t of a rank's batch gets
/// experts (t·k + j) mod E, j < k). Experts sit on the EP ranks in blocks of E/ep consecutive
/// ones (GroupedExperts: experts_start_idx = ep_rank · E/ep), and the EP ranks on the nodes in
/// blocks of `ranks_per_group` (the EP group is innermost and node-contiguous: automodel.md 3),
/// so a group holds E·ranks_per_group/ep consecutive experts. The start t·k mod E repeats with
/// period P = E / gcd(E, k); the average over one period of the distinct groups among the k
/// experts is exact for a batch of a multiple of P tokens (P <= E, far fewer than a batch's
/// thousands of tokens otherwise). ranks_per_group 1: distinct ranks; the domain's GPUs:
/// distinct nodes. 1 for ep <= ranks_per_group (one group holds every expert). Compare
/// FlexDispatchCopies (uniform routing).
double ConsecutiveDispatchCopies(int64_t num_experts, int64_t top_k, int64_t ep, int64_t ranks_per_group);

/// The NIC rate DeepEP's and HybridEP's internode figures were measured at (DeepEP: "CX7
/// InfiniBand 400 Gb/s ... ~50 GB/s"), bytes/s; used where the system names no NIC.
inline constexpr double kDeepEpNicRate = 50e9;

/// AutoModel's EP dispatch and combine of one MoE layer for one micro-batch on one rank.
struct AutoModelEp {
  double forward = 0;   ///< s, dispatch + combine of the forward pass (wall: its bottleneck link + latency)
  double backward = 0;  ///< s, the same of the backward pass (the combine's gradient is dispatched, and so on)
  double nvlink = 0;    ///< s NVLink is busy over forward + backward (flex backends)
  double rdma = 0;      ///< s the NICs are busy over forward + backward (flex backends)
  int64_t domains = 1;        ///< NVLink domains the EP group spans
  double rank_copies = 0;     ///< copies of a token to distinct ranks (torch: every rank, ep)
  double node_copies = 0;     ///< across domains: to distinct domains (flex; 0 inside one)
};
/// AutoModelEp of `tokens` tokens of `model` under `view` (its ep, dispatcher, flex_backend and
/// routing) on a `num_gpus`-GPU job of `system`; `a2a_link` / `ring_link` the EP group's links.
///   flex (GroupedExpertsDeepEP through Megatron-Core's MoEFlexTokenDispatcher,
///   megatron/fused_a2a.py): each token goes once per destination rank inside an NVLink
///   domain and once per destination node across nodes (forwarded over NVLink there), not once
///   per routed expert; the call blocks the compute stream (async_finish waits at once, the
///   host waits for the received counts), so nothing overlaps it. Copies per token:
///   RoutedDispatchCopies for the learned gate (GroupLimitedDispatchCopies where the model's
///   router is group-limited, else FlexDispatchCopies: k distinct experts uniformly at random: a rank
///   of E/ep experts gets none with probability C(E − E/ep, k) / C(E, k), the hypergeometric
///   form of 1 − (1 − 1/ep)^k for draws without replacement), ConsecutiveDispatchCopies for the
///   fake gate. Bandwidths, each backend its own published ones (the Megatron-Core flex pricing's
///   figures, time_megatron.cpp): inside one domain tokens·rank_copies·h·2 bytes at
///   kDeepEpNvlink*Share / HybridEpNvlinkShare(ep) of the NVLink bandwidth; across domains the
///   logical RDMA bytes tokens·node_copies·h·2 at DeepEpRdmaShare / HybridEpRdmaShare(ep) of
///   the NIC (kDeepEpNicRate without one), concurrently with the NVLink forward of the rank
///   copies; the slower sets the time; + the link's latency per call.
///   torch (GroupedExperts.forward): forward all-gathers the bf16 tokens over the EP group
///   (ep·T·h·2 bytes gathered) and all-reduces the fp32 output (ep·T·h·4); backward all-reduces
///   the output's gradient (fp32) and, for the all-gather (_AllGatherConcatVarlenFn.backward),
///   the bf16 input gradient: ring collectives on `ring_link`.
/// All zero for ep <= 1.
AutoModelEp AutoModelEpPass(const SystemSpec& system, int64_t num_gpus, const Link& a2a_link, const Link& ring_link,
                            const ModelSpec& model, const CostView& view, double tokens);

/// Host (CPU) seconds per decoder layer per micro-batch of AutoModel's eager Hugging Face
/// decoder layers, forward + backward (+ the recomputed forward), for no / full / selective
/// activation checkpointing: the Python of the modules, PyTorch's dispatcher (DTensor's under
/// TP), the wrapper's hooks and the kernel launches. Measured on an H200 host (torch 2.11,
/// transformers 5.17, 2 GPUs; tools/measure/host_overhead.py, tests/data/measured/
/// h200_host_overhead_*.jsonl) as the slope of the step time of a Llama decoder whose kernels
/// take microseconds (h 256, 256 tokens) against its layer count (4-32), least squares over
/// all points of two runs (the two runs' TP 2 slopes differ by up to 30%: host noise).
/// tests/cost/host_overhead_test.cpp refits them from the data.
struct HostLayerSeconds {
  double none, full, selective;
};
inline constexpr HostLayerSeconds kHostPlain{2.92e-3, 7.60e-3, 11.82e-3};   ///< one GPU, no wrapper
inline constexpr HostLayerSeconds kHostDdp{3.74e-3, 9.36e-3, 11.94e-3};     ///< DDP
inline constexpr HostLayerSeconds kHostFsdp2{7.80e-3, 12.60e-3, 16.97e-3};  ///< FSDP2 per layer
/// FSDP2 with DTensor TP (AutoModel's Llama plan, no SP), measured at TP 2 and used for every
/// TP > 1 (an assumption: DTensor's dispatch cost per op does not depend on the group size).
inline constexpr HostLayerSeconds kHostFsdp2Tp{19.06e-3, 27.96e-3, 26.31e-3};
/// The host seconds per decoder layer per micro-batch of an AutoModel layout on `num_gpus`:
/// kHostPlain on one GPU, kHostDdp for DDP, kHostFsdp2Tp with TP > 1, else kHostFsdp2
/// (MegatronFSDP, HSDP and CP assumed alike, unmeasured); by its recompute mode.
double HostLayerSecondsOf(const CostView& layout, int64_t num_gpus);

/// Dense peak FLOP/s of PeakPrecision(gpu, precision) (hwdb gpus/*.yaml): FP8 falls back to
/// BF16 on GPUs without FP8, FP4 to FP8 on GPUs without FP4.
double PeakFlops(const GpuSpec& gpu, Precision precision);
/// Best-GEMM efficiency (MAMF / peak) for the precision actually used.
double MatmulEfficiency(const GpuSpec& gpu, Precision precision);

/// Step time of PP rank `pp_rank`; `mem` is that rank's memory (for the optimizer step).
/// AutoModel (PyTorch) layouts; Megatron-Bridge layouts use MegatronTime below.
TimeBreakdown RankTime(const Ctx& c, int64_t pp_rank, const MemoryBreakdown& mem);

// --- Megatron-Core step time (time_megatron.cpp) ---

/// FlashAttention's achieved fraction of the BF16 dense peak over forward + backward.
/// Source: FlashAttention-3 (Shah et al. 2024, section 4.1, Figs. 5-7): causal, head dim 128,
/// BF16 on H100, 4k-16k tokens: forward ~610-660 TFLOP/s, backward ~450-500 TFLOP/s of 989;
/// weighted 1:2 (forward:backward FLOP) ~0.52. Used for every GPU (cuDNN attention on
/// Blackwell reaches a similar fraction); not fitted.
inline constexpr double kFlashAttentionEfficiency = 0.52;
/// Attention efficiency at head dimension `head_dim` relative to head dimension 128 (the
/// constants above): 1 from 128 up, 0.81 at 64 and below, linear in between. Measured on H200
/// with torch 2.11's FlashAttention backend at 64 heads, forward + backward
/// (tests/data/measured/h200_kernels.jsonl): head dim 64 / head dim 128 = 324 / 407 TFLOP/s at
/// 4096 tokens (0.796) and 355 / 433 at 8192 (0.820); the mean. Smaller heads do fewer FLOP
/// per byte of Q, K, V loaded and per softmax step.
double AttentionHeadDimFactor(int64_t head_dim);
/// Rate of the fused attention core (cuDNN / flash) over `seq_len`-token sequences split over
/// `cp` context-parallel ranks, against its rate on one causal 8192-token sequence (1 there).
/// A query tile streams L/T key tiles and pays a fixed prologue, epilogue and rescaling, and
/// causal attention also a half-wasted diagonal tile, so the achieved rate is about
/// L/(L + K): K = kAttnCausalK for causal attention of length L, kAttnFullK for a block of L
/// keys with no mask. Without CP: causal over seq_len. With Transformer Engine's P2P ring
/// (load-balanced, 2·cp chunks), a rank's share 1/cp of its core runs causal over seq/cp
/// tokens (the diagonal step), the rest as unmasked blocks of seq/(2·cp) keys; the times add.
/// Dimensionless; > 1 above 8192 tokens.
double AttentionLengthFactor(int64_t seq_len, int64_t cp);
/// K of AttentionLengthFactor, tokens. Measured on H200 with PyTorch's cuDNN attention (the
/// fused attention Transformer Engine runs), BF16, head dim 128, 32 heads, 32768 tokens per
/// call, forward + backward (tools/measure/attn_len.py, tests/data/measured/h200_attn_len.jsonl):
/// causal 317 TFLOP/s at 1024 tokens and 464 at 16384 give K = 520; unmasked 414 at 1024 and
/// 476 at 8192 give K = 178 (two-point solutions; a test keeps them equal to the data and checks
/// every point from 512 tokens within 10%).
inline constexpr double kAttnCausalK = 520.0;
inline constexpr double kAttnFullK = 178.0;
/// Bytes per logit of the fused cross-entropy forward + backward on the lm_head rank: read
/// the BF16 logits, write FP32 softmax statistics and BF16 gradients (2 + 4 + 4 + 2 + 4).
inline constexpr double kCrossEntropyBytesPerLogit = 16.0;
/// Kernels per decoder layer, forward + backward, Megatron-Core with Transformer Engine
/// (counted from a layer's fused ops: norm+GEMM, RoPE, attention, GEMM, add, norm+GEMM,
/// SwiGLU, GEMM, add, about twice as many in backward, plus FP8 amax/cast kernels).
/// MoE layers add the router, top-k, permute, two all-to-alls, grouped GEMMs, unpermute.
/// Estimates; their time per kernel is the fitted MegatronTimeFit::kernel_overhead.
inline constexpr double kDenseLayerKernels = 40.0;
inline constexpr double kMoeLayerKernels = 90.0;
/// How those split over the parts a Transformer Engine CUDA graph can capture
/// (model.cuda_graph_scope): the attention block (norm, QKV, RoPE, core, projection, add:
/// about half of a dense layer), the dense MLP (the other half), and in MoE layers the
/// router (GEMM, softmax / top-k, aux loss) and the dispatch preprocessing (token counts,
/// permutation maps). Estimates, like the totals.
inline constexpr double kAttnBlockKernels = 20.0;
inline constexpr double kMlpBlockKernels = 20.0;
inline constexpr double kMoeRouterKernels = 10.0;
inline constexpr double kMoePreprocessKernels = 10.0;
/// A kernel replayed from a CUDA graph skips the host launch but keeps the GPU-side gap
/// between kernels: a graphed kernel costs this share of MegatronTimeFit::kernel_overhead.
/// Measured on H200 with torch 2.11 (tools/measure/launch.py,
/// tests/data/measured/h200_launch.jsonl): chains of tiny kernels cost 9.7-16.7 us each
/// launched from Python and 1.1-2.8 us each replayed from a graph, ratios 0.114, 0.125 and
/// 0.165; the median. Not fitted.
inline constexpr double kGraphedKernelShare = 0.125;
/// GEMM kernels per local expert of a MoE layer, forward + backward: fc1 and fc2 forward, and
/// the data- and weight-gradient GEMM of each in backward. Transformer Engine's GroupedLinear
/// (Megatron-Core moe_grouped_gemm) runs one cuBLAS GEMM per local expert
/// (general_grouped_gemm over multiple streams), so these kernels grow with
/// num_experts / ep_size and dominate small-EP layouts of many-expert models.
inline constexpr double kGroupedGemmKernelsPerExpert = 6.0;
/// Share of the TP communication that Transformer Engine's userbuffer overlap leaves exposed
/// when the layer's GEMMs are long enough to hide it (the first chunk of each pipelined
/// GEMM cannot overlap). Assumption, not fitted.
inline constexpr double kTpOverlapExposedFraction = 0.15;

/// torch.distributed point-to-point operations the host issues per virtual stage per
/// micro-batch in Megatron-Core's pipeline schedules: the forward's receive of its input and
/// send of its output, the backward's receive of the output gradient and send of the input
/// gradient (megatron/core/pipeline_parallel/p2p_communication.py, _p2p_ops /
/// _batched_p2p_ops: one isend or irecv per tensor). Each is a ProcessGroupNCCL call that
/// launches an NCCL kernel; counted, and priced at kHostSecondsPerKernel each (an assumption:
/// the eager kernels' measured host rate).
inline constexpr double kPpP2pOpsPerStageMicrobatch = 4.0;
/// Warm-up forwards of pipeline rank 0 in Megatron-Core's schedules (get_pp_rank_microbatches,
/// megatron/core/pipeline_parallel/schedules.py): pp − 1 for 1F1B (vpp 1); with interleaving
/// 2(pp − 1) + (vpp − 1)·microbatch_group_size_per_vp_stage (default pp), one more with
/// overlap_moe_expert_parallel_comm; at most vpp·micro_batches (all in warm-up). The cool-down
/// runs as many backwards. 0 without PP.
int64_t MegatronWarmupMicrobatches(int64_t pp, int64_t vpp, int64_t micro_batches, bool ep_overlap);
/// Pipeline point-to-point cost of one rank per optimizer step, seconds.
struct MegatronPpComm {
  double exchanges = 0;  ///< sends of activations or gradients: 2 per virtual stage per micro-batch
  double blocking = 0;   ///< of those, the ones the schedule waits for before computing on
  double exposed = 0;    ///< blocking · one send's time
  double hidden = 0;     ///< seconds of sends overlapped with compute (overlap_p2p_comm)
  double hidden_cost = 0;  ///< HiddenCommCost of `hidden`
  double sync_gap = 0;   ///< GPU idle after each torch.cuda.synchronize (batch_p2p_sync)
  double host = 0;       ///< host seconds issuing the p2p operations
  /// The step-time term: exposed + hidden_cost + sync_gap (host goes to the host bound).
  double Seconds() const { return exposed + hidden_cost + sync_gap; }
};
/// The pipeline p2p of one rank of Megatron-Core's 1F1B / interleaved 1F1B schedule
/// (schedules.py forward_backward_pipelining_with(out)_interleaving, p2p_communication.py):
/// `per_send` seconds per send of one micro-batch's activations (P2pSeconds: latency +
/// bytes / bandwidth of the PP link), exchanges = 2·vpp·micro_batches.
///   overlap_p2p_comm (Megatron-Bridge sets it with VPP > 1, comm_overlap.py): the steady 1F1B
///     phase posts each receive one step ahead and waits for each send one step later, so its
///     transfers run beside the compute (hidden, at HiddenCommCost on `link`); the warm-up and
///     cool-down (overlap_p2p_comm_warmup_flush off, its default, which no Megatron-Bridge
///     recipe sets) call send_forward_recv_forward / send_backward_recv_backward without
///     overlap and wait for the transfer before the next chunk: 2·MegatronWarmupMicrobatches
///     sends exposed, rank 0's count (the pipeline's critical path runs through it).
///   otherwise (1F1B: batch_p2p_comm): every exchange waits for its transfer (all exposed), and
///     with `batch_sync` (batch_p2p_comm with batch_p2p_sync, Megatron-Core's default true) a
///     torch.cuda.synchronize() follows each exchange (p2p_communication.py _communicate), so
///     the GPU stands idle until the host issues the next kernel: kHostSecondsPerKernel per
///     exchange.
///   `host_issues` (not under a full-iteration CUDA graph, which captures forward_backward_func
///     with its p2p calls: megatron/core/full_cuda_graph.py FullCudaGraphWrapper): the host
///     issues kPpP2pOpsPerStageMicrobatch operations per virtual stage per micro-batch at
///     kHostSecondsPerKernel each.
/// All zero for pp <= 1.
MegatronPpComm MegatronPipelineComm(int64_t pp, int64_t vpp, int64_t micro_batches, double per_send, const Link& link,
                                    bool overlap_p2p, bool batch_sync, bool ep_overlap, bool host_issues);
/// Largest number of decoder layers (MTP layers included) of one virtual pipeline stage of
/// `split` (a recipe's given layout, or OwnStageSplit with `places` and `mtp_layers` on the last
/// stage). Megatron-Core's split gives each virtual stage a whole number of layers, so with
/// account_for_embedding/loss_in_pipeline_split or an uneven layout some stages hold one layer
/// more than the rank's mean: those set the pace of the pipeline fill and drain.
int64_t MegatronMaxStageLayers(int64_t num_layers, const StageSplit& split, SplitPlaces places, int64_t mtp_layers);

/// Kernels of one decoder layer per micro-batch, forward + backward (before recompute), by
/// layer kind: `dense` / `moe` weighted for their GPU-side cost (graphed ones at
/// kGraphedKernelShare), `dense_host` / `moe_host` the ones the host launches (graphed ones
/// excluded). MoE layers: kMoeLayerKernels + E/ep · kGroupedGemmKernelsPerExpert; the parts
/// `layout`'s CUDA graphs capture (cuda_graph_impl, cuda_graph_scope) as in MegatronTerms.
/// `moe_pre` / `moe_pre_host`: the part of `moe` / `moe_host` a MoE layer runs before its
/// dispatcher's host sync (attention block, router, dispatch preprocessing: kAttnBlockKernels +
/// kMoeRouterKernels + kMoePreprocessKernels, less what the graphs capture).
struct MegatronLayerKernels {
  double dense = 0, moe = 0, dense_host = 0, moe_host = 0;
  double moe_pre = 0, moe_pre_host = 0;
};
/// Share of a layer's kernels (and of its GPU work) that its forward runs: backward runs a
/// data- and a weight-gradient kernel per forward GEMM and about two kernels per forward
/// elementwise op (kDenseLayerKernels), so forward is one third, as for the FLOP (2 of 6 per
/// parameter per token) and the HBM traffic (MegatronLayerElements).
inline constexpr double kForwardShare = 1.0 / 3.0;
/// The dropless MoE host syncs of one pipeline rank per step (CostView::moe_host_sync).
/// Megatron-Core's dispatchers wait on the host, in every MoE layer's forward, for the token
/// counts of that micro-batch (token_dispatcher.py MoEAlltoAllTokenDispatcher:
/// _maybe_dtoh_and_synchronize -> d2h_event.synchronize() at cuda_sync_point
/// "before_ep_alltoall"; flex: HybridEP / DeepEP size their buffers from the counts). When the
/// host resumes the GPU has nothing queued past the router, so the host cannot run ahead
/// across that point: each forward MoE layer is a segment that starts with the GPU waiting for
/// the host. A segment has two phases, A from the sync to the end of the layer (dispatch,
/// experts, combine) and B the next layer's attention, router and dispatch preprocessing up to
/// its sync; with host issue times H_A, H_B and GPU times G_A, G_B the segment takes
/// max(G_A + G_B, H_A + G_B, H_A + H_B) (the GPU cannot start a kernel before the host issues
/// it), host-bound by max(0, H_A − G_A, H_A + H_B − G_A − G_B) (MegatronSegmentHostBound).
/// Per segment, seconds at datasheet rates (the GPU parts before the fitted constants).
struct MegatronHostSync {
  double segments = 0;        ///< forward MoE-layer passes per step (micro-batches x MoE layers, recompute repeats)
  double host_a = 0, host_b = 0;  ///< host issue seconds of phases A and B
  double gemm_a = 0, mem_a = 0, kernels_a = 0, comm_a = 0;  ///< phase A: expert GEMMs, HBM-bound, kernel count, exposed EP
  double gemm_b = 0, attention_b = 0, mem_b = 0, kernels_b = 0;  ///< phase B
};
/// One EP all-to-all pass of one micro-batch on one rank: a dispatch and a combine (the
/// backward runs the same two with the roles swapped), seconds.
struct EpA2aSeconds {
  double dispatch = 0, combine = 0;  ///< wall seconds of each (its bottleneck link, plus latency)
  double latency = 0;                ///< the latency part of each of dispatch and combine (s); the rest is linear in the tokens
  double nvlink = 0, rdma = 0;       ///< seconds NVLink / the NICs are busy over dispatch + combine
  int64_t domains = 1;               ///< scale-up (NVLink) domains the EP group spans
  double node_copies = 0;            ///< flex across domains: domains a token is sent to (own included)
};
/// Physical terms of one pipeline rank's Megatron-Core step, at datasheet rates, before the
/// fitted constants. Seconds unless stated. Formulas: time_megatron.cpp.
struct MegatronTerms {
  double gemm = 0;          ///< GEMMs at peak(precision) x MAMF x LinearGemmFactor / ExpertGemmFactor, incl. recompute
  double attention = 0;     ///< causal attention core at kFlashAttentionEfficiency of BF16 peak
  double memory_bound = 0;  ///< elementwise / norm / permute / cross-entropy bytes / HBM bandwidth
  double kernels = 0;       ///< kernels launched per step (count), graphed ones weighted by kGraphedKernelShare
  double host = 0;          ///< host seconds issuing the layers' kernels (kHostSecondsPerKernel each, graphed ones free)
  double bubble_fraction = 0;  ///< pipeline bubble / compute
  double tp = 0, cp = 0, dp = 0, ep = 0, pp = 0;  ///< exposed communication
  /// EP all-to-all of the step before overlap (s), and the seconds NVLink and the NICs are
  /// busy with it; ep = its exposed part (ep_busy − ep, when positive, is what
  /// overlap_moe_expert_parallel_comm hides).
  double ep_busy = 0, ep_nvlink = 0, ep_rdma = 0;
  double optimizer = 0;     ///< Adam step, HBM-bound
  MegatronHostSync sync;    ///< dropless dispatcher host syncs (segments 0 without)
};
MegatronTerms MegatronRankTerms(const Ctx& c, int64_t pp_rank, const MemoryBreakdown& mem);
/// The rank-independent part of MegatronRankTerms (rates, per-token HBM time per layer kind,
/// per-micro-batch collective times, links), computed once per layout when several pipeline
/// ranks are scored. Same formulas, split for speed.
/// The physical step-time constants of a GPU generation, for a system without a
/// megatron_time_fit of its own (MegatronPhysicalFit). The generation enters through the GPU
/// file: its datasheet peaks, its MAMF fraction (matmul_efficiency_*: the published best-shape
/// GEMM rate, groundtruth C.3 from stas00/ml-engineering's MAMF table: A100 271.2 of 312
/// TFLOP/s BF16, H100 794.5 of 989 BF16 / 1402.6 of 1979 FP8, B200 1745.0 of 2250 / 3432.5 of
/// 4500, GB200 1822.0 of 2500 / 3615.6 of 5000) and its HBM bandwidth. These constants are
/// what measured kernels reach of those rates, measured on H200 and assumed on other GPUs:
///   kMamfSustainedBf16 / Fp8: training-shape large GEMMs sustain 1/1.15 (BF16) and 1/1.20
///     (FP8) of MAMF (tools/measure/gemm_size.py, tests/data/measured/h200_gemm_size.jsonl: the
///     level of the GEMM-size model's fit with the rate fixed at hwdb's MAMF; MAMF is the best
///     shape of a brute-force search, a training GEMM is not); FP4 takes FP8's.
///   kElementwiseHbmShare: an elementwise / norm kernel moves its bytes at 0.674 of the HBM
///     datasheet bandwidth (median of the 20 add, RMSNorm, SwiGLU, copy and FP8-cast kernels of
///     tests/data/measured/h200_kernels.jsonl, 0.50-0.90).
inline constexpr double kMamfSustainedBf16 = 1.15;
inline constexpr double kMamfSustainedFp8 = 1.20;
inline constexpr double kElementwiseHbmShare = 0.674;
/// MegatronTimeFit of the physical constants above: gemm_bf16 kMamfSustainedBf16, gemm_fp8 and
/// gemm_fp4 kMamfSustainedFp8, memory_bound 1 / kElementwiseHbmShare, kernel_overhead 4 us
/// (the fit's prior). `fitted` false, `borrowed_from` "the physical model". Throws nothing.
MegatronTimeFit MegatronPhysicalFit();

/// One decoder layer's unfused attention core (Megatron-Core DotProductAttention,
/// attention_backend unfused; Megatron-LM's CoreAttention before FlashAttention) for one
/// micro-batch on one TP rank, seconds. Shapes: b = micro_batch, n = heads / tp, s = seq_len,
/// d = head dim; E = b·n·s² score elements (the full square: baddbmm computes every score
/// and the causal mask is applied inside the softmax).
///   gemm: the QK^T and PV batched GEMMs (2·E·d FLOP each) forward, their dgrad and wgrad
///     backward (3 x the forward), plus one forward per recompute of the core
///     (`core_recomputes`: 1 with selective core_attn or full recompute, 0 without), each
///     at GemmSeconds on the (b·n·s) x d x s and (b·n·s) x s x d shapes (the measured GEMM
///     model: these are HBM-bound where d is small).
///   scores_bytes: the HBM traffic of the passes between them, per score element in 2-byte
///     scores and a 1-byte dropout mask (Korthikanti et al. 2022 section 4.1: softmax output
///     2as²b, dropout mask as²b, dropout output 2as²b): forward FusedScaleMaskSoftmax read 2 +
///     write 2, attention dropout read 2 + write 2 + mask 1 (9); backward dropout read 2 +
///     mask 1 + write 2, softmax backward read 2 (gradient) + 2 (its output) + write 2 (11);
///     9 again per recompute. The GEMMs' own reads and writes of the scores are in gemm.
/// Priced where a published run used it (MbSettings::unfused_attention); 0s for d or s < 1.
struct MegatronUnfusedCoreSeconds {
  double gemm = 0;          ///< s, batched GEMMs (not scaled by the fitted constants, as the flash core)
  double scores_bytes = 0;  ///< bytes of softmax / dropout traffic (HBM-bound, scaled by memory_bound)
};
MegatronUnfusedCoreSeconds MegatronUnfusedCore(double micro_batch, double heads_per_rank, double seq_len,
                                               double head_dim, double core_recomputes, double rate,
                                               double hbm_bandwidth);
struct MegatronShared {
  double tp = 1, ep = 1, etp = 1, n_mb = 1, tokens = 0, extra = 0, core_extra = 0, v = 1;
  bool full = false;
  double linear_rate = 0, expert_rate = 0, core_rate = 0;  ///< FLOP/s incl. the size factors
  double dense_mem_s = 0, moe_mem_s = 0, head_mem_s = 0;   ///< HBM seconds per layer / head
  MegatronLayerKernels layer_kernels;  ///< kernels per layer per micro-batch, GPU-weighted and host-launched
  /// Selective recompute (recompute_modules) beyond the attention core: forward FLOP and HBM
  /// elements per token per dense / MoE layer that run again in backward.
  double recompute_dense_flops = 0, recompute_moe_flops = 0;
  double recompute_dense_elems = 0, recompute_moe_elems = 0;
  double recompute_routed_flops = 0;  ///< routed-expert forward FLOP per token per MoE layer (moe recompute)
  bool moe_recompute = false;         ///< recompute_modules has moe: dispatch and combine run again
  double a2a_copies = 0;  ///< token copies per dispatch (top-k, or distinct ranks with flex)
  EpA2aSeconds ep_a2a;    ///< one micro-batch's dispatch + combine (EpAllToAllSeconds)
  double tp_per = 0, tp_moe_volumes = 0, cp_layer_mb = 0, ep_per = 0, pp = 0, bubble_fraction = 0;
  double pp_host = 0;            ///< host seconds per step issuing the pipeline p2p (MegatronPpComm::host)
  double max_stage_layers = 0;   ///< MegatronMaxStageLayers of the layout
  double ep_hidden_cost = 0;  ///< HiddenCommCost of one second of the EP all-to-all
  double moe_block_share = 0;  ///< MegatronMoeBlockElements' share of moe_mem_s
  /// Hybrid models (cost/hybrid.hpp): dense_mem_s, moe_mem_s and layer_kernels are then those
  /// of the MLP and MoE blocks alone; these the attention and Mamba-2 blocks' HBM seconds and
  /// kernels per micro-batch (GPU-weighted, host-launched), the SSD scan's rate (FLOP/s) and
  /// the Mamba-2 blocks' exposed CP all-to-all seconds per block per micro-batch.
  double attn_mem_s = 0, mamba_mem_s = 0;
  double attn_kernels = 0, attn_host = 0, mamba_kernels = 0, mamba_host = 0;
  double ssd_rate = 0, mamba_cp_mb = 0;
  /// Gated DeltaNet blocks: HBM seconds, kernels (GPU-weighted, host-launched) and exposed CP
  /// all-to-all seconds per block per micro-batch; the chunk kernels run at ssd_rate.
  double gdn_mem_s = 0, gdn_kernels = 0, gdn_host = 0, gdn_cp_mb = 0;
  MegatronUnfusedCoreSeconds unfused_core;  ///< per layer per micro-batch (unfused_attention only)
  Group gd, ge;  ///< dense DP·CP group, expert-DP group
  Link ld, le;
};
MegatronShared MegatronLayoutShared(const Ctx& c);
MegatronTerms MegatronRankTerms(const Ctx& c, const MegatronShared& shared, int64_t pp_rank, const MemoryBreakdown& mem);
/// Share of a rank's layers that full recompute repeats: 1, or with recompute_method block
/// recompute_num_layers per (virtual) stage out of the model's layers per stage (Megatron-Core
/// transformer_block.py). 0 without full recompute.
double MegatronFullRecomputeShare(const CostView& layout, const ModelSpec& model);
/// MbRecomputeModule bits that selective recompute repeats: the layout's recompute_modules,
/// Megatron-Core's default {core_attn} when none are given; 0 without selective recompute.
uint32_t MegatronSelectiveModules(const CostView& layout);
/// True when the attention core's forward runs again in backward: full recompute, or
/// selective recompute whose modules include core_attn.
bool MegatronRecomputesCore(const CostView& layout);
/// Share of the EP all-to-all that overlap_moe_expert_parallel_comm cannot hide because its
/// chunk has no partner: Megatron-Core's combined 1F1B schedule runs one (virtual-stage)
/// chunk's forward together with another's backward, so the warm-up forwards and the
/// cool-down backwards run alone. Without PP: the first forward and the last backward, one
/// micro-batch's all-to-all in `micro_batches` (1/M). Interleaved PP: the 2(pp−1) + (vpp−1)·pp
/// warm-up chunks of rank 0 (Narayanan et al. 2021, interleaved 1F1B) and as many cool-down
/// ones, out of vpp·M. Dimensionless, at most 1.
double MegatronEpUnpairedShare(int64_t pp, int64_t vpp, int64_t micro_batches);
/// Token copies one EP dispatch sends per token: RoutedDispatchCopies over the EP ranks with
/// the flex dispatcher, top-k otherwise (alltoall sends one per routed expert).
double DispatchCopies(const CostView& layout, const ModelSpec& model);
/// Expected token copies one flex (DeepEP / HybridEP) dispatch sends: the number of distinct
/// EP ranks among a token's top_k experts when the num_experts are split evenly over ep ranks,
/// ep·(1 − C(E − E/ep, k)/C(E, k)). The alltoall dispatcher sends top_k copies instead.
double FlexDispatchCopies(int64_t num_experts, int64_t top_k, int64_t ep);
/// Expected distinct `units` (EP ranks, or the NVLink domains an EP group spans; unit u holds
/// the consecutive experts [u·E/units, (u+1)·E/units)) one token's experts fall in under
/// group-limited routing: E experts in `groups` groups of E/groups consecutive ones, each token
/// choosing `group_topk` groups (M) and top_k experts among them (Megatron-Core moe_utils.py
/// group_limited_topk; AutoModel components/moe/layers.py Gate n_groups / topk_groups;
/// DeepSeek-V3 "node-limited routing", DeepSeek-AI 2024 section 2.1.2). Model: the M groups are
/// uniformly random, and each chosen group supplies k/M of the token's experts, uniformly among
/// its own (the group score is the sum of its best k/M experts' scores: DeepSeek-V3's top-2 of 8
/// per group of 4 chosen); a unit overlapping chosen group γ in o_γ experts misses it with
/// C(E/G − o_γ, k/M)/C(E/G, k/M) ((1 − o_γ·G/E)^(k/M) where M does not divide k). Over the
/// unit's t touched groups, P(no copy) = Σ_j e_j(miss) · C(G − t, M − j)/C(G, M), e_j the
/// elementary symmetric sums. Whole-group units (DeepSeek-V3 EP 64 over 8 nodes: a node per
/// group) get at most M copies per token (4, against 5.29 with uniform routing). Falls back to
/// FlexDispatchCopies when groups <= 1, M >= groups or groups does not divide E. Dimensionless.
double GroupLimitedDispatchCopies(int64_t num_experts, int64_t top_k, int64_t groups, int64_t group_topk,
                                  int64_t units);
/// FlexDispatchCopies or, for a model with group-limited routing
/// (ModelSpec::group_limited_routing), GroupLimitedDispatchCopies, over `units` units.
double RoutedDispatchCopies(const ModelSpec& model, int64_t units);
/// EpA2aSeconds of `tokens` tokens (per rank, after sequence parallel) of `c`'s layout, BF16
/// payload (Megatron-Core dispatches BF16 with every backend here: fused_a2a.py sets
/// fp8_dispatch False for DeepEP and HybridEP asserts it off; FP8 on the wire is the ncclep
/// backend's moe_dispatch_fwd_dtype mxfp8 only, not modelled).
///   alltoall / allgather (NCCL): top_k copies per token, S = tokens·k·h·2 bytes per rank,
///     AllToAllSeconds over the EP group's all-to-all link of the topology graph (NVLink to the
///     peers in the rank's domain, the NICs to the others, the slower sets the time); the
///     link split: S·(r−1)/ep over NVLink and S·(ep−r)/ep over the NICs, r the group's ranks
///     per domain.
///   flex (DeepEP / HybridEP normal kernels), inside one domain: the token once per distinct
///     destination rank (RoutedDispatchCopies(model, ep), own rank included, as the kernels'
///     benchmarks count "received" bytes) over NVLink at the backend's measured share of the
///     link (kDeepEpNvlink*, HybridEpNvlinkShare);
///   across domains: once per distinct destination domain over RDMA (the kernels send a token
///     to the same-index GPU of each node it goes to and forward it there over NVLink:
///     DeepEP docs/legacy.md, HybridEP docs/README_Hybrid-EP.md "hierarchical"), logical bytes
///     tokens·RoutedDispatchCopies(model, domains)·h·2 (own domain included, as both benchmarks
///     count: DeepEP tests/legacy/test_internode.py num_rdma_token_sent, HybridEP
///     tests/utils.py count_rdma_send_from_routing_map) at the backend's measured logical RDMA
///     share of the NIC (DeepEpRdmaShare, HybridEpRdmaShare by EP size), concurrently with the
///     NVLink forward of the received copies; the slower of the two sets the time.
/// The attention core's rate (FLOP/s) in MegatronRankTerms: the BF16 peak at
/// kFlashAttentionEfficiency, AttentionHeadDimFactor of the model's query/key head and
/// AttentionLengthFactor of the chunks the view's cp_comm_type attends (CpRingRanks).
double MegatronCoreRate(const GpuSpec& gpu, const ModelSpec& model, int64_t seq_len, const CostView& view);
/// Megatron-Core's data-parallel groups of a layout on `num_gpus` GPUs (the gradient
/// reduce-scatter and weight gather of MegatronRankTerms' DP term): the dense parameters' over
/// dp·cp ranks at stride tp, the routed experts' over the ranks of one pipeline stage that
/// share an (ep, etp) position, at stride ep·etp (parallel_state.py expert-data-parallel).
struct MegatronDpGroups {
  Group dense, expert;
};
MegatronDpGroups MegatronDpGroupsOf(const CostView& view, int64_t num_gpus);
EpA2aSeconds EpAllToAllSeconds(const Ctx& c, double tokens);
/// The same from its inputs alone (c.view, c.model, c.system, c.setup.num_gpus, c.links), for
/// callers without a Ctx (the search's lower bound, planner/cost/bounds.cpp).
EpA2aSeconds EpAllToAllSeconds(const CostView& view, const ModelSpec& model, const SystemSpec& system, int64_t num_gpus,
                               const LinkTable* links, double tokens);
/// EpAllToAllSeconds kept per thread for its last 8 inputs: `tables_id` (CostTables::Id) with
/// `num_gpus` fixes the model, system and link table, the key holds the rest (the view's ep,
/// etp, dispatcher and flex backend, the tokens' bits), so a hit returns the very bits a
/// computation would. The Ctx form computes afresh when c.tables is null. Throws nothing.
EpA2aSeconds EpAllToAllCached(uint64_t tables_id, const CostView& view, const ModelSpec& model, const SystemSpec& system,
                              int64_t num_gpus, const LinkTable* links, double tokens);
EpA2aSeconds EpAllToAllCached(const Ctx& c, double tokens);
/// Measured bandwidth shares of the flex backends (bytes as the benchmarks count them per
/// second, over the link's nominal one-direction bandwidth).
/// DeepEP V1 normal kernels on H800 (NVLink 400 GB/s bidirectional, 200 one way; CX7
/// 400 Gb/s, 50 GB/s), DeepSeek-V3 settings (4096 tokens, hidden 7168, top-8): DeepEP
/// docs/legacy.md "Normal kernels with NVLink and RDMA forwarding": intranode EP 8 dispatch
/// 153 GB/s, combine 158 GB/s (NVLink); internode dispatch 43 / 58 / 51 GB/s and combine
/// 43 / 57 / 50 GB/s (RDMA) at EP 16 / 32 / 64.
inline constexpr double kDeepEpNvlinkDispatchShare = 153.0 / 200.0;
inline constexpr double kDeepEpNvlinkCombineShare = 158.0 / 200.0;
/// DeepEP's logical RDMA share of a NIC at `ep` ranks (EP 16's figure below 16, EP 64's above
/// 64, the nearer measured size between), dispatch or combine.
double DeepEpRdmaShare(int64_t ep, bool combine);
/// HybridEP's logical RDMA share of a NIC at `ep` ranks: DeepEP hybrid-ep branch
/// docs/README_Hybrid-EP.md, H100 + CX7, Torch API, 16 SMs, BF16 dispatch: 54.47 / 47.36 /
/// 41.24 GB/s dispatch and 53.35 / 52.53 / 46.57 GB/s combine at 16 / 32 / 64 ranks, of 50 GB/s.
double HybridEpRdmaShare(int64_t ep, bool combine);
/// HybridEP's NVLink share at `ep` ranks in one domain: same document, Torch API, 16 SMs, BF16
/// dispatch, of 900 GB/s NVLink5: B200 EP 8 535.94 dispatch / 530.86 combine; GB200 EP 16
/// 472.84 / 474.48, 24 441.89 / 444.40, 32 485.50 / 423.19, 36 469.96 / 418.27 (the largest
/// measured size at most `ep`; EP 8's below).
double HybridEpNvlinkShare(int64_t ep, bool combine);
/// Elements per token moved to or from HBM by the non-GEMM kernels of one decoder layer's
/// forward pass, before the division by TP (op-by-op count in time_megatron.cpp);
/// `sorts_local_experts` (MegatronSortsLocalExperts) adds the alltoall dispatcher's sort of the
/// received token copies by local expert and its inverse.
double MegatronLayerElements(const ModelSpec& m, bool moe, bool fp8, bool sorts_local_experts);
/// Elements per token of a MoE layer's forward that its MoE block moves (the permutes, the
/// local-expert sort with `sorts_local_experts`, the SwiGLU of the routed and shared experts,
/// their FP8 casts): MegatronLayerElements' MoE terms less the router. 0 for a dense model.
double MegatronMoeBlockElements(const ModelSpec& model, bool fp8, bool sorts_local_experts);
/// Whether Megatron-Core's MoE layer sorts the received token copies by local expert after the
/// dispatch and restores their order before the combine: the alltoall dispatcher with more
/// than one local expert (E/ep > 1) (Megatron-Core d98e8a6 transformer/moe/token_dispatcher.py
/// MoEAlltoAllTokenDispatcher.dispatch_postprocess / combine_preprocess, sort_chunks_by_idxs;
/// with drop-and-pad a transpose .contiguous() of the same bytes). The flex dispatcher's
/// kernels write the received tokens in expert order; the allgather dispatcher's permute picks
/// the local copies directly.
bool MegatronSortsLocalExperts(const ModelSpec& m, TokenDispatch dispatcher, int64_t ep);
/// Whether Megatron-Core applies RoPE with Transformer Engine's fused kernel under
/// Megatron-Bridge. Megatron-Bridge turns apply_rope_fusion off unless the model's
/// position_embedding_type is "rope" (src/megatron/bridge/utils/fusions.py,
/// validate_rope_fusion_compatibility, called by GPTModelProvider.provide; the check is in every
/// release from 25.11 (v0.2.0) to 26.08 (v0.6.0), not in 25.09 (v0.1.0rc3), which the current
/// rule here follows), and its HF conversion gives position_embedding_type "yarn" to models without
/// MLA whose rope_scaling is YaRN (models/conversion/model_bridge.py; GPT-OSS sets it in
/// gpt_oss_bridge.py / gpt_oss_provider.py); MLA models keep "rope" and pass YaRN as rope_type.
/// So: false for a non-MLA model with rope_scaling_type "yarn", true otherwise.
bool MegatronRopeFused(const ModelSpec& m);
/// Whether the bias-dropout-add after the attention projection runs as one fused kernel:
/// Megatron-Core's default (bias_dropout_fusion true), which Megatron-Bridge's GPT-OSS
/// provider turns off (gpt_oss_provider.py up to 26.02, gpt_oss_bridge.py from 26.04:
/// bias_dropout_fusion False).
bool MegatronBiasDropoutFused(const ModelSpec& m);
/// The eager ops that Megatron-Core runs in place of a fused kernel (broadcast multiplies and
/// adds, negation of a strided half, concatenations) run further from the HBM peak than the
/// typical elementwise kernel that the fitted memory_bound constant scales. Measured on H200
/// (tools/measure/unfused.py, tests/data/measured/h200_unfused.jsonl, GPT-OSS shapes, 4 x 4096
/// tokens): the eager RoPE on q, forward + backward, at 2.65x the ideal time of its 25 counted
/// passes, i.e. 1.79x the median 1.48x of the single elementwise kernels of
/// tests/data/measured/h200_kernels.jsonl; the bias add of the unfused bias-dropout-add at
/// 2.01x (dropout with p = 0 launches nothing). The constant is the RoPE's ratio, which carries
/// most of the bytes (a test keeps it equal to the data). Applied to the unfused paths' extra
/// elements.
inline constexpr double kEagerOpSlowdown = 1.79;
/// HBM elements per token (before the division by TP) and kernels of one decoder layer that
/// the unfused paths above add to a fused layer, forward and backward separately.
struct MegatronUnfused {
  double fwd_elements = 0, bwd_elements = 0;
  double kernels = 0;  ///< forward + backward, per layer per micro-batch (all in the attention block)
};
/// Counted op by op (time_megatron.cpp), the eager passes weighted by kEagerOpSlowdown;
/// zero when both paths are fused.
MegatronUnfused MegatronUnfusedOps(const ModelSpec& m);
/// The GEMM constant of `fit` for `precision`.
double MegatronGemmFactor(const MegatronTimeFit& fit, Precision precision);
/// MegatronLayerKernels of `model`'s layers under `layout` (unfused ops' kernels included).
MegatronLayerKernels MegatronKernelsPerLayer(const ModelSpec& model, const CostView& layout, const MegatronUnfused& unfused);
/// Host (CPU) seconds per GPU kernel that eager PyTorch training code launches: the Python of
/// the modules, the autograd engine, PyTorch's dispatcher and the launch itself. Measured on the
/// H200 host (Intel Xeon, torch 2.11; tools/measure/host_per_kernel.py,
/// tests/data/measured/h200_host_per_kernel.jsonl) as the slope of the step time against the
/// layer count over the slope of the profiled kernel count, for decoders whose kernels take
/// microseconds: a Hugging Face Llama layer (118 kernels per layer, forward + backward) and a
/// Megatron-Core-style dropless MoE layer with 4 and 16 local experts (one GEMM pair per expert,
/// the dispatcher's host sync): 31.5-44.2 us per kernel over two runs, the median of the six
/// fits. Megatron-Core's MoE layers are such code (Megatron-Core's MoE guide lists the CPU
/// launch bottleneck and CUDA graphs, larger micro-batches or smaller TP as its remedies). An
/// assumption: the DGX hosts' CPUs issue kernels at the same rate. Not fitted.
inline constexpr double kHostSecondsPerKernel = 36.0e-6;
/// Host-bound seconds of a Megatron-Core rank: the part of the host's issue time `host`
/// (MegatronTerms::host), stretched by the pipeline bubble like the stage work, that the GPU's
/// own time (`gpu_seconds`: compute, exposed communication, bubble; TimeBreakdown::GpuSeconds)
/// does not cover, max(0, host·(1 + bubble_fraction) − gpu_seconds). Without
/// syncs the host runs ahead of the GPU and only the excess shows; the dropless dispatchers'
/// per-layer host syncs (megatron/core/transformer/moe/token_dispatcher.py,
/// _maybe_dtoh_and_synchronize) stop it running further ahead than one layer: with `sync`
/// segments (MegatronHostSync) each segment is host-bound on its own
/// (MegatronSegmentHostBound, its GPU phases at `fit`'s constants for `precision`) and only the
/// rest of the host time and of the GPU time are compared as a whole.
double MegatronHostBound(double host, double bubble_fraction, double gpu_seconds, const MegatronHostSync& sync,
                         const MegatronTimeFit& fit, Precision precision);
/// Host-bound seconds of one dropless MoE segment (MegatronHostSync) whose phases take `host_a`,
/// `host_b` on the host and `gpu_a`, `gpu_b` on the GPU: max(0, H_A − G_A, H_A + H_B − G_A − G_B).
double MegatronSegmentHostBound(double host_a, double host_b, double gpu_a, double gpu_b);
/// GPU seconds of phases A and B of a MegatronHostSync segment at `fit`'s constants.
double MegatronSyncGpuA(const MegatronHostSync& sync, const MegatronTimeFit& fit, Precision precision);
double MegatronSyncGpuB(const MegatronHostSync& sync, const MegatronTimeFit& fit, Precision precision);
/// compute = gemm_p·gemm + attention + memory_bound·memory_bound + kernel_overhead·kernels;
/// bubble = bubble_fraction·compute; communication and optimizer as computed; host =
/// MegatronHostBound.
TimeBreakdown MegatronTime(const MegatronTerms& terms, const MegatronTimeFit& fit, Precision precision);

}  // namespace meshplan::cost
