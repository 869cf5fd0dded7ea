// Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5) under Megatron-Core: the block's FLOPs, saved
// activation bytes and parameters on a rank, checked against values worked out by hand from
// the formulas' sources (cost/hybrid.hpp), and the framework rules a GPTModel with Gated
// DeltaNet layers follows.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cost/context.hpp"
#include "cost/cost_fixtures.hpp"
#include "cost/hybrid.hpp"
#include "cost/memory.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/rules.hpp"

using namespace meshplan;
using test::Rel;

namespace {

// h 64, 4 layers: three Gated DeltaNet (2 key heads, 4 value heads, head dims 8, conv 4) and
// one gated attention layer (4 heads of 16, 2 KV heads), each with a MoE of 4 experts of 32,
// top 2, and a shared expert of 32.
ModelSpec TinyQwen3Next() {
  const std::string text =
      "{\"architectures\": [\"Qwen3NextForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 4, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"intermediate_size\": 128, "
      "\"vocab_size\": 100, \"max_position_embeddings\": 4096, \"linear_num_key_heads\": 2, "
      "\"linear_num_value_heads\": 4, \"linear_key_head_dim\": 8, \"linear_value_head_dim\": 8, "
      "\"linear_conv_kernel_dim\": 4, \"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, "
      "\"shared_expert_intermediate_size\": 32, \"full_attention_interval\": 4}";
  return ParseModel(text, "tiny-qwen3-next.json");
}

Layout Read(const std::string& model_keys, int64_t gpus, int64_t gbs = 8) {
  const std::string text = "model: {seq_length: 256, " + model_keys + "}\ntrain: {global_batch_size: " +
                           std::to_string(gbs) + ", micro_batch_size: 1}\nddp: {use_distributed_optimizer: true}\n";
  return ParseMegatronRecipe(text, "r.yaml", gpus).layout;
}

}  // namespace

TEST_CASE("gdn: projection and chunked gated delta rule FLOPs by hand") {
  const ModelSpec m = TinyQwen3Next();
  // in_proj 64 -> 2·16 + 2·32 + 2·4 = 104, out_proj 32 -> 64, x6.
  CHECK(cost::GdnLinearFlops(m) == 6.0 * 64 * 104 + 6.0 * 32 * 64);
  // C = 64, d_k = d_v = 8, per value head forward: K·Kᵀ 2·64·8 = 1024, solve_tril 2·64²/3 =
  // 2730.67, w and u 2·64·16 = 2048, the states 4·64 = 256, o 2·64 + 2·64·16 = 2176:
  // 8234.67; x3, plus the backward's recomputed states and w, u 256 + 2048; 4 heads.
  CHECK(cost::GdnChunkFlops(m) == doctest::Approx(4.0 * (3.0 * (1024 + 2048.0 * 4 / 3 + 2048 + 256 + 2176) + 2304)));
  CHECK(cost::GdnChunkFlops(m) == doctest::Approx(108032.0));
  const cost::FlopsPerToken f = cost::ComputeFlopsPerToken(m, 256);
  CHECK(f.gdn_linear_flops == cost::GdnLinearFlops(m));
  // Gated attention: q_proj h -> 2·q: 6·[64·(64 + 2·32) + 64·64] + 6·64·64 for the gate.
  CHECK(f.attn_linear_flops == 6.0 * (64 * (64 + 64) + 64 * 64) + 6.0 * 64 * 64);
}

TEST_CASE("gdn: saved activation bytes per token of the block by hand") {
  const ModelSpec m = TinyQwen3Next();
  auto bytes = [&](MixerKind x, uint32_t rm = 0) {
    const cost::TeLayerBytes b = cost::HybridBlockSavedBytes(m, x, MlpKind::kNone, Precision::kBf16, 1, rm);
    return std::vector<double>{b.sequence, b.split};
  };
  // qk = 16, v = 32, q and k repeated to the 4 value heads: 32. Norm input 2h + in_proj input
  // 2h = 256. conv1d input 2·(32 + 32) = 128; L2 norm outputs 4·16 and rstd 8·2: 80; softplus
  // input 4·4 = 16; the chunk kernel's q, k 4·32, v 2·32, g 4·4, beta 2·4, A 2·64·4: 728;
  // output norm input 2·32 and rstd 4·4: 80; gate fp32 4·32 = 128; product 2·32 + 4·32 = 192;
  // out_proj input 2·32 = 64. Sum 1416.
  CHECK(bytes(MixerKind::kGatedDeltaNet) == std::vector<double>{256, 1416});
  CHECK(bytes(MixerKind::kGatedDeltaNet, kRecomputeLayernorm) == std::vector<double>{128, 1416});
  // Gated attention: q, k, v, output 2·(2·64 + 2·32) = 384, log-sum-exp 16, q/k norm inputs
  // 2·(64 + 32) = 192, the gate's sigmoid 2·64 and linear_proj's input 2·64: 848.
  CHECK(bytes(MixerKind::kAttention) == std::vector<double>{256, 848});
}

