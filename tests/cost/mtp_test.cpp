// Multi-token prediction (MTP) layers: read from the model config, placed in the last pipeline
// stage, counted in Megatron's model FLOPs, priced on the rank that holds them, written into the
// Megatron-Bridge recipes meshplan emits and checked in the recipes it reads.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cost/context.hpp"
#include "cost/cost_fixtures.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/rules.hpp"
#include "meshplan/search.hpp"

namespace meshplan {
namespace {

// A Megatron-Bridge DeepSeek-V3 layout on 256 GPUs: TP 1, PP 16, EP 8, DP 16, MBS 1, GBS 4096.
Layout Pp16(int64_t mtp, MbPpSplit split, const TrainSetup& setup) {
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.pp = 16;
  l.ep = 8;
  l.dp = 16;
  l.pp_split = split;
  l.mtp_layers = mtp;
  l.use_distributed_optimizer = true;
  SetMegatronMicroBatch(l, 1, setup);
  return l;
}

Layout ReadDeepseek(const std::string& model_keys, const ModelSpec& m) {
  const std::string text =
      "model:\n  pipeline_model_parallel_size: 16\n  expert_model_parallel_size: 8\n  seq_length: 4096\n" + model_keys +
      "train: {global_batch_size: 4096, micro_batch_size: 1}\nddp: {use_distributed_optimizer: true}\n";
  return ParseMegatronRecipe(text, "r.yaml", 256, &m).layout;  // as check and explain read it
}

const Rule* Broken(const ModelSpec& m, const TrainSetup& s, const Layout& l, const SystemSpec& sys) {
  const RuleContext ctx{m, s, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  return FirstFailure(ctx);
}

}  // namespace

TEST_CASE("mtp: the model config's num_nextn_predict_layers is read") {
  CHECK(LoadModel("deepseek-v3").mtp_num_layers == 1);
  CHECK(LoadModel("kimi-k2").mtp_num_layers == 0);  // its config.json says 0
  CHECK(LoadModel("llama3.1-8b").mtp_num_layers == 0);
}

TEST_CASE("mtp: the MTP layer and the loss take three places of meshplan's own layout split in the last stage") {
  // 61 decoder layers + 3 places (the MTP layer and its logits 2, the loss 1) = 64 over 16
  // stages: 4 each, the last stage's 4 are 1 decoder layer, the MTP layer and the loss: the
  // layout Megatron-Bridge sets for DeepSeek-V3 (Et*4|(t*4|)*14tmL).
  int64_t sum = 0;
  for (int64_t s = 0; s < 16; ++s) {
    const int64_t n = OwnStageDecoderLayers(61, {0, 3}, 16, s);
    CHECK(n == (s < 15 ? 4 : 1));
    CHECK(OwnStageFirstLayer(61, {0, 3}, 16, s) == sum);
    sum += n;
  }
  CHECK(sum == 61);
  // 32 stages: 64 / 32 = 2 places last, fewer than 3: no decoder layer there ("mL"); the 61
  // layers over the other 31, the first 30 two each, then one.
  CHECK(OwnStageDecoderLayers(61, {0, 3}, 32, 31) == 0);
  CHECK(OwnStageDecoderLayers(61, {0, 3}, 32, 29) == 2);
  CHECK(OwnStageDecoderLayers(61, {0, 3}, 32, 30) == 1);
  CHECK(OwnStageFirstLayer(61, {0, 3}, 32, 31) == 61);
  // Without places: 61 over 16, the first 13 stages 4, then 3 (AutoModel's split).
  CHECK(OwnStageDecoderLayers(61, {}, 16, 12) == 4);
  CHECK(OwnStageDecoderLayers(61, {}, 16, 13) == 3);
  CHECK(OwnStageDecoderLayers(61, {}, 16, 15) == 3);
  CHECK(OwnStageDecoderLayers(61, {}, 16, 16) == 0);  // out of range
  CHECK(OwnStageDecoderLayers(61, {0, 3}, 1, 0) == 61);   // one stage holds them all

  const TrainSetup setup = test::Setup(256, 4096, 4096);
  const Layout with_layout = Pp16(1, MbPpSplit::kLayout, setup);
  CHECK(OwnSplitPlaces(with_layout).last == 3);
  const StageSplit layout = SplitStages(61, with_layout);
  CHECK(layout.first_rank_layers == 4);
  CHECK(layout.last_rank_layers == 1);
  CHECK(layout.max_layers_per_rank == 4);
  CHECK(layout.mtp_rank == 15);
  // Megatron-Core's even split (no layout string) adds the MTP layer to the last stage's.
  const Layout even_layout = Pp16(1, MbPpSplit::kEven, setup);
  CHECK(OwnSplitPlaces(even_layout).last == 0);
  const StageSplit even = SplitStages(61, even_layout);
  CHECK(even.last_rank_layers == 3);
  CHECK(even.mtp_rank == 15);
  CHECK(SplitStages(61, Pp16(0, MbPpSplit::kLayout, setup)).mtp_rank == -1);
}

TEST_CASE("pipeline split: account_for_embedding/loss_in_pipeline_split gives the first and last stage one layer fewer") {
  // Megatron-Core transformer_block.py get_num_layers_to_build: (L + 2) / S per stage, the
  // embedding and the loss counted as a layer each. Llama 3.1 405B (126 layers) on PP 4: 32 per
  // stage, 31 on the first and the last.
  const int64_t expect[] = {31, 32, 32, 31};
  for (int64_t s = 0; s < 4; ++s) CHECK(OwnStageDecoderLayers(126, {1, 1}, 4, s) == expect[s]);
  CHECK(OwnStageFirstLayer(126, {1, 1}, 4, 3) == 95);
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.pp = 4;
  l.pp_split = MbPpSplit::kAccountEmbeddingLoss;
  CHECK(OwnSplitPlaces(l).first == 1);
  CHECK(OwnSplitPlaces(l).last == 1);
  const std::vector<int64_t> per_rank = DecoderLayersPerRank(126, l);
  CHECK(per_rank == std::vector<int64_t>{31, 32, 32, 31});
  // With VPP 2 (8 virtual stages of 16, the first and the last 15): ranks 0 and 3 hold 31.
  l.vpp = 2;
  CHECK(DecoderLayersPerRank(126, l) == std::vector<int64_t>{31, 32, 32, 31});
  // DeepSeek-V3 (61 layers) on PP 3: 21 per stage, 20 on the first and the last.
  l.vpp = 1;
  l.pp = 3;
  CHECK(DecoderLayersPerRank(61, l) == std::vector<int64_t>{20, 21, 20});
}

TEST_CASE("mtp: Megatron's model FLOPs with one MTP layer reproduce 4912 tok/s -> 1277 TFLOP/s") {
  // megatron.md 3.6: DeepSeek-V3 with MTP = 1, 1277.1 TFLOP/s at 4912 tokens/s per GPU (1227.08
  // without). One MTP layer per token (hand): its MoE layer's MLA projections 6·187.07 M =
  // 1.1224 G, routed 6·7168·3·2048·8 = 2.1139 G, shared 6·7168·3·2048 = 0.2642 G, causal core
  // 6·(128·192/2 + 128·128/2)·4096 = 0.5034 G; norms and eh_proj 6·(3·7168 + 2·7168²) =
  // 0.6167 G; logits 6·7168·129280 = 5.5601 G. Sum 10.181 GFLOP.
  const ModelSpec m = test::DeepSeekV3();
  const TrainSetup s = test::Setup(64, 4096, 16);
  const double tokens = double(s.global_batch * s.seq_len);
  const double with = ModelFlopsPerStep(m, s, 1) / tokens, without = ModelFlopsPerStep(m, s, 0) / tokens;
  CHECK((with - without) / 1e9 == doctest::Approx(10.181).epsilon(2e-4));
  CHECK(4912 * with / 1e12 == doctest::Approx(1277.1).epsilon(5e-4));
  CHECK(ModelFlopsPerStep(m, s) == ModelFlopsPerStep(m, s, 0));  // default: none
}

TEST_CASE("mtp: the rank of the last stage holds the MTP layer with its eh_proj and norms and an embedding copy") {
  const ModelSpec m = test::DeepSeekV3();
  const ParamCounts p = CountParams(m);
  const TrainSetup setup = test::Setup(256, 4096, 4096);
  const Layout l = Pp16(1, MbPpSplit::kLayout, setup);
  const StageSplit split = SplitStages(61, l);
  const cost::RankParams last = cost::ParamsOfRank(m, p, 16, split.num_stages, 15, nullptr, 1, OwnSplitPlaces(l));
  const cost::RankParams none = cost::ParamsOfRank(m, p, 16, split.num_stages, 15, nullptr, 0, {});
  CHECK(last.mtp_layers == 1);
  CHECK(last.moe_layers == 2);  // 1 decoder layer + the MTP layer's (DeepSeek's last layer is MoE)
  CHECK(none.moe_layers == 3);  // 61 over 16 without MTP: 3 decoder layers
  CHECK(last.dense_layers == 0);
  const double h = 7168;
  const double moe_layer = double(p.attention_per_layer + p.shared_per_layer + p.router_per_layer + p.norms_per_layer);
  // The MTP block's norms and eh_proj beside its decoder layer; the word embedding copy
  // (gpt_model.py: pre_process or mtp_process) in root.
  CHECK(last.layer_dense == test::Rel(2 * moe_layer + 3 * h + 2 * h * h));
  CHECK(last.root == test::Rel(none.root + double(p.embedding)));
  CHECK_FALSE(last.has_embedding);
  CHECK(last.has_head);
  // Rank 0 holds 4 decoder layers (3 dense) and no MTP layer.
  const cost::RankParams first = cost::ParamsOfRank(m, p, 16, split.num_stages, 0, nullptr, 1, OwnSplitPlaces(l));
  CHECK(first.mtp_layers == 0);
  CHECK(first.Layers() == 4);
  CHECK(first.dense_layers == 3);
}

TEST_CASE("mtp: Evaluate counts the MTP FLOPs of Megatron-Bridge layouts only") {
  const ModelSpec m = test::DeepSeekV3();
  SystemSpec sys = test::DgxH100();
  sys.gpu.memory_bytes = 192e9;
  const TrainSetup setup = test::Setup(256, 4096, 4096);
  const CostModel cm(m, sys, setup);
  const Cost with = Score(cm, Pp16(1, MbPpSplit::kLayout, setup));
  const Cost without = Score(cm, Pp16(0, MbPpSplit::kLayout, setup));
  const double tokens = 4096.0 * 4096.0;
  CHECK((with.model_flops - without.model_flops) / tokens / 1e9 == doctest::Approx(10.181).epsilon(2e-4));
  CHECK(with.step_seconds > 0);
  // AutoModel layouts train no MTP layers (meshplan prices AutoModel's models without their MTP
  // module), whatever Layout::mtp_layers says: its cost view has none.
  Layout automodel = Pp16(1, MbPpSplit::kLayout, setup);
  automodel.framework = Framework::kAutoModel;
  CHECK(ToCostView(automodel, m, setup).mtp_layers == 0);
}

TEST_CASE("mtp: plan writes the MTP layer into the layout and mtp_num_layers and reads it back as priced") {
  PlanRequest req;
  req.model = LoadModel("deepseek-v3");
  req.system = test::DgxH100();
  req.system.gpu.memory_bytes = 192e9;
  req.setup = test::Setup(256, 4096, 4096);
  req.framework = Framework::kMegatronBridge;
  req.top_n = 3;
  req.threads = 1;
  req.max_layouts = 20000;
  const PlanResult res = Plan(req);
  REQUIRE_FALSE(res.top.empty());
  int with_layout = 0;
  for (size_t i = 0; i < res.top.size(); ++i) {
    const Candidate& c = res.top[i];
    CHECK(c.layout.mtp_layers == 1);
    const std::string yaml = MegatronRecipeYaml(c, req, int(i) + 1);
    CHECK(yaml.find("mtp_num_layers: 1") != std::string::npos);
    ParsedRecipe back = ParseMegatronRecipe(yaml, "plan.yaml", req.setup.num_gpus);
    Layout l = back.layout;
    CHECK(l.mtp_layers == 1);
    CHECK(Broken(req.model, req.setup, l, req.system) == nullptr);
    if (l.pp > 1 && l.pp_layout != nullptr) {
      ++with_layout;
      CHECK(l.pp_layout->Count('m') == 1);
      CHECK(l.pp_layout->stages.back().find("mL") != std::string::npos);
      CHECK(PricedPpLayout(req.model.num_layers, l) == nullptr);  // meshplan's own split
    }
    const CostModel cm(req.model, req.system, req.setup);
    CHECK(Score(cm, l).step_seconds == test::Rel(c.cost.step_seconds).epsilon(1e-9));
  }
  CHECK(with_layout > 0);
}

TEST_CASE("mtp: a read recipe's layout must hold the MTP layers mtp_num_layers says (the model's when unset)") {
  const ModelSpec m = test::DeepSeekV3();
  REQUIRE(m.mtp_num_layers == 1);
  SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(256, 4096, 4096);
  const std::string no_m = "  pipeline_model_parallel_layout: \"Et*4|(t*4|)*14tL\"\n";
  const std::string with_m = "  pipeline_model_parallel_layout: \"Et*4|(t*4|)*14tmL\"\n";
  // Unset: Megatron-Bridge's provider sets mtp_num_layers 1 from num_nextn_predict_layers.
  const Layout unset = ReadDeepseek(no_m, m);
  CHECK(unset.mtp_layers == 1);
  const Rule* r = Broken(m, setup, unset, sys);
  REQUIRE(r != nullptr);
  CHECK(std::string(r->name) == "mb_pp_layout_mtp_count");
  CHECK(Broken(m, setup, ReadDeepseek(with_m, m), sys) == nullptr);
  // null (or 0): no MTP layer, so no m.
  const Layout null = ReadDeepseek(no_m + "  mtp_num_layers: null\n", m);
  CHECK(null.mtp_layers == 0);
  CHECK(Broken(m, setup, null, sys) == nullptr);
  CHECK(Broken(m, setup, ReadDeepseek(with_m + "  mtp_num_layers: null\n", m), sys) != nullptr);
  // The MB perf recipes' layout is meshplan's own split (so priced as the planner prices it):
  // rank 15 holds 1 decoder layer and the MTP layer.
  const Layout perf = ReadDeepseek(with_m, m);
  CHECK(PricedPpLayout(m.num_layers, perf) == nullptr);
  const StageSplit split = SplitStages(m.num_layers, perf);
  CHECK(split.mtp_rank == 15);
  CHECK(split.last_rank_layers == 1);
  // A layout that puts the MTP layer with 3 decoder layers is priced as written.
  const Layout heavy = ReadDeepseek("  pipeline_model_parallel_layout: \"Et*4|(t*4|)*13tt|tttmL\"\n", m);
  const StageSplit h = SplitStages(m.num_layers, heavy);
  REQUIRE(h.given != nullptr);
  CHECK(h.last_rank_layers == 3);
  CHECK(h.mtp_rank == 15);
}

}  // namespace meshplan
