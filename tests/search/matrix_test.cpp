// Issue "meshplan plan ... end to end": plan answers for every preset on every listed system
// at 8, 32, 64 and 1024 GPUs, and every recipe it emits, read back as AutoModel reads it,
// passes every rule.
#include <doctest/doctest.h>

#include "meshplan/recipe.hpp"

using namespace meshplan;

TEST_CASE("search: every preset x system x GPU count answers - emitted recipes pass every rule") {
  const char* models[] = {"llama3.1-8b",  "llama3.1-70b",  "llama3.1-405b",   "mixtral-8x7b", "mixtral-8x22b",
                          "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-120b"};
  const char* systems[] = {"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "mi300x-8"};
  int answered_with_recipes = 0, answered_no_fit = 0;
  for (const char* model : models) {
    const ModelSpec spec = LoadModel(model);
    for (const char* system : systems) {
      const SystemSpec sys = LoadSystem(system);
      for (int64_t gpus : {8, 32, 64, 1024}) {
        PlanRequest req;
        req.model = spec;
        req.system = sys;
        req.setup.num_gpus = gpus;
        req.setup.seq_len = 4096;
        req.setup.global_batch = 4 * gpus;
        req.top_n = 3;
        CAPTURE(model);
        CAPTURE(system);
        CAPTURE(gpus);
        const PlanResult r = Plan(req);
        REQUIRE(r.valid > 0);
        REQUIRE(r.least_memory.has_value());
        if (r.fitting == 0) {
          ++answered_no_fit;
          CHECK(r.least_memory->cost.memory.Total() > r.least_memory->cost.capacity_bytes);
          continue;
        }
        ++answered_with_recipes;
        for (size_t i = 0; i < r.top.size(); ++i) {
          const Layout& want = r.top[i].layout;
          const std::string yaml = AutoModelRecipeYaml(r.top[i], req, static_cast<int>(i + 1));
          const ParsedRecipe back = ParseAutoModelRecipe(yaml, "emitted", gpus);
          const Layout& got = back.layout;
          CAPTURE(yaml);
          CHECK(back.global_batch == req.setup.global_batch);
          CHECK(got.strategy == want.strategy);
          CHECK(got.tp == want.tp);
          CHECK(got.pp == want.pp);
          CHECK(got.cp == want.cp);
          CHECK(got.ep == want.ep);
          CHECK(got.dp == want.dp);
          CHECK(got.dp_replicate == want.dp_replicate);
          CHECK(got.local_batch_size == want.local_batch_size);
          CHECK(got.sequence_parallel == want.sequence_parallel);
          CHECK(got.recompute == want.recompute);
          if (want.pp > 1) {
            CHECK(got.pp_schedule == want.pp_schedule);
            CHECK(got.pp_microbatch_size == want.pp_microbatch_size);
            CHECK(SplitStages(spec.num_layers, got).num_stages == SplitStages(spec.num_layers, want).num_stages);
          }
          TrainSetup setup = req.setup;
          setup.global_batch = back.global_batch;
          const Rule* f = FirstFailure({spec, setup, got, req.version});
          CHECK_MESSAGE(f == nullptr, std::string(f ? f->name : ""));
        }
      }
    }
  }
  // Most combinations have a recipe; the rest are the honest "does not fit" answers
  // (for example 405B or DeepSeek-V3 on 8 GPUs).
  CHECK(answered_with_recipes > answered_no_fit);
  MESSAGE("answered with recipes: " << answered_with_recipes << ", no layout fits: " << answered_no_fit);
}

TEST_CASE("recipe: AutoModel reader follows parse_distributed_section") {
  const char* text = R"(
step_scheduler: {global_batch_size: 128, local_batch_size: 4}
distributed:
  strategy: fsdp2
  dp_size: 2
  tp_size: 4
  cp_size: 1
  pp_size: 4
  sequence_parallel: false
  activation_checkpointing: true
  mp_policy: {_target_: torch.distributed.fsdp.MixedPrecisionPolicy, param_dtype: bfloat16}
  pipeline:
    pp_schedule: interleaved1f1b
    pp_microbatch_size: 1
    layers_per_stage: 4
    scale_grads_in_schedule: false
    round_virtual_stages_to_pp_multiple: up
    dtype: bf16
packed_sequence: {packed_sequence_size: 4096}
)";
  // automodel.md 1.5 A (llama3_70b_pretrain.yaml), 32 GPUs.
  const ParsedRecipe r = ParseAutoModelRecipe(text, "llama3_70b_pretrain.yaml", 32);
  CHECK(r.global_batch == 128);
  CHECK(r.layout.tp == 4);
  CHECK(r.layout.pp == 4);
  CHECK(r.layout.dp == 2);
  CHECK(r.layout.recompute == Recompute::kFull);
  CHECK(r.layout.pp_schedule == PpSchedule::kInterleaved1F1B);
  CHECK(r.layout.stage_rounding == StageRounding::kUp);
  TrainSetup s;
  s.num_gpus = 32;
  s.seq_len = 4096;
  s.global_batch = r.global_batch;
  const ModelSpec m = LoadModel("llama3.1-70b");
  CHECK(FirstFailure({m, s, r.layout}) == nullptr);

  // Strict keys: sequence_parallel is not a DDP option.
  try {
    ParseAutoModelRecipe("distributed: {strategy: ddp, sequence_parallel: false}\nstep_scheduler: {global_batch_size: 8, local_batch_size: 1}\n",
                         "r.yaml", 8);
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("r.yaml:1:") != std::string::npos);
    CHECK(std::string(e.what()).find("Unknown options for strategy 'ddp': ['sequence_parallel']") != std::string::npos);
  }
  // pp_size > 1 without a pipeline block.
  try {
    ParseAutoModelRecipe("distributed: {pp_size: 2}\nstep_scheduler: {global_batch_size: 8, local_batch_size: 2}\n",
                         "r.yaml", 8);
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("no distributed.pipeline block") != std::string::npos);
  }
}
