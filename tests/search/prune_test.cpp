// Branch-and-bound and threads change how much is scored, never the answer: the pruned,
// parallel search returns exactly the top-k of the exhaustive one-thread walk.
#include <doctest/doctest.h>

#include "meshplan/framework.hpp"
#include "meshplan/search.hpp"
#include "fixtures/plan_request.hpp"

using namespace meshplan;

namespace {

PlanRequest Request(const char* model, const char* system, int64_t gpus, int64_t seq, int64_t gbs, Framework fw) {
  PlanRequest req = test::PresetRequest(model, system, gpus, seq, gbs);
  req.framework = fw;
  req.top_n = 10;
  return req;
}

PlanRequest SearchingDispatchers(PlanRequest req) {
  req.mb_search_dispatchers = true;
  return req;
}

void CheckSame(const PlanResult& a, const PlanResult& b) {
  REQUIRE(a.top.size() == b.top.size());
  for (size_t i = 0; i < a.top.size(); ++i) {
    CAPTURE(i);
    CHECK(Describe(a.top[i].layout) == Describe(b.top[i].layout));
    CHECK(a.top[i].cost.step_seconds == b.top[i].cost.step_seconds);
    CHECK(a.top[i].cost.memory.Total() == b.top[i].cost.memory.Total());
  }
}

}  // namespace

TEST_CASE("search: pruned and parallel search returns the exhaustive top-k") {
  const PlanRequest problems[] = {
      Request("llama3.1-70b", "dgx-h100", 32, 8192, 512, Framework::kAutoModel),
      Request("llama3.1-8b", "dgx-a100", 16, 4096, 128, Framework::kAutoModel),
      Request("mixtral-8x7b", "dgx-h200", 64, 4096, 512, Framework::kAutoModel),
      Request("qwen3-30b-a3b", "gb200-nvl72", 64, 4096, 1024, Framework::kAutoModel),
      Request("llama3.1-405b", "dgx-h100", 128, 8192, 256, Framework::kAutoModel),
      Request("llama3.1-70b", "dgx-h100", 32, 4096, 256, Framework::kMegatronBridge),
      Request("qwen3-30b-a3b", "dgx-h100", 16, 4096, 512, Framework::kMegatronBridge),
      // Megatron FSDP, CP variants, flex dispatchers: each layout of a scored subtree is pruned
      // by its own bound (Scorer::Leaf).
      SearchingDispatchers(Request("gpt-oss-120b", "dgx-h100", 32, 8192, 256, Framework::kMegatronBridge)),
  };
  for (const PlanRequest& base : problems) {
    CAPTURE(base.model.name);
    CAPTURE(base.setup.num_gpus);
    PlanRequest exhaustive = base;
    exhaustive.prune = false;
    exhaustive.threads = 1;
    const PlanResult ref = Plan(exhaustive);
    REQUIRE(ref.fitting > 0);
    for (int threads : {1, 2, 3}) {
      CAPTURE(threads);
      PlanRequest pruned = base;
      pruned.threads = threads;
      const PlanResult got = Plan(pruned);
      CheckSame(ref, got);
      // Unpruned with several threads: the same answer and the same counts.
      PlanRequest par = exhaustive;
      par.threads = threads;
      const PlanResult all = Plan(par);
      CheckSame(ref, all);
      CHECK(all.valid == ref.valid);
      CHECK(all.fitting == ref.fitting);
      CHECK(all.enumerated == ref.enumerated);
      CHECK(all.rejected_by_rule == ref.rejected_by_rule);
    }
    // Pruned counts do not depend on the thread count either.
    PlanRequest one = base, two = base;
    one.threads = 1;
    two.threads = 2;
    const PlanResult r1 = Plan(one), r2 = Plan(two);
    CHECK(r1.valid == r2.valid);
    CHECK(r1.pruned == r2.pruned);
    CHECK(r1.enumerated == r2.enumerated);
  }
}

