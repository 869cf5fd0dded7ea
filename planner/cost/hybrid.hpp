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
  int64_t gdn = 0;  ///< Gated DeltaNet mixers (Qwen3-Next, Qwen3.5)
  int64_t Total() const { return attention + mamba + dense + moe + gdn; }
};

/// Whether `model`'s layer pattern has a Gated DeltaNet mixer (Qwen3-Next, Qwen3.5).
inline bool HasGdnMixers(const ModelSpec& model) {
  for (const LayerBlock& b : model.layer_pattern) {
    if (b.mixer == MixerKind::kGatedDeltaNet) return true;
  }
  return false;
}

/// The blocks of layers [first, first + count) of `model`'s layer pattern (clamped to it);
/// DeepSeek-V4's attention blocks count as attention (their terms: cost/dsv4.hpp).
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

/// Forward + backward GEMM FLOP per token of one Gated DeltaNet mixer's projections
/// (Megatron-Core ssm/gated_delta_net/gdn.py GatedDeltaNet: in_proj h -> 2·qk + 2·v + 2·n_v
/// for q, k, v, the output gate z, beta and alpha; out_proj v -> h), qk = n_k·d_k, v = n_v·d_v:
/// 6·h·(2·qk + 2·v + 2·n_v) + 6·v·h (the terms of Megatron-LM training.py gdn_layer_flops).
double GdnLinearFlops(const ModelSpec& model);

/// Chunk length of flash-linear-attention's chunked gated delta rule
/// (fla/ops/gated_delta_rule/chunk.py chunk_gated_delta_rule_fwd: chunk_size = 64).
inline constexpr double kGdnChunk = 64.0;

/// Forward + backward FLOP per token of the chunkwise gated delta rule of one Gated DeltaNet
/// mixer (Yang, Kautz & Hatamizadeh, "Gated Delta Networks: Improving Mamba2 with Delta Rule",
/// ICLR 2025, §3.3 the chunkwise WY form; the kernels of flash-linear-attention
/// fla/ops/gated_delta_rule/chunk.py that Megatron-Core's GatedDeltaNet calls), chunk length
/// C = kGdnChunk, per value head (q and k are repeated to the n_v value heads, gdn common.py
/// _prepare_input_for_gated_delta_rule), per token of the forward:
///   A = β·K·Kᵀ within the chunk (chunk_scaled_dot_kkt_fwd)          2·C·d_k
///   (I + A)⁻¹, unit lower-triangular C x C per chunk (solve_tril)   2·C²/3
///   w = A·(β·k·e^g), u = A·(β·v) (recompute_w_u_fwd)                2·C·(d_k + d_v)
///   v_new = u − w·S, S += kᵀ·v_new per chunk (chunk_gated_delta_rule_fwd_h)   4·d_k·d_v
///   o = q·S + (q·kᵀ ∘ M)·v_new (chunk_fwd_o)                         2·d_k·d_v + 2·C·(d_k + d_v)
/// The backward is twice the forward (each product's two input gradients) and recomputes the
/// chunk states and w, u (chunk_gated_delta_rule_bwd: the states are not saved):
/// 3·fwd + 4·d_k·d_v + 2·C·(d_k + d_v), times n_v. Whole C x C blocks are computed (the
/// causal mask is applied, not skipped).
double GdnChunkFlops(const ModelSpec& model);