TEST_CASE("gdn: the rank's memory sums its blocks and its Gated DeltaNet parameters") {
  const ModelSpec m = TinyQwen3Next();
  const CostModel cm(m, test::DgxH100(), test::Setup(1, 256, 8));
  const auto r = cm.RankMemories(ToCostView(Read("tensor_model_parallel_size: 1", 1), cm.model(), cm.setup()));
  REQUIRE(r.size() == 1);
  const cost::TeLayerBytes moe = cost::HybridBlockSavedBytes(m, MixerKind::kNone, MlpKind::kMoe, Precision::kBf16, 1, 0);
  // 256 tokens x (3 Gated DeltaNet blocks of 1672, one attention block of 1104, 4 MoE blocks).
  CHECK(r[0].activations == Rel(256.0 * (3 * 1672.0 + 1104.0 + 4 * (moe.sequence + moe.split))));
  // bf16 weights of every parameter, the vocabulary padded to 128 (embedding and output layer).
  CHECK(r[0].weights == Rel(2.0 * (double(CountParams(m).total) + 2.0 * 64.0 * 28.0)));
  const cost::RankParams rp = cost::ParamsOfRank(m, CountParams(m), 1, 1, 0, nullptr, 0, SplitPlaces{});
  CHECK(rp.gdn_mixers == 3);
  CHECK(rp.attention_mixers == 1);
  CHECK(rp.moe_layers == 4);
}

TEST_CASE("gdn: priced by Megatron-Bridge as a GPTModel so VPP and the flat split rules apply") {
  const ModelSpec m = TinyQwen3Next();
  CHECK(HybridRefusal(m).empty());
  CHECK(FrameworkHybridRefusal(*FindFramework("megatron-bridge"), m).empty());
  // AutoModel trains it (components/models/qwen3_next) but its eager terms have no GDN block;
  // the reason names AutoModel's support and no Mamba-2.
  const std::string am = FrameworkHybridRefusal(*FindFramework("automodel"), m);
  CHECK(am.find("NeMo AutoModel trains it with its own model (nemo_automodel/components/models/qwen3_next/model.py") !=
        std::string::npos);
  CHECK(am.find("have no Gated DeltaNet layers") != std::string::npos);
  CHECK(am.find("Mamba") == am.find("Mamba-2 or Gated DeltaNet, attention"));  // only in the common prefix
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(2, 256, 8);
  const Layout l = Read("pipeline_model_parallel_size: 2, pipeline_dtype: bfloat16, "
                        "virtual_pipeline_model_parallel_size: 2", 2);
  const RuleContext ctx{m, setup, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  CHECK(meshplan::FirstFailure(ctx) == nullptr);  // 4 layers over 2 x 2 virtual stages
  const CostModel cm(m, sys, setup);
  const Cost c = cm.Evaluate(ToCostView(l, cm.model(), cm.setup()));
  CHECK(c.step_seconds > 0);
  // TP 4 splits the 2 key heads of each Gated DeltaNet layer unevenly: Megatron-Core's assert.
  const Layout t4 = Read("tensor_model_parallel_size: 4", 4);
  const TrainSetup setup4 = test::Setup(4, 256, 8);
  const RuleContext ctx4{m, setup4, t4, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  const Rule* f = meshplan::FirstFailure(ctx4);
  REQUIRE(f != nullptr);
  CHECK(std::string(f->name) == "mb_gdn_tp_cp_key_heads");
}
