// `explain` through the library (ExplainLayout, planner/commands/explain.cpp).
#include <doctest/doctest.h>

#include <string>

#include "meshplan/commands.hpp"
#include "meshplan/diag.hpp"

using namespace meshplan;

TEST_CASE("explain: a Megatron-Bridge recipe with PP 3 on 8 GPUs breaks its mesh rules and is not priced") {
  ExplainInput in;
  in.recipe = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/recipes/mbridge_pp3_8gpu.yaml";
  in.setup.model = "llama3.1-8b";
  in.setup.system = "dgx-h100";
  in.setup.gpus = 8;
  const ExplainReport rep = ExplainLayout(in);
  CHECK(rep.request.framework == Framework::kMegatronBridge);
  CHECK(rep.layout.tp == 1);
  CHECK(rep.layout.pp == 3);
  REQUIRE(rep.failures.size() == 3);
  CHECK(rep.failures[0].name == "mb_world_divisible_by_tp_pp_cp");
  CHECK(rep.failures[1].name == "mb_world_divisible_by_etp_ep_pp");
  CHECK(rep.failures[2].name == "mb_pp_divides_layers");
  CHECK(rep.failures[2].source == "MCore transformer/transformer_block.py:148-158");
  REQUIRE(rep.pipeline.has_value());
  CHECK(rep.pipeline->layers_per_rank == std::vector<int64_t>{11, 11, 10});
  CHECK(rep.pipeline->kind == PipelineSplit::Kind::kEven);
  CHECK_FALSE(rep.scorable);
  CHECK(rep.Status() == 1);
}

TEST_CASE("explain: an AutoModel layout from its keys is priced term by term") {
  ExplainInput in;
  in.setup.model = "llama3.1-8b";
  in.setup.system = "dgx-h100";
  in.setup.gpus = 8;
  in.setup.seq_len = 8192;
  in.setup.global_batch = 64;
  in.keys.local_batch = 2;
  in.keys.recompute = Recompute::kSelective;
  const ExplainReport rep = ExplainLayout(in);
  CHECK(rep.failures.empty());
  CHECK(rep.layout.dp == 8);  // inferred as AutoModel does
  CHECK(rep.scorable);
  CHECK(rep.memory_profile == "pytorch");
  CHECK(rep.rank_memory.size() == 1);
  CHECK(rep.cost.fits);
  CHECK(rep.cost.memory.Total() > 0);
  CHECK_FALSE(rep.compute.has_value());
  CHECK(rep.Status() == 0);
  // tp 3 does not divide 8 GPUs: dp cannot be inferred.
  in.keys.tp = 3;
  const ExplainReport bad = ExplainLayout(in);
  REQUIRE_FALSE(bad.failures.empty());
  CHECK(bad.failures[0].name == "axes_positive");
  // Without a recipe the global batch is required.
  in.setup.global_batch.reset();
  CHECK_THROWS_WITH_AS(ExplainLayout(in), doctest::Contains("required without --recipe"), InputError);
}
