// Hybrid models (a layer pattern of Mamba-2, attention, MLP and MoE blocks) under Megatron-Core:
// per-block activation bytes, FLOPs, the pipeline split by the pattern, TP communication and
// the MambaMixer / HybridModel rules, checked against values worked out by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cost/context.hpp"
#include "cost/cost_fixtures.hpp"
#include "cost/hybrid.hpp"
#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/rules.hpp"

using namespace meshplan;
using test::Rel;

namespace {

// h 64, 4 layers "M*-E": Mamba-2 4 heads x 16 (d_in 64), 2 groups, state 16; attention 8 heads
// of 8, 2 KV heads; a relu2 MLP of 128; MoE 4 experts of 32, top-2, one shared expert of 64.
ModelSpec Tiny(const std::string& pattern = "M*-E") {
  const std::string text =
      "{\"architectures\": [\"NemotronHForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": " +
      std::to_string(pattern.size()) +
      ", \"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"intermediate_size\": 128, \"vocab_size\": 100, "
      "\"max_position_embeddings\": 4096, \"mamba_num_heads\": 4, \"mamba_head_dim\": 16, \"n_groups\": 2, "
      "\"ssm_state_size\": 16, \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, "
      "\"moe_shared_expert_intermediate_size\": 64, \"hybrid_override_pattern\": \"" + pattern + "\"}";
  return ParseModel(text, "tiny.json");
}

Layout Read(const std::string& model_keys, int64_t gpus, int64_t gbs = 8) {
  const std::string text = "model: {seq_length: 256, " + model_keys + "}\ntrain: {global_batch_size: " +
                           std::to_string(gbs) + ", micro_batch_size: 1}\nddp: {use_distributed_optimizer: true}\n";
  return ParseMegatronRecipe(text, "r.yaml", gpus).layout;
}

std::string FirstFailure(const ModelSpec& m, const Layout& l, int64_t gpus, Precision precision = Precision::kBf16) {
  TrainSetup setup = test::Setup(gpus, 256, 8);
  setup.precision = precision;
  const SystemSpec sys = test::DgxH100();
  const RuleContext ctx{m, setup, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  const Rule* r = meshplan::FirstFailure(ctx);
  return r ? std::string(r->name) + ": " + r->explain(ctx) : "";
}

}  // namespace

TEST_CASE("hybrid: saved activation bytes per token of each block kind by hand") {
  const ModelSpec m = Tiny();
  auto bytes = [&](MixerKind x, MlpKind y, uint32_t rm = 0) {
    const cost::TeLayerBytes b = cost::HybridBlockSavedBytes(m, x, y, Precision::kBf16, 1, rm);
    return std::vector<double>{b.sequence, b.split};
  };
  // Mamba-2: norm input 2h + in_proj input 2h = 256; zxBCdt 2·(2·64 + 2·2·16 + 4) = 392, out_x
  // 2·64, gated-norm input 2·64, its rstd 4·2, out_proj input 2·64: 784.
  CHECK(bytes(MixerKind::kMamba2, MlpKind::kNone) == std::vector<double>{256, 784});
  // Attention: 256; q, k, v, output 2·(2·8·8 + 2·2·8) = 320, log-sum-exp 4·8 = 32.
  CHECK(bytes(MixerKind::kAttention, MlpKind::kNone) == std::vector<double>{256, 352});
  // relu2 MLP: 256; fc1 output 2·128 (one matrix wide, not SwiGLU's two), fc2 input 2·128.
  CHECK(bytes(MixerKind::kNone, MlpKind::kDense) == std::vector<double>{256, 512});
  // MoE: norm input 2h, router input 2h, fp32 logits and probabilities 8·4 = 288; routed
  // 2·(2·64 + 2·32 + 2·32) = 512, shared 2·64 + 2·64 = 256.
  CHECK(bytes(MixerKind::kNone, MlpKind::kMoe) == std::vector<double>{288, 768});
  // layernorm recompute drops the norm outputs the first GEMM saves; moe recompute keeps the input.
  CHECK(bytes(MixerKind::kMamba2, MlpKind::kNone, kRecomputeLayernorm) == std::vector<double>{128, 784});
  CHECK(bytes(MixerKind::kNone, MlpKind::kMoe, kRecomputeMoe) == std::vector<double>{128, 0});
  // FP8: the in_proj and out_proj inputs at 1 byte.
  const cost::TeLayerBytes f = cost::HybridBlockSavedBytes(m, MixerKind::kMamba2, MlpKind::kNone, Precision::kFp8, 1, 0);
  CHECK(f.sequence == 128 + 64);
  CHECK(f.split == 784 - 64);
}

TEST_CASE("hybrid: the rank's memory sums its blocks' bytes and its parameters") {
  const ModelSpec m = Tiny();
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(1, 256, 8);
  const CostModel cm(m, sys, setup);
  const Layout l = Read("tensor_model_parallel_size: 1", 1);
  const std::vector<MemoryBreakdown> r = cm.RankMemories(ToCostView(l, cm.model(), cm.setup()));
  REQUIRE(r.size() == 1);
  // 256 tokens x (1040 + 608 + 768 + 1056) bytes, one micro-batch in flight.
  CHECK(r[0].activations == Rel(256.0 * 3472.0));
  // bf16 weights of every parameter, the vocabulary padded to 128 (embedding and output layer).
  CHECK(r[0].weights == Rel(2.0 * (double(CountParams(m).total) + 2.0 * 64.0 * 28.0)));
  // TP 2 with sequence parallelism halves both parts.
  const TrainSetup setup2 = test::Setup(2, 256, 8);
  const CostModel cm2(m, sys, setup2);
  const Layout l2 = Read("tensor_model_parallel_size: 2, sequence_parallel: true, expert_tensor_parallel_size: 1", 2);
  const std::vector<MemoryBreakdown> r2 = cm2.RankMemories(ToCostView(l2, cm2.model(), cm2.setup()));
  CHECK(r2[0].activations == Rel(256.0 * 3472.0 / 2.0));
}

TEST_CASE("hybrid: SSD scan and Mamba-2 projection FLOPs by hand") {
  const ModelSpec m = Tiny();
  // in_proj 64 -> 196, out_proj 64 -> 64, x6 for forward and backward.
  CHECK(cost::MambaLinearFlops(m) == 6.0 * 64 * 196 + 6.0 * 64 * 64);
  // Q = 128 (the default chunk), N = 16, P = 16, 4 heads, 2 groups: 2·2·128·16 + 2·4·128·16 +
  // 4·4·16·16 + 2·4·16·16/128 = 28,688 forward, x3.
  CHECK(cost::SsdScanFlops(m) == doctest::Approx(3.0 * 28688.0));
}

TEST_CASE("hybrid: the pipeline split follows the pattern and TP moves half a dense layer per block") {
  const ModelSpec m = Tiny("M*-EM*-E");
  const ParamCounts p = CountParams(m);
  const cost::RankParams r0 = cost::ParamsOfRank(m, p, 2, 2, 0), r1 = cost::ParamsOfRank(m, p, 2, 2, 1);
  CHECK(r0.mamba_mixers == 1);
  CHECK(r0.attention_mixers == 1);
  CHECK(r0.dense_layers == 1);
  CHECK(r0.moe_layers == 1);
  CHECK(r0.Blocks() == 4);
  CHECK(r1.Blocks() == 4);
  CHECK(r0.has_embedding);
  CHECK(r1.has_head);
  CHECK(r0.layer_dense == Rel(double(p.attention_per_layer + p.mamba_per_layer + p.dense_mlp_per_layer +
                                     p.shared_per_layer + p.router_per_layer) + 4.0 * 64.0));
  // TP 2 with SP, expert-TP 1: 2.5 all-reduce volumes for each of the attention, Mamba-2 and MLP
  // blocks, none for the MoE block (reached by the all-to-all) per micro-batch.
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(2, 256, 8);
  const Layout l = Read("tensor_model_parallel_size: 2, sequence_parallel: true, expert_tensor_parallel_size: 1", 2);
  const CostView v = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, sys, setup, p, v);
  const cost::MegatronShared s = cost::MegatronLayoutShared(c);
  const cost::MegatronTerms t = cost::MegatronRankTerms(c, s, 0, cost::RankMemory(c, 0));
  CHECK(t.tp == Rel(6.0 * 2.5 * s.n_mb * s.tp_per));
  // The SSD scan sits in the attention term beside the attention core.
  CHECK(t.attention > 0);
}

