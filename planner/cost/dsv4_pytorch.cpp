// DeepSeek-V4 as NeMo AutoModel trains it: saved activations, GEMM and kernel terms per layer
// (formulas and sources in dsv4.hpp, Dsv4PytorchTerms).

#include <algorithm>
#include <cmath>

#include "cost/dsv4.hpp"

namespace meshplan::cost {
namespace {

double RoundUp(double x, double to) { return std::ceil(x / to) * to; }

/// One layer of compress ratio `c` (0, 4 or 128; 4 has the overlap compressor and the indexer).
struct LayerTerms {
  double saved_none = 0;     // bytes kept without checkpointing
  double saved_block = 0;    // bytes kept under the whole-block checkpoint
  double bf16_mm_out = 0;    // bytes of the bf16 matmul outputs (selective keeps every other one)
  double bf16_train = 0, bf16_fwd_only = 0, fp32_train = 0, fp32_fwd_only = 0;  // forward FLOP
  double core_total = 0, core_fwd = 0, core_fwd_only = 0;                       // FLOP
  double eager_train = 0, eager_fwd_only = 0;                                    // forward bytes
  double cp_bytes = 0, cp_fwd_only = 0;                                          // per local token
};

LayerTerms Layer(const ModelSpec& mo, int64_t c, bool hash, double s_local, double cp, bool tilelang) {
  const DeepseekV4Spec& v = mo.dsv4;
  const double h = double(mo.hidden_size), a = double(mo.num_attention_heads), d = double(mo.head_dim);
  const double m = double(std::max<int64_t>(1, v.hc_mult)), rq = double(v.q_lora_rank), ro = double(v.o_lora_rank);
  const double g = double(v.o_groups), rd = double(v.qk_rope_head_dim), ni = double(v.index_n_heads);
  const double di = double(v.index_head_dim), w = double(mo.sliding_window);
  const double E = double(mo.num_experts), k = double(mo.experts_per_token), f = double(mo.moe_intermediate_size);
  const double fs = double(mo.shared_expert_intermediate_size);
  const double sf = s_local * cp;
  const double pooled = c > 0 ? std::floor(sf / double(c)) : 0.0;
  const double kprime = std::min(double(v.index_topk), std::floor(sf / 4.0));
  const double attended = c == 0 ? 0.0 : (c == 4 ? kprime : pooled);  // P'
  const double tk = RoundUp(std::min(w, sf) + attended, 64.0);
  const double kc = c == 4 ? 2.0 : 1.0;
  LayerTerms t;

  // Hyper-connections, two sites (layers.py DeepseekV4HyperConnection.compute_weights, model.py
  // DeepseekV4Block.forward), the tilelang Sinkhorn saving its input (the torch loop: ~3 KB more).
  const double sink = tilelang ? 4.0 * m * m : 4.0 * m * m + (2.0 * 20.0 - 1.0) * (4.0 * m * m + 4.0 * m);
  const double hc = 2.0 * (8.0 * m * h + 2.0 * m * h + 4.0 * h + 4.0 * (2.0 + m) * m + 10.0 * m + 2.0 * m * m + 8.0 + sink);
  // Attention (DeepseekV4Attention.forward).
  double attn = 2.0 * h + 4.0 * rq + 2.0 * d + 8.0 + 2.0 * a * d + 4.0 * a + 12.0 * rd + 2.0 * a * d + 2.0 * g * ro;
  const double keys = sf + pooled;  // full kv plus the pooled entries, per local query
  if (tilelang) {
    attn += 2.0 * a * d + 2.0 * d * keys / s_local + 4.0 * (std::min(w, sf) + attended) + 2.0 * a * d + 4.0 * a;
  } else {
    attn += 2.0 * a * d + 4.0 * a * d * keys / s_local + 4.0 * a * (keys + 1.0) + 2.0 * a * keys + 12.0 * a;
  }
  // Compressor (DeepseekV4Compressor.forward, _pool_windows, _overlap_transform).
  double comp = 0.0;
  if (c == 4) comp = 4.0 * h + 8.0 * d * cp + 8.0 * d;
  if (c > 0 && c != 4) comp = 4.0 * h + 8.0 * d;
  // MoE (moe/layers.py Gate, MLP; experts.py GroupedExpertsDeepEP with the clamped SwiGLU).
  const double moe = 2.0 * h + 8.0 * E + 12.0 * k + 4.0 + (hash ? 4.0 * h : 0.0) +
                     k * (2.0 * h + 6.0 * f + 4.0) + 22.0 * fs;
  t.saved_none = hc + attn + comp + moe;
  t.saved_block = 2.0 * m * h + (hash ? 4.0 * E : 2.0 * E) + (hash ? 0.0 : 12.0 * k) +
                  (c == 4 ? 12.0 * kprime : 0.0);
  t.bf16_mm_out = 2.0 * (rq + a * d + d + g * ro + h) + 2.0 * E + k * 2.0 * (2.0 * f + h) + 2.0 * (2.0 * fs + h);

  // GEMMs, forward FLOP per token.
  t.bf16_train = 2.0 * (h * rq + rq * a * d + h * d + a * d * ro + g * ro * h);
  t.fp32_train = 2.0 * 2.0 * m * h * (2.0 + m) * m + (c > 0 ? 2.0 * 2.0 * h * kc * d : 0.0);
  if (c == 4) {
    t.bf16_fwd_only = 2.0 * (rq * ni * di + h * ni);
    t.fp32_fwd_only = 2.0 * 2.0 * h * 2.0 * di;
  }
  // Core: tilelang's padded sparse kernel, or dense eager attention; the indexer's scores.
  if (tilelang) {
    t.core_total = 14.0 * a * d * tk;
    t.core_fwd = 4.0 * a * d * tk;
    if (c == 4) t.core_fwd_only = 2.0 * ni * di * (sf / 8.0 + 128.0);
  } else {
    t.core_total = 12.0 * a * d * keys;
    t.core_fwd = 4.0 * a * d * keys;
    if (c == 4) t.core_fwd_only = 2.0 * ni * di * std::floor(sf / 4.0);
  }
  // Eager kernels' HBM bytes, forward.
  t.eager_train = 2.0 * (40.0 * m * h + 12.0 * h) + 2.0 * (4.0 * a * (d - rd) + 30.0 * a * rd) + 20.0 * a * d +
                  (c == 4 ? 6.0 * h + 120.0 * d : c > 0 ? 6.0 * h + 40.0 * d : 0.0) + 54.0 * fs + 30.0 * E;
  t.eager_fwd_only = 130.0 * tk;
  if (c > 0) t.eager_fwd_only += 4.0 * sf + (c == 4 ? 20.0 : 8.0) * pooled;
  if (c == 4) t.eager_fwd_only += 6.0 * h + 120.0 * di + 4.0 * ni * di + 30.0 * ni * rd + 12.0 * pooled;
  // CP all-gathers (layers.py L.1321, _pool_windows with CP, the indexer's compressor).
  t.cp_bytes = 2.0 * d + (c > 0 ? 2.0 * d / double(c) : 0.0) + (c == 4 ? 16.0 * d : 0.0);
  t.cp_fwd_only = c == 4 ? 16.0 * di + di / 2.0 : 0.0;
  return t;
}

}  // namespace

Dsv4PytorchTerms Dsv4Pytorch(const ModelSpec& mo, Recompute recompute, int64_t seq_len, int64_t cp_size,
                             bool tilelang) {
  Dsv4PytorchTerms out;
  const double cp = double(std::max<int64_t>(1, cp_size));
  const double s_local = std::max(1.0, double(seq_len) / cp);
  const bool again = recompute != Recompute::kNone;  // the checkpointed forward runs twice
  const DeepseekV4Spec& v = mo.dsv4;
  const double h = double(mo.hidden_size), m = double(std::max<int64_t>(1, v.hc_mult));
  int64_t n = 0;
  for (size_t i = 0; i < mo.layer_pattern.size(); ++i) {
    const LayerBlock& b = mo.layer_pattern[i];
    if (b.mixer != MixerKind::kDeepseekV4Attention) continue;
    const int64_t c = b.compress_ratio;
    const LayerTerms t = Layer(mo, c, int64_t(i) < v.num_hash_layers, s_local, cp, tilelang);
    double saved = t.saved_none;
    if (recompute == Recompute::kFull) saved = t.saved_block;
    if (recompute == Recompute::kSelective) saved = t.saved_block + 0.5 * t.bf16_mm_out;
    out.saved += saved;
    out.full = std::max(out.full, t.saved_none);
    out.bf16_linear += t.bf16_train * (again ? 4.0 : 3.0) + t.bf16_fwd_only * (again ? 2.0 : 1.0);
    out.fp32_linear += t.fp32_train * (again ? 4.0 : 3.0) + t.fp32_fwd_only * (again ? 2.0 : 1.0);
    out.core += t.core_total + (again ? t.core_fwd : 0.0) + t.core_fwd_only * (again ? 2.0 : 1.0);
    out.eager_bytes += t.eager_train * (again ? 4.0 : 3.0) + t.eager_fwd_only * (again ? 2.0 : 1.0);
    out.cp_bytes += t.cp_bytes;
    out.cp_fwd_only_bytes += t.cp_fwd_only;
    ++n;
  }
  if (n > 0) {
    const double dn = double(n);
    out.saved /= dn;
    out.bf16_linear /= dn;
    out.fp32_linear /= dn;
    out.core /= dn;
    out.eager_bytes /= dn;
    out.cp_bytes /= dn;
    out.cp_fwd_only_bytes /= dn;
  }
  out.per_microbatch = 2.0 * s_local * cp + 8.0 * double(v.qk_rope_head_dim);
  // The hyper-connections, sinks and compressors with hc_head (DeepseekV4HyperHead m·m·h + m + 1)
  // and lm_head; the indexers frozen.
  const Dsv4ParamParts parts = CountDsv4ParamParts(mo);
  out.fp32_params = double(parts.hyper_connections + parts.sinks + parts.compressors) + (m * m * h + m + 1.0) +
                    double(mo.vocab_size) * h;
  out.frozen_params = double(parts.indexers);
  return out;
}

}  // namespace meshplan::cost
