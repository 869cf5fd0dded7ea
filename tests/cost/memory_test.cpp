// Memory model (planner/cost/memory.cpp): hand-worked values.

#include <doctest/doctest.h>

#include "cost/cost_fixtures.hpp"
#include "cost/memory.hpp"

namespace meshplan {
namespace {

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

TEST_CASE("cost: ZeRO-3 16 B/param sharded 64 ways: 7.5B params -> 1.875 GB") {
  Zero75B z;
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(64, 2048, 64);
  Layout l;
  l.dp = 64;
  const cost::Ctx c = cost::MakeCtx(z.model, sys, setup, z.params, l);
  const MemoryBreakdown m = cost::RankMemory(c, 0);
  // 16 · 7.5e9 / 64 = 1.875e9 B (ZeRO Table 1, P_os+g+p, DP 64: 1.88 GB)
  CHECK(m.weights + m.gradients + m.optimizer == doctest::Approx(1.875e9));
  CHECK(m.weights == doctest::Approx(4 * 7.5e9 / 64));
  CHECK(m.optimizer == doctest::Approx(8 * 7.5e9 / 64));
  // Transient: the layer (7.5e9 params) unsharded in bf16 twice (current + prefetched)
  // plus its fp32 grad: (2·2 + 4) · 7.5e9 = 60e9 B.
  CHECK(m.buffers == doctest::Approx(60e9));

  // DDP replicates: 16 · 7.5e9 = 120 GB (ZeRO Table 1, DP 1) in weights+grads+optimizer.
  l.strategy = Strategy::kDdp;
  const cost::Ctx d = cost::MakeCtx(z.model, sys, setup, z.params, l);
  const MemoryBreakdown md = cost::RankMemory(d, 0);
  CHECK(md.weights + md.gradients + md.optimizer == doctest::Approx(120e9));

  // Megatron-FSDP optim_grads_params: (2 + 4 + 12) · 7.5e9 / 64 = 2.109375e9 B.
  l.strategy = Strategy::kMegatronFsdp;
  const cost::Ctx f = cost::MakeCtx(z.model, sys, setup, z.params, l);
  const MemoryBreakdown mf = cost::RankMemory(f, 0);
  CHECK(mf.weights + mf.gradients + mf.optimizer == doctest::Approx(2.109375e9));
}

TEST_CASE("cost: activation bytes per token of a small Llama-like layer") {
  // h 1024, h_q 1024, h_kv 256, a 16, f 4096.
  // replicated (no SP): norm1-in 2h + QKV-in 2h + norm2-in 2h + fc1-in 2h = 8192
  // split: Q 2048 + K,V 1024 + attn-out 2048 + stats 4·16 + FFN 8·4096 = 37952
  const ModelSpec m = test::TinyLlama();
  const cost::ActBytes none = cost::LayerActivationBytes(m, false, Recompute::kNone);
  CHECK(none.rep == doctest::Approx(8192));
  CHECK(none.split == doctest::Approx(37952));
  CHECK(none.unsplit == doctest::Approx(0));
  CHECK(none.PerRank(1, false) == doctest::Approx(46144));
  CHECK(none.PerRank(2, false) == doctest::Approx(8192 + 18976));  // 27168
  CHECK(none.PerRank(2, true) == doctest::Approx(23072));          // 46144 / 2
  // full: layer input 2h = 2048
  CHECK(cost::LayerActivationBytes(m, false, Recompute::kFull).PerRank(1, false) ==
        doctest::Approx(2048));
  // selective (op-level SAC): input 2h + attn-out 2048 + stats 64 + half of the matmul
  // outputs (q,k,v 3072 + gate,up 16384 split; o, down 4096 replicated):
  // 2048 + 2048 + 64 + 9728 + 2048 = 15936
  CHECK(cost::LayerActivationBytes(m, false, Recompute::kSelective).PerRank(1, false) ==
        doctest::Approx(15936));
}

TEST_CASE("cost: activation memory of the small model and one GPU and s 2048 and b 1") {
  const ModelSpec m = test::TinyLlama();
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(1, 2048, 1);
  const ParamCounts p = CountParams(m);
  Layout l;
  const cost::Ctx c = cost::MakeCtx(m, sys, setup, p, l);
  // 4 layers · 2048 tokens · 46144 B = 378,011,648 B
  CHECK(cost::RankMemory(c, 0).activations == doctest::Approx(378011648.0));
  // logits: 10 B · 2048 · 32000 = 655,360,000 B
  CHECK(cost::RankMemory(c, 0).logits == doctest::Approx(655360000.0));
  // overhead: 1 GiB, no communicators
  CHECK(cost::RankMemory(c, 0).overhead == doctest::Approx(1073741824.0));
  // full recompute: 4 · 2048 · 2048 + one layer 2048 · 46144 = 16,777,216 + 94,502,912
  l.recompute = Recompute::kFull;
  const cost::Ctx f = cost::MakeCtx(m, sys, setup, p, l);
  CHECK(cost::RankMemory(f, 0).activations == doctest::Approx(111280128.0));
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
  CHECK(cost::InflightMicrobatches(l, s, 0) / 8.0 == doctest::Approx(1.0 + 7.0 / 24.0));
  // last rank: ((v−1)·pp + 1)/v = 17/3 rank-equivalents
  CHECK(cost::InflightMicrobatches(l, s, 7) == doctest::Approx(17.0 / 3.0));
  // 530B row: p 35, v 3 -> 1 + 34/105 = 1.3238
  l.pp = 35;
  l.layers_per_stage = 1;
  l.local_batch_size = 64;
  const StageSplit s35 = SplitStages(105, l);
  REQUIRE(s35.stages_per_rank == 3);
  CHECK(cost::InflightMicrobatches(l, s35, 0) / 35.0 == doctest::Approx(1.3238).epsilon(1e-4));
  // 1F1B: rank r holds min(pp − r, m)
  Layout b;
  b.pp = 4;
  b.local_batch_size = 8;
  const StageSplit s4 = SplitStages(8, b);
  CHECK(cost::InflightMicrobatches(b, s4, 0) == doctest::Approx(4));
  CHECK(cost::InflightMicrobatches(b, s4, 3) == doctest::Approx(1));
  CHECK(cost::InflightMicrobatches(Layout{}, StageSplit{}, 0) == doctest::Approx(1));
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
  const cost::Ctx c = cost::MakeCtx(m, sys, setup, p, l);
  const double rank0 = 2.0 * double(p.attention_per_layer + p.dense_mlp_per_layer + p.norms_per_layer) +
                       double(p.embedding);
  const MemoryBreakdown mem = cost::RankMemory(c, 0);
  CHECK(mem.weights == doctest::Approx(4.0 * rank0 / 2));
  CHECK(mem.buffers == doctest::Approx(6.0 * rank0));
}

}  // namespace
}  // namespace meshplan
