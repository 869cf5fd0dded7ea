// DeepSeek-V4 Flash under Megatron-Core: its attention block's FLOPs, HBM traffic and saved
// activation bytes checked against values worked out by hand from the formulas' sources
// (cost/dsv4.hpp), and Megatron-Bridge's model-FLOP formula against the published table.
#include <doctest/doctest.h>

#include "cost/dsv4.hpp"
#include "cost/flops.hpp"
#include "cost/hybrid.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/model.hpp"

using namespace meshplan;
using namespace meshplan::cost;

namespace {

const ModelSpec& Flash() {
  static const ModelSpec m = LoadModel("deepseek-v4-flash");
  return m;
}

}  // namespace

TEST_CASE("dsv4: keys a query sees by hand over a 4096-token sequence") {
  // Σ min(t, 128) = 128·129/2 + 3968·128 = 516,160; / 4096.
  CHECK(Dsv4MeanWindowKeys(4096, 128) == doctest::Approx(126.015625));
  // Σ floor(t/128) = 128·32·31/2 + 32 = 63,520.
  CHECK(Dsv4MeanPooledKeys(4096, 128, -1) == doctest::Approx(15.5078125));
  // Σ min(512, floor(t/4)): t < 2048 gives 4·511·510/2 + 511·4 = 523,264, the 2049 others 512
  // each: 1,572,352 (flop_utils.py's nominal k'(1 − 4k'/2s) = 384).
  CHECK(Dsv4MeanPooledKeys(4096, 4, 512) == doctest::Approx(383.875));
  // A window longer than the sequence: the causal mean (s + 1)/2.
  CHECK(Dsv4MeanWindowKeys(100, 128) == doctest::Approx(50.5));
}

TEST_CASE("dsv4: Flash attention block FLOPs by compress ratio by hand from layers.py") {
  const ModelSpec& m = Flash();
  // h 4096, a 64, d 512, r_q = r_o 1024, g 8, m 4: wq_a, wq_b, wkv, wo_a, wo_b 2·(4096·1024 +
  // 1024·32768 + 4096·512 + 32768·1024 + 8192·4096) = 213,909,504, the two hyper-connections'
  // mappings 2·2·(4·4096)·6·4 = 1,572,864: 215,482,368.
  const Dsv4Flops f0 = Dsv4AttentionFwdFlops(m, 0, 4096);
  CHECK(f0.linear == doctest::Approx(215482368.0));
  CHECK(f0.core == doctest::Approx(4.0 * 64 * 512 * 126.015625));  // 16,517,120
  // Ratio 128: its compressor's wkv and wgate 4·4096·512 more; 15.51 pooled keys more.
  const Dsv4Flops f128 = Dsv4AttentionFwdFlops(m, 128, 4096);
  CHECK(f128.linear == doctest::Approx(223870976.0));
  CHECK(f128.core == doctest::Approx(18549760.0));
  // Ratio 4: the compressor 4·4096·1024, the indexer 2·(2·4096·256 + 1024·64·128 + 4096·64);
  // core over 126.02 + 383.875 keys plus the indexer's scores 2·64·128·511.75.
  const Dsv4Flops f4 = Dsv4AttentionFwdFlops(m, 4, 4096);
  CHECK(f4.linear == doctest::Approx(253755392.0));
  CHECK(f4.core == doctest::Approx(75216896.0));
  // The mean over Flash's 2 window, 21 ratio-4 and 20 ratio-128 layers, x3.
  const Dsv4Flops mean = Dsv4MeanAttentionFlops(m, 4096);
  CHECK(mean.linear == doctest::Approx(3.0 * (2 * 215482368.0 + 21 * 253755392.0 + 20 * 223870976.0) / 43));
  CHECK(mean.core == doctest::Approx(3.0 * (2 * 16517120.0 + 21 * 75216896.0 + 20 * 18549760.0) / 43));
  // What the compute-time model reads.
  const FlopsPerToken f = ComputeFlopsPerToken(m, 4096);
  CHECK(f.attn_linear_flops == doctest::Approx(mean.linear));
  CHECK(f.attn_core_flops == doctest::Approx(mean.core));
}

