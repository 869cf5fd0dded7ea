// `explain` through the library (ExplainLayout, planner/commands/explain.cpp).
#include <doctest/doctest.h>

#include <string>

#include "meshplan/commands.hpp"
#include "meshplan/diag.hpp"

using namespace meshplan;

namespace {

// Llama 3.1 8B as FSDP2 dp 8 on 8 H100, sequences of 8192, global batch 64, local batch 2 (4
// gradient-accumulation steps), by its AutoModel keys.
ExplainInput Llama8bKeys(Recompute recompute) {
  ExplainInput in;
  in.setup.model = "llama3.1-8b";
  in.setup.system = "dgx-h100";
  in.setup.gpus = 8;
  in.setup.seq_len = 8192;
  in.setup.global_batch = 64;
  in.keys.local_batch = 2;
  in.keys.recompute = recompute;
  return in;
}

}  // namespace

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
  ExplainInput in = Llama8bKeys(Recompute::kSelective);
  in.defer_fsdp_grad_sync = false;  // as plan's recipes write it with gradient accumulation (4 steps here)
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

TEST_CASE("explain: defer_fsdp_grad_sync left unset is AutoModel's default true and a note says so") {
  // FSDP2 dp 8 with 4 gradient-accumulation steps (global batch 64, local batch 2): AutoModel's
  // FSDP2Config.defer_fsdp_grad_sync defaults to True (components/distributed/config.py), which
  // keeps the unsharded fp32 gradients across the steps: 29.9 GiB of gradients (4 bytes x 8.03e9
  // parameters) instead of the 1.9 GiB of sharded bf16 ones (72 GiB in all against 44).
  ExplainInput in = Llama8bKeys(Recompute::kFull);
  const ExplainReport by_default = ExplainLayout(in);
  in.defer_fsdp_grad_sync = true;
  const ExplainReport on = ExplainLayout(in);
  in.defer_fsdp_grad_sync = false;
  const ExplainReport off = ExplainLayout(in);
  CHECK(by_default.cost.memory.Total() == on.cost.memory.Total());
  CHECK((by_default.cost.memory.Total() - off.cost.memory.Total()) / 1073741824.0 > 20.0);
  const auto said = [](const ExplainReport& r) {
    for (const std::string& n : r.notes) {
      if (n.find("defer_fsdp_grad_sync: true priced (AutoModel's default") != std::string::npos) return true;
    }
    return false;
  };
  CHECK(said(by_default));
  CHECK_FALSE(said(on));
  CHECK_FALSE(said(off));
}
