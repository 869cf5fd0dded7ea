// `check` through the library (CheckRecipe, planner/commands/check.cpp): verdicts of test recipes.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "meshplan/commands.hpp"
#include "meshplan/diag.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

CheckInput Recipe(const std::string& name, const std::string& model, int64_t gpus) {
  CheckInput in;
  in.recipe = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/recipes/" + name;
  in.setup.model = model;
  in.setup.system = "dgx-h100";
  in.setup.gpus = gpus;
  return in;
}

// plan's input for `model` on `gpus` DGX H100 GPUs, sequence `seq`, global batch `gbs`.
PlanInput H100Plan(const std::string& model, int64_t gpus, int64_t seq, int64_t gbs) {
  PlanInput p;
  p.model = model;
  p.system = "dgx-h100";
  p.gpus = gpus;
  p.seq_len = seq;
  p.global_batch = gbs;
  return p;
}

// check's comparison with the planner of plan's row `i` (0-based) of `plan` (a PlanInput `p`),
// written as plan writes it into `dir`.
PlanComparison RowAgainstPlan(const PlanInput& p, const PlanReport& plan, size_t i, const std::string& dir) {
  const Candidate& row = plan.result.top[i];
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/row" + std::to_string(i + 1) + ".yaml";
  std::ofstream(path) << RecipeYaml(row, plan.request, static_cast<int>(i + 1));
  CheckInput in;
  in.recipe = path;
  in.setup.model = p.model;
  in.setup.system = p.system;
  in.setup.gpus = *p.gpus;
  const CheckReport rep = CheckRecipe(in);
  REQUIRE(rep.documents.size() == 1);
  const CheckedDocument& d = rep.documents[0];
  REQUIRE(d.against_plan.has_value());
  CHECK(Describe(d.recipe.parsed.layout) == Describe(row.layout));
  return *d.against_plan;
}

}  // namespace

TEST_CASE("check: NVIDIA's Llama 3 70B Megatron-Bridge recipe passes every rule close to the memory limit") {
  const CheckReport rep = CheckRecipe(Recipe("mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml", "llama3-70b", 32));
  CHECK(rep.Status() == 0);
  CHECK_FALSE(rep.several);
  REQUIRE(rep.documents.size() == 1);
  const CheckedDocument& d = rep.documents[0];
  CHECK(d.error.empty());
  CHECK(d.failures.empty());
  CHECK(d.rules_checked == 81);  // 68 + the 2 Gated DeltaNet rows + the 5 context-parallel rows (rules_cp.cpp) + the 5 DeepSeek-V4 rows (rules_dsv4.cpp) + mb_deepep_ep_ranks
  const Layout& l = d.recipe.parsed.layout;
  CHECK(l.framework == Framework::kMegatronBridge);
  CHECK(l.tp == 4);
  CHECK(l.pp == 4);
  CHECK(l.vpp == 5);
  CHECK(l.cp == 2);
  CHECK(l.dp == 1);
  CHECK(d.recipe.request.setup.seq_len == 8192);    // the recipe's model.seq_length
  CHECK(d.recipe.request.setup.global_batch == 512);
  REQUIRE(d.cost.has_value());
  // 76.2 GiB predicted of 77.5 usable at Megatron-Bridge's 2% headroom (79.1 GiB less the
  // measured fragmentation of Megatron-Core's step with expandable segments): it fits.
  CHECK(d.recipe.request.setup.headroom == doctest::Approx(0.02));
  CHECK_FALSE(d.out_of_memory);
  CHECK(d.nearest.empty());
  REQUIRE(d.silently_off.size() == 1);
  CHECK(d.silently_off[0].find("nothing to overlap with data parallel size 1") != std::string::npos);
  // With the 10% headroom of the default allocator (71.2 GiB usable) it does not fit, and the
  // nearest layouts that do are proposed.
  CheckInput in = Recipe("mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml", "llama3-70b", 32);
  in.setup.headroom = 0.10;
  const CheckReport tight = CheckRecipe(in);
  REQUIRE(tight.documents.size() == 1);
  CHECK(tight.documents[0].out_of_memory);
  CHECK(tight.documents[0].nearest.size() == 3);
}

TEST_CASE("check: a Megatron-Bridge recipe whose expert grid does not divide the world fails its rule") {
  const CheckReport rep = CheckRecipe(Recipe("mbridge_broken_qwen3_30b_moe.yaml", "qwen3-30b-a3b", 16));
  CHECK(rep.Status() == 1);
  REQUIRE(rep.documents.size() == 1);
  const CheckedDocument& d = rep.documents[0];
  REQUIRE(d.failures.size() == 1);
  CHECK(d.failures[0].name == "mb_world_divisible_by_etp_ep_pp");
  CHECK(d.failures[0].message.find("set expert_tensor_parallel_size: 1") != std::string::npos);
  CHECK(d.recipe.parsed.layout.tp == 4);
  CHECK(d.recipe.parsed.layout.ep == 8);
  REQUIRE_FALSE(d.nearest.empty());
  // At Megatron-Bridge's 2% headroom TP 2 with expert-TP 1, EP 8 and micro-batch 2 fits (70.8
  // of 77.5 GiB) and is expected faster (12.4 s) than TP 1 with EP 8 (13.9 s, 74.9 GiB), which
  // is offered too.
  CHECK(d.nearest[0].candidate.layout.tp == 2);
  CHECK(d.nearest[0].candidate.layout.etp == 1);
  CHECK(d.nearest[0].candidate.layout.ep == 8);
  CHECK(d.nearest[0].candidate.cost.fits);
  bool tp1 = false;
  for (const auto& n : d.nearest) tp1 = tp1 || (n.candidate.layout.tp == 1 && n.candidate.layout.ep == 8);
  CHECK(tp1);
  CheckInput in = Recipe("mbridge_broken_qwen3_30b_moe.yaml", "qwen3-30b-a3b", 16);
  in.setup.headroom = 0.10;
  const CheckReport tight = CheckRecipe(in);
  REQUIRE(tight.documents.size() == 1);
  REQUIRE_FALSE(tight.documents[0].nearest.empty());
  // At 10% it does not fit (74.9 of 71.2): TP 1 spreads the experts over EP 16 instead.
  CHECK(tight.documents[0].nearest[0].candidate.layout.tp == 1);
  CHECK(tight.documents[0].nearest[0].candidate.layout.ep == 16);
  CHECK(tight.documents[0].nearest[0].candidate.cost.fits);
}

