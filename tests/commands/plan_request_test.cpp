// Building a plan's search request (BuildPlanRequest, planner/commands/request.cpp) and a plan
// through the library (PlanLayouts).
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "meshplan/commands.hpp"
#include "meshplan/diag.hpp"
#include "frameworks/megatron_bridge/space.hpp"

using namespace meshplan;

namespace {

PlanInput Llama8b() {
  PlanInput in;
  in.model = "llama3.1-8b";
  in.system = "dgx-h100";
  in.gpus = 8;
  in.seq_len = 4096;
  in.global_batch = 64;
  return in;
}

// The field and message of the InputError that building `in` throws.
std::pair<std::string, std::string> BuildError(const PlanInput& in, const PointSource& source = {}) {
  try {
    BuildPlanRequest(in, source);
  } catch (const InputError& e) {
    return {e.field(), e.message()};
  }
  FAIL("expected an InputError");
  return {};
}

}  // namespace

TEST_CASE("plan request: the GPU count is required and in range and a whole number of nodes (named --gpus)") {
  PlanInput in = Llama8b();
  in.gpus.reset();
  CHECK(BuildError(in) == std::pair<std::string, std::string>{"--gpus", "--gpus is required (or give --sweep-gpus)"});
  in.gpus = 0;
  CHECK(BuildError(in) == std::pair<std::string, std::string>{"--gpus", "expected an integer in [1, 1048576], found 0"});
  in.gpus = 12;  // dgx-h100 has 8 GPUs per node
  CHECK(BuildError(in) == std::pair<std::string, std::string>{
                              "--gpus", "expected a multiple of the 8 GPUs per node of dgx-h100 (or at most one node), found 12"});
  // A sweep point names its option and itself.
  CHECK(BuildError(in, {"--sweep-gpus", "point 12: ", "--seq-len", ""}).first == "--sweep-gpus");
  CHECK(BuildError(in, {"--sweep-gpus", "point 12: ", "--seq-len", ""}).second.rfind("point 12: expected a multiple", 0) == 0);
}

TEST_CASE("plan request: the other framework's version is refused and the own one applies") {
  PlanInput in = Llama8b();
  in.releases.mbridge = MBridgeVersion::kCore015;
  CHECK(BuildError(in) == std::pair<std::string, std::string>{
                              "--mbridge-version", "expected only with --framework megatron-bridge, found --framework automodel"});
  in.framework = Framework::kMegatronBridge;
  const PlanRequest req = BuildPlanRequest(in);
  CHECK(req.framework == Framework::kMegatronBridge);
  CHECK(req.mb_version == MBridgeVersion::kCore015);
  CHECK(req.version == AutoModelVersion::kV05);
  CHECK(req.model.name == "llama3.1-8b");
  CHECK(req.system.name == "dgx-h100");
  CHECK(req.setup.num_gpus == 8);
  CHECK(req.setup.seq_len == 4096);
  CHECK(req.setup.global_batch == 64);
  CHECK(req.deadline != std::chrono::steady_clock::time_point::max());
}

TEST_CASE("plan request: --recompute-modules searches the recompute_modules sets of the loaded model") {
  PlanInput in = Llama8b();
  in.model = "deepseek-v3";
  in.gpus = 64;
  in.global_batch = 1024;
  in.framework = Framework::kMegatronBridge;
  in.recompute_modules = true;
  const PlanRequest req = BuildPlanRequest(in);
  // The MLA / MoE sets (mla_up_proj, moe_act, ...), not the dense model's [mlp] alone, which a
  // request built before its model was loaded searched.
  const std::vector<uint32_t> sets = search::SearchedRecomputeModules(LoadModel("deepseek-v3"));
  CHECK(sets.size() > 1);
  CHECK(req.mb_recompute_module_sets == sets);
  CHECK(req.mb_recompute_module_sets != std::vector<uint32_t>{kRecomputeMlp});
}

TEST_CASE("plan: a plan through the library gives ranked layouts and no warning") {
  PlanInput in = Llama8b();
  in.top = 2;
  const PlanReport rep = PlanLayouts(in);
  CHECK(rep.failure.empty());
  CHECK(rep.warnings.empty());
  REQUIRE(rep.result.top.size() == 2);
  CHECK(rep.request.top_n == 2);
  for (const Candidate& c : rep.result.top) CHECK(c.layout.tp * c.layout.pp * c.layout.cp * c.layout.dp == 8);
  // Too small a global batch for any layout: the failure says so, with its kind.
  in.global_batch = 7;
  in.strategies = {Strategy::kDdp};
  const PlanReport none = PlanLayouts(in);
  CHECK(none.result.top.empty());
  CHECK(none.failure_kind == "no_valid_layout");
  CHECK(none.failure.find("global_batch_divisible") != std::string::npos);
}

TEST_CASE("sweep: every point is planned and a point with no layout is said") {
  PlanInput in = Llama8b();
  in.gpus.reset();
  in.sweep_gpus = {8, 16};
  const SweepReport rep = SweepLayouts(in);
  REQUIRE(rep.points.size() == 2);
  CHECK(rep.points[0].gpus == 8);
  CHECK(rep.points[1].gpus == 16);
  CHECK(rep.points[1].request.setup.num_gpus == 16);
  CHECK(rep.points[1].request.top_n == 1);
  CHECK(rep.points[0].result.top.size() == 1);
  CHECK(rep.Failure().empty());
  in.gpus = 8;
  CHECK_THROWS_WITH_AS(PrepareSweep(in), doctest::Contains("give either --gpus or --sweep-gpus"), InputError);
}

TEST_CASE("sweep: points searched at once give each point's own plan and are reported in order") {
  // SearchSweepPoints runs several points at a time; each point alone (SearchSweepPoint on this
  // thread, the search's default thread count) must give the same best layout, step and counts.
  PlanInput in = Llama8b();
  in.gpus.reset();
  in.sweep_gpus = {8, 16, 32, 64, 24};
  SweepReport together = PrepareSweep(in);
  std::vector<size_t> reported;
  SearchSweepPoints(together, in, [&](size_t i) {
    CHECK(together.points[i].result.valid > 0);  // searched before it is reported
    reported.push_back(i);
  });
  CHECK(reported == std::vector<size_t>{0, 1, 2, 3, 4});
  SweepReport alone = PrepareSweep(in);
  for (SweepPoint& p : alone.points) SearchSweepPoint(p, in);
  for (size_t i = 0; i < alone.points.size(); ++i) {
    CAPTURE(alone.points[i].gpus);
    const PlanResult& a = together.points[i].result;
    const PlanResult& b = alone.points[i].result;
    REQUIRE(a.top.size() == 1);
    REQUIRE(b.top.size() == 1);
    CHECK(a.top[0].cost.step_seconds == b.top[0].cost.step_seconds);
    CHECK(Describe(a.top[0].layout) == Describe(b.top[0].layout));
    CHECK(a.valid == b.valid);
    CHECK(a.tested == b.tested);
    CHECK(a.pruned == b.pruned);
  }
  // A report that throws (a front end's write failing): no later point is reported, and the
  // error reaches the caller once the points' searches have stopped.
  SweepReport again = PrepareSweep(in);
  reported.clear();
  try {
    SearchSweepPoints(again, in, [&](size_t i) {
      reported.push_back(i);
      if (i == 1) throw std::runtime_error("write failed");
    });
    reported.push_back(100);
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "write failed");
    reported.push_back(99);
  }
  CHECK(reported == std::vector<size_t>{0, 1, 99});
}
