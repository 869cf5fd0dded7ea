// Recompute in the search: which selective recompute_modules sets are searched, and that a
// layout is ranked with recompute only when the same layout without recompute does not fit.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "meshplan/framework.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/rules.hpp"
#include "meshplan/search.hpp"
#include "frameworks/megatron_bridge/space.hpp"

using namespace meshplan;

TEST_CASE("search: the selective recompute_modules sets follow the model's architecture") {
  using V = std::vector<uint32_t>;
  // DeepSeek-V3: MLA, MoE, 3 dense layers.
  CHECK(search::SearchedRecomputeModules(LoadModel("deepseek-v3")) ==
        V{kRecomputeMlaUpProj, kRecomputeMlaUpProj | kRecomputeMlp,
          kRecomputeMlaUpProj | kRecomputeLayernorm | kRecomputeMoeAct, kRecomputeLayernorm | kRecomputeMoeAct,
          kRecomputeMoeAct});
  // Qwen3-30B-A3B: GQA, every layer MoE.
  CHECK(search::SearchedRecomputeModules(LoadModel("qwen3-30b-a3b")) ==
        V{kRecomputeLayernorm | kRecomputeMoeAct, kRecomputeMoeAct});
  // A dense model: its MLP only.
  CHECK(search::SearchedRecomputeModules(LoadModel("llama3.1-8b")) == V{kRecomputeMlp});
  CHECK(RecomputeModulesValue(kRecomputeMlaUpProj | kRecomputeLayernorm | kRecomputeMoeAct) ==
        "[moe_act,layernorm,mla_up_proj]");
  CHECK(RecomputeModulesValue(0) == "[core_attn]");
}

namespace {

// Qwen3-30B-A3B on 16 H100, sequence 4096, global batch 512, with the searched
// recompute_modules sets under Megatron-Bridge.
PlanRequest Qwen30bOn16H100(Framework fw) {
  PlanRequest req;
  req.model = LoadModel("qwen3-30b-a3b");
  req.system = LoadSystem("dgx-h100");
  req.setup.num_gpus = 16;
  req.setup.seq_len = 4096;
  req.setup.global_batch = 512;
  req.framework = fw;
  if (fw == Framework::kMegatronBridge) req.mb_recompute_module_sets = search::SearchedRecomputeModules(req.model);
  return req;
}

}  // namespace

TEST_CASE("search: a layout is ranked with recompute only when it does not fit without") {
  for (Framework fw : {Framework::kAutoModel, Framework::kMegatronBridge}) {
    CAPTURE(int(fw));
    PlanRequest req = Qwen30bOn16H100(fw);
    req.max_micro_batch = 2;
    req.top_n = 100000;  // every fitting layout is kept
    req.prune = false;
    const PlanResult r = Plan(req);
    REQUIRE(r.stopped.empty());
    // Every fitting layout is either ranked or left out for its lighter twin.
    CHECK(int64_t(r.top.size()) + r.recompute_dominated == r.fitting);
    CHECK(r.recompute_dominated > 0);
    const CostModel cm(req.model, req.system, req.setup);
    int with_recompute = 0;
    for (const Candidate& c : r.top) {
      if (c.layout.recompute == Recompute::kNone) continue;
      ++with_recompute;
      Layout none = c.layout;
      none.recompute = Recompute::kNone;
      none.mb.recompute_modules = 0;
      none.mb.recompute_method = MbRecomputeMethod::kUnset;
      none.mb.recompute_num_layers = 0;
      RuleContext ctx{req.model, req.setup, none, req.version, req.mb_version, &req.system};
      const bool valid = FirstFailure(ctx) == nullptr;
      CAPTURE(Describe(c.layout));
      CHECK_FALSE((valid && Score(cm, none).fits));
    }
    CHECK(with_recompute > 0);  // layouts that need recompute to fit are still ranked
  }
}

TEST_CASE("search: the count of recompute layouts not ranked does not depend on the thread count") {
  // With pruning, each thread's own top-k fills at its own pace; the count uses the
  // first phase's threshold instead, so 1, 2 and 3 threads count the same layouts.
  PlanRequest req = Qwen30bOn16H100(Framework::kMegatronBridge);
  req.top_n = 5;
  std::vector<int64_t> counts;
  for (int threads : {1, 2, 3, 2}) {
    req.threads = threads;
    const PlanResult r = Plan(req);
    REQUIRE(r.stopped.empty());
    counts.push_back(r.recompute_dominated);
  }
  CAPTURE(counts[0]);
  CHECK(counts[0] > 0);
  for (int64_t c : counts) CHECK(c == counts[0]);
}
