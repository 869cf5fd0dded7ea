#pragma once
/// \file hybrid.hpp
/// Cost terms of hybrid models (a layer pattern of single-block layers: Nemotron-H's Mamba-2
/// 'M', attention '*', MLP '-' and MoE 'E') under Megatron-Core's HybridModel
/// (megatron/core/models/hybrid/hybrid_block.py: one block per layer, a pre-norm fused into
/// the block's first GEMM). Private to planner/cost. Units: elements, FLOP, bytes per token.

#include <cstdint>

#include "cost/context.hpp"
#include "cost/memory_megatron.hpp"
#include "cost/time.hpp"

namespace meshplan::cost {

/// Blocks of each kind among some layers of a hybrid model (counts of layers).
struct HybridBlocks {
  int64_t attention = 0, mamba = 0, dense = 0, moe = 0;
  int64_t Total() const { return attention + mamba + dense + moe; }
};

/// The blocks of layers [first, first + count) of `model`'s layer pattern (clamped to it).
HybridBlocks HybridBlocksIn(const ModelSpec& model, int64_t first, int64_t count);

/// Forward + backward GEMM FLOP per token of one Mamba-2 mixer's in_proj (h -> 2·d_in +
/// 2·ng·N + nh) and out_proj (d_in -> h): 6·h·(2·d_in + 2·ng·N + nh) + 6·d_in·h (Megatron-LM
/// training.py mamba_layer_flops, with the model's own d_in).
double MambaLinearFlops(const ModelSpec& model);

/// Forward + backward FLOP per token of the SSD chunked scan of one Mamba-2 mixer (Dao & Gu
/// 2024, "Transformers are SSMs", §6 and Listing 1 ssd_minimal_discrete; the kernels of
/// mamba_ssm ops/triton/ssd_combined.py), chunk length Q, state N, head dim P, nh heads, ng
/// groups, per token of the forward:
///   C·B^T within a chunk (one per group, _bmm_chunk_fwd)      2·ng·Q·N
///   (L ∘ C·B^T)·X within a chunk (per head, _chunk_scan_fwd)   2·nh·Q·P
///   chunk states B^T·X (_chunk_state_fwd)                      2·nh·N·P
///   outputs from the carried states C·h (_chunk_scan_fwd)      2·nh·N·P
///   state passing between chunks (_state_passing_fwd)          2·nh·N·P / Q
/// and the backward twice the forward (each product's two input gradients): 3x in all. The
/// kernels compute whole Q x Q blocks (the causal mask is applied, not skipped).
double SsdScanFlops(const ModelSpec& model);

/// HBM elements per token moved by the non-GEMM kernels of one block's forward (before the
/// division by TP; the backward moves about twice as many, as MegatronLayerElements):
///   every block: its RMSNorm (read h, write h) and residual add (read 2h, write h)   5h
///   attention: RoPE on q and k 2(q + k); FP8: the o_proj input cast 1.5·o
///   MLP: the activation (SwiGLU read 2f write f, 3f; squared ReLU read f write f, 2f);
///        FP8: the fc2 input cast 1.5·f
///   MoE: router 4E, permute and unpermute 4kh, the k routed and the shared experts'
///        activations (3 or 2)·(k·f_e + f_s); FP8 1.5·(k·f_e + f_s)
///   Mamba-2 (mamba_ssm mamba_split_conv1d_scan_combined, Megatron-Core MambaMixer._ssm_training):
///        read zxBCdt (2·d_in + 2·ng·N + nh), the causal conv1d writes and the scan reads its
///        output (2·(d_in + 2·ng·N)), the chunk states written and read in fp32
///        (4·d_in·N/Q: nh·P·N per chunk of Q tokens), the gated output y (d_in), the gated
///        RMSNorm (read y, write, 2·d_in); FP8: the out_proj input cast 1.5·d_in
double HybridBlockElements(const ModelSpec& model, MixerKind mixer, MlpKind mlp, bool fp8);

/// Saved activation bytes per token of one block under Megatron-Core with Transformer Engine
/// (TeLayerBytes: `sequence` part divided by TP only with sequence parallelism, `split` part
/// by TP), q = QuantizedInputBytes(precision):
///   every block: its norm input (the residual stream) 2h; the norm output the block's first
///     GEMM saves for its weight gradient q·h (removed by layernorm recompute)
///   attention: q, k, v and the output 2·(2·a·d + 2·g·d), q/k norm inputs 2·(a·d + g·d) with
///     qk_norm, the fp32 log-sum-exp 4a (as TeSavedBytesPerToken)
///   MLP: fc1 output 2·c·f (c = 2 gated, 1 squared ReLU: relu2 saves its input) and the fc2
///     input q·f (mlp recompute removes both)
///   MoE: router input 2h (bf16), the shared expert's quantized fc1 copy q·h (FP8), router
///     logits and probabilities 8E (fp32), routed experts k·(q·h·etp + 2·c·f_e + q·f_e),
///     shared expert 2·c·f_s + q·f_s; moe recompute keeps the block's input 2h only
///   Mamba-2: the in_proj output zxBCdt 2·(2·d_in + 2·ng·N + nh) and the scan output out_x
///     2·d_in, both saved by MambaSplitConv1dScanCombinedFn (mamba_ssm
///     ops/triton/ssd_combined.py: ctx.save_for_backward(zxbcdt, ..., out_x, ...); the conv1d
///     output, dt, dA_cumsum and the chunk states are recomputed in its backward), the gated
///     RMSNorm's input 2·d_in and fp32 rstd 4·ng (Megatron-Core MambaMixer.norm, RMSNormGated
///     over groups of d_in/ng), the out_proj input q·d_in (TE RowParallelLinear)
/// Under CP the Mamba-2 tensors are head-parallel over the whole sequence after the all-to-all
/// (mamba_context_parallel.py pre_conv_ssm): the same bytes / CP as the sequence split.
TeLayerBytes HybridBlockSavedBytes(const ModelSpec& model, MixerKind mixer, MlpKind mlp, Precision precision,
                                   int64_t etp, uint32_t recompute_modules);

/// Kernels of one Mamba-2 block, forward + backward, Megatron-Core with Transformer Engine and
/// mamba_ssm (counted from MambaMixer.forward and mamba_split_conv1d_scan_combined): forward
/// the fused norm + in_proj GEMM, the A / dt_bias casts and layout copies, the six Triton
/// kernels of the combined scan (causal conv1d, chunk cumsum, chunk state, state passing, bmm
/// chunk, chunk scan), the gated RMSNorm, out_proj and the residual add (about 16); backward the
/// recomputed conv1d and about nine scan backward kernels, a data- and a weight-gradient GEMM
/// per projection, the norms' and copies' backward (about 22). An estimate like
/// kDenseLayerKernels; its time per kernel is the fitted MegatronTimeFit::kernel_overhead.
inline constexpr double kMambaBlockKernels = 40.0;

/// Kernels per block kind per micro-batch (GPU-weighted: a graphed kernel counts
/// kGraphedKernelShare; host: the ones the host launches), as MegatronKernelsPerLayer for the
/// flat layers: attention kAttnBlockKernels (+ unfused RoPE / bias-dropout-add), Mamba-2
/// kMambaBlockKernels, MLP kMlpBlockKernels, MoE kMoeLayerKernels − kAttnBlockKernels + E/ep ·
/// kGroupedGemmKernelsPerExpert (its pre-dispatch part: router and preprocessing). A CUDA graph
/// (cuda_graph_impl full_iteration, or transformer_engine with an empty scope: every block;
/// with a scope: attn, mamba, mlp, moe / moe_router / moe_preprocess) replays what it captures.
struct HybridKernels {
  double attn = 0, attn_host = 0, mamba = 0, mamba_host = 0;
  MegatronLayerKernels mlp;  ///< dense: the MLP block; moe: the MoE block
};
HybridKernels HybridKernelsPerBlock(const ModelSpec& model, const CostView& layout, const MegatronUnfused& unfused);

/// Megatron-Core memory of one pipeline rank of a hybrid model (MegatronRankMemory's hybrid
/// case): its blocks' parameters (ParamsOfRank), Megatron-Bridge's bytes per parameter (dense
/// state over DP·CP, experts over EDP = DP·TP·CP/(EP·ETP): megatron.md 3.5) and the
/// Transformer Engine activation count HybridBlockSavedBytes summed over the rank's blocks (the
/// same profile under every Megatron-Core memory option: Megatron-LM's estimator has no Mamba
/// layers).
MemoryBreakdown HybridRankMemory(const Ctx& c, int64_t pp_rank, const MemoryOptions& opts);

}  // namespace meshplan::cost