namespace {

// Scores up to `max_checked` rule-valid layouts of `req` (every `stride`-th layout of the walk)
// and checks that the lower bound never exceeds the scored step; counts the layouts checked
// and those whose bound is above step/2.
void CheckBound(const PlanRequest& req, int max_checked, int& checked, int& tight, int64_t stride = 1) {
  const CostModel cm(req.model, req.system, req.setup);
  int here = 0;
  int64_t walked = 0;
  ForEachLayout(req, [&](const Layout& l) {
    if (walked++ % stride != 0) return true;
    if (FirstFailure({req.model, req.setup, l, req.version}) != nullptr) return true;
    // Each layout bounded for micro-batches up to its own (the search bounds a subtree for
    // all of its leaves' micro-batches, up to req.max_micro_batch: the prune test above).
    const CostView view = ToCostView(l, cm.model(), cm.setup());
    const double bound = cm.StepSecondsLowerBound(view, l.micro_batch());
    const double step = Score(cm, l).step_seconds;
    CHECK_MESSAGE(bound <= step * (1 + 1e-12), Describe(l));
    // The bound at the layout's own micro-batch count, by which the search prunes it.
    const double at = cm.StepLowerBoundOf(view).At(double(l.MicroBatchesPerStep(req.setup)));
    CHECK_MESSAGE(at <= step * (1 + 1e-12), Describe(l));
    CHECK(at >= bound * (1 - 1e-12));
    CHECK(bound > 0);
    if (bound > 0.5 * step) ++tight;
    ++checked;
    return ++here < max_checked;
  });
}

}  // namespace

TEST_CASE("search: the step-time lower bound never exceeds a scored layout's step") {
  // Every 7th layout of the walk, so that CP, PP and EP layouts are among them.
  PlanRequest req = Request("deepseek-v3", "dgx-h100", 256, 4096, 1024, Framework::kAutoModel);
  int checked = 0, tight = 0;
  CheckBound(req, 20000, checked, tight, 7);
  CHECK(checked > 1000);
  // Not vacuous: for most layouts the bound is within a factor of two of the step.
  MESSAGE("bound > step/2 for " << tight << " of " << checked << " layouts");
  CHECK(tight > checked / 2);
}

TEST_CASE("search: the Megatron step-time lower bound never exceeds a scored layout's step") {
  // Megatron layouts are scored by the Megatron-Core model with the system's fitted
  // constants (dgx-h100 and gb200-nvl72 carry fits); dense with TP overlap on and off, MoE
  // with EP, expert-TP and FP8.
  int checked = 0, tight = 0;
  for (PlanRequest req : {Request("llama3.1-70b", "dgx-h100", 64, 8192, 128, Framework::kMegatronBridge),
                          Request("qwen3-30b-a3b", "gb200-nvl72", 16, 4096, 512, Framework::kMegatronBridge),
                          // MLA, CP of every cp_comm_type, Megatron FSDP and DDP, EP across
                          // nodes with the flex dispatchers, PP with VPP and MTP.
                          SearchingDispatchers(Request("deepseek-v3", "dgx-h100", 256, 4096, 1024, Framework::kMegatronBridge))}) {
    req.setup.precision = Precision::kFp8;
    // DeepSeek-V3's walk is long: every 61st layout of all of it.
    const bool large = req.model.name == "deepseek-v3";
    if (!large) req.max_layouts = 100000;
    CheckBound(req, large ? 3000 : 1 << 30, checked, tight, large ? 61 : 1);
  }
  CHECK(checked > 1000);
  MESSAGE("bound > step/2 for " << tight << " of " << checked << " Megatron layouts");
  CHECK(tight > checked / 2);
}

TEST_CASE("cost: Evaluate reports the largest memory of all pipeline ranks") {
  // Evaluate skips ranks whose layers, embedding and head repeat an earlier rank's; the
  // skipped ranks hold fewer in-flight micro-batches. Check against every rank.
  for (const char* model : {"deepseek-v3", "llama3.1-70b", "qwen3-235b-a22b"}) {
    PlanRequest req;
    req.model = LoadModel(model);
    req.system = LoadSystem("dgx-h100");
    req.setup.num_gpus = 256;
    req.setup.seq_len = 4096;
    req.setup.global_batch = 512;
    req.max_layouts = 30000;
    const CostModel cm(req.model, req.system, req.setup);
    int checked = 0;
    for (const Layout& l : EnumerateLayouts(req)) {
      if (l.pp < 3) continue;
      double most = 0;
      for (const MemoryBreakdown& m : cm.RankMemories(ToCostView(l, cm.model(), cm.setup()))) most = std::max(most, m.Total());
      CHECK_MESSAGE(Score(cm, l).memory.Total() == most, Describe(l));
      ++checked;
    }
    CHECK(checked > 100);
  }
}
