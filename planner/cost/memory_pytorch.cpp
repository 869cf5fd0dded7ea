// Activation bytes per token of the "pytorch" profile: Hugging Face decoder layers
// (transformers 5.x LlamaDecoderLayer / Qwen2 / Qwen3 / DeepseekV3 / MoE blocks), bf16
// compute, SDPA (flash) attention, autograd's saved tensors. Units: bytes per token.
//
// Every dense-layer formula below was checked against the allocator's growth over one
// forward (alloc_after_fwd - alloc_step_start) of the measured runs in tests/data/measured/
// (Llama 3.2 1B / 3B, Llama 3.1 8B, Qwen2.5 0.5B, Qwen3 1.7B / 4B / 8B; no AC, full AC,
// selective AC, TP 2): all agree within 0.1%. MLA and MoE terms are derived the same way
// from the HF modules but not measured.

#include <algorithm>
#include <array>

#include "cost/memory.hpp"

namespace meshplan::cost {

namespace {

/// HF RMSNorm (LlamaRMSNorm: x.float(); x * rsqrt(mean(x²) + eps); weight * x.to(bf16)):
/// autograd keeps the fp32 input copy (4 B), the normalised bf16 value (2 B) and the fp32
/// rsqrt per row (4 B per row). `width` elements per row, `rows` rows per token.
double NormBytes(double width, double rows) { return 6.0 * width + 4.0 * rows; }

/// Attention without checkpointing, by TP class. GQA: RoPE (q·cos + rotate_half(q)·sin)
/// saves nothing but cos/sin; SDPA (flash) saves q and k after RoPE, v, its output and the
/// fp32 log-sum-exp: 2·h_q + 2·h_kv + 2·h_kv + 2·h_q + 4·a; k, v are not repeated for GQA
/// (enable_gqa). Qwen3 q_norm / k_norm add NormBytes per head. MLA (DeepseekV3Attention):
/// q_a_layernorm and kv_a_layernorm (replicated: produced by replicated linears) with
/// their outputs (q_b / kv_b inputs), then q, k (cat of nope and rope parts), v, output, lse.
void AttentionNoAc(const ModelSpec& m, ActBytes& b) {
  const double a = double(m.num_attention_heads), g = double(m.num_key_value_heads);
  if (m.mla) {
    const MlaSpec& x = m.mla_spec;
    if (x.q_lora_rank > 0) b.rep += NormBytes(double(x.q_lora_rank), 1) + 2.0 * double(x.q_lora_rank);
    b.rep += NormBytes(double(x.kv_lora_rank), 1) + 2.0 * double(x.kv_lora_rank);
  }
  b.split += 2.0 * double(QDim(m)) + 2.0 * double(KDim(m)) + 2.0 * double(VDim(m)) +
             2.0 * double(AttnOutDim(m)) + 4.0 * a;
  if (m.qk_norm && !m.mla) {
    b.split += NormBytes(double(QDim(m)), a) + NormBytes(double(KDim(m)), g);
  }
}

/// FFN without checkpointing. Dense SwiGLU: gate out (SiLU input), up out, act(gate), the
/// product (down_proj input): 8·f, TP-split. MoE (AutoModel custom MoE / HF blocks): the same
/// 8·f_e for each of the top-k routed copies (EP-owned, never TP-split), fp32 router logits
/// 4·E, dispatch + combine buffers 2·(k·h·2); shared experts 8·f_s (TP-split).
void FfnNoAc(const ModelSpec& m, bool moe_layer, ActBytes& b) {
  if (!moe_layer) {
    b.split += 8.0 * double(m.intermediate_size);
    return;
  }
  const double k = double(m.experts_per_token), h = double(m.hidden_size);
  b.unsplit += 8.0 * k * double(m.moe_intermediate_size) + 4.0 * double(m.num_experts) + 2.0 * (k * h * 2.0);
  b.split += 8.0 * double(m.shared_expert_intermediate_size);
}

/// A matmul of the layer in execution order, for the selective policy.
struct Mm {
  double width;  ///< output elements per token
  bool always;   ///< addmm (linear with bias): in the always-saved set, does not alternate
  int tp;        ///< 0 replicated (row-parallel partial sums, replicated linears), 1 TP-split, 2 EP-owned
};

/// Selective AC (AutoModel make_selective_checkpoint_context_fn, TorchTitan policy): the
/// layer input (2h) is kept by the checkpoint; aten.mm outputs alternate save / recompute
/// (1st saved, counter per layer), addmm (biased linears) and SDPA outputs (out 2·h_q,
/// lse 4·a) are always saved; everything else is recomputed. Measured exactly for Llama,
/// Qwen2 (biased q,k,v: addmm) and Qwen3.
ActBytes Selective(const ModelSpec& m, bool moe_layer) {
  const double h = double(m.hidden_size);
  std::array<Mm, 16> mms{};
  int n = 0;
  const bool qkv_bias = m.attention_bias;
  if (m.mla) {
    const MlaSpec& x = m.mla_spec;
    if (x.q_lora_rank > 0) mms[n++] = {double(x.q_lora_rank), false, 0};
    mms[n++] = {double(QDim(m)), false, 1};
    mms[n++] = {double(x.kv_lora_rank + x.qk_rope_head_dim), false, 0};
    mms[n++] = {double(m.num_attention_heads) * double(x.qk_nope_head_dim + x.v_head_dim), false, 1};
  } else {
    mms[n++] = {double(QDim(m)), qkv_bias, 1};
    mms[n++] = {double(KDim(m)), qkv_bias, 1};
    mms[n++] = {double(VDim(m)), qkv_bias, 1};
  }
  mms[n++] = {h, m.attention_out_bias, 0};
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
  b.rep = 2.0 * h;
  int count = 0;
  for (int i = 0; i < n; ++i) {
    bool save = mms[i].always;
    if (!save) save = (++count % 2) == 1;
    if (!save) continue;
    const double bytes = 2.0 * mms[i].width;
    (mms[i].tp == 0 ? b.rep : mms[i].tp == 1 ? b.split : b.unsplit) += bytes;
  }
  b.split += 2.0 * double(AttnOutDim(m)) + 4.0 * double(m.num_attention_heads);
  if (moe_layer) b.unsplit += 2.0 * (double(m.experts_per_token) * h * 2.0);  // all-to-all outputs
  return b;
}

}  // namespace

/// kNone: per token 16h + 8 replicated (two RMSNorms 2·(6h + 4) and their outputs, the
///   q/k/v and gate/up inputs, 2·2h) + attention (AttentionNoAc) + FFN (FfnNoAc).
///   Llama 3.2 1B: 16·2048 + 8 + 4·2048 + 4·512 + 128 + 8·8192 = 108,680 B (measured 108,668).
/// kLayer: the checkpointed layer input, 2h (measured 2h).
/// kSubmodule: inputs of the four checkpointed submodules: layer input, norm1 output,
///   post-attention residual, norm2 output = 8h (measured 8h + 17).
/// kSelective: Selective() above (Llama 3.2 1B: 33,920 B, measured 33,913).
ActBytes LayerActivationBytes(const ModelSpec& m, bool moe_layer, AcWrap wrap) {
  const double h = double(m.hidden_size);
  ActBytes b;
  switch (wrap) {
    case AcWrap::kNone:
      b.rep = 2.0 * NormBytes(h, 1) + 2.0 * 2.0 * h;
      AttentionNoAc(m, b);
      FfnNoAc(m, moe_layer, b);
      return b;
    case AcWrap::kLayer:
      b.rep = 2.0 * h;
      return b;
    case AcWrap::kSubmodule:
      b.rep = 8.0 * h;
      return b;
    case AcWrap::kSelective:
      return Selective(m, moe_layer);
  }
  return b;
}

ActBytes LayerActivationBytes(const ModelSpec& m, bool moe_layer, Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone: return LayerActivationBytes(m, moe_layer, AcWrap::kNone);
    case Recompute::kFull: return LayerActivationBytes(m, moe_layer, AcWrap::kLayer);
    case Recompute::kSelective: return LayerActivationBytes(m, moe_layer, AcWrap::kSelective);
  }
  return {};
}

double FinalNormBytesPerToken(const ModelSpec& m) { return NormBytes(double(m.hidden_size), 1) + 2.0 * double(m.hidden_size); }

double LogitsBytesPerTokenVocab(int64_t tp, bool loss_parallel) {
  const double t = double(std::max<int64_t>(1, tp));
  return 2.0 / t + 12.0 / (loss_parallel ? t : 1.0);
}

}  // namespace meshplan::cost
