// Activation bytes per token of the "pytorch" profile: Hugging Face decoder layers
// (transformers 5.x LlamaDecoderLayer / Qwen2 / Qwen3 / DeepseekV3 / MoE blocks), bf16
// compute with SDPA's flash kernel, or fp32 compute (an fp32 model under DDP, LayerCompute)
// with SDPA's math kernel for GQA; autograd's saved tensors. Units: bytes per token.
// e = LayerCompute::elem, the bytes of one activation element (bf16 2, fp32 4).
//
// Every dense-layer formula below was checked against the allocator's growth over one
// forward (alloc_after_fwd - alloc_step_start) of the measured runs in tests/data/measured/
// (Llama 3.2 1B / 3B, Llama 3.1 8B, Qwen2.5 0.5B, Qwen3 1.7B / 4B / 8B; no AC, full AC,
// selective AC, TP 2): all agree within 0.1%; the fp32 ones (h200_1gpu_fp32.jsonl, the seven
// w1-ddp32 runs: Qwen2.5 0.5B, Llama 3.2 1B / 3B, Qwen3 1.7B; no, full and selective AC)
// within 0.005%. MoE architectures AutoModel runs with its own modules (every MoE model but
// Mixtral: OwnMoeModules) are counted from those (nemo_automodel/components/models/<model>/,
// components/moe/) and measured (tests/data/measured/h200_automodel_moe_memory.jsonl: GPT-OSS,
// Qwen3-MoE, DeepSeek-V3 layers without AC, within 4%). Not measured: fp32 with the
// memory-efficient kernel (MHA, MLA).

#include <algorithm>
#include <array>
#include <utility>

#include "cost/hybrid.hpp"
#include "cost/memory.hpp"
#include "cost/time.hpp"

