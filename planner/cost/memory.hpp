#pragma once
/// \file memory.hpp
/// Per-GPU memory of one pipeline rank (bytes). Private to planner/cost.
/// Profiles (MemoryProfile in cost.hpp): "pytorch" = NeMo AutoModel with Hugging Face
/// modules (memory.cpp, memory_pytorch.cpp), calibrated term by term against the H200
/// measurements of tests/data/measured/; "megatron" = Megatron-LM's theoretical estimate
/// (memory_megatron.cpp).

#include <cstdint>

#include "cost/context.hpp"

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
/// (formulas in memory_pytorch.cpp), computing as `compute` says (default: bf16, flash).
ActBytes LayerActivationBytes(const ModelSpec& model, bool moe_layer, AcWrap wrap, const LayerCompute& compute = {});
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
  LayerCompute compute;     ///< PytorchCompute: fp32 for an fp32 model under DDP or on one GPU unwrapped with FSDP2
  double final_norm = 0;    ///< FinalNormBytesPerToken
  double rope = 0;          ///< RoPE cos and sin, 2·elem·rope_dim bytes per token
  double logits = 0;        ///< LogitsBytesPerTokenVocab(tp, loss_parallel, elem)
  double held_logits = 0;   ///< logits kept through the backward: elem / tp bytes per token and vocab entry
  double attn_held = 0, attn_transient = 0;  ///< MathAttentionBackwardBytes per rank (math kernel only)
  double overhead = 0;      ///< CUDA context + NCCL buffers
};
PytorchRankTerms PytorchTerms(const Ctx& c, const MemoryOptions& opts);

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
/// AutoModel `distributed.moe.reshard_after_forward` default (false, automodel.md 1.2):
/// when ep > 1 and ep_shard > 1 the gathered experts stay resident from forward to backward.
inline constexpr bool kMoeReshardAfterForward = false;

}  // namespace meshplan::cost
