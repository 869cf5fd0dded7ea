// Memory model, pytorch profile (planner/cost/memory.cpp, memory_pytorch.cpp): hand-worked values.

#include <doctest/doctest.h>

#include <string>

#include "cost/cost_fixtures.hpp"
#include "cost/memory.hpp"
#include "meshplan/framework.hpp"

namespace meshplan {
namespace {

MemoryOptions Pytorch(bool fp32 = false) {
  MemoryOptions o;
  o.profile = MemoryProfile::kPyTorch;
  o.fp32_params = fp32;
  return o;
}

/// A model whose only parameters are 7.5e9 attention weights in one layer (ZeRO's 7.5B
/// example), with hand-made ParamCounts so the sharding arithmetic is isolated.
struct Zero75B {
  ModelSpec model = test::TinyLlama();
  ParamCounts params;
  Zero75B() {
    model.num_layers = 1;
    model.num_dense_layers = 1;
    params.attention_per_layer = 7'500'000'000;
    params.total = params.attention_per_layer;
  }
};

TEST_CASE("cost: FSDP2 shards weights and Adam state 64 ways - fp32 4+8 B and bf16 2+4 B per param") {
  Zero75B z;
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(64, 2048, 64);
  Layout l;
  l.dp = 64;
  const CostView c_view = ToCostView(l, z.model, setup);
  const cost::Ctx c = cost::MakeCtx(z.model, sys, setup, z.params, c_view);
  // fp32 params (ZeRO-3 / torchtitan): 4 + 8 B per param over 64 ranks (ZeRO Table 1 P_os+g+p
  // adds the 4 B gradient at the optimizer step: 16 · 7.5e9 / 64 = 1.875 GB).
  const MemoryBreakdown m = cost::RankMemory(c, 0, Pytorch(true));
  CHECK(m.weights == doctest::Approx(4 * 7.5e9 / 64));
  CHECK(m.optimizer == doctest::Approx(8 * 7.5e9 / 64));
  // Start of backward: the last (only) layer stays unsharded in bf16 (reshard_after_forward
  // false for the last layer): 2 · 7.5e9 = 15e9 B; no gradient yet.
  CHECK(m.buffers == doctest::Approx(15e9));
  CHECK(m.gradients == 0.0);
  CHECK(std::string(m.phase) == "backward start");
  // AutoModel default (bf16 model, torch Adam): 2 + 4 B per param.
  const MemoryBreakdown b = cost::RankMemory(c, 0, Pytorch());
  CHECK(b.weights == doctest::Approx(2 * 7.5e9 / 64));
  CHECK(b.optimizer == doctest::Approx(4 * 7.5e9 / 64));
  CHECK(b.workspace == doctest::Approx(64.0 * 1024 * 1024));
}

TEST_CASE("cost: optimizer-step peak of a large model with short sequences") {
  // Llama3-70B, FSDP2 over 8 GPUs, 128-token sequences: the optimizer step (weights + Adam +
  // all grads + foreach sqrt temporary, 2 B each in bf16 = 10 B/param over 8 ranks) is above
  // the start of backward (6 B/param sharded + unsharded root and last layer).
  const ModelSpec m = test::Llama3_70B();
  const ParamCounts p = CountParams(m);
  const TrainSetup setup = test::Setup(8, 128, 8);
  Layout l;
  l.dp = 8;
  const SystemSpec h100 = test::DgxH100();  // cost::Ctx keeps references: no temporaries
  const CostView c_view = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, h100, setup, p, c_view);
  const MemoryBreakdown mem = cost::RankMemory(c, 0, Pytorch());
  const double shard = double(p.total) / 8.0;
  CHECK(std::string(mem.phase) == "optimizer step");
  CHECK(mem.gradients == doctest::Approx(2 * shard).epsilon(1e-9));
  CHECK(mem.buffers == doctest::Approx(2 * shard).epsilon(1e-9));
  CHECK(mem.activations == 0.0);
  CHECK(mem.Allocated() == doctest::Approx(10 * shard + 64.0 * 1024 * 1024).epsilon(1e-9));
}

TEST_CASE("cost: activation bytes per token of a small Llama-like layer") {
  // h 1024, h_q 1024, h_kv 256, a 16, f 4096.
  // replicated: two HF RMSNorms 2·(6h + 4) + their outputs 2·2h = 16h + 8 = 16392
  // split: q, k after RoPE 2·1024 + 2·256, v 2·256, SDPA out 2·1024, lse 4·16, FFN 8·4096
  //        = 4·1024 + 4·256 + 64 + 32768 = 37952
  const ModelSpec m = test::TinyLlama();
  const cost::ActBytes none = cost::LayerActivationBytes(m, false, Recompute::kNone);
  CHECK(none.rep == doctest::Approx(16392));
  CHECK(none.split == doctest::Approx(37952));
  CHECK(none.unsplit == doctest::Approx(0));
  CHECK(none.PerRank(1, false) == doctest::Approx(54344));
  CHECK(none.PerRank(2, false) == doctest::Approx(16392 + 18976));
  CHECK(none.PerRank(2, true) == doctest::Approx(27172));
  // full (whole layer): input 2h; DDP's four-submodule wrap: 8h
  CHECK(cost::LayerActivationBytes(m, false, Recompute::kFull).PerRank(1, false) == doctest::Approx(2048));
  CHECK(cost::LayerActivationBytes(m, false, cost::AcWrap::kSubmodule).PerRank(1, false) == doctest::Approx(8192));
  // selective (SAC, every other mm saved, 1st saved): input 2048; q 2048 (save), k (recompute),
  // v 512 (save), o (recompute), gate 8192 (save), up (recompute), down 2048 (save);
  // SDPA out 2048 + lse 64: 16960 (rep 2048 + 2048, split 12864)
  const cost::ActBytes sel = cost::LayerActivationBytes(m, false, Recompute::kSelective);
  CHECK(sel.PerRank(1, false) == doctest::Approx(16960));
  CHECK(sel.rep == doctest::Approx(4096));
  // Biased q, k, v (Qwen2) run as addmm: always saved, the alternation starts at o_proj:
  // 2048 + q 2048 + k 512 + v 512 + o 2048 (save) + up 8192 (gate recomputed) + SDPA 2112
  ModelSpec q = m;
  q.attention_bias = true;
  CHECK(cost::LayerActivationBytes(q, false, Recompute::kSelective).PerRank(1, false) == doctest::Approx(17472));
}

TEST_CASE("cost: activation bytes of the small Llama-like layer computing in fp32 (SDPA's math kernel)") {
  // An fp32 model under DDP: every activation fp32; GQA in fp32 runs SDPA's math kernel.
  const ModelSpec m = test::TinyLlama();
  const cost::LayerCompute x = cost::PytorchCompute(m, true, 2048);
  CHECK(x.elem == 4.0);
  CHECK(x.kv_len == 2048.0);
  CHECK(cost::PytorchCompute(m, false, 2048).kv_len == 0.0);  // bf16: flash
  ModelSpec mha = m;
  mha.num_key_value_heads = mha.num_attention_heads;
  CHECK(cost::PytorchCompute(mha, true, 2048).kv_len == 0.0);  // fp32 MHA: memory-efficient kernel
  // replicated: two RMSNorms 2·(8h + 4) (fp32 input itself, fp32 normalised value, rsqrt) and
  // their outputs 2·4h = 24h + 8 = 24584
  // split: q copy 4·1024, k and v repeated to 16 heads 2·4·16·64, probabilities 4·16·2048,
  //        o_proj input 4·1024, FFN 16·4096 = 4096 + 8192 + 131072 + 4096 + 65536 = 212992
  const cost::ActBytes none = cost::LayerActivationBytes(m, false, cost::AcWrap::kNone, x);
  CHECK(none.rep == doctest::Approx(24584));
  CHECK(none.split == doctest::Approx(212992));
  CHECK(cost::LayerActivationBytes(m, false, cost::AcWrap::kLayer, x).PerRank(1, false) == doctest::Approx(4096));
  CHECK(cost::LayerActivationBytes(m, false, cost::AcWrap::kSubmodule, x).PerRank(1, false) == doctest::Approx(16384));
  // selective: input 4096; q 4096, v 1024, gate 16384, down 4096 saved; the two bmm outputs:
  // scores 4·16·2048 and P·v 4096
  const cost::ActBytes sel = cost::LayerActivationBytes(m, false, cost::AcWrap::kSelective, x);
  CHECK(sel.PerRank(1, false) == doctest::Approx(164864));
  CHECK(sel.rep == doctest::Approx(8192));
  // at the softmax backward: q, k repeated and P held (139264) with norm1 and its output
  // (12h + 4); the gradient of P, the softmax backward's output and temporary (3·131072), the
  // gradient of v repeated (4096) and the residual gradient (4h)
  const cost::MathAttnBackward ab = cost::MathAttentionBackwardBytes(m, cost::AcWrap::kNone, x);
  CHECK(ab.held.split == doctest::Approx(139264));
  CHECK(ab.held.rep == doctest::Approx(12292));
  CHECK(ab.transient.split == doctest::Approx(397312));
  CHECK(ab.transient.rep == doctest::Approx(4096));
  CHECK(cost::MathAttentionBackwardBytes(m, cost::AcWrap::kSubmodule, x).held.rep == doctest::Approx(8192));
  // final norm 12h + 4; logits held in fp32 (logits.float() makes no copy): 4/tp + 12
  CHECK(cost::FinalNormBytesPerToken(m, 4.0) == doctest::Approx(12292));
  CHECK(cost::LogitsBytesPerTokenVocab(1, false, 4.0) == doctest::Approx(16));
  CHECK(cost::LogitsBytesPerTokenVocab(2, false, 4.0) == doctest::Approx(14));
  // bf16 figures are unchanged by the compute argument's default
  CHECK(cost::LayerActivationBytes(m, false, cost::AcWrap::kNone).PerRank(1, false) == doctest::Approx(54344));
}

TEST_CASE("cost: activation and logits memory of the small model on one GPU at s 2048 and b 1") {
  const ModelSpec m = test::TinyLlama();
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(1, 2048, 1);
  const ParamCounts p = CountParams(m);
  Layout l;
  const CostView c_view = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, sys, setup, p, c_view);
  const MemoryBreakdown mem = cost::RankMemory(c, 0, Pytorch());
  // 2048 tokens · (4 layers · 54344 + cos/sin 4·64 + final norm 8·1024 + 4) = 462,495,744 B
  CHECK(mem.activations == doctest::Approx(462495744.0));
  // logits: (2 + 12) B · 2048 · 32000 = 917,504,000 B
  CHECK(mem.logits == doctest::Approx(917504000.0));
  // one GPU: plain bf16 model, 2 + 4 B per param, no gradient at the start of backward
  CHECK(mem.weights == doctest::Approx(2.0 * double(p.total)));
  CHECK(mem.optimizer == doctest::Approx(4.0 * double(p.total)));
  CHECK(mem.gradients == 0.0);
  CHECK(mem.buffers == 0.0);
  // overhead: the CUDA context alone (770 MiB)
  CHECK(mem.overhead == doctest::Approx(770.0 * 1024 * 1024));
  // full recompute: 2048 · (4 · 2048 + 256 + 8196) = 34,086,912 B at the start of backward
  l.recompute = Recompute::kFull;
  const CostView f_view = ToCostView(l, m, setup);
  const cost::Ctx f = cost::MakeCtx(m, sys, setup, p, f_view);
  CHECK(cost::RankMemory(f, 0, Pytorch()).activations == doctest::Approx(34086912.0));
}

