// Megatron-Core step-time model (planner/cost/time_megatron.cpp) worked by hand (the fit of
// its constants: tests/accuracy/megatron_fit_test.cpp).
#include <doctest/doctest.h>

#include <algorithm>

#include "cost/context.hpp"
#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "cost_fixtures.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/accuracy.hpp"

namespace meshplan {
namespace {

Layout MegatronLayout(int64_t tp, int64_t gpus) {
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.strategy = Strategy::kDdp;
  l.tp = tp;
  l.dp = gpus / tp;
  l.sequence_parallel = tp > 1;
  return l;
}

cost::MegatronTerms Terms(const ModelSpec& m, const SystemSpec& s, const TrainSetup& setup, const Layout& l) {
  const ParamCounts p = CountParams(m);
  const CostView c_view = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, s, setup, p, c_view);
  return cost::MegatronRankTerms(c, 0, cost::RankMemory(c, 0));
}

TEST_CASE("megatron time: terms of one GPU worked by hand") {
  // TinyLlama (h 1024, 4 layers, q 1024, k 256, FFN 4096, vocab 32000), 1 GPU, seq 2048, bf16.
  const cost::MegatronTerms t =
      Terms(test::TinyLlama(), test::DgxH100(), test::Setup(1, 2048, 1), MegatronLayout(1, 1));
  // GEMMs: 1.149977e12 FLOP (linear + head, cost_model_test) at R = 989e12 x 0.803 (MAMF, no
  // system factor) x LinearGemmFactor. One layer's GEMMs at 2048 tokens, each
  // max(2TKN/R, bytes / (0.570 x 3.35e12)) + 2.93 us, bytes = (TK + KN + TN) x 2:
  //   q/k/v  K 1024 N 1536:  6.44245e9 FLOP, max(8.112, 7.139) + 2.93 = 11.042 us
  //   o      K 1024 N 1024:  4.29497e9 FLOP, max(5.408, 5.491) + 2.93 =  8.421 us (HBM-bound)
  //   up     K 1024 N 8192: 3.43597e10 FLOP, max(43.265, 28.555) + 2.93 = 46.195 us
  //   down   K 4096 N 1024: 1.71799e10 FLOP, max(21.633, 15.376) + 2.93 = 24.563 us
  // factor = 6.22770e10 / R / 90.221 us = 0.869175 -> 1.149977e12 / (R x 0.869175) = 1.66598e-3 s
  CHECK(t.gemm == test::Rel(1.66598e-3).epsilon(1e-4));
  // attention core 4 x 12,582,912 x 2048 FLOP at 989e12 x 0.52 x 0.81 (head dim 64,
  // AttentionHeadDimFactor) x 0.848131 (2048 tokens: (2048/2568) / (8192/8712),
  // AttentionLengthFactor) -> 2.91758e-4 s
  CHECK(t.attention == test::Rel(2.91758e-4).epsilon(1e-4));
  // elementwise: 10h + 2(q + k) + 3f = 10240 + 2560 + 12288 = 25088 elements per token per
  // layer forward; x3 (fwd + bwd) x 2 bytes x 4 layers x 2048 tokens = 1,233,125,376 bytes;
  // cross-entropy 16 B x 32000 x 2048 = 1,048,576,000 bytes; / 3.35e12 B/s = 6.81105e-4 s
  CHECK(t.memory_bound == test::Rel(6.81105e-4).epsilon(1e-4));
  CHECK(t.kernels == test::Rel(4 * cost::kDenseLayerKernels));
  CHECK(t.tp == 0.0);
  CHECK(t.dp == 0.0);
  CHECK(t.bubble_fraction == 0.0);
  // The fitted constants scale each compute term; attention and communication stay.
  MegatronTimeFit fit;
  fit.gemm_bf16 = 1.5;
  fit.memory_bound = 2.0;
  fit.kernel_overhead = 10e-6;
  const TimeBreakdown b = cost::MegatronTime(t, fit, Precision::kBf16);
  CHECK(b.compute == test::Rel(1.5 * 1.66598e-3 + 2.91758e-4 + 2.0 * 6.81105e-4 + 160 * 10e-6).epsilon(1e-4));
  // The host issues 4 layers x 40 kernels at 36 us: 5.76 ms. That fit's GPU time (5.753 ms)
  // leaves the GPU idle for 7.06 us.
  CHECK(t.host == test::Rel(160 * 36e-6));
  CHECK(b.host == test::Rel(5.76e-3 - 5.752941e-3).epsilon(2e-2));
  // With a fit whose GEMMs run at half the rate (3.332 ms) the GPU's 6.585 ms cover it.
  fit.gemm_bf16 = 2.0;
  CHECK(cost::MegatronTime(t, fit, Precision::kBf16).host == 0.0);
  // At the prior constants the GPU needs 1.66598 + 0.291758 + 0.681105 + 160 x 0.004 = 3.278843
  // ms (and the optimizer, which the host does not wait for): the host's 5.76 ms leave the GPU
  // idle for 2.481157 ms.
  const TimeBreakdown p = cost::MegatronTime(t, MegatronTimeFit{}, Precision::kBf16);
  CHECK(p.host == test::Rel(5.76e-3 - 3.278843e-3).epsilon(1e-4));
  // A full-iteration CUDA graph replays every layer kernel: nothing left for the host.
  Layout graphed = MegatronLayout(1, 1);
  graphed.mb.cuda_graph = MbCudaGraph::kFullIteration;
  CHECK(Terms(test::TinyLlama(), test::DgxH100(), test::Setup(1, 2048, 1), graphed).host == 0.0);
}

TEST_CASE("megatron time: unfused RoPE and bias-dropout-add of GPT-OSS worked by hand") {
  // Megatron-Bridge gives YaRN models without MLA position_embedding_type "yarn" and so turns
  // RoPE fusion off; its GPT-OSS provider turns bias-dropout fusion off. MLA keeps "rope".
  const ModelSpec oss = LoadModel("gpt-oss-120b");
  const ModelSpec dsv3 = LoadModel("deepseek-v3");
  CHECK_FALSE(cost::MegatronRopeFused(oss));
  CHECK_FALSE(cost::MegatronBiasDropoutFused(oss));
  CHECK(cost::MegatronRopeFused(dsv3));
  CHECK(cost::MegatronBiasDropoutFused(dsv3));
  CHECK(cost::MegatronRopeFused(test::TinyLlama()));
  const cost::MegatronUnfused none = cost::MegatronUnfusedOps(test::TinyLlama());
  CHECK(none.fwd_elements == 0.0);
  CHECK(none.bwd_elements == 0.0);
  CHECK(none.kernels == 0.0);
  // GPT-OSS-120B: q = 64 heads x 64 = 4096, k = 8 x 64 = 512, h = 2880.
  // RoPE: forward 12 x 1.79 - 2 = 19.48 weighted element passes x 4608 = 89763.84,
  // backward 13 x 1.79 - 2 = 21.27 x 4608 = 98012.16; bias-dropout-add after the biased
  // o_proj: 2h x 1.79 = 10310.4 more in the forward.
  // Kernels: per tensor 6 + 6 - 1 forward and 7 - 1 backward = 17, x2 tensors, + 1 BDA = 35.
  REQUIRE(cost::kEagerOpSlowdown == 1.79);
  const cost::MegatronUnfused u = cost::MegatronUnfusedOps(oss);
  CHECK(u.fwd_elements == test::Rel(89763.84 + 10310.4));
  CHECK(u.bwd_elements == test::Rel(98012.16));
  CHECK(u.kernels == 35.0);
  // A plain-RoPE copy of the model prices fewer HBM bytes and kernels, the GEMMs unchanged.
  ModelSpec plain = oss;
  plain.rope_scaling_type.clear();
  plain.architecture = Architecture::kQwen3Moe;  // not GPT-OSS: bias-dropout fused
  Layout l = MegatronLayout(1, 8);
  l.ep = 8;
  const TrainSetup setup = test::Setup(8, 4096, 8);
  const cost::MegatronTerms a = Terms(oss, test::DgxH100(), setup, l);
  const cost::MegatronTerms b = Terms(plain, test::DgxH100(), setup, l);
  CHECK(a.gemm == test::Rel(b.gemm));
  // 36 layers x 4096 tokens (mbs 1, one micro-batch per GPU) x (100074.24 + 98012.16)
  // elements x 2 bytes / 3.35e12 B/s = 1.74295e-2 s more; 36 x 35 kernels more.
  CHECK(a.memory_bound - b.memory_bound == test::Rel(36.0 * 4096 * (100074.24 + 98012.16) * 2 / 3.35e12).epsilon(1e-6));
  CHECK(a.kernels - b.kernels == test::Rel(36.0 * 35.0).epsilon(1e-9));
}

TEST_CASE("megatron time: the compute split of the slowest rank sums to the cost model's compute") {
  // Qwen3-30B-A3B, pp 2 (the head rank is slower), ep 4, on 8 H100; the system's fit applied.
  const ModelSpec m = test::Qwen3_30B_A3B();
  const SystemSpec sys = LoadSystem("dgx-h100");
  Layout l = MegatronLayout(1, 8);
  l.pp = 2;
  l.dp = 4;
  l.ep = 4;
  const TrainSetup setup = test::Setup(8, 4096, 64);
  const Cost c = Score(CostModel(m, sys, setup), l);
  const MegatronComputeSplit split = SplitMegatronCompute(m, sys, setup, l);
  CHECK(split.gemm > 0);
  CHECK(split.attention > 0);
  CHECK(split.memory_bound > 0);
  CHECK(split.kernels > 0);
  CHECK(split.gemm + split.attention + split.memory_bound + split.kernels == test::Rel(c.time.compute));
  // The bubble covers the stage work: compute and the exposed EP (and TP, CP) communication.
  REQUIRE(c.time.ep_comm > 0);
  CHECK(split.bubble_fraction * (c.time.compute + c.time.tp_comm + c.time.cp_comm + c.time.ep_comm) ==
        test::Rel(c.time.bubble));
}

TEST_CASE("megatron time: the attention rate against sequence and context-parallel chunk length by hand") {
  // L/(L + K) against 8192/(8192 + 520) = 0.940312.
  CHECK(cost::AttentionLengthFactor(8192, 1) == test::Rel(1.0));
  CHECK(cost::AttentionLengthFactor(4096, 1) == test::Rel((4096.0 / 4616.0) / 0.940312).epsilon(1e-5));
  CHECK(cost::AttentionLengthFactor(16384, 1) > 1.0);
  // cp 2 at 8192: half the core causal over 4096 (0.943674 of the reference rate), half
  // unmasked over 2048 keys (2048/2226 / 0.940312 = 0.978433): 1 / (0.5/0.943674 + 0.5/0.978433).
  CHECK(cost::AttentionLengthFactor(8192, 2) == test::Rel(1.0 / (0.5 / 0.943674 + 0.5 / 0.978433)).epsilon(1e-5));
  // cp 16 at 8192: chunks of 512 and 256 tokens: about 0.62 of the unsplit rate.
  CHECK(cost::AttentionLengthFactor(8192, 16) == test::Rel(0.619983).epsilon(1e-5));
  // So a Megatron layout with CP 4 and micro-batch 4 no longer ties with CP 1 and micro-batch
  // 1 (same tokens per GPU): its attention core is slower.
  const ModelSpec m = test::Llama3_70B();
  const SystemSpec sys = LoadSystem("dgx-h100");
  const TrainSetup setup = test::Setup(64, 8192, 64);
  Layout a = MegatronLayout(8, 64);
  a.pp = 8;
  a.dp = 1;
  SetMegatronMicroBatch(a, 1, setup);
  Layout b = a;
  b.cp = 4;
  b.pp = 2;
  SetMegatronMicroBatch(b, 1, setup);
  const cost::MegatronTerms ta = Terms(m, sys, setup, a), tb = Terms(m, sys, setup, b);
  // The same attention FLOP per GPU (2048 instead of 8192 tokens per micro-batch, 40 instead
  // of 10 layers), at the slower rate of 4 ring chunks.
  CHECK(tb.attention / ta.attention ==
        test::Rel(cost::AttentionLengthFactor(8192, 1) / cost::AttentionLengthFactor(8192, 4)).epsilon(1e-6));
  CHECK(tb.attention > 1.05 * ta.attention);
}

TEST_CASE("megatron time: the EP all-to-all share the combined 1F1B schedule cannot pair by hand") {
  // No PP: the first forward and the last backward, one micro-batch of 5.
  CHECK(cost::MegatronEpUnpairedShare(1, 1, 5) == test::Rel(0.2));
  // Interleaved PP 4, VPP 4, 64 micro-batches: 2·3 + 3·4 = 18 warm-up chunks of 256.
  CHECK(cost::MegatronEpUnpairedShare(4, 4, 64) == test::Rel(18.0 / 256.0));
  // A single micro-batch has no partner at all.
  CHECK(cost::MegatronEpUnpairedShare(1, 1, 1) == test::Rel(1.0));
  CHECK(cost::MegatronEpUnpairedShare(8, 2, 4) == test::Rel(1.0));
  // In the time model: with overlap on, the exposed EP time is that share of the all-to-all,
  // and the paired rest hides behind compute here at the measured contention cost
  // (kHiddenCommKappa: EP 8 on NVLink, above the reference busbw), against all of it with
  // overlap off.
  const ModelSpec m = test::Qwen3_30B_A3B();
  Layout l = MegatronLayout(1, 8);
  l.ep = 8;
  const TrainSetup setup = test::Setup(8, 4096, 40);  // 5 micro-batches of 1 per GPU
  SetMegatronMicroBatch(l, 1, setup);
  l.mb.ep_a2a_overlap = Tri::kFalse;
  const cost::MegatronTerms off = Terms(m, test::DgxH100(), setup, l);
  l.mb.ep_a2a_overlap = Tri::kTrue;
  const cost::MegatronTerms on = Terms(m, test::DgxH100(), setup, l);
  REQUIRE(off.ep > 0);
  REQUIRE(off.ep < off.gemm);
  CHECK(on.ep == test::Rel((0.2 + 0.8 * cost::kHiddenCommKappa) * off.ep));
}

TEST_CASE("megatron time: torch FSDP2 copies parameters and gradients through its flat buffers") {
  // Llama-3 70B, 64 GPUs, DP 64 (TP 1: the rank holds all 70.55e9 parameters), 64 sequences:
  // one micro-batch per GPU. torch FSDP2 against Megatron FSDP: 2 x (2 + 2) bytes of all-gather
  // copy-out and 2 x 4 bytes of fp32 gradient copy-in per parameter per micro-batch, over the
  // 3.35e12 B/s of H100 HBM; everything else equal.
  const ModelSpec m = test::Llama3_70B();
  const TrainSetup setup = test::Setup(64, 4096, 64);
  Layout l = MegatronLayout(1, 64);
  l.use_distributed_optimizer = true;
  SetMegatronMicroBatch(l, 1, setup);
  l.mb.use_megatron_fsdp = true;
  const cost::MegatronTerms mfsdp = Terms(m, test::DgxH100(), setup, l);
  l.mb.use_megatron_fsdp = false;
  l.mb.use_torch_fsdp2 = true;
  l.use_distributed_optimizer = false;
  const cost::MegatronTerms fsdp2 = Terms(m, test::DgxH100(), setup, l);
  const double params = double(CountParams(m).total);
  CHECK(fsdp2.gemm == test::Rel(mfsdp.gemm));
  CHECK(fsdp2.memory_bound - mfsdp.memory_bound == test::Rel(16.0 * params / 3.35e12).epsilon(1e-6));
}

TEST_CASE("megatron time: TP communication and its userbuffer overlap worked by hand") {
  // tp 4 on 4 GPUs with sequence parallel: 5 all-reduce volumes per layer per micro-batch
  // (forward: all-gather + reduce-scatter around attention and the MLP; backward: the same
  // reversed, plus the all-gathers that re-gather the QKV and FC1 inputs for their weight
  // gradients) of T·h·2 = 4,194,304 bytes: 6 x 5 us + 4,194,304 x 6/4 / (450e9 x 0.8) =
  // 4.747627e-5 s; x 5 volumes x 4 layers = 9.495254e-4 s.
  Layout l = MegatronLayout(4, 4);
  l.mb.tp_comm_overlap = Tri::kFalse;
  const cost::MegatronTerms off = Terms(test::TinyLlama(), test::DgxH100(), test::Setup(4, 2048, 1), l);
  CHECK(off.tp == test::Rel(9.495254e-4).epsilon(1e-4));
  // With tp_comm_overlap the layer GEMMs hide it, but kTpOverlapExposedFraction stays exposed.
  l.mb.tp_comm_overlap = Tri::kTrue;
  const cost::MegatronTerms on = Terms(test::TinyLlama(), test::DgxH100(), test::Setup(4, 2048, 1), l);
  const double hidden = std::min(off.tp, on.gemm);
  CHECK(on.tp == test::Rel(off.tp - hidden + cost::kTpOverlapExposedFraction * hidden));
  CHECK(on.tp < 0.5 * off.tp);
}

}  // namespace
}  // namespace meshplan
