#pragma once
/// \file cost.hpp
/// Analytical cost model, first version: per-GPU memory and step time of one layout.
/// All figures are for the most loaded rank. Units: bytes, seconds, FLOP, FLOP/s.
/// Formulas and their sources are documented at each function in planner/cost/.

#include <memory>
#include <vector>

#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"

namespace meshplan {

namespace cost {
struct LinkTable;   // planner/cost/comm.hpp
class CostTables;   // planner/cost/tables.hpp
}

/// How the data-parallel group holds parameters, gradients and optimizer state: the DP
/// implementation the cost model prices, whichever framework configures it.
enum class DpImpl {
  kFsdpPerModule,  ///< torch FSDP2 (fully_shard per module): AutoModel fsdp2, Megatron-Bridge dist.use_torch_fsdp2
  kMegatronFsdp,   ///< Megatron FSDP (bucketed parameter/gradient buffers): AutoModel megatron_fsdp,
                   ///< Megatron-Bridge ddp.use_megatron_fsdp
  kReplicated,     ///< DDP: every DP rank holds the whole parameters and gradients (torch or Megatron-Core DDP)
};

/// What Megatron FSDP shards over its data-parallel group (Megatron-Core
/// DistributedDataParallelConfig.data_parallel_sharding_strategy; Megatron-LM
/// megatron/core/distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py
/// _init_each_parameter_group_buffers, 2026-08-22): which of the model weights, the main
/// (fp32) weights with the optimizer state, and the gradients are distributed.
enum class FsdpSharding {
  kNoShard,           ///< no_shard: nothing distributed (DDP)
  kOptim,             ///< optim: main weights and optimizer state (ZeRO-1)
  kOptimGrads,        ///< optim_grads: those and the gradients (ZeRO-2)
  kOptimGradsParams,  ///< optim_grads_params: those and the model weights (ZeRO-3)
};

/// Whose kernels, modules and memory accounting a layout runs on.
enum class CostRuntime {
  kPyTorchEager,  ///< Hugging Face modules under torch (NeMo AutoModel): eager elementwise ops, SDPA
  kMegatronCore,  ///< Megatron-Core + Transformer Engine (Megatron-Bridge): fused kernels, TE GEMMs
};

/// The token dispatcher of an MoE layer (Megatron-Core moe_token_dispatcher_type).
enum class TokenDispatch { kAllgather, kAlltoall, kFlex };
/// The flex dispatcher's communication library (Megatron-Core moe_flex_dispatcher_backend).
enum class FlexBackend { kNone, kDeepEP, kHybridEP };

/// How an MoE layer's router spreads a token's top-k experts over the EP ranks, for the
/// dispatch's distinct destinations (planner/cost/time.cpp AutoModelEpPass).
enum class MoeRouting {
  kUniform,      ///< k distinct experts uniformly at random (a learned, balanced gate)
  kConsecutive,  ///< AutoModel's FakeBalancedGate without noise: experts t·k .. t·k + k − 1 mod E
};

/// CUDA graph capture (Megatron-Core cuda_graph_impl).
enum class CudaGraphCapture { kNone, kPerLayer, kFullIteration };

/// Everything the cost model reads of a layout, framework-neutral: the mesh, the schedule,
/// the sharding, recompute and overlap facts. Each framework builds it from its own layout
/// (frameworks/<name>/cost_view.cpp, through ToCostView in include/meshplan/framework.hpp);
/// planner/cost/ reads nothing else of a layout. Sizes are mesh-axis sizes (>= 1).
/// The context-parallel exchange of a Megatron-Core attention layer (Megatron-Core cp_comm_type,
/// Transformer Engine context_parallel.py): the P2P ring (AutoModel's ring too), the K/V
/// all-gather, the Ulysses all-to-all, or all-to-all inside a sub-group with a ring between them.
enum class CpCommType { kP2p, kAllGather, kA2a, kA2aP2p };

struct CostView {
  CostRuntime runtime = CostRuntime::kPyTorchEager;
  // --- mesh (outer to inner pp, dp_replicate, dp_shard, cp, tp; ep carved from dp·cp·tp) ---
  int64_t tp = 1, pp = 1, cp = 1, ep = 1;
  int64_t etp = 1;           ///< expert tensor parallel size in effect (Megatron-Core: unset = tp)
  int64_t dp = 1;            ///< dp_replicate · dp_shard
  int64_t dp_replicate = 1;  ///< HSDP replicas; 1 = plain FSDP / DDP
  int64_t vpp = 1;           ///< model chunks per pipeline rank as configured (Megatron-Core VPP; 1 = none)
  // --- schedule ---
  int64_t micro_batch = 1;    ///< sequences in one forward pass
  int64_t mb_per_call = 1;    ///< micro-batches per pipeline schedule call (1 without PP)
  int64_t grad_accum = 1;     ///< schedule calls per optimizer step
  bool interleaved = false;   ///< interleaved 1F1B (several stages per pipeline rank)
  /// AutoModel loss_fn MaskedCrossEntropy fp32_upcast: the loss runs on fp32 logits (default
  /// true) or on the logits' own dtype (Layout::loss_fp32_upcast). Megatron layouts: true.
  bool loss_fp32_upcast = true;
  /// AutoModel loss_fn FusedLinearCrossEntropy (components/loss/linear_ce.py, cut-cross-entropy's
  /// linear_cross_entropy): lm_head and the loss run blockwise over the vocabulary, so no
  /// logits are kept (Layout::loss_fused_linear). Megatron layouts: false.
  bool loss_fused_linear = false;
  /// AutoModel distributed.moe.reshard_after_forward: true reshards the experts after each
  /// forward as every other FSDP2 unit (Layout's am.moe_reshard_after_forward == "true");
  /// false (AutoModel's default, MoEParallelizerConfig) keeps them gathered.
  bool moe_reshard_after_forward = false;
  /// AutoModel model.backend.attn "tilelang" (AmMoeBackend::attn_tilelang): DeepSeek-V4 runs its
  /// sparse attention, indexer and Sinkhorn kernels; otherwise dense eager attention
  /// (Dsv4PytorchTerms). Megatron layouts and other models: not read.
  bool attn_tilelang = false;
  /// Stages per rank the Megatron-Core memory estimate's in-flight factor reads (0: not
  /// interleaved): Megatron-Bridge its VPP, AutoModel its stages per rank when interleaved.
  int64_t estimate_vpp = 0;
  StageSplit split;           ///< the layer split over the stages (SplitStages)
  SplitPlaces places;         ///< decoder-layer equivalents of the first / last stage's other work (OwnSplitPlaces)
  int64_t mtp_layers = 0;     ///< MTP layers trained (MtpLayers)
  // --- features ---
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  uint32_t recompute_modules = 0;    ///< MbRecomputeModule bits under selective recompute (0 = {core_attn})
  int64_t recompute_block_layers = 0;  ///< full recompute, method block: layers recomputed per chunk (0: uniform / all)
  int64_t cpu_offload_layers = 0;    ///< layers whose activations are offloaded to host memory
  /// Megatron-Core: bytes per logit the loss keeps for backward, per micro-batch on the rank
  /// with the output layer: 4 (fp32 exp-logits: vocab_parallel_cross_entropy and the native
  /// fused kernel) or 2 (TE parallel_cross_entropy, the gradient written into the bf16 logits).
  double loss_bytes_per_logit = 4.0;
  /// Megatron-Core: bytes per parameter of the sharded optimizer state (MbSettings::optimizer_state_bytes).
  double optimizer_state_bytes = 12.0;
  // --- sharding ---
  DpImpl dp_impl = DpImpl::kFsdpPerModule;
  bool distributed_optimizer = false;  ///< optimizer state sharded over DP (Megatron distributed optimizer or Megatron FSDP)
  double main_grad_bytes = 4.0;        ///< bytes per element of Megatron-Core's main-gradient buffer (fp32 4, bf16 2)
  /// Megatron FSDP's sharding strategy (dp_impl kMegatronFsdp only; others ignore it).
  FsdpSharding fsdp_sharding = FsdpSharding::kOptimGradsParams;
  int64_t bucket_size = 0;             ///< DDP bucket size in parameters; 0 = the default
  // --- overlap and runtime features (Megatron-Core; AutoModel layouts leave the defaults) ---
  bool tp_comm_overlap = false;
  /// Megatron-Core: attention core unfused (MbSettings::unfused_attention): two batched GEMMs
  /// over the full s x s scores and the softmax / dropout passes over them at HBM bandwidth
  /// (cost::MegatronUnfusedCore) instead of the flash-attention rate.
  bool unfused_attention = false;
  /// Megatron-LM's scatter / gather of the pipeline tensor over TP (MbSettings::pp_scatter_gather).
  bool pp_scatter_gather = false;
  bool ep_a2a_overlap = false;
  bool overlap_p2p = false;
  /// batch_p2p_comm with Megatron-Core's batch_p2p_sync (default true, which Megatron-Bridge's
  /// recipes keep): a torch.cuda.synchronize() after every pipeline exchange.
  bool batch_p2p_sync = false;
  bool overlap_grad_reduce = false;
  /// Megatron-Core's moe_token_dispatcher_type; AutoModel (automodel::ToCostView): kAllgather for
  /// its torch dispatcher (GroupedExperts' all-gather + all-reduce), kFlex for the others.
  TokenDispatch dispatcher = TokenDispatch::kAllgather;
  FlexBackend flex_backend = FlexBackend::kNone;  ///< with dispatcher kFlex
  /// Megatron-Core's MoE dispatcher waits on the host for the routed token counts in every MoE
  /// layer's forward (dropless routing: MbSettings::moe_pad_to_capacity false), so the host
  /// cannot issue past that point ahead of the GPU (MegatronHostSync).
  bool moe_host_sync = false;
  /// AutoModel: the router's expert choice the EP dispatch is priced for (Megatron: uniform).
  MoeRouting routing = MoeRouting::kUniform;
  CudaGraphCapture cuda_graph = CudaGraphCapture::kNone;
  uint32_t cuda_graph_scope = 0;  ///< MbGraphScope bits (0 = the whole layer)
  /// AutoModel FSDP2 with gradient accumulation: the layout's distributed.defer_fsdp_grad_sync
  /// (automodel::ToCostView: written true, or left unset in a recipe, AutoModel's default
  /// FSDP2Config.defer_fsdp_grad_sync = True; a planned layout's recipe writes false). Priced as
  /// MemoryOptions::defer_fsdp_grad_sync is (either one turns it on).
  bool defer_fsdp_grad_sync = false;
  /// Megatron-Core: the attention's context-parallel exchange (MbSettings::cp_comm; AutoModel: the ring).
  CpCommType cp_comm = CpCommType::kP2p;
  /// With CpCommType::kA2aP2p: CP ranks of the a2a level (hierarchical_context_parallel_sizes[0]).
  int64_t cp_a2a = 1;
  /// Field by field (doubles by value).
  bool operator==(const CostView&) const = default;
};

/// The EP all-to-all of a Megatron-Core layout's slowest pipeline rank, per step
/// (cost::EpAllToAllSeconds over its MoE layers and micro-batches; planner/cost/time_megatron.cpp).
struct EpTraffic {
  double busy = 0;     ///< s, every dispatch and combine before overlap
  double nvlink = 0;   ///< s NVLink is busy with it
  double rdma = 0;     ///< s the NICs are busy with it
  double exposed = 0;  ///< s left exposed after overlap
  int64_t domains = 1;      ///< scale-up (NVLink) domains the EP group spans
  double rank_copies = 0;   ///< token copies per dispatch to distinct ranks (top-k with alltoall)
  double node_copies = 0;   ///< flex across domains: to distinct domains (0 otherwise)
};

/// Per-GPU memory in bytes of the most loaded rank at its peak moment (PP rank 0 unless
/// stated). The peak is the larger of the start of backward (every activation and the loss
/// buffers alive), the recompute of the last layer under full checkpointing, the softmax
/// backward of SDPA's math kernel (pytorch profile, fp32 compute) and the optimizer step
/// (gradients + Adam temporaries); `phase` names the one that is larger.
/// Allocated() is what torch.cuda.max_memory_allocated reports; Total() adds the CUDA
/// context and NCCL buffers. The caching allocator's reserve over allocated is not a term:
/// it is covered by TrainSetup::headroom (measured 0.1-9% with expandable_segments on one GPU,
/// up to 30% with FSDP2 on two, tests/data/measured/). Formulas: planner/cost/memory*.cpp.
struct MemoryBreakdown {
  double weights = 0;      ///< parameters resident between steps (sharded per DP implementation)
  double gradients = 0;    ///< gradient buffers alive at the peak (incl. DDP buckets and the
                           ///< unsharded grads kept by defer_fsdp_grad_sync)
  double optimizer = 0;    ///< fp32 master copy (if any) + Adam exp_avg + exp_avg_sq
  double activations = 0;  ///< saved activations of the in-flight micro-batches
  double logits = 0;       ///< logits, log-softmax and their gradients (ranks holding lm_head)
  double buffers = 0;      ///< FSDP all-gathered modules, optimizer foreach temporaries, EP dispatch
  double workspace = 0;    ///< cuBLAS / cuBLASLt workspaces (inside the caching allocator)
  double overhead = 0;     ///< CUDA context + NCCL communicator buffers (outside the allocator)
  double step_gradients = 0;  ///< every gradient at the optimizer step (what Adam reads); not in Total()
  const char* phase = "";  ///< peak moment: "backward start", "recompute", "attention backward",
                           ///< "optimizer step", "estimate"
  /// Bytes the caching allocator hands out at the peak (max_memory_allocated).
  double Allocated() const {
    return weights + gradients + optimizer + activations + logits + buffers + workspace;
  }
  double Total() const { return Allocated() + overhead; }
};

/// Which framework implementation the memory model describes.
enum class MemoryProfile {
  kAuto,     ///< kPyTorch for AutoModel layouts; for Megatron-Bridge layouts kMegatron with
             ///< MemoryOptions::megatron_bridge_estimator (Megatron-Bridge's estimator)
  kPyTorch,  ///< NeMo AutoModel: HF modules, FSDP2 / DDP / DTensor TP, SDPA (measured)
  kMegatron, ///< Megatron-Core + Transformer Engine: Megatron-LM's theoretical estimate
             ///< (megatron/training/theoretical_memory_usage.py; megatron.md 3.2-3.4)
};

/// torch.optim.Adam(W) implementation: what the optimizer step allocates beside the state.
/// Measured on H200 (tests/data/measured/h200_1gpu_fp32.jsonl): foreach 4 B per fp32 param
/// more at the step than fused.
enum class AdamImpl {
  kForeach,  ///< torch's default on CUDA (_multi_tensor_adam): one state-sized temporary
             ///< (torch._foreach_sqrt of exp_avg_sq over all tensors at once)
  kFused,    ///< fused=True (_fused_adam): one kernel per tensor group, no temporary
  kForLoop,  ///< foreach=False (_single_tensor_adam): a temporary the size of one tensor
};

/// Options of the memory model. Defaults follow AutoModel recipes and meshplan's emitted YAML.
struct MemoryOptions {
  MemoryProfile profile = MemoryProfile::kAuto;
  /// pytorch: the model is loaded in fp32 (fp32 weights, grads and Adam state; FSDP2's
  /// MixedPrecisionPolicy computes in bf16). Default false: AutoModel recipes load
  /// `torch_dtype: bf16` and use torch Adam(W), so weights, grads and Adam state are bf16.
  bool fp32_params = false;
  /// pytorch, FSDP2 with gradient accumulation: AutoModel's defer_fsdp_grad_sync (its default
  /// true keeps unsharded fp32 gradients across micro-batches); meshplan writes false.
  bool defer_fsdp_grad_sync = false;
  /// pytorch: the Adam(W) implementation (a recipe's optimizer.fused / optimizer.foreach).
  /// Default foreach, torch's default on CUDA and AutoModel's examples' (they set neither).
  AdamImpl adam_impl = AdamImpl::kForeach;
  /// pytorch, one GPU: price the FSDP2 / DDP wrapper on a one-rank group (as torchtitan and a
  /// measurement on a one-rank process group run it: FSDP2's MixedPrecisionPolicy casts, DDP's
  /// bucket copy) instead of AutoModel's plain model (it skips both wrappers at world size 1,
  /// fsdp2.py::fsdp2_sharding_enabled, ddp.py). Default false.
  bool wrap_one_gpu = false;
  /// pytorch, TP > 1: the loss is computed on vocabulary-sharded logits (torch loss_parallel,
  /// as torchtitan does) instead of AutoModel's MaskedCrossEntropy, which gathers the logits
  /// with full_tensor(). Default false.
  bool loss_parallel = false;
  /// megatron: attention scores materialised (no flash attention), adding Korthikanti's
  /// 5·a·s²·b/t bytes per layer without recompute. Default false (Transformer Engine flash).
  bool materialized_attention = false;
  /// megatron: use Megatron-Bridge's variant of the estimate (theoretical_memory_utils.py,
  /// megatron.md 3.5: dense optimizer state sharded over DP·CP, experts over EDP, activation
  /// formula (A) with the average FFN ratio, divided by TP·CP) instead of Megatron-LM's.
  bool megatron_bridge_estimator = false;
  /// megatron: with FP8 / FP4 GEMMs, Transformer Engine saves the linear layers' inputs
  /// quantized (1 byte FP8, 0.5625 NVFP4) instead of bf16, which both estimators count as bf16
  /// (cost::QuantizedInputSaving; transformer_engine/pytorch/module/linear.py,
  /// layernorm_linear.py; Megatron-Core attention.py save_original_input). Default true;
  /// false reproduces the estimators as published.
  bool quantized_linear_inputs = true;
  /// megatron, Megatron-Bridge's estimator on MoE models: add the routed experts' saved fc1
  /// and fc2 inputs (k copies per token) that the estimator leaves out
  /// (cost::RoutedExpertInputs; Megatron-Core moe/experts.py). Default true.
  bool moe_routed_activations = true;
  /// megatron, Megatron-Bridge's estimator: count each layer's saved activations tensor by
  /// tensor as Megatron-Core with Transformer Engine keeps them (cost::TeSavedBytesPerToken:
  /// real attention widths, GQA, MLA, q/k norms, SwiGLU, routed and shared experts, quantized
  /// GEMM inputs, recompute modules) instead of the estimator's (18 + 4r)·s·b·h. Default true;
  /// when false, the estimator with the departures above (quantized_linear_inputs,
  /// moe_routed_activations) applies.
  bool te_saved_tensors = true;
};

/// Step time in seconds. Communication fields are the exposed (not overlapped) part.
struct TimeBreakdown {
  double compute = 0;  ///< forward + backward (+ recompute) GEMM and attention time
  double tp_comm = 0;
  double cp_comm = 0;
  double dp_comm = 0;  ///< FSDP all-gather / reduce-scatter or DDP all-reduce, exposed part
  double ep_comm = 0;
  double pp_comm = 0;
  double bubble = 0;   ///< pipeline bubble
  double optimizer = 0;  ///< optimizer step (HBM-bound)
  /// Host-bound time: the part of the host's (CPU's) time issuing the layers' work that the
  /// GPU time above does not cover, so the GPU waits (AutoModel's eager dense layers: RankTime).
  double host = 0;
  /// AutoModel layouts: this rank's EP dispatch and combine per step (RankTime; busy = exposed,
  /// nothing overlaps it). Megatron-Core layouts leave it empty (MegatronComputeSplit::ep).
  EpTraffic ep;
  /// The GPU's time that the host's issuing overlaps: everything but the optimizer step and
  /// the host-bound time (compute, exposed communication, bubble).
  double GpuSeconds() const { return compute + tp_comm + cp_comm + dp_comm + ep_comm + pp_comm + bubble; }
  double Step() const { return GpuSeconds() + optimizer + host; }
};

/// Result of scoring one layout.
struct Cost {
  MemoryBreakdown memory;
  TimeBreakdown time;
  double capacity_bytes = 0;      ///< GPU memory * (1 - headroom)
  bool fits = false;              ///< memory.Total() <= capacity_bytes
  double model_flops = 0;         ///< model FLOP per optimizer step, whole job (no recompute)
  double step_seconds = 0;        ///< time.Step()
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;  ///< model FLOP/s per GPU / 1e12
  /// Model FLOP/s per GPU / the GPU's dense BF16 peak (GpuSpec::bf16_flops), whatever the
  /// precision, so that BF16, FP8 and FP4 layouts compare (0..1; 0 when the peak is unknown).
  double mfu = 0;
  /// Model FLOP/s per GPU / the dense peak of the run's own precision (PeakPrecision: the FP8
  /// or FP4 peak); equal to mfu for BF16 and where the GPU lists no peak for the precision.
  double mfu_precision_peak = 0;
};

/// The precision whose dense peak prices `precision`'s GEMMs on `gpu` and divides
/// Cost::mfu_precision_peak: kFp4 where the GPU lists an FP4 peak, kFp8 for FP8 and FP4 runs
/// where it lists an FP8 one (FP4 on Hopper runs FP8 GEMMs), else kBf16 (GpuSpec::fp8_flops
/// and fp4_flops are 0 where unsupported). Throws nothing.
Precision PeakPrecision(const GpuSpec& gpu, Precision precision);

/// Model FLOP of one optimizer step (forward + backward, no recompute) for
/// `global_batch` sequences of `seq_len` tokens, with `mtp_layers` multi-token prediction
/// layers trained (Megatron-Bridge's model.mtp_num_layers; 0: none).
/// Source: Megatron-LM megatron/training/training.py::num_floating_point_operations
/// (megatron.md 3.6): causal attention halved, GQA, MLA, SwiGLU, MoE top-k, logits; each MTP
/// layer adds a decoder layer of the last layer's type, 6·(3h + 2h²) for its norms and
/// eh_proj, and 6·h·V for its logits.
double ModelFlopsPerStep(const ModelSpec& model, const TrainSetup& setup, int64_t mtp_layers = 0);

namespace cost {
struct FlopsPerToken;
}  // namespace cost

/// A lower bound (seconds) on the step time of the layouts of one search subtree (mesh axes,
/// strategy, sequence parallelism, recompute and, under Megatron-Bridge, VPP fixed) as a
/// function of a layout's micro-batches per step n:
///   max((fixed + n·per_micro_batch + max(0, ring_fixed + n·ring_per_micro_batch))·(1 + bubble/n)
///         + n·dp_per_micro_batch,
///       n·host_per_micro_batch)
/// with every part >= 0 except ring_fixed. `fixed` holds the terms linear in the step's tokens
/// (GEMMs, attention, HBM-bound kernels, the bandwidth part of the TP, CP and EP collectives),
/// `per_micro_batch` the ones each micro-batch pays again (the collectives' latencies, the
/// kernels' launch gaps), the ring part the CP ring hidden behind the attention core, `bubble`
/// the pipeline bubble's (pp − 1)/vpp, `dp_per_micro_batch` the data-parallel collectives a
/// sharded strategy runs per micro-batch (outside the bubble) and `host_per_micro_batch` the
/// host's issue time. Built by
/// CostModel::StepLowerBoundOf; the proof, term by term, is in planner/cost/bounds.cpp.
struct StepLowerBound {
  double fixed = 0;
  double per_micro_batch = 0;
  double ring_fixed = 0, ring_per_micro_batch = 0;
  double bubble = 0;
  double dp_per_micro_batch = 0;
  double host_per_micro_batch = 0;
  /// The bound of a layout with `micro_batches` per step (> 0), seconds. Throws nothing.
  double At(double micro_batches) const;
  /// The least bound of any layout with between `min_micro_batches` and `max_micro_batches`
  /// (>= min, > 0) per step: the GPU part at the fewest, its bubble at the most. Throws nothing.
  double Least(double min_micro_batches, double max_micro_batches) const;
};

/// The micro-batches per step of a subtree's layouts, which StepLowerBound::Least takes: at
/// least global_batch / (dp · max_micro_batch) (1 with max_micro_batch 0 or a larger
/// micro-batch than the batch allows), at most global_batch / dp (one sequence each).
struct MicroBatchRange {
  double fewest = 1, most = 1;
};
MicroBatchRange MicroBatchesPerStep(int64_t global_batch, int64_t dp, int64_t max_micro_batch);

/// Everything that depends on (model, system, setup) but not on the layout, computed
/// once; Evaluate() then scores a layout without allocating.
class CostModel {
 public:
  /// Throws nothing; inputs must be valid (loaders validated them). `memory` selects the
  /// memory profile and its options (defaults: see MemoryOptions).
  CostModel(const ModelSpec& model, const SystemSpec& system, const TrainSetup& setup,
            const MemoryOptions& memory = {});
  /// The same model, system and memory options for another setup: equal to
  /// CostModel(model(), system(), setup, memory_options()), and shares this model's
  /// setup-independent tables (the search builds one per memory-probe batch size).
  CostModel WithSetup(const TrainSetup& setup) const;
  /// A lower bound (seconds) on Evaluate(x).step_seconds for every layout x that shares
  /// `layout`'s runtime, DP implementation, mesh axes, sequence_parallel and recompute (and,
  /// for the Megatron-Core runtime, its VPP, whose bubble it counts), whatever its local batch,
  /// pipeline schedule and micro-batch up to `max_micro_batch` sequences (0: any micro-batch;
  /// the per-micro-batch terms then assume one micro-batch per step). Used by
  /// the search to prune (branch and bound); the proof, term by term, is in
  /// planner/cost/bounds.cpp. Throws nothing.
  double StepSecondsLowerBound(const CostView& layout, int64_t max_micro_batch = 0) const;
  /// The same bound as a function of the micro-batch count (StepLowerBound), for the layouts
  /// that share all of `layout`'s fields but the micro-batch, local batch and schedule (and,
  /// outside Megatron-Bridge, VPP); StepSecondsLowerBound(l, m) = StepLowerBoundOf(l).Least at
  /// m's fewest and one sequence's most micro-batches. The search prunes each layout of a
  /// scored subtree by it (Scorer::Leaf). Throws nothing.
  StepLowerBound StepLowerBoundOf(const CostView& layout) const;
  /// Scores a layout that has passed the rules, as its framework's ToCostView sees it.
  Cost Evaluate(const CostView& layout) const;
  /// Evaluate(layout).memory.Total(), without the step time (the search's memory probes).
  double MemoryTotal(const CostView& layout) const;
  const ModelSpec& model() const { return model_; }
  const SystemSpec& system() const { return system_; }
  const TrainSetup& setup() const { return setup_; }
  const ParamCounts& params() const { return params_; }
  const MemoryOptions& memory_options() const { return memory_; }
  /// Memory of every pipeline rank (index = PP rank) of `layout`; Evaluate reports the largest.
  std::vector<MemoryBreakdown> RankMemories(const CostView& layout) const;

 private:
  ModelSpec model_;
  SystemSpec system_;
  TrainSetup setup_;
  ParamCounts params_;
  MemoryOptions memory_;
  double model_flops_ = 0;
  double peak_flops_ = 0;  ///< dense peak FLOP/s for setup_.precision
  /// Per-token FLOP terms of the model at setup_.seq_len (planner/cost/flops.hpp), computed
  /// once here instead of once per layout.
  std::shared_ptr<const cost::FlopsPerToken> flops_;
  /// Per-group-shape links from the topology graph (include/meshplan/topology.hpp; above
  /// cost::kMaxGraphWorld GPUs the link-tier rule's), built once per (system, GPU count) and
  /// shared; Evaluate only looks them up.
  std::shared_ptr<const cost::LinkTable> links_;
  /// Activation bytes per layer, the unfused Megatron-Core ops of a layer and the pipeline
  /// ranks to score per (pp, stage count), layout-independent, computed once
  /// (planner/cost/tables.hpp).
  std::shared_ptr<const cost::CostTables> tables_;
};

}  // namespace meshplan
