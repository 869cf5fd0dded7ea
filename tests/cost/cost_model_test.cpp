// CostModel::Evaluate and the time model (planner/cost/time.cpp, cost_model.cpp).

#include <doctest/doctest.h>

#include "cost/cost_fixtures.hpp"
#include "cost/time.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/cost.hpp"

namespace meshplan {
namespace {

TEST_CASE("cost: layouts whose memory exceeds capacity do not fit") {
  // Llama3-70B with DDP on 8 GPUs: at least 8 B · 70.6e9 params ≈ 565 GB > 72 GB.
  const CostModel cm(test::Llama3_70B(), test::DgxH100(), test::Setup(8, 8192, 8));
  Layout l;
  l.strategy = Strategy::kDdp;
  l.dp = 8;
  const Cost c = Score(cm, l);
  CHECK(c.capacity_bytes == test::Rel(72e9));  // 80e9 · (1 − 0.10)
  // AutoModel default bf16 model: 2 (weights) + 4 (Adam) + 2 (DDP bucket) B/param = 565 GB
  // at the start of backward (was 16 B/param with fp32 weights before the measured model).
  CHECK(c.memory.weights + c.memory.gradients + c.memory.optimizer > 5.6e11);
  CHECK_FALSE(c.fits);
  // The small model with FSDP2 on 8 GPUs fits easily.
  const CostModel small(test::TinyLlama(), test::DgxH100(), test::Setup(8, 2048, 8));
  const Cost s = Score(small, Layout{Strategy::kFsdp2, 1, 1, 1, 1, 8});
  CHECK(s.fits);
  CHECK(s.memory.Total() < 5e9);
}

TEST_CASE("cost: full recompute uses less activation memory and more compute time") {
  const CostModel cm(test::Llama3_70B(), test::DgxH100(), test::Setup(64, 8192, 64));
  Layout l;
  l.tp = 8;
  l.dp = 8;
  const Cost none = Score(cm, l);
  l.recompute = Recompute::kSelective;
  const Cost sel = Score(cm, l);
  l.recompute = Recompute::kFull;
  const Cost full = Score(cm, l);
  CHECK(full.memory.activations < sel.memory.activations);
  CHECK(sel.memory.activations < none.memory.activations);
  CHECK(full.time.compute > sel.time.compute);
  CHECK(sel.time.compute > none.time.compute);
  // full recompute: the layers' forward again ≈ 4/3 of the layers' compute
  CHECK(full.time.compute / none.time.compute == test::Rel(4.0 / 3.0).epsilon(0.02));
  CHECK(full.model_flops == none.model_flops);
  CHECK(full.mfu < none.mfu);
}

TEST_CASE("cost: compute time worked by hand and one GPU and no communication") {
  // TinyLlama, 1 GPU, seq 2048, gbs 1, bf16.
  // FLOP = 611,844,096 · 2048 = 1.25306e12 (layers 4·103,809,024·2048 linear+core).
  // linear rate 989e12 · 0.803 · 0.7 = 555.917e12 FLOP/s; GEMM factor LinearGemmFactor
  // 0.869175 (the layer's four GEMMs at 2048 tokens, worked in time_megatron_test); core
  // factor 2048/2304 = 0.888889.
  // linear+head: (4·(15,728,640 + 75,497,472) + 196,608,000)·2048 = 1.149977e12 FLOP
  //   -> 1.149977e12 / (555.917e12 · 0.869175) = 2.37997e-3 s
  // core: 4·12,582,912·2048 = 1.030792e11 at the measured SDPA rate 989e12 · 0.43, times 0.81
  //   for head dim 64 (AttentionHeadDimFactor), · 0.888889 = 3.06195e14 FLOP/s -> 3.36646e-4 s
  // eager HBM-bound kernels: per token 4 layers x (341.4·1024 + 15.8·4096) = 1,657,241.6
  //   element passes, + the loss 35.7·32000 = 1,142,400; x 2 B x 2048 tokens / 3.35e12 B/s
  //   = 3.42307e-3 s
  const CostModel cm(test::TinyLlama(), test::DgxH100(), test::Setup(1, 2048, 1));
  const Cost c = Score(cm, Layout{});
  CHECK(c.time.compute == test::Rel(2.37997e-3 + 3.36646e-4 + 3.42307e-3).epsilon(1e-4));
  CHECK(c.time.tp_comm == 0.0);
  CHECK(c.time.dp_comm == 0.0);
  CHECK(c.time.bubble == 0.0);
  // optimizer: bf16 weights, grads and Adam state (AutoModel default), 8 B/param of state,
  // (2·8 − 2) = 14 B/param moved at 3.35e12 B/s
  CHECK(c.time.optimizer == test::Rel(14.0 * double(cm.params().total) / 3.35e12));
  CHECK(c.model_flops == test::Rel(611844096.0 * 2048));
  CHECK(c.tokens_per_s_per_gpu == test::Rel(2048 / c.step_seconds));
  CHECK(c.mfu == test::Rel(c.model_flops / c.step_seconds / 989e12));
  CHECK(c.mfu_precision_peak == c.mfu);  // BF16: its own peak is the BF16 peak
}

TEST_CASE("cost: MFU is against the BF16 dense peak in every precision and mfu_precision_peak against the run's own") {
  // The tiny Llama on one H100 in FP8: model FLOP/s = model_flops / step (one GPU), MFU =
  // that / 989e12 (dense BF16), mfu_precision_peak = that / 1979e12 (dense FP8), so that the
  // two differ by 1979 / 989 = 2.00101 whatever the step time.
  TrainSetup fp8 = test::Setup(1, 2048, 1);
  fp8.precision = Precision::kFp8;
  const CostModel cm8(test::TinyLlama(), test::DgxH100(), fp8);
  const Cost c8 = Score(cm8, Layout{});
  REQUIRE(c8.step_seconds > 0);
  CHECK(c8.mfu == test::Rel(c8.model_flops / c8.step_seconds / 989e12));
  CHECK(c8.mfu_precision_peak == test::Rel(c8.model_flops / c8.step_seconds / 1979e12));
  CHECK(c8.mfu / c8.mfu_precision_peak == test::Rel(2.00101).epsilon(1e-5));
  CHECK(c8.mfu == test::Rel(c8.model_tflops_per_gpu * 1e12 / 989e12));
  // FP4 on a GPU without FP4 tensor cores runs FP8 GEMMs: its own peak is FP8's.
  TrainSetup fp4 = fp8;
  fp4.precision = Precision::kFp4;
  const Cost c4 = Score(CostModel(test::TinyLlama(), test::DgxH100(), fp4), Layout{});
  CHECK(c4.mfu_precision_peak == test::Rel(c4.model_flops / c4.step_seconds / 1979e12));
}

TEST_CASE("cost: PeakPrecision names the dense peak a precision's GEMMs run at") {
  GpuSpec h100 = test::DgxH100().gpu;  // BF16 and FP8 peaks, no FP4
  CHECK(PeakPrecision(h100, Precision::kBf16) == Precision::kBf16);
  CHECK(PeakPrecision(h100, Precision::kFp8) == Precision::kFp8);
  CHECK(PeakPrecision(h100, Precision::kFp4) == Precision::kFp8);
  CHECK(cost::PeakFlops(h100, Precision::kFp4) == 1979e12);
  GpuSpec a100 = h100;  // no FP8 either
  a100.fp8_flops = 0;
  CHECK(PeakPrecision(a100, Precision::kFp8) == Precision::kBf16);
  CHECK(cost::PeakFlops(a100, Precision::kFp8) == 989e12);
  GpuSpec gb200 = h100;  // GB200 (hwdb gpus/gb200.yaml): 2500 / 5000 / 10000 TFLOP/s
  gb200.bf16_flops = 2500e12;
  gb200.fp8_flops = 5000e12;
  gb200.fp4_flops = 10000e12;
  CHECK(PeakPrecision(gb200, Precision::kFp4) == Precision::kFp4);
  CHECK(cost::PeakFlops(gb200, Precision::kFp4) == 10000e12);
}

TEST_CASE("cost: pipeline bubble is (pp−1)/(v·m) of the compute") {
  const CostModel cm(test::TinyLlama(), test::DgxH100(), test::Setup(4, 2048, 8));
  Layout l;
  l.pp = 4;
  l.dp = 1;
  l.local_batch_size = 8;  // m = 8 micro-batches of 1
  const Cost c = Score(cm, l);
  CHECK(c.time.bubble == test::Rel(3.0 / 8.0 * c.time.compute));
  l.pp_schedule = PpSchedule::kInterleaved1F1B;  // v = 2 (layers_per_stage null)
  l.pp = 2;
  const CostModel cm2(test::TinyLlama(), test::DgxH100(), test::Setup(2, 2048, 8));
  const Cost i = Score(cm2, l);
  CHECK(i.time.bubble == test::Rel(1.0 / 16.0 * i.time.compute));
}

TEST_CASE("cost: TP all-reduces worked by hand") {
  // TinyLlama tp 8 on one DGX node, seq 2048, b 1, gbs 1: all-reduces of 2048·1024·2 =
  // 4,194,304 B over NVLink (360e9 B/s, α 5 µs): 14·5e-6 + 4,194,304·14/8 / 360e9 = 7e-5 +
  // 2.03890e-5 = 9.03890e-5 s each; 7 per layer x 4 layers + the embedding's + the lm_head's
  // = 30. The loss gathers the logits, 2048·32000·2 = 131,072,000 B: 7·5e-6 +
  // 131,072,000·7/8 / 360e9 = 3.5e-5 + 3.18578e-4 = 3.53578e-4 s.
  const CostModel cm(test::TinyLlama(), test::DgxH100(), test::Setup(8, 2048, 1));
  Layout l;
  l.tp = 8;
  const Cost c = Score(cm, l);
  CHECK(c.time.tp_comm == test::Rel(30 * 9.03890e-5 + 3.53578e-4).epsilon(1e-5));
}

TEST_CASE("cost: EP all-to-all worked by hand") {
  // Qwen3-30B-A3B, ep 8 on one node, seq 4096, b 1, gbs 8 (one micro-batch per rank).
  // Per MoE layer: dispatch + combine, forward + backward; DeepEP (AutoModel's default
  // dispatcher) sends a token once per distinct destination rank under the learned gate's
  // uniform routing: 8·(1 − Π_{i<8} (112 − i)/(128 − i)) = 5.33936 copies, 4096·5.33936·2048·2 =
  // 89,579,544 B at DeepEP's intranode shares of NVLink (153 / 200 dispatch, 158 / 200 combine,
  // of 450e9): 2.60217e-4 + 2.51982e-4 s, + 5 µs latency each = 5.22198e-4 s per pass; x 2 x 48.
  const CostModel cm(test::Qwen3_30B_A3B(), test::DgxH100(), test::Setup(8, 4096, 8));
  Layout l;
  l.ep = 8;
  l.dp = 8;
  const Cost c = Score(cm, l);
  CHECK(c.time.ep_comm == test::Rel(2 * 48 * 5.22198e-4).epsilon(1e-5));
}

TEST_CASE("cost: CP ring is hidden behind attention unless the link is slow") {
  // TinyLlama cp 2, seq 2048, b 1: 1024 tokens per rank; one ring step moves K,V
  // 1024·(256+256)·2 = 1,048,576 B; per layer 3 step-sized transfers (forward + 2x backward),
  // each hidden under one chunk's attention (RingCpExposedSeconds).
  // Attention core per layer: 1024 · 12,582,912 FLOP at 989e12·0.43·0.81·(1024/1280) =
  // 2.75575e14 FLOP/s (measured SDPA fraction, head dim 64) -> 4.67564e-5 s, / 0.878242 for
  // the ring's chunks (AttentionLengthFactor: 1/(0.5·1544/1024 + 0.5·690/512) against
  // 2048/2568) -> 5.32386e-5 s.
  SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(2, 2048, 1);
  Layout l;
  l.cp = 2;
  // One step's compute: the forward third of it over the 2 steps, 5.32386e-5 / 3 / 2 =
  // 8.87310e-6 s. NVLink 360e9: 5e-6 + 2.91271e-6 = 7.91271e-6 s a step < 8.87310e-6 -> hidden
  CHECK(Score(CostModel(test::TinyLlama(), sys, setup), l).time.cp_comm == 0.0);
  // 1e9 B/s · 0.8: 5e-6 + 1.31072e-3 = 1.31572e-3 s a step; exposed 3·1·(1.31572e-3 −
  // 8.87310e-6) = 3.92054e-3 s per layer, 4 layers -> 1.568215e-2 s
  sys.scaleup_bandwidth = 1e9;
  CHECK(Score(CostModel(test::TinyLlama(), sys, setup), l).time.cp_comm ==
        test::Rel(1.568215e-2).epsilon(1e-5));
}

TEST_CASE("cost: small-GEMM factor and fp8 fallback") {
  // 256 tokens, width 128: 1/2 · 1/2
  CHECK(cost::GemmSizeFactor(256, 128) == test::Rel(0.25));
  GpuSpec g;
  g.bf16_flops = 312e12;
  g.matmul_efficiency_bf16 = 0.869;
  CHECK(cost::PeakFlops(g, Precision::kFp8) == test::Rel(312e12));
  CHECK(cost::MatmulEfficiency(g, Precision::kFp8) == test::Rel(0.869));
}

}  // namespace
}  // namespace meshplan
