#pragma once
/// \file memory.hpp
/// Per-GPU memory of one pipeline rank (bytes). Private to planner/cost.
/// Profiles (MemoryProfile in cost.hpp): "pytorch" = NeMo AutoModel with Hugging Face
/// modules (memory.cpp, memory_pytorch.cpp), calibrated term by term against the H200
/// measurements of tests/data/measured/; "megatron" = Megatron-LM's theoretical estimate
/// (memory_megatron.cpp).

#include <cstdint>

#include "cost/context.hpp"
#include "cost/dsv4.hpp"

namespace meshplan::cost {

/// Activation bytes per token of one decoder layer, grouped by how tensor parallelism
/// divides them.
struct ActBytes {
  double rep = 0;      ///< replicated over TP ranks, split by tp only with sequence_parallel
  double split = 0;    ///< head- or width-sharded: divided by tp
  double unsplit = 0;  ///< never divided by tp (routed experts are EP-owned, not TP-split)
  double PerRank(int64_t tp, bool sequence_parallel) const {
    const double t = double(tp < 1 ? 1 : tp);
    return rep / (sequence_parallel ? t : 1.0) + split / t + unsplit;
  }
};

/// How activation checkpointing wraps a layer (AutoModel, activation_checkpointing.py).
enum class AcWrap {
  kNone,
  kLayer,      ///< whole decoder layer checkpointed (FSDP2 full AC; HF gradient checkpointing)
  kSubmodule,  ///< self_attn, mlp and both norms each checkpointed (DDP full AC)
  kSelective,  ///< whole layer with the op-level SAC policy (every other mm saved)
};

/// How the decoder layers of the pytorch profile compute (PytorchCompute).
struct LayerCompute {
  double elem = 2.0;    ///< bytes of one activation element: 2 (bf16) or 4 (fp32)
  /// > 0: SDPA runs its math kernel (aten::_scaled_dot_product_attention_math) and this is the
  /// number of keys per query (the sequence length); 0: a fused kernel (flash in bf16,
  /// memory-efficient in fp32) that saves no s x s tensor.
  double kv_len = 0.0;
  /// fp32 GQA with head_dim > 256: transformers repeats k and v to the query heads itself
  /// (sdpa_attention.py::use_gqa_in_sdpa false, repeat_kv) and the fused kernel saves them so.
  bool kv_repeated = false;
  bool Math() const { return kv_len > 0.0; }
};
/// The compute of a model at `seq_len` tokens per sequence: bf16 with the flash kernel
/// (`fp32` false: a bf16 model, or FSDP2's MixedPrecisionPolicy(param_dtype=bf16)), or fp32
/// (`fp32` true: an fp32 model that nothing casts; AutoModel runs no autocast outside FP8).
/// fp32: SDPA's flash kernel takes only fp16 / bf16 and the memory-efficient one takes no
/// enable_gqa (torch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp), so a GQA model
/// (transformers 5.x sdpa_attention.py passes enable_gqa=True when there is no mask and
/// head_dim <= 256) runs the math kernel: torch._fused_sdp_choice gives SDPBackend::math on
/// H200, torch 2.11, for fp32 q (1, 32, 4096, 64), k and v (1, 8, 4096, 64), causal. MHA and
/// MLA models (no GQA) get the memory-efficient kernel.
LayerCompute PytorchCompute(const ModelSpec& model, bool fp32, int64_t seq_len);

/// Bytes per token that one layer of the pytorch profile keeps for backward under `wrap`
/// (formulas in memory_pytorch.cpp), computing as `compute` says (default: bf16, flash), its
/// token mixer `mixer`: attention (kAttention, the default) or a Gated DeltaNet mixer
/// (kGatedDeltaNet: Qwen3-Next / Qwen3.5 under AutoModel, derived from source, not measured).
ActBytes LayerActivationBytes(const ModelSpec& model, bool moe_layer, AcWrap wrap, const LayerCompute& compute = {},
                              MixerKind mixer = MixerKind::kAttention);
/// Bytes per token that one block of a Nemotron-H model (single-block layers: a Mamba-2 or
/// attention mixer, or a relu2 MLP or MoE; NemotronHForCausalLM as AutoModel trains it with
/// nemo_automodel/components/models/nemotron_v3, 36044ad) keeps for backward in bf16, by TP
/// class, under `wrap`:
///   kNone: its norm (input and fp32 rsqrt) and the norm's output, plus the mixer's or MLP's
///     saved tensors (formulas in memory_pytorch.cpp: mamba_ssm's fused scan, AttentionNoAc,
///     the relu2 MLP, NemotronMoeNoAc);
///   kLayer / kSubmodule (torch checkpoint_wrapper on the block): the block input e·h, and with
///     `router_saved` (the MoE parallelizer's ignore_router_for_ac policy, which must-saves the
///     router projection and aten.topk: components/moe/parallelizer.py apply_ac) the fp32
///     router logits 4E and the top-k values and int64 indices 12k;
///   kSelective: the block input and every other matmul output (TorchTitan's policy); the
///     mamba_ssm and fused-expert Functions' tensors are recomputed.
/// Which blocks a recipe wraps is the caller's (PytorchTerms). Derived from the source, not measured.
ActBytes NemotronBlockActivationBytes(const ModelSpec& model, MixerKind mixer, MlpKind mlp, AcWrap wrap,
                                      bool router_saved);
/// Same, by AutoModel recompute setting with whole-layer wrapping (FSDP2 / world 1), bf16.
ActBytes LayerActivationBytes(const ModelSpec& model, bool moe_layer, Recompute recompute);

/// SDPA's math kernel (LayerCompute::Math): a layer's backward peaks in its softmax backward
/// (measured: SafeSoftmaxBackward0 is the peak node of every DDP fp32 run whose peak is not the
/// loss). Per token, by TP class (formulas in memory_pytorch.cpp):
struct MathAttnBackward {
  ActBytes held;       ///< what the layer keeps at that node under the wrap (in place of its LayerActivationBytes)
  ActBytes transient;  ///< what that node and the gradients waiting beside it add
};
MathAttnBackward MathAttentionBackwardBytes(const ModelSpec& model, AcWrap wrap, const LayerCompute& compute);

/// Bytes per token outside the decoder layers on the rank holding the final norm: the HF
/// RMSNorm keeps its fp32 input (4h: a copy in bf16, the input itself in fp32), the
/// normalised value (elem·h), its output (lm_head input, elem·h) and the fp32 rsqrt (4):
/// bf16 8h + 4, fp32 12h + 4; replicated over TP (split with SP).
double FinalNormBytesPerToken(const ModelSpec& model, double elem = 2.0);

/// Bytes per token per vocabulary entry of the logits and the loss on the rank holding
/// lm_head, at the start of backward (AutoModel MaskedCrossEntropy: logits.float(),
/// DTensor logits gathered with full_tensor(), F.cross_entropy). Measured (tests/data/measured):
///   held through backward: the logits (elem/tp: lm_head output, Shard(-1) under TP, kept by
///   the model output; bf16 2, fp32 4, where logits.float() returns them and makes no copy) +
///   log_softmax output over the full vocabulary (4);
///   transient at the loss backward: nll_loss grad (4) + log_softmax grad (4).
/// Peak = elem/tp + 12 B per token per vocab entry (bf16 2/tp + 12, fp32 4/tp + 12); with
/// loss_parallel the loss buffers are vocabulary-sharded too: (elem + 12)/tp.
/// `fp32_upcast` false (MaskedCrossEntropy(fp32_upcast=False), which AutoModel's MoE benchmark
/// recipes set): F.cross_entropy runs on the logits' own dtype, so the log_softmax output and
/// the two gradients are elem bytes each: elem/tp + 3·elem (bf16 2/tp + 6). Both measured to
/// 0.1% on H200 (tests/data/measured/h200_loss_memory.jsonl, tools/measure/loss_memory.py).
double LogitsBytesPerTokenVocab(int64_t tp, bool loss_parallel = false, double elem = 2.0, bool fp32_upcast = true);

/// Micro-batches (in units of "all the rank's layers") whose activations PP rank `pp_rank`
/// holds at its peak. 1 without PP.
double InflightMicrobatches(const CostView& layout, const StageSplit& split, int64_t pp_rank);

/// The terms of the "pytorch" profile's RankMemory that do not depend on the PP rank, so that
/// a caller scoring several ranks of one layout computes them once (Ctx::pytorch_terms).
struct PytorchRankTerms {
  AcWrap wrap = AcWrap::kNone;  ///< checkpointing wrap of the layers
  double dense_act = 0, moe_act = 0;    ///< activation bytes per token of a layer under `wrap`, per rank
  double dense_full = 0, moe_full = 0;  ///< the same without checkpointing (one layer recomputed)
  /// A Gated DeltaNet layer's bytes per token per rank less those of an attention layer with the
  /// same MLP, under `wrap` and without checkpointing (taken on a MoE layer, the MLP of every
  /// layer of the Qwen3-Next / Qwen3.5 configs: the MLP part cancels without checkpointing; under
  /// kSelective the alternation of the saved matmuls makes it the MoE layer's); 0 without such
  /// layers. Negative where the mixer keeps less than attention.
  double gdn_delta = 0, gdn_delta_full = 0;
  /// Nemotron-H (NemotronBlockActivationBytes): bytes per token per rank of each block kind
  /// under the wrap AutoModel gives it (`*_full`: without checkpointing, for the recompute
  /// moment of a wrapped block; 0 where that kind is not wrapped); all 0 for other models.
  double nem_attn = 0, nem_mamba = 0, nem_mlp = 0, nem_moe = 0;
  double nem_recompute = 0;  ///< the largest `*_full` of the wrapped kinds the model has
  /// DeepSeek-V4's terms (Dsv4Pytorch; zero for other models): memory reads its layers' bytes as
  /// moe_act / moe_full, its mask and rotary tables as `rope`, its fp32 and frozen parameters;
  /// step time (RankTime) its GEMM, core, eager and CP terms.
  Dsv4PytorchTerms dsv4;
  LayerCompute compute;     ///< PytorchCompute: fp32 for an fp32 model under DDP or on one GPU unwrapped with FSDP2
  double final_norm = 0;    ///< FinalNormBytesPerToken
  double rope = 0;          ///< RoPE cos and sin, 2·elem·rope_dim bytes per token
  double logits = 0;        ///< LogitsBytesPerTokenVocab(tp, loss_parallel, elem)
  double held_logits = 0;   ///< logits kept through the backward: elem / tp bytes per token and vocab entry
  double attn_held = 0, attn_transient = 0;  ///< MathAttentionBackwardBytes per rank (math kernel only)
  double overhead = 0;      ///< CUDA context + NCCL buffers
};
PytorchRankTerms PytorchTerms(const Ctx& c, const MemoryOptions& opts);

/// Whether AutoModel trains the model unwrapped on one GPU: world size 1 without MegatronFSDP
/// (FSDP2Manager / DDPManager skip their wrapping there; MegatronFSDP always wraps), unless
/// `wrap_one_gpu` (MemoryOptions: the measurement harness wraps anyway).
bool PytorchUnwrappedOneGpu(const Ctx& c, bool wrap_one_gpu);

/// Nemotron-H under AutoModel: whether activation checkpointing wraps every block (true) or only
/// the mlp and mamba blocks (false). Every block under the MoE parallelizer (ep_size > 1,
/// components/moe/parallelizer.py, its ignore_router_for_ac policy) and on one unwrapped GPU
/// (`unwrapped_one_gpu`: FSDP2Manager's gradient_checkpointing_enable); only mlp and mamba under
/// NemotronHParallelizationStrategy (components/distributed/parallelizer.py, ep_size 1), which
/// takes "selective" as a full wrap. Memory (PytorchTerms) and step time (RankTime) both read it.
bool NemotronChecksEveryBlock(const Ctx& c, bool unwrapped_one_gpu);

/// Parameters (elements) of PP rank `rp`'s non-expert state that AutoModel's TP plan leaves whole
/// on every TP rank: for Nemotron-H (NemotronHParallelizationStrategy splits only the MLP blocks'
/// up_proj / down_proj and lm_head) everything else, the mixers, norms, MoE routers and shared
/// experts and the embedding; 0 for every other model (their layers and root are counted as
/// split) and at tp 1.
double PytorchTpWholeParams(const Ctx& c, const RankParams& rp);

/// Bytes per GPU of the flex dispatcher's communication buffers, which DeepEP and HybridEP
/// allocate outside PyTorch's caching allocator at the first dispatch and keep for the run
/// (part of MemoryBreakdown::overhead); 0 unless the layout's dispatcher is flex with EP > 1
/// (Megatron-Core moe_token_dispatcher_type flex; AutoModel's deepep / hybridep dispatchers,
/// UCCL-EP and Mixture-of-Kittens priced as DeepEP). The group is expert-TP x EP ranks (n).
///   DeepEP v1.2.1 normal mode (Megatron-Core / AutoModel fused_a2a.py get_buffer: the larger of
///   the dispatch and combine configurations' size hints, csrc/config.hpp): with 10 channels
///   (20 SMs), R_n = min(n, 8) NVLink peers, r = max(n / 8, 1) RDMA ranks and the tables'
///   receive depths (NVLink 256 / 288 / 560 / 720 tokens for n <= 8 / <= 64 / 128 / more, RDMA
///   128), each token slot holding its 2h bytes and 2056 bytes of top-k indices, weights,
///   scales and source metadata:
///     NVLink  10·R_n·(2r + 3)·4 + 10·R_n·depth·(2h + 2056)
///     RDMA    (n > 8) 10·r·18·2·4 + 10·r·128·2·(2h + 2072)
///   e.g. h 4096, EP 8: 210 MB; EP 32: 236 + 106 MB.
///   HybridEP (DeepEP hybrid-ep 94a9f8f, shared dispatch / combine buffers): T tokens per rank
///   (micro_batch · seq / cp, / tp with sequence parallelism), R group ranks per NVLink domain,
///   N = ceil(n / domain) domains, E_l = E / ep local experts, q = E_l·R, s = h/128:
///     NVLink  T·R·N·(2h + 4q + 4s)  (room for every token of the group at one rank)
///     RDMA    (N > 1) T·(2h + 4qN + 4s) + T·(N−1)·(2h + 4q + 4s) + 2T·(N−1)·(2h + 4q)
///   e.g. DeepSeek-V3 EP 64 in one NVL72 domain, 4096 tokens: 4.1 GB.
/// Throws nothing.
double EpDispatcherBufferBytes(const Ctx& c);

/// Memory of PP rank `pp_rank` at its peak moment, with the given options.
MemoryBreakdown RankMemory(const Ctx& c, int64_t pp_rank, const MemoryOptions& opts);
/// Same with default MemoryOptions.
MemoryBreakdown RankMemory(const Ctx& c, int64_t pp_rank);
/// True when RankMemory(c, r, opts) is the same for every PP rank r without MTP layers (the
/// "megatron" profile: Megatron's estimate is for the most loaded shard whatever the rank,
/// unless a recipe's pipeline layout is priced, c.split.given), so that a caller may compute it
/// once per layout, and once more for the rank holding MTP layers (RankParams::mtp_layers).
bool RankMemoryIsUniform(const Ctx& c, const MemoryOptions& opts);
/// True when RankMemory(c, r, opts) prices the layout with the "pytorch" profile, the only one
/// that reads PytorchTerms (Ctx::pytorch_terms); the Megatron-Core profiles never do.
bool RankMemoryUsesPytorchTerms(const Ctx& c, const MemoryOptions& opts);

/// CUDA context with the kernels PyTorch loads lazily during training, outside the
/// caching allocator: measured 767-773 MiB on H200, torch 2.11 / CUDA 13.0 (device in use
/// minus reserved, tests/data/measured/h200_1gpu.jsonl).
inline constexpr double kCudaContextBytes = 770.0 * 1024.0 * 1024.0;
/// NCCL buffers of one communicator with more than one rank (outside the allocator):
/// measured 2xH200 NVLink, NCCL defaults: 2 communicators 1231 MiB, 3 communicators 1617 MiB
/// over the context (h200_2gpu.jsonl) -> 576 MiB each.
inline constexpr double kNcclBytesPerGroup = 576.0 * 1024.0 * 1024.0;
/// cuBLAS + cuBLASLt workspaces PyTorch allocates through the caching allocator on Hopper
/// (2 x 32 MiB); measured allocated-at-rest minus model state: 64-67 MiB.
inline constexpr double kCublasWorkspaceBytes = 64.0 * 1024.0 * 1024.0;
/// torch DDP default bucket_cap_mb = 25 MiB (used by the time model).
inline constexpr double kDdpBucketBytes = 25.0 * 1024.0 * 1024.0;

}  // namespace meshplan::cost