namespace meshplan::cost {

namespace {

/// HF RMSNorm (LlamaRMSNorm.forward: hidden_states.to(float32); pow(2).mean; hidden_states *
/// rsqrt(variance + eps); weight * hidden_states.to(input_dtype)): autograd keeps the fp32 input
/// (4 B, saved by pow and mul: in bf16 the copy .to(float32) makes, in fp32 the input itself,
/// .to returning it), the normalised value in the input dtype (e B, saved by `weight *`: the bf16
/// copy, or in fp32 the product itself) and the fp32 rsqrt per row (4 B per row). `width`
/// elements per row, `rows` rows per token: bf16 6·width + 4·rows, fp32 8·width + 4·rows.
double NormBytes(double width, double rows, double e) { return (4.0 + e) * width + 4.0 * rows; }

/// AutoModel's own MoE models build their norms from BackendConfig.rms_norm
/// (components/models/common/utils.py initialize_rms_norm_module: Transformer Engine's RMSNorm,
/// torch nn.RMSNorm's fused kernel, or the torch.compiled Float32RMSNorm), which keep the input
/// in its dtype and the fp32 rsqrt per row: e·width + 4·rows (measured with nn.RMSNorm).
double OwnNormBytes(double width, double rows, double e) { return e * width + 4.0 * rows; }

/// An MoE architecture AutoModel trains with its own modules (every MoE model meshplan knows
/// but Mixtral, which runs through transformers: HfMoeModel).
bool OwnMoeModules(const ModelSpec& m) { return m.is_moe() && !HfMoeModel(m); }

/// Whether `m`'s decoder layers use Qwen3NextRMSNorm: AutoModel's Qwen3-Next and Qwen3.5 MoE
/// (components/models/qwen3_next/model.py Block: input_layernorm and post_attention_layernorm;
/// qwen3_next/layers.py Qwen3NextAttention q_norm and k_norm; qwen3_5_moe/model.py
/// Qwen3_5MoeBlock inherits Block), not BackendConfig.rms_norm.
bool Qwen3NextNorms(const ModelSpec& m) {
  return m.architecture == Architecture::kQwen3Next || m.architecture == Architecture::kQwen3_5Moe;
}

/// Qwen3NextRMSNorm (qwen3_next/layers.py: output = _norm(x.float()) = x·rsqrt(mean(x²) + eps);
/// output · (1 + weight.float()); .type_as(x)): autograd keeps the fp32 input (pow and mul save
/// it: in bf16 the copy x.float() makes), the fp32 rsqrt per row, and the fp32 normalised value
/// (saved by the `(1 + weight)` mul: the product is taken in fp32, before the cast back):
/// 8·width + 4·rows in bf16 and fp32 alike.
double Qwen3NextNormBytes(double width, double rows) { return 8.0 * width + 4.0 * rows; }

/// The norm bytes of `m`'s layers: Qwen3NextNormBytes for Qwen3-Next / Qwen3.5, OwnNormBytes for
/// AutoModel's other own MoE models, else HF's.
double LayerNormBytes(const ModelSpec& m, double width, double rows, double e) {
  if (Qwen3NextNorms(m)) return Qwen3NextNormBytes(width, rows);
  return OwnMoeModules(m) ? OwnNormBytes(width, rows, e) : NormBytes(width, rows, e);
}

/// SDPA's math kernel (torch aten/src/ATen/native/transformers/attention.cpp,
/// _scaled_dot_product_attention_math, composite: autograd saves what each of its aten ops
/// saves, tools/autograd/derivatives.yaml; the op sequence and the saved variables read on
/// torch 2.11 through a TorchDispatchMode and torch/csrc/autograd/generated/Functions.h):
///   q · sqrt(scale) (mul.Scalar saves nothing), reshaped to (b·a, s, d) for bmm: a copy, as
///     q arrives transposed from (b, s, a, d); bmm saves it: e·QDim;
///   k repeated to the a query heads (pre_process_group_query_attention_input:
///     repeat_interleave = unsqueeze, expand, clone), transposed and · sqrt(scale): bmm saves
///     it (BmmBackward0 mat2_): e·a·d;
///   the scores q·kᵀ plus the causal mask (ones.tril, where; not saved), then _safe_softmax,
///     which saves its result P (SafeSoftmaxBackward0 result_, the s x s probabilities per
///     head, kv_len keys): e·a·kv_len;
///   P · v: bmm saves P (the same tensor) and v repeated to the query heads: e·a·d.
/// The kernel's output (b·a, s, d) is not saved; transformers transposes it and .contiguous()
/// copies it: that copy is o_proj's input, counted by AttentionNoAc.
double MathAttentionSaved(const ModelSpec& m, const LayerCompute& x) {
  const double e = x.elem, a = double(m.num_attention_heads), d = double(m.head_dim);
  return e * double(QDim(m)) + e * a * d + e * a * x.kv_len + e * a * d;
}

/// Attention without checkpointing, by TP class. RoPE (q·cos + rotate_half(q)·sin) saves
/// nothing but cos/sin (mul saves the other operand only where it needs a gradient).
/// Fused kernel: SDPA (flash in bf16, memory-efficient in fp32) saves q and k after RoPE, v,
/// its output and the fp32 log-sum-exp: e·h_q + e·h_kv + e·h_kv + e·h_q + 4·a; k, v are not
/// repeated for GQA (enable_gqa), unless transformers repeated them (LayerCompute::kv_repeated:
/// e·a·d each). Math kernel: MathAttentionSaved plus o_proj's input, the contiguous copy of the
/// output (e·h_q). Qwen3 q_norm / k_norm add NormBytes per head (their outputs feed RoPE, which
/// does not save them). MLA (DeepseekV3Attention): q_a_layernorm and kv_a_layernorm
/// (replicated: produced by replicated linears) with their outputs (q_b / kv_b inputs), then
/// q, k (cat of nope and rope parts), v, output, lse.
void AttentionNoAc(const ModelSpec& m, const LayerCompute& x, ActBytes& b) {
  const double a = double(m.num_attention_heads), g = double(m.num_key_value_heads), e = x.elem;
  if (m.mla) {
    const MlaSpec& l = m.mla_spec;
    if (l.q_lora_rank > 0) b.rep += LayerNormBytes(m, double(l.q_lora_rank), 1, e) + e * double(l.q_lora_rank);
    b.rep += LayerNormBytes(m, double(l.kv_lora_rank), 1, e) + e * double(l.kv_lora_rank);
    // AutoModel's MLA (components/models/deepseek_v3/layers.py MLA.forward) splits kv_b_proj's
    // output into k_nope and v; v reaches the attention kernel as a view, so the kernel's saved
    // v keeps the whole kv_b output alive: its k_nope half, e·a·qk_nope, on top of v (measured:
    // DeepSeek-V3 under SDPA, 32,768 B per token).
    if (OwnMoeModules(m) && !x.Math()) b.split += e * double(m.num_attention_heads) * double(l.qk_nope_head_dim);
  }
  if (x.Math()) {
    b.split += MathAttentionSaved(m, x) + e * double(AttnOutDim(m));
  } else {
    const double kv = x.kv_repeated ? a * double(m.head_dim) : 0.0;
    b.split += e * double(QDim(m)) + e * (kv > 0 ? kv : double(KDim(m))) + e * (kv > 0 ? kv : double(VDim(m))) +
               e * double(AttnOutDim(m)) + 4.0 * a;
  }
  if (m.qk_norm && !m.mla) {
    b.split += LayerNormBytes(m, double(QDim(m)), a, e) + LayerNormBytes(m, double(KDim(m)), g, e);
  }
  // Output gate (AutoModel qwen3_next/layers.py Qwen3NextAttention.forward: attn_output ·
  // sigmoid(gate), then o_proj): sigmoid saves its output (e·q) and the product is o_proj's
  // input (e·q); the mul's other operand is the kernel output counted above.
  if (m.attention_output_gate) b.split += 2.0 * e * double(AttnOutDim(m));
}

/// One Gated DeltaNet mixer without checkpointing (AutoModel qwen3_next/layers.py
/// Qwen3NextFp32GatedDeltaNet.forward, the transformers Qwen3NextGatedDeltaNet forward with the
/// gate in fp32; qwen3_5_moe/cp_linear_attn.py CPAwareGatedDeltaNet._forward_no_cp, the same
/// tensors from separate in_proj_qkv / z / b / a), bf16 with the fast path AutoModel's
/// moe extra installs (causal-conv1d, flash-linear-attention >= 0.4.2: pyproject.toml), per
/// token, qk = n_k·d_k, v = n_v·d_v, qk' = n_v·d_k (q and k repeated to the value heads),
/// C = kGdnChunk; the projections' input (the norm output) is the layer's, counted by the caller:
///   causal conv1d (causal_conv1d_interface.py CausalConv1dFn.forward: save_for_backward(x, ...);
///     the output is recomputed in its backward) keeps its input, the q, k, v concat: e·(2qk + v)
///   beta = b.sigmoid() saves its output (also fla's beta): e·n_v
///   the fp32 gate (Qwen3NextSSMGate.forward: −exp(A_log) · softplus(a.float() + dt_bias)):
///     softplus saves its input, the mul its output: 8·n_v
///   fla ChunkGatedDeltaRuleFunction.forward (fla/ops/gated_delta_rule/chunk.py, fla-org
///     bc3b101d; use_qk_l2norm_in_kernel=True): save_for_backward(q, q_rstd, k, k_rstd, v, g,
///     beta, A, ...): the L2-normalised q and k (l2norm_fwd outputs, input dtype) 2·e·qk', their
///     fp32 rstd per row 8·n_v, v (input_guard's contiguous copy of the conv output's v view)
///     e·v, the fp32 chunk-local cumsum of g (chunk_local_cumsum, output_dtype float) 4·n_v, A =
///     (I + A)⁻¹ (chunk_fwd.py chunk_gated_delta_rule_fwd_intra: B·T·H·C in k.dtype) e·C·n_v; the
///     chunk states h, w and u are recomputed in its backward;
///   the output norm (fla modules/fused_norm_gate.py FusedRMSNormGated -> LayerNormGatedFunction:
///     save_for_backward(x, g, weight, bias, mean, rstd)): its input o e·v, the gate z (a copy:
///     fix_query_key_value_ordering's reshape cannot view the split) e·v, fp32 rstd per head 4·n_v
///   out_proj's input, the norm output: e·v
/// Sum: e·(2qk + v) + 2·e·qk' + 4·e·v + e·n_v + e·C·n_v + 24·n_v. Qwen3-Next-80B (h 2048, 16 x
/// 128 key, 32 x 128 value heads), bf16: 16,384 + 16,384 + 32,768 + 64 + 4,096 + 768 = 70,464 B
/// per token. Derived from the source, not measured. TP never splits it (AutoModel has no TP
/// plan for these models): counted as split, as attention is.
void GdnMixerNoAc(const ModelSpec& m, double e, ActBytes& b) {
  const GatedDeltaNetSpec& x = m.gdn;
  const double qk = double(x.key_dim()), v = double(x.value_dim()), nv = double(x.num_value_heads);
  const double qkr = nv * double(x.key_head_dim);
  b.split += e * (2.0 * qk + v) + 2.0 * e * qkr + 4.0 * e * v + e * nv + e * kGdnChunk * nv + 24.0 * nv;
}

/// FFN without checkpointing. Dense SwiGLU (down_proj(act_fn(gate_proj(x)) * up_proj(x))):
/// gate out (SiLU input), up out and act(gate) (saved by the mul), the product (down_proj
/// input): 4·e·f (bf16 8f, fp32 16f), TP-split. MoE, per top-k routed copy (EP-owned, never
/// TP-split), plus the fp32 router logits 4·E:
///   AutoModel's own MoE (components/moe/experts.py GroupedExperts, experts backend torch_mm:
///     permute, torch._grouped_mm gate+up, the fused activation, grouped down, weighted
///     unpermute): the permuted input (e·h, the gate+up GEMM's), the gate+up output (2·e·f_e,
///     the activation's), the activation output (e·f_e, the down GEMM's): e·(h + 3·f_e)
///     (measured, tests/data/measured/h200_automodel_moe_memory.jsonl: GPT-OSS-120B 137.0 KB
///     per token against 134.4 counted, Qwen3-30B-A3B 110-119 against 114.5);
///   a Hugging Face MoE block (Mixtral): 4·e·f_e as the dense SwiGLU, and the gathered and
///     scattered token copies 2·e·h (not measured);
/// shared experts 4·e·f_s (TP-split).
void FfnNoAc(const ModelSpec& m, bool moe_layer, double e, ActBytes& b) {
  if (!moe_layer) {
    b.split += 4.0 * e * double(m.intermediate_size);
    return;
  }
  const double k = double(m.experts_per_token), h = double(m.hidden_size), fe = double(m.moe_intermediate_size);
  b.unsplit += OwnMoeModules(m) ? e * k * (h + 3.0 * fe) + 4.0 * double(m.num_experts)
                                : 4.0 * e * k * fe + 4.0 * double(m.num_experts) + 2.0 * (k * h * e);
  b.split += 4.0 * e * double(m.shared_expert_intermediate_size);
  // The shared expert's sigmoid gate (components/moe/layers.py MoE.forward: sigmoid(
  // shared_expert_gate(x)) · z): the mul saves the shared output z (e·h) and the sigmoid output (e).
  if (m.shared_expert_gate && m.shared_expert_intermediate_size > 0) b.rep += e * (h + 1.0);
}

/// A matmul of the layer in execution order, for the selective policy.
struct Mm {
  double width;  ///< output elements per token
  bool always;   ///< addmm (linear with bias): in the always-saved set, does not alternate
  int tp;        ///< 0 replicated (row-parallel partial sums, replicated linears), 1 TP-split, 2 EP-owned
};

/// Selective AC (AutoModel make_selective_checkpoint_context_fn, TorchTitan policy): the
/// layer input (e·h) is kept by the checkpoint; aten.mm outputs alternate save / recompute
/// (1st saved, counter per layer), addmm (biased linears) and the attention outputs are always
/// saved; everything else is recomputed. Attention: the fused kernels' outputs (out e·h_q,
/// lse 4·a); the math kernel runs as aten ops, of which the policy saves the two aten.bmm
/// outputs (in its compute-intensive set): the scores q·kᵀ (e·a·kv_len) and P·v (e·h_q).
/// Measured exactly for Llama, Qwen2 (biased q,k,v: addmm) and Qwen3, bf16, and fp32 (Qwen3
/// 1.7B, math kernel). With an output gate q_proj is twice as wide (Qwen3NextAttention).
/// A Gated DeltaNet layer (`gdn`): its projections in order (Qwen3-Next in_proj_qkvz
/// 2·qk + 2·v and in_proj_ba 2·n_v; Qwen3.5 in_proj_qkv 2·qk + v, in_proj_z v, in_proj_b and
/// in_proj_a n_v each), then out_proj h; the causal conv1d and fla kernels are custom autograd
/// Functions whose saved tensors the checkpoint recomputes, so no attention output is kept
/// (derived from the policy, not measured).
ActBytes Selective(const ModelSpec& m, bool moe_layer, const LayerCompute& x, bool gdn) {
  const double h = double(m.hidden_size), e = x.elem;
  std::array<Mm, 16> mms{};
  int n = 0;
  const bool qkv_bias = m.attention_bias;
  if (gdn) {
    const GatedDeltaNetSpec& g = m.gdn;
    const double qk = double(g.key_dim()), v = double(g.value_dim()), nv = double(g.num_value_heads);
    if (m.architecture == Architecture::kQwen3_5Moe) {
      mms[n++] = {2.0 * qk + v, false, 1};
      mms[n++] = {v, false, 1};
      mms[n++] = {nv, false, 1};
      mms[n++] = {nv, false, 1};
    } else {
      mms[n++] = {2.0 * qk + 2.0 * v, false, 1};
      mms[n++] = {2.0 * nv, false, 1};
    }
  } else if (m.mla) {
    const MlaSpec& x = m.mla_spec;
    if (x.q_lora_rank > 0) mms[n++] = {double(x.q_lora_rank), false, 0};
    mms[n++] = {double(QDim(m)), false, 1};
    mms[n++] = {double(x.kv_lora_rank + x.qk_rope_head_dim), false, 0};
    mms[n++] = {double(m.num_attention_heads) * double(x.qk_nope_head_dim + x.v_head_dim), false, 1};
  } else {
    mms[n++] = {double(QDim(m)) * (m.attention_output_gate ? 2.0 : 1.0), qkv_bias, 1};
    mms[n++] = {double(KDim(m)), qkv_bias, 1};
    mms[n++] = {double(VDim(m)), qkv_bias, 1};
  }
  mms[n++] = {h, !gdn && m.attention_out_bias, 0};
  if (moe_layer) {
    const double k = double(m.experts_per_token), fe = double(m.moe_intermediate_size);
    mms[n++] = {double(m.num_experts), m.router_bias, 2};
    mms[n++] = {k * 2.0 * fe, false, 2};  // grouped gate+up of the top-k copies
    mms[n++] = {k * h, false, 2};         // grouped down
    if (m.shared_expert_intermediate_size > 0) {
      mms[n++] = {double(m.shared_expert_intermediate_size), false, 1};
      mms[n++] = {double(m.shared_expert_intermediate_size), false, 1};
      mms[n++] = {h, false, 0};
    }
  } else {
    mms[n++] = {double(m.intermediate_size), false, 1};  // gate
    mms[n++] = {double(m.intermediate_size), false, 1};  // up
    mms[n++] = {h, false, 0};                            // down
  }
  ActBytes b;
  b.rep = e * h;
  int count = 0;
  for (int i = 0; i < n; ++i) {
    bool save = mms[i].always;
    if (!save) save = (++count % 2) == 1;
    if (!save) continue;
    const double bytes = e * mms[i].width;
    (mms[i].tp == 0 ? b.rep : mms[i].tp == 1 ? b.split : b.unsplit) += bytes;
  }
  const double a = double(m.num_attention_heads);
  if (!gdn) b.split += x.Math() ? e * a * x.kv_len + e * double(AttnOutDim(m)) : e * double(AttnOutDim(m)) + 4.0 * a;
  if (moe_layer) b.unsplit += 2.0 * (double(m.experts_per_token) * h * e);  // all-to-all outputs
  return b;
}

/// The routed experts and shared experts of one Nemotron-H MoE block under AutoModel, no
/// checkpointing, per token (components/moe/layers.py MoE with the relu2 experts Nemotron's
/// MoEConfig sets: nemotron_v3/model.py, n_shared_experts 1, shared_expert_gate false):
///   the router in fp32 (nemotron_v3/layers.py sets backend.gate_precision = float32; layers.py
///     Gate.forward: x.to(gate_precision), F.linear): its fp32 input copy 4h and logits 4E;
///   per routed copy (relu2 is not gated: experts.py is_gated false, one up projection f_e):
///     the permuted input e·x (x = moe_latent_size under LatentMoE, else h), the up output e·f_e
///     (relu2_deepep's input) and its prob-weighted output e·f_e (the down GEMM's input), the
///     fp32 permuted prob 4;
///   LatentMoE (fc1_latent_proj h -> ℓ before, fc2_latent_proj ℓ -> h after the experts): the
///     combined output, fc2_latent_proj's input, e·ℓ;
///   the shared expert, MLP relu2 (layers.py MLP.forward: down_proj(F.relu(up_proj(x)).pow(2))):
///     relu's output (saved by relu and by pow) and pow's output (down_proj's input), 2·e·f_s.
/// Derived from the source, not measured.
void NemotronMoeNoAc(const ModelSpec& m, double e, ActBytes& b) {
  const double h = double(m.hidden_size), k = double(m.experts_per_token), fe = double(m.moe_intermediate_size);
  const double x = double(m.ExpertInputSize());
  b.unsplit += k * (e * (x + 2.0 * fe) + 4.0) + 4.0 * double(m.num_experts);
  b.rep += 4.0 * h + (m.moe_latent_size > 0 ? e * double(m.moe_latent_size) : 0.0);
  b.rep += 2.0 * e * double(m.shared_expert_intermediate_size);
}

}  // namespace

ActBytes NemotronBlockActivationBytes(const ModelSpec& m, MixerKind mixer, MlpKind mlp, AcWrap wrap, bool router_saved) {
  const double h = double(m.hidden_size), e = 2.0;
  ActBytes b;
  if (wrap == AcWrap::kLayer || wrap == AcWrap::kSubmodule) {
    b.rep = e * h;
    if (router_saved && mlp == MlpKind::kMoe) {
      b.unsplit += 4.0 * double(m.num_experts) + 12.0 * double(m.experts_per_token);
    }
    return b;
  }
  if (wrap == AcWrap::kSelective) {
    // The TorchTitan policy over the block's matmuls in order (every other one saved, the first
    // saved); the mamba_ssm and fused-expert Functions keep nothing (recomputed); the attention
    // output and log-sum-exp are saved.
    b.rep = e * h;
    std::array<std::pair<double, int>, 8> mms{};  // width per token, 0 replicated / 1 TP-split / 2 EP-owned
    int n = 0;
    if (mixer == MixerKind::kMamba2) {
      const Mamba2Spec& x = m.mamba;
      mms[n++] = {double(2 * x.d_inner() + 2 * x.n_groups * x.state_size + x.num_heads), 0};
    } else if (mixer == MixerKind::kAttention) {
      mms[n++] = {double(QDim(m)), 0};
      mms[n++] = {double(KDim(m)), 0};
      mms[n++] = {double(VDim(m)), 0};
      mms[n++] = {h, 0};
      b.rep += e * double(AttnOutDim(m)) + 4.0 * double(m.num_attention_heads);
    }
    if (mlp == MlpKind::kDense) {
      mms[n++] = {double(m.intermediate_size), 1};
      mms[n++] = {h, 0};
    } else if (mlp == MlpKind::kMoe) {
      const double k = double(m.experts_per_token);
      mms[n++] = {double(m.num_experts), 0};
      if (m.moe_latent_size > 0) mms[n++] = {double(m.moe_latent_size), 0};
      mms[n++] = {k * double(m.moe_intermediate_size), 2};
      mms[n++] = {k * double(m.ExpertInputSize()), 2};
      mms[n++] = {double(m.shared_expert_intermediate_size), 0};
      mms[n++] = {h, 0};
      b.unsplit += 2.0 * k * double(m.ExpertInputSize()) * e;  // the dispatched and combined copies
    }
    for (int i = 0; i < n; i += 2) {
      (mms[i].second == 0 ? b.rep : mms[i].second == 1 ? b.split : b.unsplit) += e * mms[i].first;
    }
    return b;
  }
  // No checkpointing: the block's norm (backend.rms_norm; its input and fp32 rsqrt) and its
  // output, the input of the mixer's or the MLP's first GEMM.
  b.rep = OwnNormBytes(h, 1, e) + e * h;
  if (mixer == MixerKind::kMamba2) {
    // MambaSplitConv1dScanCombinedFn (mamba_ssm 2.3.0 ops/triton/ssd_combined.py, the training
    // path of nemotron_v3/layers.py NemotronV3Mamba2Mixer without CP):
    // ctx.save_for_backward(zxbcdt, ..., out_x, ..., rstd, ...): the in_proj output
    // e·(2·d_in + 2·ng·N + nh), the scan output out_x e·d_in and the gated RMSNorm's fp32 rstd
    // per group 4·ng; the conv1d output, dt, dA_cumsum, the chunk states and the normed output
    // are recomputed in its backward. TP never splits it (no TP plan names the mixer).
    const Mamba2Spec& x = m.mamba;
    b.rep += e * double(2 * x.d_inner() + 2 * x.n_groups * x.state_size + x.num_heads) + e * double(x.d_inner()) +
             4.0 * double(x.n_groups);
  } else if (mixer == MixerKind::kAttention) {
    // NemotronV3Attention (no RoPE, no q/k norms): q, k, v, the kernel's output (o_proj's input)
    // and the fp32 log-sum-exp, as AttentionNoAc counts them; replicated (not TP-split).
    ActBytes a;
    AttentionNoAc(m, LayerCompute{}, a);
    b.rep += a.rep + a.split + a.unsplit;
  }
  if (mlp == MlpKind::kDense) {
    // components/moe/layers.py MLP relu2: relu's output and pow's output, 2·e·f, TP-split
    // (NemotronHParallelizationStrategy: mixer.up_proj Colwise, mixer.down_proj Rowwise).
    b.split += 2.0 * e * double(m.intermediate_size);
  } else if (mlp == MlpKind::kMoe) {
    NemotronMoeNoAc(m, e, b);
  }
  return b;
}

LayerCompute PytorchCompute(const ModelSpec& m, bool fp32, int64_t seq_len) {
  LayerCompute x;
  if (!fp32) return x;
  x.elem = 4.0;
  const bool gqa = !m.mla && m.num_key_value_heads < m.num_attention_heads;
  if (gqa && m.head_dim <= 256) x.kv_len = double(std::max<int64_t>(1, seq_len));
  x.kv_repeated = gqa && m.head_dim > 256;
  return x;
}

/// kNone: per token replicated 2·NormBytes(h) + 2·e·h (two RMSNorms and their outputs, the
///   q/k/v and gate/up inputs): bf16 16h + 8, fp32 24h + 8; + attention (AttentionNoAc) + FFN
///   (FfnNoAc). Llama 3.2 1B bf16: 16·2048 + 8 + 4·2048 + 4·512 + 128 + 8·8192 = 108,680 B
///   (measured 108,668); fp32 at s = 4096: 24·2048 + 8 + 16·2048 + 4·32·4096 + 16·8192 =
///   737,288 B (the 16 layers measured to the byte with the final norm, RoPE and logits).
/// kLayer: the checkpointed layer input, e·h (measured 2h in bf16, 4h in fp32).
/// kSubmodule: inputs of the four checkpointed submodules: layer input, norm1 output,
///   post-attention residual, norm2 output = 4·e·h (measured 8h + 17 in bf16, 16h in fp32).
/// kSelective: Selective() above (Llama 3.2 1B: 33,920 B, measured 33,913).
/// `mixer` kGatedDeltaNet: the layer's token mixer is GdnMixerNoAc in place of AttentionNoAc.
ActBytes LayerActivationBytes(const ModelSpec& m, bool moe_layer, AcWrap wrap, const LayerCompute& x,
                              MixerKind mixer) {
  const double h = double(m.hidden_size), e = x.elem;
  const bool gdn = mixer == MixerKind::kGatedDeltaNet;
  ActBytes b;
  switch (wrap) {
    case AcWrap::kNone:
      b.rep = 2.0 * LayerNormBytes(m, h, 1, e) + 2.0 * e * h;
      if (gdn) {
        GdnMixerNoAc(m, e, b);
      } else {
        AttentionNoAc(m, x, b);
      }
      FfnNoAc(m, moe_layer, e, b);
      return b;
    case AcWrap::kLayer:
      b.rep = e * h;
      return b;
    case AcWrap::kSubmodule:
      b.rep = 4.0 * e * h;
      return b;
    case AcWrap::kSelective:
      return Selective(m, moe_layer, x, gdn);
  }
  return b;
}

/// At the softmax backward of a layer (its SafeSoftmaxBackward0: the backward has passed the
/// FFN, the second norm, o_proj and the P·v bmm):
///   held, split: MathAttentionSaved less v repeated (released once the P·v bmm's backward has
///     run): q, k repeated and P, e·QDim + e·a·d + e·a·kv_len; plus Qwen3's q/k norms, whose
///     backward comes later;
///   held, replicated, by wrap: kNone, kLayer and kSelective (whole-layer checkpoints recompute
///     the whole layer at the first unpack, torch.utils.checkpoint non-reentrant) keep norm1
///     with its output, NormBytes(h) + e·h (norm1's fp32 input is the layer input that the
///     checkpoint keeps); kSubmodule keeps the layer input and norm1's output (two of its four
///     checkpoint inputs, 2·e·h), self_attn being recomputed alone;
///   transient, split: the gradient of P (BmmBackward0 of P·v, e·a·kv_len), the output of
///     _softmax_backward_data (e·a·kv_len) and its CUDA temporary (aten/src/ATen/native/cuda/
///     SoftMax.cu softmax_backward_cuda_out: tmp = grad * output, which its epilogue reads as
///     "gradOutput"; e·a·kv_len): measured, the node peaks two P-sized tensors above its start;
///     the gradient of v repeated (e·a·d), waiting while the engine runs the later-created
///     softmax node first;
///   transient, replicated: the residual stream's gradient (e·h) waiting for the attention
///     branch's.
/// Llama 3.2 1B fp32, s = 4096, last layer of 16: held 24,580 + 540,672, transient 1,589,248 +
/// 8,192 B per token; with the grads then alive the node starts 140,796 B per token above the
/// forward's end and peaks at 1,189,372 (both measured to the byte).
MathAttnBackward MathAttentionBackwardBytes(const ModelSpec& m, AcWrap wrap, const LayerCompute& x) {
  MathAttnBackward r;
  if (!x.Math()) return r;
  const double h = double(m.hidden_size), e = x.elem;
  const double a = double(m.num_attention_heads), g = double(m.num_key_value_heads), d = double(m.head_dim);
  r.held.split = MathAttentionSaved(m, x) - e * a * d;
  if (m.qk_norm) r.held.split += NormBytes(double(QDim(m)), a, e) + NormBytes(double(KDim(m)), g, e);
  r.held.rep = wrap == AcWrap::kSubmodule ? 2.0 * e * h : NormBytes(h, 1, e) + e * h;
  r.transient.split = 3.0 * e * a * x.kv_len + e * a * d;
  r.transient.rep = e * h;
  return r;
}

ActBytes LayerActivationBytes(const ModelSpec& m, bool moe_layer, Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone: return LayerActivationBytes(m, moe_layer, AcWrap::kNone);
    case Recompute::kFull: return LayerActivationBytes(m, moe_layer, AcWrap::kLayer);
    case Recompute::kSelective: return LayerActivationBytes(m, moe_layer, AcWrap::kSelective);
  }
  return {};
}

double FinalNormBytesPerToken(const ModelSpec& m, double elem) {
  return NormBytes(double(m.hidden_size), 1, elem) + elem * double(m.hidden_size);
}

double LogitsBytesPerTokenVocab(int64_t tp, bool loss_parallel, double elem, bool fp32_upcast) {
  const double t = double(std::max<int64_t>(1, tp));
  const double loss_elem = fp32_upcast ? 4.0 : elem;  // log_softmax output, nll grad, log_softmax grad
  return elem / t + 3.0 * loss_elem / (loss_parallel ? t : 1.0);
}

}  // namespace meshplan::cost