TEST_CASE("dsv4: Megatron-Bridge's model FLOPs reproduce the published DeepSeek-V4 Flash row") {
  const ModelSpec& m = Flash();
  // By hand (flop_utils.py dsv4_hybrid, 43 + 1 MTP layers: ratio 0 x3, 4 x21, 128 x20):
  // 90,781,470,720 FLOP per token at seq 4096.
  CHECK(Dsv4ModelFlopsPerToken(m, 4096, 1) == doctest::Approx(90781470720.0));
  // The 26.08 table (mbridge_perf_dev.csv line 19): 706 model TFLOP/s at 7776 tokens/s per
  // GPU, 90.79 GFLOP per token (706 rounded to 1 TFLOP/s: ±0.07%).
  CHECK(Dsv4ModelFlopsPerToken(m, 4096, 1) / (706e12 / 7776.0) == doctest::Approx(1.0).epsilon(0.001));
  TrainSetup s;
  s.seq_len = 4096;
  s.global_batch = 2048;
  CHECK(ModelFlopsPerStep(m, s, 1) == doctest::Approx(2048.0 * 4096 * 90781470720.0));
}

TEST_CASE("dsv4: saved bytes and HBM elements of the attention block by hand") {
  const ModelSpec& m = Flash();
  // BF16: hyper-connections 2·(2·4·4096 + 4·24 + 4·16 + 2·4096) = 82,240; norm input and output
  // 4·4096; q_down output and q_up input 4·1024; q_up output, kv, RoPE'd q and kv
  // 2·(2·32768 + 2·512); the attention output and LSE 2·32768 + 256; wo_a input 2·32768;
  // linear_proj input 2·8192: 383,552 in all; the key indices 4·128 (window) and 4·640 (ratio 4);
  // ratio 4's compressor 12·1024, indexer 12·256 + 2·8192 + 256; ratio 128's compressor 12·512.
  const double b0 = 383552 + 512, b4 = 383552 + 2560 + 12288 + 3072 + 16384 + 256, b128 = 383552 + 512 + 6144;
  const TeLayerBytes bf16 = Dsv4BlockSavedBytes(m, Precision::kBf16, 0);
  CHECK(bf16.split == 0.0);
  CHECK(bf16.sequence == doctest::Approx((2 * b0 + 21 * b4 + 20 * b128) / 43));
  // mla_up_proj recompute: q_up's output, kv and the RoPE'd q, kv (133,120 bytes) rebuilt.
  const TeLayerBytes up = Dsv4BlockSavedBytes(m, Precision::kBf16, kRecomputeMlaUpProj);
  CHECK(bf16.sequence - up.sequence == doctest::Approx(133120.0));
  // What the Megatron-Core memory model reads for the attention blocks of this model.
  const TeLayerBytes hybrid = HybridBlockSavedBytes(m, MixerKind::kAttention, MlpKind::kNone, Precision::kBf16, 1, 0);
  CHECK(hybrid.sequence == doctest::Approx(bf16.sequence));
  // HBM elements: hyper-connections 2·(4·4·4096 + 2·4096), norm 2·4096, q_layernorm 2·1024, q
  // RMSNorm 2·32768, kv_layernorm 1024, RoPE 2·(32768 + 512) and the inverse 2·32768: 356,352;
  // the ratio-4 compressor 8·2·512 + 512, indexer 16·128 + 2·8192 + 4·512; ratio 128's
  // compressor 8·512 + 16.
  const double e0 = 356352, e4 = e0 + 8704 + 20480, e128 = e0 + 4112;
  CHECK(Dsv4BlockElements(m, false) == doctest::Approx((2 * e0 + 21 * e4 + 20 * e128) / 43));
  CHECK(Dsv4BlockElements(m, true) - Dsv4BlockElements(m, false) == doctest::Approx(1.5 * 8192));
}

TEST_CASE("dsv4: DeepSeek-V4 Flash is priced as attention and MoE blocks") {
  const ModelSpec& m = Flash();
  CHECK(HybridRefusal(m).empty());
  const HybridBlocks b = HybridBlocksIn(m, 0, m.num_layers);
  CHECK(b.attention == 43);
  CHECK(b.moe == 43);
}

