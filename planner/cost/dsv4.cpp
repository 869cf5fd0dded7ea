// Cost terms of DeepSeek-V4's attention block (see dsv4.hpp for each formula and its source).

#include "cost/dsv4.hpp"

#include <algorithm>
#include <cmath>

namespace meshplan::cost {
namespace {

/// Σ_{t=1..n} floor(t / c) = c·q(q−1)/2 + q·(r + 1), n = q·c + r.
double SumFloor(int64_t n, int64_t c) {
  if (n <= 0 || c <= 0) return 0.0;
  const double q = double(n / c), r = double(n % c);
  return double(c) * q * (q - 1.0) / 2.0 + q * (r + 1.0);
}

/// Calls `f(compress_ratio)` for each kDeepseekV4Attention layer; returns how many there are.
template <class F>
int64_t ForEachDsv4Layer(const ModelSpec& m, F&& f) {
  int64_t n = 0;
  for (const LayerBlock& b : m.layer_pattern) {
    if (b.mixer != MixerKind::kDeepseekV4Attention) continue;
    f(b.compress_ratio);
    ++n;
  }
  return n;
}

/// Keys a query attends to beyond the window, mean over the sequence.
double AttendedPooled(const ModelSpec& m, int64_t c, int64_t s) {
  if (c <= 0) return 0.0;
  return Dsv4MeanPooledKeys(s, c, c == 4 ? m.dsv4.index_topk : -1);
}

}  // namespace

double Dsv4MeanPooledKeys(int64_t seq_len, int64_t c, int64_t cap) {
  if (seq_len <= 0 || c <= 0) return 0.0;
  if (cap < 0) return SumFloor(seq_len, c) / double(seq_len);
  // floor(t/c) >= cap from t = cap·c on.
  const int64_t below = std::min<int64_t>(seq_len, cap * c - 1);
  const double sum = SumFloor(below, c) + double(cap) * double(std::max<int64_t>(0, seq_len - below));
  return sum / double(seq_len);
}

double Dsv4MeanWindowKeys(int64_t seq_len, int64_t window) {
  if (seq_len <= 0 || window <= 0) return 0.0;
  const double s = double(seq_len), w = double(std::min(window, seq_len));
  // Σ_{t=1..s} min(t, w) = w(w+1)/2 + (s − w)·w.
  return (w * (w + 1.0) / 2.0 + (s - w) * w) / s;
}

Dsv4Flops Dsv4AttentionFwdFlops(const ModelSpec& m, int64_t c, int64_t s) {
  const DeepseekV4Spec& v = m.dsv4;
  const double h = double(m.hidden_size), a = double(m.num_attention_heads), d = double(m.head_dim);
  const double rq = double(v.q_lora_rank), ro = double(v.o_lora_rank), g = double(v.o_groups);
  const double ni = double(v.index_n_heads), di = double(v.index_head_dim), hc = double(v.hc_mult);
  Dsv4Flops f;
  f.linear = 2.0 * (h * rq + rq * a * d + h * d + a * d * ro + g * ro * h);
  f.linear += 2.0 * 2.0 * hc * h * (2.0 + hc) * hc;  // two hyper-connections' mapping GEMMs
  if (c > 0) f.linear += 2.0 * 2.0 * h * (c == 4 ? 2.0 : 1.0) * d;
  if (c == 4) f.linear += 2.0 * (2.0 * h * 2.0 * di + rq * ni * di + h * ni);
  const double keys = Dsv4MeanWindowKeys(s, m.sliding_window) + AttendedPooled(m, c, s);
  f.core = 4.0 * a * d * keys;
  if (c == 4) f.core += 2.0 * ni * di * Dsv4MeanPooledKeys(s, 4, -1);
  return f;
}

Dsv4Flops Dsv4MeanAttentionFlops(const ModelSpec& m, int64_t s) {
  Dsv4Flops sum;
  const int64_t n = ForEachDsv4Layer(m, [&](int64_t c) {
    const Dsv4Flops f = Dsv4AttentionFwdFlops(m, c, s);
    sum.linear += f.linear;
    sum.core += f.core;
  });
  if (n == 0) return {};
  return {3.0 * sum.linear / double(n), 3.0 * sum.core / double(n)};
}

double Dsv4BlockElements(const ModelSpec& m, bool fp8) {
  const DeepseekV4Spec& v = m.dsv4;
  const double h = double(m.hidden_size), a = double(m.num_attention_heads), d = double(m.head_dim);
  const double rq = double(v.q_lora_rank), ro = double(v.o_lora_rank), g = double(v.o_groups);
  const double ni = double(v.index_n_heads), di = double(v.index_head_dim), hc = double(v.hc_mult);
  const double common = 2.0 * (4.0 * hc * h + 2.0 * h) + 2.0 * h + 2.0 * rq + 2.0 * a * d + 2.0 * d +
                        2.0 * (a * d + d) + 2.0 * a * d + (fp8 ? 1.5 * g * ro : 0.0);
  double sum = 0.0;
  const int64_t n = ForEachDsv4Layer(m, [&](int64_t c) {
    double e = common;
    if (c > 0) e += 2.0 * 2.0 * 2.0 * (c == 4 ? 2.0 : 1.0) * d + 4.0 * d / double(c);
    if (c == 4) e += 16.0 * di + 2.0 * ni * di + 2.0 * 2.0 * double(v.index_topk);
    sum += e;
  });
  return n > 0 ? sum / double(n) : 0.0;
}

TeLayerBytes Dsv4BlockSavedBytes(const ModelSpec& m, Precision precision, uint32_t rm) {
  const DeepseekV4Spec& v = m.dsv4;
  const double q = QuantizedInputBytes(precision);
  const double h = double(m.hidden_size), a = double(m.num_attention_heads), d = double(m.head_dim);
  const double rq = double(v.q_lora_rank), ro = double(v.o_lora_rank), g = double(v.o_groups);
  const double ni = double(v.index_n_heads), di = double(v.index_head_dim), hc = double(v.hc_mult);
  const bool rc_norm = (rm & kRecomputeLayernorm) != 0, rc_up = (rm & kRecomputeMlaUpProj) != 0;
  const double hyper = 2.0 * (2.0 * hc * h + 4.0 * (hc * hc + 2.0 * hc) + 4.0 * hc * hc + 2.0 * h);
  const double common = hyper + 2.0 * h + (rc_norm ? 0.0 : q * h) + 2.0 * rq + q * rq +
                        (rc_up ? 0.0 : 2.0 * a * d + 2.0 * d + 2.0 * a * d + 2.0 * d) + 2.0 * a * d + 4.0 * a +
                        2.0 * a * d + 2.0 * g * ro;
  double sum = 0.0;
  const int64_t n = ForEachDsv4Layer(m, [&](int64_t c) {
    double b = common + 4.0 * (double(m.sliding_window) + (c == 4 ? double(v.index_topk) : 0.0));
    if (c > 0) b += 12.0 * (c == 4 ? 2.0 : 1.0) * d;
    if (c == 4) b += 12.0 * 2.0 * di + 2.0 * ni * di + 4.0 * ni;
    sum += b;
  });
  TeLayerBytes out;
  out.sequence = n > 0 ? sum / double(n) : 0.0;
  return out;
}

double Dsv4ModelFlopsPerToken(const ModelSpec& m, int64_t seq_len, int64_t mtp_layers) {
  const DeepseekV4Spec& v = m.dsv4;
  const double h = double(m.hidden_size), a = double(m.num_attention_heads), d = double(m.head_dim);
  const double rq = double(v.q_lora_rank), ro = double(v.o_lora_rank), g = double(v.o_groups);
  const double ni = double(v.index_n_heads), di = double(v.index_head_dim), s = double(seq_len);
  const double w = double(m.sliding_window);
  const int64_t mtp = std::max<int64_t>(0, mtp_layers);
  double l0 = 0, l4 = 0, l128 = 0;
  auto count = [&](int64_t c) { (c == 0 ? l0 : c == 4 ? l4 : l128) += 1.0; };
  const int64_t main = ForEachDsv4Layer(m, count);
  for (int64_t i = 0; i < mtp; ++i) {
    for (const LayerBlock& b : m.mtp_pattern) {
      if (b.mixer == MixerKind::kDeepseekV4Attention) count(b.compress_ratio);
    }
  }
  const double layers = double(main + mtp);
  double f = 6.0 * layers * (rq * (h + a * d + 1.0) + h * d + d + a * d * ro + g * ro * h);
  const double k = std::min(double(v.index_topk), std::floor(s / 4.0));
  const double c4 = k * (1.0 - k * 4.0 / (2.0 * s));
  f += 6.0 * (l0 * a * w * d * 2.0 + l128 * a * w * d * 2.0 + l4 * a * (w + c4) * d * 2.0 + l4 * h * 2.0 * d * 2.0 +
              l128 * h * d * 2.0 + l4 * (h * 2.0 * di * 2.0 + rq * ni * di + h * ni));
  f += 6.0 * s * (l128 * a * d / 128.0 + l4 * ni * di / 4.0);
  const double experts = double(m.moe_intermediate_size) * double(m.experts_per_token) +
                         double(m.shared_expert_intermediate_size);
  f += 6.0 * h * 3.0 * experts * layers;
  f += 6.0 * double(mtp) * (3.0 * h + 2.0 * h * h);
  const double vp = std::ceil(double(m.vocab_size) / 1280.0) * 1280.0;
  f += 6.0 * h * vp * double(mtp + 1);
  return f;
}

}  // namespace meshplan::cost
