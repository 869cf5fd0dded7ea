// `check`'s nearest-layout walk bounded by edits (planner/search/nearest.cpp NearbyValidLayouts):
// it returns exactly what scoring every valid layout of the space and keeping those within
// kNearestExtraEdits of the fewest edits that fit returns (the same layouts, in walk order, with
// the same changes, edits and costs), and the planner's fastest layouts add none to it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "../fixtures/plan_request.hpp"

using namespace meshplan;

namespace {

// Every valid layout of the space (ForEachLayout unbounded, then every rule), scored, with its
// changes from `from`; those within kNearestExtraEdits of the fewest that fit (all when none fits).
std::vector<NearbyLayout> Exhaustive(const PlanRequest& request, const Layout& from, int& first_fit) {
  PlanRequest req = request;
  FrameworkOf(from).nearest_request(req, from);
  const CostModel cost(req.model, req.system, req.setup);
  std::vector<NearbyLayout> all;
  ForEachLayout(req, [&](const Layout& l) {
    const RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
    if (FirstFailure(ctx)) return true;
    std::vector<std::string> changes = LayoutChanges(from, l, req.model.num_layers, req.setup);
    const int d = EditCount(changes);
    all.push_back({{l, Score(cost, l), {}}, std::move(changes), d, {}});
    return true;
  });
  first_fit = -1;
  for (const NearbyLayout& x : all) {
    if (x.candidate.cost.fits && (first_fit < 0 || x.edits < first_fit)) first_fit = x.edits;
  }
  std::vector<NearbyLayout> kept;
  for (NearbyLayout& x : all) {
    if (first_fit < 0 || x.edits <= first_fit + kNearestExtraEdits) kept.push_back(std::move(x));
  }
  return kept;
}

void CheckWalk(const PlanRequest& req, const Layout& from) {
  int first_fit = -2, want_first_fit = -2;
  const std::vector<NearbyLayout> got = NearbyValidLayouts(req, from, &first_fit);
  const std::vector<NearbyLayout> want = Exhaustive(req, from, want_first_fit);
  CHECK(first_fit == want_first_fit);
  REQUIRE(got.size() == want.size());
  CHECK(!got.empty());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(Describe(got[i].candidate.layout) == Describe(want[i].candidate.layout));
    CHECK(got[i].changes == want[i].changes);
    CHECK(got[i].edits == want[i].edits);
    CHECK(got[i].candidate.cost.step_seconds == want[i].candidate.cost.step_seconds);
    CHECK(got[i].candidate.cost.memory.Total() == want[i].candidate.cost.memory.Total());
    CHECK(got[i].candidate.cost.fits == want[i].candidate.cost.fits);
  }
  // The planner's fastest fitting layouts with the recipe's settings (what NearestValidLayouts
  // merges in under a layout budget): each within the edits kept is already among them.
  PlanRequest fast = req;
  FrameworkOf(from).nearest_request(fast, from);
  fast.top_n = 20;
  fast.risk_ranking = false;
  for (const Candidate& c : Plan(fast).top) {
    const std::vector<std::string> changes = LayoutChanges(from, c.layout, req.model.num_layers, req.setup);
    if (first_fit >= 0 && EditCount(changes) > first_fit + kNearestExtraEdits) continue;
    bool seen = false;
    for (const NearbyLayout& y : got) seen = seen || (y.changes == changes && Describe(y.candidate.layout) == Describe(c.layout));
    CHECK_MESSAGE(seen, Describe(c.layout));
  }
}

// CheckWalk of a Megatron-Bridge recipe (`text`) for `model` on `gpus` H100s; returns its layout.
Layout CheckMegatron(const char* model, int64_t gpus, int64_t gbs, const std::string& text) {
  PlanRequest req = test::PresetRequest(model, "dgx-h100", gpus, 4096, gbs);
  req.framework = Framework::kMegatronBridge;
  const Layout l = ParseMegatronRecipe(text, "r.yaml", gpus, &req.model).layout;
  CheckWalk(req, l);
  return l;
}

// CheckWalk of an AutoModel recipe (`text`) for `model` on 8 H100s.
void CheckAutoModel(const char* model, int64_t gbs, const std::string& text) {
  CheckWalk(test::PresetRequest(model, "dgx-h100", 8, 4096, gbs), ParseAutoModelRecipe(text, "r.yaml", 8).layout);
}

}  // namespace

TEST_CASE("nearest walk: Megatron-Bridge bounded by edits is the exhaustive one") {
  SUBCASE("TP 3 on 8 GPUs: a one-edit fix") {
    CheckMegatron("llama3.1-8b", 8, 64,
                  "model: {tensor_model_parallel_size: 3, pipeline_model_parallel_size: 1}\n"
                  "train: {global_batch_size: 64, micro_batch_size: 1}\n");
  }
  SUBCASE("EP 3 of an MoE model with full recompute") {
    CheckMegatron("qwen3-30b-a3b", 16, 128,
                  "model: {tensor_model_parallel_size: 2, expert_model_parallel_size: 3, recompute_granularity: full,\n"
                  "        recompute_method: uniform, recompute_num_layers: 1}\n"
                  "train: {global_batch_size: 128, micro_batch_size: 2}\n");
  }
  SUBCASE("nothing fits: the walk covers the whole space") {
    CheckMegatron("llama3.1-70b", 4, 16,
                  "model: {tensor_model_parallel_size: 3}\ntrain: {global_batch_size: 16, micro_batch_size: 1}\n");
  }
  SUBCASE("an explicit pipeline layout string with a TP that does not divide the heads") {
    const Layout l = CheckMegatron("llama3.1-8b", 16, 128,
                                   "model: {tensor_model_parallel_size: 3, pipeline_model_parallel_size: 2,\n"
                                   "        pipeline_model_parallel_layout: \"Etttttttttttttttt|ttttttttttttttttL\"}\n"
                                   "train: {global_batch_size: 128, micro_batch_size: 1}\n");
    CHECK(l.pp_layout != nullptr);
  }
}

TEST_CASE("nearest walk: AutoModel bounded by edits is the exhaustive one") {
  SUBCASE("TP 3 of a dense model") {
    CheckAutoModel("llama3.1-8b", 64,
                   "step_scheduler: {global_batch_size: 64, local_batch_size: 4}\n"
                   "distributed:\n  strategy: fsdp2\n  dp_size: 2\n  tp_size: 3\n  pp_size: 2\n"
                   "  pipeline: {pp_schedule: 1f1b, pp_microbatch_size: 1, scale_grads_in_schedule: true}\n");
  }
  SUBCASE("EP 8 with TP 3 of an MoE model") {
    CheckAutoModel("qwen3-30b-a3b", 64,
                   "step_scheduler: {global_batch_size: 64, local_batch_size: 1}\n"
                   "distributed:\n  strategy: fsdp2\n  tp_size: 3\n  ep_size: 8\n  moe: {reshard_after_forward: true}\n");
  }
}