TEST_CASE("dsv4: AutoModel Flash layer bytes per token by hand from deepseek_v4 layers.py and model.py") {
  const ModelSpec& m = Flash();
  // Flash at 4096 tokens, CP 1, tilelang. Layer 2 (ratio 4, hash-routed) is the largest:
  //   hyper-connections 2·(8mh + 2mh + 4h + 4(2+m)m + 10m + 2m² + 8 + 4m²), m 4, h 4096: 360,928
  //   attention: 2h + 4r_q + 2d + 8 + 2ad + 4a + 12r_d + 2ad + 2g·r_o = 161,800, the sparse kernel's
  //     q 2ad, kv 2d·(4096 + 1024)/4096 = 1280, indices 4·(128 + 512), out 2ad, lse 4a: 135,168
  //   compressor (ratio 4): 4h + 8d + 8d = 24,576
  //   MoE: 2h + 8E + 12k + 4 + 4h (hash: fp32 gate input) + k·(2h + 6f + 4) + 22·f_s = 194,660
  const Dsv4PytorchTerms none = Dsv4Pytorch(m, Recompute::kNone, 4096, 1, true);
  CHECK(none.full == doctest::Approx(360928.0 + 161800.0 + 135168.0 + 24576.0 + 194660.0));
  // Whole-block checkpoint: 2mh = 32,768 each of 43 layers; router logits 4E on the 3 hash layers,
  // 2E and top-k 12k on the 40 others; the indexer's top-k 12·512 on the 21 ratio-4 layers.
  const Dsv4PytorchTerms ac = Dsv4Pytorch(m, Recompute::kFull, 4096, 1, true);
  CHECK(ac.saved == doctest::Approx((43.0 * 32768.0 + 3.0 * 1024.0 + 40.0 * 584.0 + 21.0 * 6144.0) / 43.0));
  // The 4-D mask 2·4096 and the two rotary tables 8·64, per micro-batch.
  CHECK(ac.per_microbatch == doctest::Approx(8704.0));
  // Under CP 8 the local sequence is 512: the kv gathered over the 4096 keys and the ratio-4
  // windows' fp32 view of the gathered sequence (8d·cp) grow; the mask stays 2·4096.
  const Dsv4PytorchTerms cp = Dsv4Pytorch(m, Recompute::kNone, 4096, 8, true);
  CHECK(cp.full == doctest::Approx(none.full + 2.0 * 512.0 * 5120.0 / 512.0 - 1280.0 + 8.0 * 512.0 * 7.0));
  CHECK(cp.per_microbatch == doctest::Approx(8704.0));
}

TEST_CASE("dsv4: AutoModel Flash GEMM and kernel FLOPs per token by hand") {
  const ModelSpec& m = Flash();
  const Dsv4PytorchTerms t = Dsv4Pytorch(m, Recompute::kNone, 4096, 1, true);
  // bf16 GEMMs 213,909,504 forward x3 on every layer; the frozen indexer's wq_b and weights_proj
  // 2·(1024·64·128 + 4096·64) = 17,301,504 forward only, on the 21 ratio-4 layers.
  CHECK(t.bf16_linear == doctest::Approx(3.0 * 213909504.0 + 21.0 / 43.0 * 17301504.0));
  // fp32: the mappings 1,572,864 and the compressor 2·2·4096·k_c·512 (k_c 2 at ratio 4, 1 at 128)
  // x3; the indexer's compressor 2·2·4096·256 = 4,194,304 forward only.
  CHECK(t.fp32_linear == doctest::Approx(3.0 * 1572864.0 + (21.0 * 3.0 * 16777216.0 + 20.0 * 3.0 * 8388608.0 +
                                                           21.0 * 4194304.0) / 43.0));
  // Core (2 ratio-0, 21 ratio-4, 20 ratio-128 layers): 14·a·d·T_k with T_k = 128 (ratio 0), 640 (4: 128 + 512), 192 (128: 128 + 32, to 64s);
  // the tilelang indexer 2·64·128·(4096/8 + 128) = 10,485,760 forward only.
  const double ad = 64.0 * 512.0;
  CHECK(t.core == doctest::Approx((2.0 * 14.0 * ad * 128.0 + 21.0 * (14.0 * ad * 640.0 + 10485760.0) +
                                   20.0 * 14.0 * ad * 192.0) / 43.0));
  // Full recompute runs the forward once more: x4 for the trained GEMMs, x2 for the indexer.
  const Dsv4PytorchTerms r = Dsv4Pytorch(m, Recompute::kFull, 4096, 1, true);
  CHECK(r.bf16_linear == doctest::Approx(4.0 * 213909504.0 + 2.0 * 21.0 / 43.0 * 17301504.0));
}