/// HBM elements per token moved by the non-GEMM kernels of one block's forward (before the
/// division by TP; the backward moves about twice as many, as MegatronLayerElements):
///   every block: its RMSNorm (read h, write h) and residual add (read 2h, write h)   5h
///   attention: RoPE on q and k 2(q + k); FP8: the o_proj input cast 1.5·o
///   MLP: the activation (SwiGLU read 2f write f, 3f; squared ReLU read f write f, 2f);
///        FP8: the fc2 input cast 1.5·f
///   MoE: router 4E, permute and unpermute 4kh (8kh with `sorts_local_experts`: the alltoall
///        dispatcher's sort by local expert and its inverse, MegatronSortsLocalExperts), the k
///        routed and the shared experts' activations (3 or 2)·(k·f_e + f_s); FP8 1.5·(k·f_e + f_s)
///   Mamba-2 (mamba_ssm mamba_split_conv1d_scan_combined, Megatron-Core MambaMixer._ssm_training):
///        read zxBCdt (2·d_in + 2·ng·N + nh), the causal conv1d writes and the scan reads its
///        output (2·(d_in + 2·ng·N)), the chunk states written and read in fp32
///        (4·d_in·N/Q: nh·P·N per chunk of Q tokens), the gated output y (d_in), the gated
///        RMSNorm (read y, write, 2·d_in); FP8: the out_proj input cast 1.5·d_in
///   Gated DeltaNet (Megatron-Core GatedDeltaNet.forward, fla kernels), qk = n_k·d_k,
///        v = n_v·d_v, qk' = n_v·d_k (q and k repeated to the value heads), fp32 as 2:
///        the causal conv1d (read and write 2·qk + v), the q/k L2 norm (read, write 4·qk), the
///        repeat to the value heads (read 2·qk, write 2·qk'), the gates (read 2·n_v, write
///        g and beta in fp32 4·n_v), the chunk kernels (read q, k, v, g, beta 2·qk' + v;
///        A per token C·n_v written and read 2·C·n_v; w, u written and read 2·(qk' + v); the
///        fp32 chunk states written and read 4·n_v·d_k·d_v/C; v_new written and read 2·v;
///        o written v), the output norm (read o, write 2·v) and the gate in fp32
///        (gate.float(), silu, the product and the cast back: about 10·v); FP8: the out_proj
///        input cast 1.5·v
/// DeepSeek-V4's attention blocks (kDeepseekV4Attention, counted as kAttention by
/// HybridBlocksIn): kAttention of a DeepSeek-V4 model is Dsv4BlockElements (cost/dsv4.hpp).
double HybridBlockElements(const ModelSpec& model, MixerKind mixer, MlpKind mlp, bool fp8, bool sorts_local_experts);

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
///   Gated DeltaNet (fla and Megatron-Core gdn.py / common.py, qk, v, qk' as for the
///     elements): the causal conv1d's input (fla CausalConv1dFunction saves x; its output is
///     rebuilt in the backward) 2·(2·qk + v); the L2 norm's outputs and fp32 rstd per head
///     (fla l2norm: save_for_backward(y, rstd)) 2·2·qk + 8·n_k; the fp32 softplus input of
///     the decay 4·n_v; ChunkGatedDeltaRuleFunction's q, k (repeated), v, g (fp32), beta and
///     A (the C-wide (I + A)⁻¹ rows, bf16) 2·2·qk' + 2·v + 4·n_v + 2·n_v + 2·C·n_v (the chunk
///     states are recomputed in its backward); the output norm's input and fp32 rstd 2·v +
///     4·n_v, the gate's fp32 copy (silu's input) 4·v, the product's operands 2·v + 4·v
///     (_apply_gated_norm: y · silu(gate.float())), the out_proj input q·v
/// Under CP the Mamba-2 tensors are head-parallel over the whole sequence after the all-to-all
/// (mamba_context_parallel.py pre_conv_ssm): the same bytes / CP as the sequence split; so are
/// the Gated DeltaNet tensors (gdn.py a2a_cp_to_hp after in_proj).
/// kAttention of a DeepSeek-V4 model: Dsv4BlockSavedBytes (cost/dsv4.hpp).
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

/// Kernels of one Gated DeltaNet block, forward + backward (counted from Megatron-Core
/// GatedDeltaNet.forward and fla chunk_gated_delta_rule): forward the fused norm + in_proj
/// GEMM, the split and layout copies, conv1d, the q/k L2 norm, the repeat and contiguous
/// copies, the gates (softplus, exp, sigmoid), the six chunk kernels (local cumsum, K·Kᵀ,
/// solve_tril, w/u, chunk states, output), the output norm and the fp32 gate ops, out_proj
/// and the residual add (about 24); backward the recomputed chunk states and w/u, about ten
/// chunk backward kernels, the conv1d, norm and gate backward, a data- and a weight-gradient
/// GEMM per projection (about 30). An estimate like kMambaBlockKernels.
inline constexpr double kGdnBlockKernels = 54.0;

/// Kernels per block kind per micro-batch (GPU-weighted: a graphed kernel counts
/// kGraphedKernelShare; host: the ones the host launches), as MegatronKernelsPerLayer for the
/// flat layers: attention kAttnBlockKernels (+ unfused RoPE / bias-dropout-add), Mamba-2
/// kMambaBlockKernels, MLP kMlpBlockKernels, MoE kMoeLayerKernels − kAttnBlockKernels + E/ep ·
/// kGroupedGemmKernelsPerExpert (its pre-dispatch part: router and preprocessing). A CUDA graph
/// (cuda_graph_impl full_iteration, or transformer_engine with an empty scope: every block;
/// with a scope: attn, mamba, mlp, moe / moe_router / moe_preprocess) replays what it captures.
struct HybridKernels {
  double attn = 0, attn_host = 0, mamba = 0, mamba_host = 0;
  double gdn = 0, gdn_host = 0;  ///< Gated DeltaNet (kGdnBlockKernels; the self_attention of a Megatron-Core TransformerLayer: graphed with the attn scope)
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