TEST_CASE("hybrid: MambaMixer and HybridModel rules with the framework's messages") {
  const ModelSpec m = Tiny();
  CHECK(FirstFailure(m, Read("tensor_model_parallel_size: 2, sequence_parallel: true", 2), 2).empty());
  // n_groups 2 over TP 4.
  CHECK(FirstFailure(m, Read("tensor_model_parallel_size: 4, sequence_parallel: true", 4), 4) ==
        "mb_mamba_tp_divides_groups: ngroups must be evenly divisible by tp_size: n_groups (2) is not a multiple of "
        "tensor_model_parallel_size (4); each TP rank owns whole groups of B and C");
  // 4 heads over TP 2 x CP 4.
  CHECK(FirstFailure(m, Read("tensor_model_parallel_size: 2, sequence_parallel: true, context_parallel_size: 4", 8), 8)
            .find("mb_mamba_cp_divides_heads: nheads must be evenly divisible by tp_size * cp_size") == 0);
  // 4 layers over PP 3, and VPP without '|' in the pattern.
  CHECK(FirstFailure(m, Read("pipeline_model_parallel_size: 3, pipeline_dtype: bfloat16", 3), 3)
            .find("mb_hybrid_pp_divides_layers: Number of layers (4) must be evenly divisible by "
                  "pipeline-model-parallel-size (3) when no pipe separators") == 0);
  CHECK(FirstFailure(m, Read("pipeline_model_parallel_size: 2, pipeline_dtype: bfloat16, "
                             "virtual_pipeline_model_parallel_size: 2", 2), 2)
            .find("mb_hybrid_vpp_needs_pipes: Virtual pipeline parallelism (vp_stage != None) is not supported") == 0);
  // FP8: in_proj's 196 outputs are not a multiple of 16.
  CHECK(FirstFailure(m, Read("tensor_model_parallel_size: 1", 1), 1, Precision::kFp8)
            .find("mb_mamba_fp8_in_proj: For FP8, the innermost dimension of the Mamba layer input projection") == 0);
}