TEST_CASE("cost: TP gathers the logits for the loss unless loss_parallel") {
  const ModelSpec m = test::TinyLlama();
  const ParamCounts p = CountParams(m);
  Layout l;
  l.tp = 2;
  const SystemSpec h100 = test::DgxH100();  // cost::Ctx keeps references: no temporaries
  const TrainSetup setup = test::Setup(2, 2048, 1);
  const CostView c_view = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, h100, setup, p, c_view);
  // (2/2 + 12) B · 2048 · 32000 = 851,968,000; loss_parallel: 14/2 B -> 458,752,000
  CHECK(cost::RankMemory(c, 0, Pytorch()).logits == doctest::Approx(851968000.0));
  MemoryOptions lp = Pytorch();
  lp.loss_parallel = true;
  CHECK(cost::RankMemory(c, 0, lp).logits == doctest::Approx(458752000.0));
}

TEST_CASE("cost: gradient accumulation with FSDP2 - defer_fsdp_grad_sync keeps unsharded fp32 grads") {
  const ModelSpec m = test::TinyLlama();
  const ParamCounts p = CountParams(m);
  const TrainSetup setup = test::Setup(2, 2048, 4);  // dp 2, lbs 1 -> 2 micro-batches per step
  Layout l;
  l.dp = 2;
  const SystemSpec h100 = test::DgxH100();  // cost::Ctx keeps references: no temporaries
  const CostView c_view = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, h100, setup, p, c_view);
  REQUIRE(c.mb_per_step == 2);
  // sync every micro-batch: the second starts with the sharded bf16 grads, 2 · P / 2
  CHECK(cost::RankMemory(c, 0, Pytorch()).gradients == doctest::Approx(double(p.total)));
  // defer (AutoModel default): unsharded fp32 grads of every param, 4 · P (measured +4 B/param)
  MemoryOptions d = Pytorch();
  d.defer_fsdp_grad_sync = true;
  CHECK(cost::RankMemory(c, 0, d).gradients == doctest::Approx(4.0 * double(p.total)));
}

