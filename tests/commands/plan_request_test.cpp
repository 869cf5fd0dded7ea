// Building a plan's search request from what the user asked (planner/cli/plan.cpp MakePlanRequest).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "cli/commands.hpp"
#include "meshplan/search.hpp"
#include "search/megatron_space.hpp"

using namespace meshplan;

TEST_CASE("plan request: --recompute-modules searches the recompute_modules sets of the loaded model") {
  cli::PlanOptions o;
  o.model = "deepseek-v3";
  o.system = "dgx-h100";
  o.gpus = 64;
  o.seq_len = 4096;
  o.global_batch = 1024;
  o.framework = "megatron-bridge";
  o.recompute_modules = true;
  const PlanRequest req = cli::MakePlanRequest(o);
  // The MLA / MoE sets (mla_up_proj, moe_act, ...), not the dense model's [mlp] alone, which a
  // request built before its model was loaded searched.
  const std::vector<uint32_t> sets = search::SearchedRecomputeModules(LoadModel("deepseek-v3"));
  CHECK(sets.size() > 1);
  CHECK(req.mb_recompute_module_sets == sets);
  CHECK(req.mb_recompute_module_sets != std::vector<uint32_t>{kRecomputeMlp});
}
