// A recipe's pipeline_model_parallel_layout is priced as written: the decoder layers of each
// pipeline rank, the rank holding the embedding and the one holding the loss follow the layout
// (SplitStages / PricedPpLayout, ParamsOfRank, the Megatron memory estimate per rank), and a
// layout equal to meshplan's own split (what `plan` emits) is priced exactly as the planner
// priced it.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_fixtures.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/rules.hpp"
#include "meshplan/search.hpp"
#include "frameworks/megatron_bridge/space.hpp"

using namespace meshplan;
using test::Rel;

namespace {

// Llama-3-70B on 32 H100s: TP 8 (SP), PP 4, DP 1, distributed optimizer, MBS 1, GBS 128 at
// 8192 tokens, and the given pipeline_model_parallel_layout (none: "null").
Layout Read(const std::string& layout, const ModelSpec& model) {
  const std::string text =
      "model:\n  tensor_model_parallel_size: 8\n  pipeline_model_parallel_size: 4\n  sequence_parallel: true\n"
      "  seq_length: 8192\n  pipeline_model_parallel_layout: " + layout +
      "\ntrain: {global_batch_size: 128, micro_batch_size: 1}\n";
  Layout l = ParseMegatronRecipe(text, "r.yaml", 32).layout;
  return l;
}

// Llama-3-70B on 32 H100s at 8192 tokens, GBS 128, and its cost model.
struct Llama70bOn32 {
  ModelSpec m = test::Llama3_70B();
  SystemSpec sys = test::DgxH100();
  TrainSetup setup = test::Setup(32, 8192, 128);
  CostModel cm{m, sys, setup};
};

}  // namespace

TEST_CASE("pp_layout cost: an unbalanced layout puts its layers and so its memory and time on rank 0") {
  const Llama70bOn32 x;
  const ModelSpec& m = x.m;
  const CostModel& cm = x.cm;
  const Layout even = Read("null", m);
  const Layout balanced = Read("\"Et*20|t*20|t*20|t*20L\"", m);
  // Rank 0 holds 32 of the 80 layers instead of 20, the other ranks 16 each.
  const Layout unbalanced = Read("\"Et*32|t*16|t*16|t*16L\"", m);
  for (const Layout* l : {&even, &balanced, &unbalanced}) {
    RuleContext ctx{m, x.setup, *l, AutoModelVersion::kV05, MBridgeVersion::kMain, &x.sys};
    const Rule* r = FirstFailure(ctx);
    CHECK_MESSAGE(r == nullptr, (r ? r->name : ""));
  }

  // Layers per rank, by hand: 80 / 4 = 20 each; 32 + 16 + 16 + 16 = 80.
  CHECK(DecoderLayersPerRank(80, even) == std::vector<int64_t>{20, 20, 20, 20});
  CHECK(DecoderLayersPerRank(80, balanced) == std::vector<int64_t>{20, 20, 20, 20});
  CHECK(DecoderLayersPerRank(80, unbalanced) == std::vector<int64_t>{32, 16, 16, 16});
  CHECK(PricedPpLayout(80, balanced) == nullptr);  // meshplan's own split
  REQUIRE(PricedPpLayout(80, unbalanced) == unbalanced.pp_layout.get());
  const StageSplit s = SplitStages(80, unbalanced);
  CHECK(s.num_stages == 4);
  CHECK(s.stages_per_rank == 1);
  CHECK(s.first_rank_layers == 32);
  CHECK(s.last_rank_layers == 16);
  CHECK(s.max_layers_per_rank == 32);
  CHECK(s.given == unbalanced.pp_layout.get());

  // The balanced layout is priced exactly as meshplan's even split.
  const Cost c_even = Score(cm, even), c_bal = Score(cm, balanced), c_unbal = Score(cm, unbalanced);
  CHECK(c_bal.memory.Total() == c_even.memory.Total());
  CHECK(c_bal.step_seconds == c_even.step_seconds);

  // Rank 0's weights grow by its 12 extra layers, by hand (megatron.md 3.1): per layer
  // attention 2·h²·(1 + g/a)·(q/h) = 2·8192²·1.125 = 150,994,944 and SwiGLU MLP 2·h·f·1.5 =
  // 704,643,072, split over TP 8 (106,954,752), plus two RMSNorms 2·h = 16,384 replicated:
  // 106,971,136 per layer; 12 layers in bf16: 2 · 12 · 106,971,136 = 2,567,307,264 bytes.
  const std::vector<MemoryBreakdown> bal = cm.RankMemories(ToCostView(balanced, cm.model(), cm.setup())), unbal = cm.RankMemories(ToCostView(unbalanced, cm.model(), cm.setup()));
  REQUIRE(bal.size() == 4);
  REQUIRE(unbal.size() == 4);
  CHECK(unbal[0].weights - bal[0].weights == Rel(2567307264.0));
  // The activations of rank 0 hold 32 layers instead of 20 (a little less than 32/20 of
  // them: the estimator's per-pipeline terms do not grow).
  CHECK(unbal[0].activations > 1.5 * bal[0].activations);
  CHECK(unbal[0].activations < 1.6 * bal[0].activations);
  CHECK(unbal[0].Total() > bal[0].Total());
  // The other ranks hold 16 layers; rank 3 also holds the output layer (the loss, h·V / TP
  // parameters, 2 bytes each, V = 128256 padded to a multiple of 128 · TP: 129024), and ranks
  // 1-2 neither embedding nor output.
  CHECK(unbal[1].weights == unbal[2].weights);
  // (and the final layernorm, h parameters, on the output layer's rank).
  CHECK(unbal[3].weights - unbal[2].weights == Rel(2.0 * (8192.0 * 129024.0 / 8.0 + 8192.0)));
  CHECK(unbal[1].weights < bal[1].weights);
  // Fewer in-flight micro-batches on later ranks (1F1B: pp - r of them): less activation memory.
  CHECK(unbal[1].activations > unbal[2].activations);
  CHECK(unbal[2].activations > unbal[3].activations);
  // The most loaded GPU and the slowest rank are rank 0: more memory and a longer step.
  CHECK(c_unbal.memory.Total() == unbal[0].Total());
  CHECK(c_unbal.memory.Total() > c_bal.memory.Total());
  CHECK(c_unbal.step_seconds > 1.3 * c_bal.step_seconds);
}