TEST_CASE("cost: DDP keeps a persistent bucket copy of the gradients") {
  const ModelSpec m = test::TinyLlama();
  const ParamCounts p = CountParams(m);
  Layout l;
  l.strategy = Strategy::kDdp;
  l.dp = 2;
  const SystemSpec h100 = test::DgxH100();  // cost::Ctx keeps references: no temporaries
  const TrainSetup setup = test::Setup(2, 2048, 2);
  const CostView c_view = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, h100, setup, p, c_view);
  const MemoryBreakdown mem = cost::RankMemory(c, 0, Pytorch());
  CHECK(mem.weights == doctest::Approx(2.0 * double(p.total)));
  CHECK(mem.gradients == doctest::Approx(2.0 * double(p.total)));  // bucket; param.grad not yet
  // overhead: context + the default process group's NCCL buffers
  CHECK(mem.overhead == doctest::Approx((770.0 + 576.0) * 1024 * 1024));
}

TEST_CASE("cost: interleaving factor and in-flight micro-batches") {
  // Korthikanti 175B row of groundtruth.md B.5: p 8, v 3 -> 1 + 7/24 = 1.2917
  Layout l;
  l.pp = 8;
  l.pp_schedule = PpSchedule::kInterleaved1F1B;
  l.layers_per_stage = 4;  // 96 layers -> 24 stages, 3 per rank
  l.local_batch_size = 16;
  l.pp_microbatch_size = 1;
  const StageSplit s = SplitStages(96, l);
  REQUIRE(s.stages_per_rank == 3);
  CHECK(cost::InflightMicrobatches(ToCostView(l, ModelSpec{}, TrainSetup{}), s, 0) / 8.0 == doctest::Approx(1.0 + 7.0 / 24.0));
  // last rank: ((v−1)·pp + 1)/v = 17/3 rank-equivalents
  CHECK(cost::InflightMicrobatches(ToCostView(l, ModelSpec{}, TrainSetup{}), s, 7) == doctest::Approx(17.0 / 3.0));
  // 530B row: p 35, v 3 -> 1 + 34/105 = 1.3238
  l.pp = 35;
  l.layers_per_stage = 1;
  l.local_batch_size = 64;
  const StageSplit s35 = SplitStages(105, l);
  REQUIRE(s35.stages_per_rank == 3);
  CHECK(cost::InflightMicrobatches(ToCostView(l, ModelSpec{}, TrainSetup{}), s35, 0) / 35.0 == doctest::Approx(1.3238).epsilon(1e-4));
  // 1F1B: rank r holds min(pp − r, m)
  Layout b;
  b.pp = 4;
  b.local_batch_size = 8;
  const StageSplit s4 = SplitStages(8, b);
  CHECK(cost::InflightMicrobatches(ToCostView(b, ModelSpec{}, TrainSetup{}), s4, 0) == doctest::Approx(4));
  CHECK(cost::InflightMicrobatches(ToCostView(b, ModelSpec{}, TrainSetup{}), s4, 3) == doctest::Approx(1));
  CHECK(cost::InflightMicrobatches(ToCostView(Layout{}, ModelSpec{}, TrainSetup{}), StageSplit{}, 0) == doctest::Approx(1));
}

TEST_CASE("cost: PP with FSDP2 keeps the rank's layers unsharded in bf16 with fp32 grads") {
  // TinyLlama, pp 2, dp 2 on 4 GPUs: rank 0 holds 2 layers + embedding.
  const ModelSpec m = test::TinyLlama();
  const ParamCounts p = CountParams(m);
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(4, 2048, 8);
  Layout l;
  l.pp = 2;
  l.dp = 2;
  l.local_batch_size = 4;
  const CostView c_view = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, sys, setup, p, c_view);
  const double rank0 = 2.0 * double(p.attention_per_layer + p.dense_mlp_per_layer + p.norms_per_layer) +
                       double(p.embedding);
  const MemoryBreakdown mem = cost::RankMemory(c, 0, Pytorch());
  CHECK(mem.weights == doctest::Approx(2.0 * rank0 / 2));
  CHECK(mem.buffers == doctest::Approx(2.0 * rank0));
  CHECK(mem.gradients == doctest::Approx(4.0 * rank0));
}

}  // namespace
}  // namespace meshplan