TEST_CASE("hybrid: both frameworks price Nemotron-H and other hybrids are refused with the reason") {
  const ModelSpec m = Tiny();
  CHECK(HybridRefusal(m).empty());
  CHECK(FrameworkHybridRefusal(*FindFramework("megatron-bridge"), m).empty());
  CHECK(FrameworkHybridRefusal(*FindFramework("automodel"), m).empty());
  ModelSpec mla = m;
  mla.mla = true;
  CHECK(HybridRefusal(mla).find("hybrid model with MLA attention") != std::string::npos);
  ModelSpec windowed = m;
  windowed.layer_pattern[1].sliding_window = 128;
  CHECK(HybridRefusal(windowed).find("hybrid model with sliding-window attention") != std::string::npos);
}

// AutoModel (pytorch profile), bf16, per token, the Tiny blocks as nemotron_v3's modules and
// mamba_ssm's fused scan save them (memory_pytorch.cpp NemotronBlockActivationBytes):
// every block's norm (input 2·64 + fp32 rsqrt 4) and its output 2·64: 260.
TEST_CASE("hybrid: AutoModel Nemotron-H block bytes per token by hand") {
  const ModelSpec m = Tiny();
  using cost::AcWrap;
  auto bytes = [&](MixerKind x, MlpKind y, AcWrap w, bool router = false) {
    return cost::NemotronBlockActivationBytes(m, x, y, w, router);
  };
  // Mamba-2: zxbcdt 2·(2·64 + 2·2·16 + 4) = 392, out_x 2·64 = 128, rstd 4·2 = 8.
  const cost::ActBytes mamba = bytes(MixerKind::kMamba2, MlpKind::kNone, AcWrap::kNone);
  CHECK(mamba.rep == 260.0 + 392 + 128 + 8);
  CHECK(mamba.split + mamba.unsplit == 0.0);
  // Attention (8 heads of 8, 2 KV heads): q 128, k 32, v 32, output 128, lse 4·8 = 32.
  CHECK(bytes(MixerKind::kAttention, MlpKind::kNone, AcWrap::kNone).rep == 260.0 + 352);
  // relu2 MLP of 128: relu's and pow's outputs 2·2·128, TP-split.
  const cost::ActBytes mlp = bytes(MixerKind::kNone, MlpKind::kDense, AcWrap::kNone);
  CHECK(mlp.rep == 260.0);
  CHECK(mlp.split == 512.0);
  // MoE: fp32 router input 4·64 and the shared relu2 expert 2·2·64; per routed copy (top 2) the
  // permuted input, up output and weighted activation 2·(64 + 2·32) and the fp32 prob 4, and
  // the fp32 logits 4·4.
  const cost::ActBytes moe = bytes(MixerKind::kNone, MlpKind::kMoe, AcWrap::kNone);
  CHECK(moe.rep == 260.0 + 256 + 256);
  CHECK(moe.unsplit == 2.0 * (256 + 4) + 16);
  // A checkpointed block keeps its input 2·64; the MoE parallelizer's policy also the router's
  // fp32 logits 4·4 and top-k values and indices 12·2.
  CHECK(bytes(MixerKind::kMamba2, MlpKind::kNone, AcWrap::kLayer).rep == 128.0);
  const cost::ActBytes moe_ac = bytes(MixerKind::kNone, MlpKind::kMoe, AcWrap::kLayer, true);
  CHECK(moe_ac.rep == 128.0);
  CHECK(moe_ac.unsplit == 40.0);
  // Selective: the input and every other matmul output: Mamba in_proj 392 (the fused Function
  // keeps nothing); MoE router 2·4 (saved), experts' up 2·64, down 2·128 (saved), shared up
  // 2·64 (saved), shared down; plus the dispatched and combined copies 2·2·64·2.
  CHECK(bytes(MixerKind::kMamba2, MlpKind::kNone, AcWrap::kSelective).rep == 128.0 + 392);
  const cost::ActBytes moe_sac = bytes(MixerKind::kNone, MlpKind::kMoe, AcWrap::kSelective);
  CHECK(moe_sac.rep == 128.0 + 8 + 128);
  CHECK(moe_sac.unsplit == 256.0 + 512);
}

