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

TEST_CASE("hybrid: AutoModel layouts are refused with the reason and Megatron-Bridge ones priced") {
  const ModelSpec m = Tiny();
  CHECK(HybridRefusal(m).empty());
  CHECK(FrameworkHybridRefusal(*FindFramework("megatron-bridge"), m).empty());
  CHECK(FrameworkHybridRefusal(*FindFramework("automodel"), m)
            .find("NemotronHForCausalLM is a hybrid model (a layer pattern of Mamba-2, attention and MLP blocks): "
                  "NeMo AutoModel trains NemotronHForCausalLM") == 0);
  CHECK(FrameworkHybridRefusal(*FindFramework("automodel"), m).find("have no Mamba-2 layers") != std::string::npos);
  ModelSpec mla = m;
  mla.mla = true;
  CHECK(HybridRefusal(mla).find("hybrid model with MLA attention") != std::string::npos);
  ModelSpec windowed = m;
  windowed.layer_pattern[1].sliding_window = 128;
  CHECK(HybridRefusal(windowed).find("hybrid model with sliding-window attention") != std::string::npos);
}