TEST_CASE("pp_layout cost: the embedding and the loss are priced on the ranks whose stages hold them") {
  const Llama70bOn32 x;
  // 8 stages on 4 ranks (VPP 2): rank r holds stages r and r + 4, 10 layers each; an empty
  // first stage puts the embedding on rank 1, the loss in stage 7 on rank 3.
  const Layout l = Read("\"|Et*20|t*10|t*10|t*10|t*10|t*10|t*10L\"", x.m);
  CHECK(l.vpp == 2);
  REQUIRE(PricedPpLayout(80, l) != nullptr);
  CHECK(DecoderLayersPerRank(80, l) == std::vector<int64_t>{10, 30, 20, 20});
  const std::vector<MemoryBreakdown> r = x.cm.RankMemories(ToCostView(l, x.cm.model(), x.cm.setup()));
  // Ranks 2 and 3 hold 20 layers; rank 3 the output layer too.
  CHECK(r[3].weights - r[2].weights == Rel(2.0 * (8192.0 * 129024.0 / 8.0 + 8192.0)));  // + the final norm
  // Rank 1's 30 layers and the embedding against rank 2's 20 layers.
  CHECK(r[1].weights - r[2].weights == Rel(2.0 * (10.0 * 106971136.0 + 8192.0 * 129024.0 / 8.0)));
}

TEST_CASE("pp_layout cost: a recipe plan emits and read back is the same layout at the same prediction") {
  struct Setup {
    ModelSpec model;
    int64_t gpus;
  };
  // Llama-3-70B on 48 GPUs (PP 3: 80 layers split by an explicit layout), DeepSeek-V3 on 64
  // (61 layers, 3 of them dense: the layout's split decides which ranks hold them).
  for (const Setup& c : {Setup{test::Llama3_70B(), 48}, Setup{test::DeepSeekV3(), 64}}) {
    CAPTURE(c.model.name);
    PlanRequest req;
    req.model = c.model;
    req.system = test::DgxH100();
    req.setup = test::Setup(c.gpus, 4096, 576);  // 576 micro-batches: a multiple of PP 3 (interleaving)
    req.framework = Framework::kMegatronBridge;
    req.max_micro_batch = 2;
    // Selective recompute with the perf recipes' module sets: recompute_modules round-trips too.
    req.mb_recompute_module_sets = search::SearchedRecomputeModules(req.model);
    const CostModel cm(req.model, req.system, req.setup);
    int round_trips = 0, interleaved = 0;
    std::map<std::pair<int64_t, int64_t>, int> per_split;  // (pp, vpp): a few layouts of each
    for (const Layout& planned : EnumerateLayouts(req)) {
      if (planned.pp_split != MbPpSplit::kLayout || planned.recompute != Recompute::kSelective) continue;
      if (per_split[{planned.pp, planned.vpp}] == 2) continue;
      RuleContext pctx{req.model, req.setup, planned, req.version, req.mb_version, &req.system};
      if (FirstFailure(pctx) != nullptr) continue;
      const Candidate cand{planned, Score(cm, planned)};
      const std::string yaml = MegatronRecipeYaml(cand, req, 1);
      Layout read = ParseMegatronRecipe(yaml, "emitted.yaml", req.setup.num_gpus).layout;
      CAPTURE(Describe(planned));
      REQUIRE(read.pp_layout != nullptr);
      CHECK(read.vpp == planned.vpp);
      CHECK(read.recompute == Recompute::kSelective);
      CHECK(read.mb.recompute_modules == planned.mb.recompute_modules);
      CHECK(int64_t(read.pp_layout->stages.size()) == planned.pp * planned.vpp);
      CHECK(PricedPpLayout(req.model.num_layers, read) == nullptr);
      CHECK(DecoderLayersPerRank(req.model.num_layers, read) == DecoderLayersPerRank(req.model.num_layers, planned));
      RuleContext rctx{req.model, req.setup, read, req.version, req.mb_version, &req.system};
      const Rule* broken = FirstFailure(rctx);
      CHECK_MESSAGE(broken == nullptr, (broken ? broken->name : ""));
      const Cost back = Score(cm, read);
      CHECK(back.memory.Total() == cand.cost.memory.Total());
      CHECK(back.step_seconds == cand.cost.step_seconds);
      CHECK(back.fits == cand.cost.fits);
      interleaved += planned.vpp > 1;
      ++round_trips;
      ++per_split[{planned.pp, planned.vpp}];
    }
    CAPTURE(round_trips);
    CHECK(round_trips >= 10);
    CHECK(interleaved >= 5);
  }
}
