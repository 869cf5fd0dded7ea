// ModelFlopsPerStep against the published Megatron-Bridge rows of megatron.md 3.6
// (Model TFLOP/s/GPU = tokens/s/GPU x FLOP/token), rows in mbridge_perf_dev.csv.

#include <doctest/doctest.h>

#include "cost/cost_fixtures.hpp"
#include "cost/flops.hpp"
#include "meshplan/cost.hpp"

namespace meshplan {
namespace {

/// TFLOP/s/GPU implied by a tokens/s/GPU figure.
double Tflops(const ModelSpec& m, int64_t seq, double tokens_per_s_per_gpu) {
  const TrainSetup s = test::Setup(64, seq, 16);
  const double per_token = ModelFlopsPerStep(m, s) / double(s.global_batch * s.seq_len);
  return tokens_per_s_per_gpu * per_token / 1e12;
}

TEST_CASE("cost: Llama3-70B FLOPs reproduce the MB row 4864 tok/s -> 2186 TFLOP/s") {
  // 26.04.01 GB200 NVFP4, seq 8192. Per token (hand): 6·[80·(8192·(8192+2·1024) + 8192·8192
  // + 3·8192·28672) + 8192·128256] + 6·8192·80·8192 = 449.22 GFLOP -> 4864 x = 2185.0.
  const double t = Tflops(test::Llama3_70B(), 8192, 4864);
  CHECK(t == doctest::Approx(2186).epsilon(0.005));
  CHECK(t == doctest::Approx(2185.02).epsilon(1e-4));
}

TEST_CASE("cost: Qwen3-30B-A3B FLOPs reproduce the MB row 8826 tok/s -> 203 TFLOP/s") {
  // seq 4096; all 48 layers MoE, routed 6·2048·3·768·8 per layer; 23.006 GFLOP/token.
  const double t = Tflops(test::Qwen3_30B_A3B(), 4096, 8826);
  CHECK(t == doctest::Approx(203).epsilon(0.005));
  CHECK(t == doctest::Approx(203.053).epsilon(1e-4));
}

TEST_CASE("cost: DeepSeek-V3 (no MTP) FLOPs reproduce 4912 tok/s -> 1227 TFLOP/s") {
  // seq 4096, MLA, 3 dense + 58 MoE layers, shared 2048; megatron.md 3.6 "without MTP: 1227".
  const double t = Tflops(test::DeepSeekV3(), 4096, 4912);
  CHECK(t == doctest::Approx(1227).epsilon(0.005));
  CHECK(t == doctest::Approx(1227.08).epsilon(1e-4));
}

TEST_CASE("cost: GPT-OSS-120B FLOPs with sliding windows reproduce the MB row 28947 tok/s -> 943 TFLOP/s") {
  // 26.06 GB200 MXFP8, seq 4096. Per token (hand): 36 layers · (attention projections
  // 6·(2880·(4096 + 2·512) + 4096·2880) = 159.25 M + routed 6·2880·3·2880·4 = 597.20 M)
  // + 18 full layers · 6·4096·4096 = 100.66 M + 18 window layers · 12·4096·c, c = 128 −
  // 128·127/8192 = 126.02 -> 6.19 M, + logits 6·2880·201088 = 3474.8 M: 32.55 GFLOP/token;
  // 28947 x = 942.3 (the table: 943).
  const double t = Tflops(LoadModel("gpt-oss-120b"), 4096, 28947);
  CHECK(t == doctest::Approx(943).epsilon(0.005));
}

TEST_CASE("cost: FLOPs per token split into the Megatron terms") {
  // TinyLlama, s = 2048: A_lin = 6·(1024·(1024+512) + 1024·1024) = 15,728,640;
  // A_core·s = 6·1024·2048 = 12,582,912; MLP 6·1024·3·4096 = 75,497,472; logits 6·1024·32000.
  const cost::FlopsPerToken f = cost::ComputeFlopsPerToken(test::TinyLlama(), 2048);
  CHECK(f.attn_linear_flops == doctest::Approx(15728640.0));
  CHECK(f.attn_core_flops == doctest::Approx(12582912.0));
  CHECK(f.dense_mlp_flops == doctest::Approx(75497472.0));
  CHECK(f.logits_flops == doctest::Approx(196608000.0));
  // 4·(15,728,640 + 12,582,912 + 75,497,472) + 196,608,000 = 611,844,096
  CHECK(f.Total(cost::ModelLayerMix(test::TinyLlama())) == doctest::Approx(611844096.0));
}

TEST_CASE("cost: DeepSeek-V3.2's DSA indexer and top-k attention in the FLOPs") {
  // s = 4096, index_topk k = 2048: average context c = 2048 - 2048·2047/8192 = 1536.25 keys;
  // core 12·(128·192/2 + 128·128/2)·1536.25 = 377,548,800 plus the indexer's scores
  // 6·64·128·4096/2 = 100,663,296 (V3's dense core: 6·4096·20480 = 503,316,480); the
  // indexer's projections add 6·(1536·64·128 + 7168·128 + 7168·64) = 83,755,008 to A_lin.
  const ModelSpec v32 = LoadModel(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/models/arch/deepseek-v3.2-exp.json");
  const ModelSpec v3 = LoadModel("deepseek-v3");
  const cost::FlopsPerToken a = cost::ComputeFlopsPerToken(v32, 4096), b = cost::ComputeFlopsPerToken(v3, 4096);
  CHECK(b.attn_core_flops == doctest::Approx(503316480.0));
  CHECK(a.attn_core_flops == doctest::Approx(377548800.0 + 100663296.0));
  CHECK(a.attn_linear_flops - b.attn_linear_flops == doctest::Approx(83755008.0));
  // s <= k: every query sees all its causal keys (s/2).
  const cost::FlopsPerToken c = cost::ComputeFlopsPerToken(v32, 2048), d = cost::ComputeFlopsPerToken(v3, 2048);
  CHECK(c.attn_core_flops == doctest::Approx(d.attn_core_flops + 6.0 * 64 * 128 * 2048 / 2));
}


TEST_CASE("flops: Llama 4 chunked attention averages the core over full and chunked layers") {
  const ModelSpec m = LoadModel(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/models/arch/llama-4-scout-17b-16e.json");
  const double q = 40.0 * 128;
  // seq 16384 = 2 chunks of 8192: a chunked layer's query sees 8192²/16384 = 4096 keys on
  // average, a full (NoPE) layer's 8192; 36 chunked layers of 48.
  const cost::FlopsPerToken f = cost::ComputeFlopsPerToken(m, 16384);
  CHECK(f.attn_core_flops == doctest::Approx((12.0 * q * 8192 * 12 + 12.0 * q * 4096 * 36) / 48).epsilon(1e-12));
  // seq 8192: one chunk, every layer full causal: 6·q·s.
  CHECK(cost::ComputeFlopsPerToken(m, 8192).attn_core_flops == doctest::Approx(6.0 * q * 8192).epsilon(1e-12));
  // seq 12288 = 8192 + 4096: (8192²/2 + 4096²/2)/12288 keys.
  const double c = (8192.0 * 8192 / 2 + 4096.0 * 4096 / 2) / 12288;
  CHECK(cost::ComputeFlopsPerToken(m, 12288).attn_core_flops ==
        doctest::Approx((6.0 * q * 12288 * 12 + 12.0 * q * c * 36) / 48).epsilon(1e-12));
  // transformers masking_utils.py chunked_causal_mask_function: chunked_overlay
  // (kv_idx // C == q_idx // C) and causal_mask_function. At any whole number of chunks a
  // chunked layer's score FLOPs per token are those of one chunk, 6·q·C, whatever the sequence
  // length; only the 12 NoPE layers grow with it.
  for (const int64_t s : {int64_t{65536}, int64_t{131072}, int64_t{1} << 20}) {
    CAPTURE(s);
    const double per_layer_chunked =
        (cost::ComputeFlopsPerToken(m, s).attn_core_flops * 48 - 6.0 * q * double(s) * 12) / 36;
    CHECK(per_layer_chunked == doctest::Approx(6.0 * q * 8192).epsilon(1e-9));
  }
}

}  // namespace
}  // namespace meshplan