TEST_CASE("check: each document of several is judged and an unusable one reported") {
  CheckInput in = Recipe("automodel_two_documents_second_malformed.yaml", "llama3.1-8b", 8);
  in.setup.seq_len = 4096;
  const CheckReport rep = CheckRecipe(in);
  CHECK(rep.several);
  REQUIRE(rep.documents.size() == 2);
  CHECK(rep.documents[0].Status() == 0);
  CHECK(rep.documents[1].Status() == 2);
  CHECK_FALSE(rep.documents[1].error.empty());
  CHECK(rep.Status() == 2);
}

TEST_CASE("check: the other framework's version flag is refused") {
  CheckInput in = Recipe("mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml", "llama3-70b", 32);
  in.setup.releases.automodel = AutoModelVersion::kV04;
  CHECK_THROWS_WITH_AS(CheckRecipe(in),
                       doctest::Contains("expected only with an AutoModel layout, found a Megatron-Bridge one"),
                       InputError);
}

TEST_CASE("check: a recipe equal to one of plan's tied rows gets the rank plan prints with its tie") {
  // plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 256: its
  // first rows are tied (within the step band of the best, ordered by robustness: "1=", "2=", ...).
  PlanInput p = H100Plan("llama3.1-8b", 8, 4096, 256);
  const PlanReport plan = PlanLayouts(p);
  REQUIRE(plan.result.top.size() >= 3);
  REQUIRE(plan.result.top[1].risk.tie);
  // The 2= row is not the second fastest by expected step: many variants of other meshes are
  // faster (check said rank 18 when it counted them).
  const std::string dir = (std::filesystem::temp_directory_path() / "meshplan_check_rank_test").string();
  for (size_t i : {size_t{1}, size_t{2}}) {
    const PlanComparison cmp = RowAgainstPlan(p, plan, i, dir);
    CHECK(cmp.rank == static_cast<int64_t>(i + 1));
    CHECK(cmp.tie == plan.result.top[i].risk.tie);
    CHECK_FALSE(cmp.beyond);
  }
}

TEST_CASE("check: each of plan's first rows comes back with its own rank where variants of a mesh outrank others") {
  // plan --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 8192 --global-batch 512: its
  // table lists one layout per mesh; check compared with every variant and said 1= 2= 3= 5= 8= 11=.
  PlanInput p = H100Plan("llama3.1-70b", 32, 8192, 512);
  p.top = 6;
  const PlanReport plan = PlanLayouts(p);
  REQUIRE(plan.result.top.size() == 6);
  const std::string dir = (std::filesystem::temp_directory_path() / "meshplan_check_rank_70b_test").string();
  for (size_t i = 0; i < plan.result.top.size(); ++i) {
    CAPTURE(i);
    const PlanComparison cmp = RowAgainstPlan(p, plan, i, dir);
    CHECK(cmp.rank == static_cast<int64_t>(i + 1));
    CHECK(cmp.tie == plan.result.top[i].risk.tie);
  }
}

TEST_CASE("check: the more-GPUs hint prices the recipe at that GPU count as check itself does") {
  // Out of memory on 256 GPUs; the hint's layout at 1024 GPUs (DP 64) must carry the global
  // batch over DP 64 (Megatron-Bridge's local batch = global batch / DP under PP), so its
  // throughput is what check predicts for the same recipe on 1024 GPUs.
  const CheckReport rep = CheckRecipe(Recipe("mbridge_deepseek_v3_h100_256gpu_oom.yaml", "deepseek-v3", 256));
  REQUIRE(rep.documents.size() == 1);
  const CheckedDocument& d = rep.documents[0];
  CHECK(d.out_of_memory);
  REQUIRE(d.more_gpus.has_value());
  CHECK(d.more_gpus->gpus == 1024);
  CHECK(d.more_gpus->layout.dp == 64);
  CHECK(d.more_gpus->layout.local_batch_size == 4096 / 64);
  const CheckReport at = CheckRecipe(Recipe("mbridge_deepseek_v3_h100_256gpu_oom.yaml", "deepseek-v3", 1024));
  REQUIRE(at.documents.size() == 1);
  REQUIRE(at.documents[0].cost.has_value());
  CHECK(d.more_gpus->cost.tokens_per_s_per_gpu == doctest::Approx(at.documents[0].cost->tokens_per_s_per_gpu));
  CHECK(d.more_gpus->cost.memory.Total() == doctest::Approx(at.documents[0].cost->memory.Total()));
}
