// Memory model, megatron profile (planner/cost/memory_megatron.cpp): Megatron-LM's
// theoretical estimate on the recipes of megatron.md 1.9, worked by hand from the formulas of
// megatron.md 3.1-3.4, and Korthikanti et al. Table 3 configurations (groundtruth.md B.5).

#include "meshplan/framework.hpp"
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "cost/cost_fixtures.hpp"
#include "cost/memory_megatron.hpp"

namespace meshplan {
namespace {

/// megatron.md 1.9 (a): Llama-3 70B pretraining on 32 GPUs, tp 4 (SP), pp 4, vpp 5, cp 2, dp 1,
/// seq 8192, mbs 1, 512 micro-batches, distributed optimizer, no recompute.
cost::MegatronArgs Llama70BRecipeA() {
  cost::MegatronArgs x;
  x.tp = 4;
  x.pp = 4;
  x.vpp = 5;
  x.cp = 2;
  x.dp = 1;
  x.world = 32;
  x.seq_len = 8192;
  x.num_microbatches = 512;
  x.sequence_parallel = true;
  return x;
}

TEST_CASE("megatron: vocabulary padding to a multiple of 128 times tp") {
  CHECK(cost::MegatronPaddedVocab(128256, 128, 4) == 128512);  // 251 · 512
  CHECK(cost::MegatronPaddedVocab(151936, 128, 4) == 152064);  // 297 · 512
  CHECK(cost::MegatronPaddedVocab(51200, 128, 8) == 51200);
}

TEST_CASE("megatron: theoretical memory of Llama-3 70B pretrain TP4 PP4 VPP5 CP2 on 32 GPUs to the byte") {
  // megatron.md 1.9 (a): tp 4, pp 4, vpp 5, cp 2, dp 1, SP on, no recompute (branch B),
  // seq 8192, mbs 1, distributed optimizer.
  const ModelSpec m = test::Llama3_70B();
  cost::MegatronArgs x = Llama70BRecipeA();
  const cost::MegatronEstimate e = cost::MegatronTheoreticalMemory(m, x);
  // attn = 2·8192²·(1 + 8/64)·1 = 150,994,944; dense_mlp = 2·8192·28672·1.5 = 704,643,072
  // V = 128512; P_tp = ((attn + mlp)·80/4 + 8192·128512)/4 = 4,541,382,656
  // P_rep = (2·8192·80 + 8192)/4 = 329,728; bytes(1) = 6 + 12 = 18
  CHECK(e.padded_vocab == 128512);
  CHECK(e.p_tp == 4541382656.0);
  CHECK(e.p_rep == 329728.0);
  CHECK(e.weight_and_optimizer == 81750822912.0);
  // (B): 8192²·(10 + 24/4)·80 + 8·8192·4 + 8192²·4 = 86,168,043,520; × (1 + 3/20) × 1.05
  CHECK(std::fabs(e.activation - 104047912550.4) < 1.0);
  CHECK(e.activation_output == 0.0);
  CHECK(std::fabs(e.Total() - 185798735462.4) < 1.0);
  std::printf("Megatron-LM estimate, Llama-3 70B 1.9(a): weight_and_optimizer=%.2f MB, activation=%.2f MB, total=%.2f MB\n",
              e.weight_and_optimizer / 1048576.0, e.activation / 1048576.0, e.Total() / 1048576.0);
}

TEST_CASE("megatron: Megatron-Bridge's estimator variant on the same Llama-3 70B recipe") {
  // megatron.md 3.5: dense shard DP·CP = 2 -> bytes 6 + 12/2 = 12; activation always by (A),
  // f/h = 3.5, divided by t·CP = 8.
  const ModelSpec m = test::Llama3_70B();
  cost::MegatronArgs x = Llama70BRecipeA();
  x.bridge_estimator = true;
  const cost::MegatronEstimate e = cost::MegatronTheoreticalMemory(m, x);
  // (4,541,382,656 + 329,728) · 12
  CHECK(e.weight_and_optimizer == 54500548608.0);
  // (8192²·(18 + 4·3.5)·80 + 8·8192·4 + 8192²·4) · 1.15 / 8 = 24,734,687,232
  CHECK(std::fabs(e.activation - 24734687232.0) < 1.0);
  CHECK(std::fabs(e.Total() - 79235235840.0) < 1.0);
}

TEST_CASE("megatron: theoretical memory of Qwen3-235B-A22B TP4 PP16 CP2 EP8 with SP and selective recompute") {
  // megatron.md 1.9 (c) with recompute_granularity selective (branch A): dp = 256/(4·16·2) = 2,
  // EDP = 256/(1·8·16) = 2, seq 4096, mbs 1, 64 micro-batches.
  const ModelSpec m = LoadModel("qwen3-235b-a22b");
  REQUIRE(m.hidden_size == 4096);
  REQUIRE(m.num_layers == 94);
  REQUIRE(m.num_dense_layers == 0);
  REQUIRE(m.num_experts == 128);
  REQUIRE(m.moe_intermediate_size == 1536);
  REQUIRE(m.intermediate_size == 12288);
  cost::MegatronArgs x;
  x.tp = 4;
  x.pp = 16;
  x.cp = 2;
  x.ep = 8;
  x.etp = 1;
  x.dp = 2;
  x.world = 256;
  x.seq_len = 4096;
  x.num_microbatches = 64;
  x.sequence_parallel = true;
  x.selective_recompute = true;
  const cost::MegatronEstimate e = cost::MegatronTheoreticalMemory(m, x);
  // attn = 2·4096²·(1 + 4/64)·2 = 71,303,168; routed = 2·4096·1536·128·1.5 = 2,415,919,104
  // P_tp = (attn·94/16 + 4096·152064)/4 = 260,440,064
  // P_rep = ((8192 + 4096·128)·94 + 4096)/16 = 3,128,576; P_exp = routed·94/16/8 = 1,774,190,592
  // bytes(2) = 12 for both: 24,453,110,784
  CHECK(e.p_tp == 260440064.0);
  CHECK(e.p_rep == 3128576.0);
  CHECK(e.p_exp == 1774190592.0);
  CHECK(e.weight_and_optimizer == 24453110784.0);
  // (A): (4096²·(18 + 4·3)·94 + 8·4096·16 + 4096²·16)/4 = 11,895,177,216
  CHECK(e.activation == 11895177216.0);
  CHECK(e.Total() == 36348288000.0);
}

TEST_CASE("megatron: the profile's MemoryBreakdown adds up to the estimate") {
  // A Megatron-Bridge layout of Llama-3 70B on 32 GPUs: tp 4, pp 4, vpp 5, dp 2, SP,
  // distributed optimizer, mbs 1, gbs 32.
  const ModelSpec m = test::Llama3_70B();
  const TrainSetup setup = test::Setup(32, 4096, 32);
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.tp = 4;
  l.pp = 4;
  l.vpp = 5;
  l.dp = 2;
  l.sequence_parallel = true;
  l.use_distributed_optimizer = true;
  SetMegatronMicroBatch(l, 1, setup);
  // Megatron-LM's estimate (kMegatron); kAuto plans Megatron-Bridge layouts with the
  // Megatron-Bridge estimator variant instead.
  MemoryOptions mlm;
  mlm.profile = MemoryProfile::kMegatron;
  const CostModel cm(m, test::DgxH100(), setup, mlm);
  const MemoryBreakdown mem = Score(cm, l).memory;
  cost::MegatronArgs x;
  x.tp = 4;
  x.pp = 4;
  x.vpp = 5;
  x.dp = 2;
  x.world = 32;
  x.seq_len = 4096;
  x.num_microbatches = 16;
  x.sequence_parallel = true;
  const cost::MegatronEstimate e = cost::MegatronTheoreticalMemory(m, x);
  CHECK(mem.weights + mem.gradients + mem.optimizer == doctest::Approx(e.weight_and_optimizer).epsilon(1e-12));
  CHECK(mem.activations + mem.logits == doctest::Approx(e.activation).epsilon(1e-12));
  CHECK(mem.weights == doctest::Approx(2.0 * (e.p_tp + e.p_rep)).epsilon(1e-12));
  CHECK(mem.optimizer == doctest::Approx(6.0 * (e.p_tp + e.p_rep)).epsilon(1e-12));  // 12/dp, dp 2
  CHECK(std::string(mem.phase) == "estimate");
}

TEST_CASE("megatron: Korthikanti Table 3 configurations reproduce groundtruth.md B.5") {
  // s 2048; GB = 1e9 B; first stage: L layers × interleave factor.
  struct Row {
    const char* name;
    double h, a, L, t;
    int64_t p, v;
    double b;
    double tp_only, tp_sp, tp_sp_sel, full, factor;
  };
  const Row rows[] = {
      {"22B", 6144, 64, 48, 8, 1, 0, 4, 63.6, 42.5, 10.3, 4.8, 1.000},
      {"175B", 12288, 96, 96, 8, 8, 3, 1, 71.8, 44.5, 13.3, 6.2, 1.292},
      {"530B", 20480, 128, 105, 8, 35, 3, 1, 122.4, 71.4, 24.8, 11.7, 1.324},
      {"1T", 25600, 160, 128, 8, 64, 0, 1, 140.9, 82.2, 28.5, 13.4, 1.000},
  };
  for (const Row& r : rows) {
    CAPTURE(r.name);
    const double f = cost::InterleaveFactor(r.p, r.v);
    CHECK(f == doctest::Approx(r.factor).epsilon(5e-4));
    auto gb = [&](bool sp, Recompute rc) {
      return cost::KorthikantiLayerBytes(r.h, r.a, 4 * r.h, 2048, r.b, r.t, sp, rc, true) * r.L * f / 1e9;
    };
    CHECK(std::fabs(gb(false, Recompute::kNone) - r.tp_only) < 0.05);
    CHECK(std::fabs(gb(true, Recompute::kNone) - r.tp_sp) < 0.05);
    CHECK(std::fabs(gb(true, Recompute::kSelective) - r.tp_sp_sel) < 0.05);
    CHECK(std::fabs(gb(false, Recompute::kFull) - r.full) < 0.05);
  }
  // Without materialised scores (flash attention), no recompute costs what selective does.
  CHECK(cost::KorthikantiLayerBytes(6144, 64, 4 * 6144, 2048, 4, 8, true, Recompute::kNone, false) ==
        cost::KorthikantiLayerBytes(6144, 64, 4 * 6144, 2048, 4, 8, true, Recompute::kSelective, false));
}

// A Megatron-Bridge layout of pure DP 64 (TP = PP = 1), micro-batch 1.
Layout Dp64Layout(const ModelSpec& m, const TrainSetup& setup, bool distributed_optimizer) {
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.dp = 64;
  l.use_distributed_optimizer = distributed_optimizer;
  SetMegatronMicroBatch(l, 1, setup);
  return l;
}

TEST_CASE("megatron: Megatron FSDP shards weights and gradients in the planning estimate") {
  // Llama-3 70B, 64 GPUs, TP 1: with Megatron FSDP (optim_grads_params) the 2 + 4 bytes of
  // weights and gradients per parameter are sharded like the 12 bytes of optimizer state, so
  // the model states drop by about 6 B/param x (1 - 1/64) against DDP + distributed optimizer.
  const ModelSpec m = test::Llama3_70B();
  const TrainSetup setup = test::Setup(64, 4096, 64);
  Layout l = Dp64Layout(m, setup, /*distributed_optimizer=*/true);
  const CostModel cm(m, test::DgxH100(), setup);  // kAuto: Megatron-Bridge estimator
  const MemoryBreakdown ddp = Score(cm, l).memory;
  l.mb.use_megatron_fsdp = true;
  const MemoryBreakdown fsdp = Score(cm, l).memory;
  const double params = ddp.weights / 2.0;  // bf16 weights of every parameter on the rank
  CHECK(fsdp.weights == doctest::Approx(ddp.weights / 64.0));
  CHECK(fsdp.gradients == doctest::Approx(ddp.gradients / 64.0));
  CHECK(fsdp.optimizer == doctest::Approx(ddp.optimizer));
  // Two units (layers) unsharded in the double buffers: bf16 weights and fp32 gradients.
  CHECK(fsdp.buffers - ddp.buffers == doctest::Approx(2.0 * (2.0 + 4.0) * params / 80.0));
}

TEST_CASE("megatron: Megatron FSDP's four sharding strategies shard what param_and_grad_buffer.py says") {
  // Llama-3 70B, DP 64, fp32 main gradients (4 B), 12 B of fp32 state per parameter P:
  //   no_shard            2P + 4P + 12P              (nothing distributed)
  //   optim (ZeRO-1)      2P + 4P + 12P/64           (= DDP + distributed optimizer)
  //   optim_grads (ZeRO-2) 2P + 4P/64 + 12P/64, plus two layers' fp32 gradients unsharded
  //   optim_grads_params  2P/64 + 4P/64 + 12P/64, plus two layers' bf16 weights and fp32 gradients
  const ModelSpec m = test::Llama3_70B();
  const TrainSetup setup = test::Setup(64, 4096, 64);
  Layout l = Dp64Layout(m, setup, /*distributed_optimizer=*/true);
  const CostModel cm(m, test::DgxH100(), setup);
  const MemoryBreakdown ddp = Score(cm, l).memory;
  const double P = ddp.weights / 2.0, layer = P / 80.0;
  l.mb.use_megatron_fsdp = true;
  auto with = [&](MbSharding s) {
    l.mb.sharding = s;
    return Score(cm, l).memory;
  };
  const MemoryBreakdown none = with(MbSharding::kNoShard), z1 = with(MbSharding::kOptim),
                        z2 = with(MbSharding::kOptimGrads), z3 = with(MbSharding::kOptimGradsParams),
                        unset = with(MbSharding::kUnset);
  CHECK(none.weights == doctest::Approx(2.0 * P));
  CHECK(none.gradients == doctest::Approx(4.0 * P));
  CHECK(none.optimizer == doctest::Approx(12.0 * P));
  CHECK(none.buffers == doctest::Approx(ddp.buffers));
  CHECK(z1.weights == doctest::Approx(ddp.weights));
  CHECK(z1.gradients == doctest::Approx(ddp.gradients));
  CHECK(z1.optimizer == doctest::Approx(12.0 * P / 64.0));
  CHECK(z2.weights == doctest::Approx(2.0 * P));
  CHECK(z2.gradients == doctest::Approx(4.0 * P / 64.0));
  CHECK(z2.optimizer == doctest::Approx(12.0 * P / 64.0));
  CHECK(z2.buffers - ddp.buffers == doctest::Approx(2.0 * 4.0 * layer));
  CHECK(z3.weights == doctest::Approx(2.0 * P / 64.0));
  CHECK(z3.buffers - ddp.buffers == doctest::Approx(2.0 * (2.0 + 4.0) * layer));
  // An unset strategy is the recipe functions' optim_grads_params.
  CHECK(unset.Total() == z3.Total());
}

TEST_CASE("megatron: Megatron FSDP ZeRO-2 gathers no weights per micro-batch") {
  // optim_grads keeps the weights whole: its DP time is one reduce-scatter per micro-batch and
  // one all-gather per step, less than optim_grads_params' two gathers and a reduce-scatter per
  // micro-batch, more than optim's one reduce-scatter and one all-gather per step.
  const ModelSpec m = test::Llama3_70B();
  const TrainSetup setup = test::Setup(64, 4096, 256);  // 4 micro-batches
  Layout l = Dp64Layout(m, setup, /*distributed_optimizer=*/true);
  l.mb.use_megatron_fsdp = true;
  l.mb.overlap_grad_reduce = l.mb.overlap_param_gather = Tri::kTrue;  // what the recipes set
  const CostModel cm(m, test::DgxH100(), setup);
  auto dp = [&](MbSharding s) {
    l.mb.sharding = s;
    return Score(cm, l).time.dp_comm;
  };
  const double z1 = dp(MbSharding::kOptim), z2 = dp(MbSharding::kOptimGrads), z3 = dp(MbSharding::kOptimGradsParams);
  CHECK(z1 < z2);
  CHECK(z2 < z3);
}

TEST_CASE("megatron: FP8 and NVFP4 GEMMs save the linear inputs quantized (Transformer Engine)") {
  // Llama-3 70B, Megatron-Bridge estimator, tp 4 SP, pp 4 vpp 5, cp 2, seq 8192, mbs 1 (the
  // recipe of the Bridge-estimator test above). Per layer in s·b·h units, r = f/h = 3.5:
  //   FP8 (q = 1):       (2 - 1)·(2 + 3.5) = 5.5
  //   NVFP4 (q = 9/16):  (23/16)·(2 + 3.5) = 7.90625
  // then × 80 layers × (1 + 3/20) / (t·CP = 8), s·b·h = 8192².
  const ModelSpec m = test::Llama3_70B();
  cost::MegatronArgs x = Llama70BRecipeA();
  x.bridge_estimator = true;
  const double sbh = 8192.0 * 8192.0, layers = 80 * 1.15 / 8;
  CHECK(cost::QuantizedInputSaving(m, x, Precision::kBf16) == 0.0);
  CHECK(cost::QuantizedInputSaving(m, x, Precision::kFp8) == doctest::Approx(5.5 * sbh * layers).epsilon(1e-12));
  CHECK(cost::QuantizedInputSaving(m, x, Precision::kFp4) ==
        doctest::Approx(7.90625 * sbh * layers).epsilon(1e-12));
  // Megatron-LM's branch (B) without SP: the two norm outputs are replicated over TP, the fc2
  // input is split: 2 + 3.5/4 = 2.875 per layer, × 1.05, no CP division.
  x.bridge_estimator = false;
  x.sequence_parallel = false;
  CHECK(cost::QuantizedInputSaving(m, x, Precision::kFp8) ==
        doctest::Approx(2.875 * sbh * 80 * 1.15 * 1.05).epsilon(1e-12));
  // Through the cost model, on the estimator path (te_saved_tensors off): an FP8 layout's
  // activations are the bf16 ones minus the saving; full recompute keeps only the layer
  // inputs, so nothing changes there.
  const TrainSetup bf16 = test::Setup(64, 4096, 64);
  TrainSetup fp8 = bf16;
  fp8.precision = Precision::kFp8;
  Layout l = Dp64Layout(m, bf16, /*distributed_optimizer=*/true);
  MemoryOptions est;
  est.te_saved_tensors = false;
  const double a_bf16 = Score(CostModel(m, test::DgxH100(), bf16, est), l).memory.activations;
  const double a_fp8 = Score(CostModel(m, test::DgxH100(), fp8, est), l).memory.activations;
  // tp 1, pp 1, bridge estimator: 5.5 · 4096 · 8192 · 80 bytes fewer.
  CHECK(a_bf16 - a_fp8 == doctest::Approx(5.5 * 4096.0 * 8192.0 * 80).epsilon(1e-9));
  MemoryOptions as_published = est;
  as_published.quantized_linear_inputs = false;
  CHECK(Score(CostModel(m, test::DgxH100(), fp8, as_published), l).memory.activations == a_bf16);
  l.recompute = Recompute::kFull;
  CHECK(Score(CostModel(m, test::DgxH100(), fp8, est), l).memory.activations ==
        Score(CostModel(m, test::DgxH100(), bf16, est), l).memory.activations);
}

TEST_CASE("megatron: full recompute keeps only the layer inputs under Megatron-Bridge's estimator") {
  // Llama-3 70B, 64 GPUs, tp 1 pp 1, seq 4096, mbs 1, bf16: the estimator's (A) per layer is
  // (18 + 4·3.5)·s·b·h = 32·sbh; recomputed layers keep 2·sbh, so 80 layers drop 30·sbh each.
  // recompute_method block with 20 layers per chunk (pp 1: one chunk) recomputes a quarter.
  // The Transformer Engine count (default) does the same from its 33.5·sbh per layer:
  // (8h + 2·(2·8192 + 2·1024) + 4·64 + 6·28672) / h = 33.53125, and adds back the one layer
  // that is rebuilt during its backward.
  const ModelSpec m = test::Llama3_70B();
  const TrainSetup setup = test::Setup(64, 4096, 64);
  const double sbh = 4096.0 * 8192.0;
  for (bool te : {false, true}) {
    MemoryOptions o;
    o.te_saved_tensors = te;
    const double per_layer = te ? 33.53125 : 32.0;
    Layout l = Dp64Layout(m, setup, /*distributed_optimizer=*/true);
    const CostModel cm(m, test::DgxH100(), setup, o);
    const double none = Score(cm, l).memory.activations;
    l.recompute = Recompute::kFull;
    const double full = Score(cm, l).memory.activations;
    const double rebuilt = te ? per_layer * sbh : 0.0;
    CHECK(none - full == doctest::Approx((per_layer - 2) * sbh * 80 - rebuilt).epsilon(1e-12));
    l.mb.recompute_method = MbRecomputeMethod::kBlock;
    l.mb.recompute_num_layers = 20;
    CHECK(none - Score(cm, l).memory.activations ==
          doctest::Approx((per_layer - 2) * sbh * 20 - rebuilt).epsilon(1e-12));
  }
}

TEST_CASE("megatron: Transformer Engine saved tensors per token by hand (Llama-3 70B Qwen3-235B DeepSeek-V3)") {
  // Bytes per token of one layer (TeSavedBytesPerToken); see memory_megatron.hpp for the terms.
  // Llama-3 70B dense layer: h 8192, 64 heads, 8 KV heads, d 128, f 28672.
  //   bf16: sequence 4h + 2h + 2h = 65536; split 2·(2·8192 + 2·1024) + 4·64 + 4f + 2f = 209152
  //   FP8:  sequence 4h + h + h = 49152;   split 36864 + 256 + 4f + f = 180480
  const ModelSpec llama = test::Llama3_70B();
  cost::TeLayerBytes b = cost::TeSavedBytesPerToken(llama, false, Precision::kBf16, 1, 0);
  CHECK(b.sequence == 65536.0);
  CHECK(b.split == 209152.0);
  b = cost::TeSavedBytesPerToken(llama, false, Precision::kFp8, 1, 0);
  CHECK(b.sequence == 49152.0);
  CHECK(b.split == 180480.0);
  // mlp recompute drops fc1 output and fc2 input; layernorm recompute the two norm outputs.
  b = cost::TeSavedBytesPerToken(llama, false, Precision::kBf16, 1, kRecomputeMlp | kRecomputeLayernorm);
  CHECK(b.sequence == 32768.0);
  CHECK(b.split == 36864.0 + 256.0);
  // Qwen3-235B-A22B MoE layer, bf16: h 4096, 64 heads of 128 (q 8192), 4 KV heads (512), q/k
  // norms, 128 experts, top 8, f_e 1536, no shared expert.
  //   sequence 4h + 2h + 2h (router input) + 8·128 = 33792
  //   split 2·(2·8192 + 2·512) + 2·(8192 + 512) + 4·64 + 8·(2·4096 + 4·1536 + 2·1536) = 191744
  const ModelSpec qwen = LoadModel("qwen3-235b-a22b");
  b = cost::TeSavedBytesPerToken(qwen, true, Precision::kBf16, 1, 0);
  CHECK(b.sequence == 33792.0);
  CHECK(b.split == 191744.0);
  // moe_act recompute drops the routed fc2 inputs, 8·2·1536.
  CHECK(cost::TeSavedBytesPerToken(qwen, true, Precision::kBf16, 1, kRecomputeMoeAct).split == 191744.0 - 24576.0);
  // moe recompute keeps only the MoE block's bf16 input: sequence 4h + 2h + 2h = 32768, split
  // the attention side 34816 + 17408 + 256 = 52480.
  b = cost::TeSavedBytesPerToken(qwen, true, Precision::kBf16, 1, kRecomputeMoe);
  CHECK(b.sequence == 32768.0);
  CHECK(b.split == 52480.0);
  // DeepSeek-V3 MoE layer, bf16 (MLA: 128 heads, d_nope 128, d_rope 64, d_v 128, q rank 1536,
  // kv rank 512; 256 experts, top 8, f_e 2048, one shared expert of 2048):
  //   sequence 4h + 2h + (2 + 2)·1536 + (2 + 2)·512 + 2·64 + 2h + 8·256 = 67712
  //   split 2·(2·128·192 + 128·128) + 2·128·128 + 4·128 + 8·(2·7168 + 4·2048 + 2·2048)
  //         + 4·2048 + 2·2048 = 389632; mla_up_proj recompute drops q, k, v (131072).
  const ModelSpec ds = LoadModel("deepseek-v3");
  b = cost::TeSavedBytesPerToken(ds, true, Precision::kBf16, 1, 0);
  CHECK(b.sequence == 67712.0);
  CHECK(b.split == 389632.0);
  CHECK(cost::TeSavedBytesPerToken(ds, true, Precision::kBf16, 1, kRecomputeMlaUpProj).split == 389632.0 - 131072.0);
}

TEST_CASE("megatron: routed experts keep their fc1 and fc2 inputs (Qwen3-235B-A22B by hand)") {
  // h 4096, k 8, f_e 1536, 94 MoE layers; seq 4096, mbs 1, tp 1 pp 1 cp 1, etp 1.
  // Per token and MoE layer, bf16: k·(2h + 2f_e) = 8·(8192 + 3072) = 90112 bytes;
  // FP8: k·(h + f_e) = 45056; moe_act recompute (fc2 input recomputed), bf16: k·2h = 65536.
  const ModelSpec m = LoadModel("qwen3-235b-a22b");
  REQUIRE(m.num_dense_layers == 0);
  cost::MegatronArgs x;
  x.seq_len = 4096;
  x.bridge_estimator = true;
  const double tokens_layers = 4096.0 * 94;
  CHECK(cost::RoutedExpertInputs(m, x, 1, Precision::kBf16, false) == doctest::Approx(90112 * tokens_layers).epsilon(1e-12));
  CHECK(cost::RoutedExpertInputs(m, x, 1, Precision::kFp8, false) == doctest::Approx(45056 * tokens_layers).epsilon(1e-12));
  CHECK(cost::RoutedExpertInputs(m, x, 1, Precision::kBf16, true) == doctest::Approx(65536 * tokens_layers).epsilon(1e-12));
  // tp 2 with expert-TP 2: each rank keeps s/2 tokens of its own but the ETP group gathers
  // both halves for fc1 (h wide) and splits f_e: 2048 · 8·(2·4096·2 + 2·1536) per layer.
  x.tp = 2;
  CHECK(cost::RoutedExpertInputs(m, x, 2, Precision::kBf16, false) ==
        doctest::Approx(2048.0 * 8 * (2 * 4096 * 2 + 2 * 1536) * 94).epsilon(1e-12));
  // pp 4 (no VPP) with 2 micro-batches: the in-flight factor min(1, M/p) = 1/2.
  x.tp = 1;
  x.pp = 4;
  x.num_microbatches = 2;
  CHECK(cost::RoutedExpertInputs(m, x, 1, Precision::kBf16, false) ==
        doctest::Approx(90112 * tokens_layers / 2).epsilon(1e-12));
  // Dense models have none.
  CHECK(cost::RoutedExpertInputs(test::Llama3_70B(), x, 1, Precision::kBf16, false) == 0.0);
}

TEST_CASE("megatron: torch FSDP2 shards weights gradients and optimizer state over dp") {
  // Llama-3 70B, 64 GPUs, TP 1, no distributed optimizer: DDP keeps 2 + 4 + 12 bytes per
  // parameter on every GPU; dist.use_torch_fsdp2 shards all of it over dp = 64 and holds two
  // layers of bf16 weights unsharded (the unit computed and the prefetched one).
  const ModelSpec m = test::Llama3_70B();
  const TrainSetup setup = test::Setup(64, 4096, 64);
  Layout l = Dp64Layout(m, setup, /*distributed_optimizer=*/false);
  const CostModel cm(m, test::DgxH100(), setup);
  const MemoryBreakdown ddp = Score(cm, l).memory;
  l.mb.use_torch_fsdp2 = true;
  const MemoryBreakdown fsdp2 = Score(cm, l).memory;
  const double params = ddp.weights / 2.0;
  CHECK(ddp.optimizer == doctest::Approx(12.0 * params));
  CHECK(fsdp2.weights == doctest::Approx(ddp.weights / 64.0));
  CHECK(fsdp2.gradients == doctest::Approx(ddp.gradients / 64.0));
  CHECK(fsdp2.optimizer == doctest::Approx(12.0 * params / 64.0));
  CHECK(fsdp2.buffers - ddp.buffers == doctest::Approx(2.0 * 2.0 * params / 80.0));
}

}  // namespace
}  // namespace meshplan