TEST_CASE("hybrid: AutoModel Nemotron-H ranks sum their blocks under the wrap AutoModel gives each") {
  const ModelSpec m = Tiny();
  // The final norm (HF RMSNorm 8·64 + 4) 516 per token; no RoPE; 256 tokens per micro-batch.
  // One GPU, no AC: 788 + 612 + 772 + 1308.
  {
    const CostModel cm(m, test::DgxH100(), test::Setup(1, 256, 8));
    Layout l;
    const auto r = cm.RankMemories(ToCostView(l, cm.model(), cm.setup()));
    REQUIRE(r.size() == 1);
    CHECK(r[0].activations == Rel(256.0 * (788.0 + 612 + 772 + 1308 + 516)));
  }
  // Two GPUs, EP 1, full AC: NemotronHParallelizationStrategy wraps the mamba and mlp blocks
  // only (128 each); attention (612) and MoE (1308) keep everything.
  {
    const CostModel cm(m, test::DgxH100(), test::Setup(2, 256, 8));
    Layout l;
    l.dp = 2;
    l.recompute = Recompute::kFull;
    const auto r = cm.RankMemories(ToCostView(l, cm.model(), cm.setup()));
    REQUIRE(r.size() == 1);
    CHECK(r[0].activations == Rel(256.0 * (128.0 + 612 + 128 + 1308 + 516)));
    // EP 2: the MoE parallelizer wraps every block, saving the router's logits and top-k (40);
    // the peak is now the recompute of the largest wrapped block, the MoE one (1308).
    l.ep = 2;
    const auto e = cm.RankMemories(ToCostView(l, cm.model(), cm.setup()));
    CHECK(std::string(e[0].phase) == "recompute");
    CHECK(e[0].activations == Rel(256.0 * (128.0 * 4 + 40 + 516 + 1308)));
  }
}

TEST_CASE("hybrid: AutoModel Nemotron-H eager passes and step time") {
  const ModelSpec m = Tiny();
  auto passes = [&](MixerKind x, MlpKind y) {
    return cost::NemotronBlockPasses(m, x, y, 1, TokenDispatch::kAlltoall, 1.0);
  };
  // Every block: one norm and one residual add, 38.7·64 / 2.
  const double norm = 0.5 * cost::kMoeNormAddPasses * 64;
  CHECK(passes(MixerKind::kAttention, MlpKind::kNone) == doctest::Approx(norm));
  // Mamba-2: the mixer's forward elements of HybridBlockElements (less its norm and add), x3.
  CHECK(passes(MixerKind::kMamba2, MlpKind::kNone) - norm ==
        doctest::Approx(3.0 * cost::kElementwiseSlowdown *
                        (cost::HybridBlockElements(m, MixerKind::kMamba2, MlpKind::kNone, false, false) - 5.0 * 64)));
  // MoE at EP 1 (torch permute 9.0 + 24.1 per copy and hidden element), top 2 of 4 experts of
  // 32, relu2 at 2/3 of the SwiGLU's 47.3, router 640·4, shared expert 15.8·64.
  CHECK(passes(MixerKind::kNone, MlpKind::kMoe) ==
        doctest::Approx(norm + 2.0 * 33.1 * 64 + 2.0 * (2.0 / 3.0) * 47.3 * 32 + 640.0 * 4 + 15.8 * 64));
  // The step: GEMMs, the SSD scan, attention core, eager passes; full AC at EP 1 repeats the
  // mamba and mlp blocks' forward only, so the step grows by less than a third of the compute.
  const CostModel cm(m, test::DgxH100(), test::Setup(2, 256, 8));
  Layout l;
  l.dp = 2;
  const Cost none = cm.Evaluate(ToCostView(l, cm.model(), cm.setup()));
  l.recompute = Recompute::kFull;
  const Cost full = cm.Evaluate(ToCostView(l, cm.model(), cm.setup()));
  const double ssd_s = 4.0 * 256 * cost::SsdScanFlops(m) / (test::DgxH100().gpu.bf16_flops * cost::kFlashAttentionEfficiency);
  CHECK(none.time.compute > ssd_s);
  CHECK(full.time.compute > none.time.compute);
  CHECK(full.time.compute < none.time.compute * 4.0 / 3.0);
}

TEST_CASE("hybrid: AutoModel's MambaContextParallel and NemotronH rules with their messages") {
  const ModelSpec m = Tiny();  // 4 Mamba-2 heads, 2 groups
  auto first = [&](const Layout& l, int64_t gpus) {
    TrainSetup setup = test::Setup(gpus, 256, 8);
    const SystemSpec sys = test::DgxH100();
    const RuleContext ctx{m, setup, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
    const Rule* r = meshplan::FirstFailure(ctx);
    return r ? std::string(r->name) + ": " + r->explain(ctx) : std::string();
  };
  Layout l;
  l.cp = 4;
  CHECK(first(l, 4).empty());  // 4 heads over 4 ranks; the 2 groups repeated twice
  l.cp = 8;
  l.dp = 1;
  CHECK(first(l, 8).find("nemotron_h_cp_divides_mamba_heads: mamba_num_heads (4) must be divisible by cp_size (8)") == 0);
  ModelSpec three = m;
  three.mamba.n_groups = 3;
  three.mamba.num_heads = 12;
  l.cp = 2;
  TrainSetup setup = test::Setup(2, 256, 8);
  const SystemSpec sys = test::DgxH100();
  const RuleContext ctx{three, setup, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  const Rule* r = meshplan::FirstFailure(ctx);
  REQUIRE(r != nullptr);
  CHECK(std::string(r->name) == "nemotron_h_cp_mamba_groups");
}

TEST_CASE("hybrid: AutoModel's TP plan of a dense Nemotron-H splits only its MLP blocks and lm_head") {
  const ModelSpec m = Tiny("M*-");
  REQUIRE_FALSE(m.is_moe());
  const CostModel cm(m, test::DgxH100(), test::Setup(2, 256, 8));
  Layout one;
  one.dp = 2;
  Layout two;
  two.tp = 2;
  const auto a = cm.RankMemories(ToCostView(one, cm.model(), cm.setup()));
  const auto b = cm.RankMemories(ToCostView(two, cm.model(), cm.setup()));
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  // FSDP2 over dp 2 holds half of every parameter in bf16; TP 2 (no FSDP sharding) holds the
  // whole model but half of the MLP block (up 64x128, down 128x64) and of lm_head (100x64).
  const ParamCounts p = cm.params();
  const double total = double(p.total);
  CHECK(a[0].weights == Rel(2.0 * total / 2.0));
  const double halved = 2.0 * 64 * 128 + 100.0 * 64;
  CHECK(b[0].weights == Rel(2.0 * (total - halved / 2.0)));
}
