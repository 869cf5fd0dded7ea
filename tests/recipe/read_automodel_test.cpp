// Reading an AutoModel recipe (planner/frameworks/automodel/recipe_read.cpp): integer fields as AutoModel's
// config loader reads them.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fixtures/input_error.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

std::string Recipe(const std::string& tp, const std::string& local_batch) {
  return "step_scheduler:\n  global_batch_size: 64\n  local_batch_size: " + local_batch +
         "\ndistributed:\n  strategy: fsdp2\n  tp_size: " + tp + "\n";
}

}  // namespace

TEST_CASE("read_automodel: integer fields refuse floats and read quoted integers as AutoModel does") {
  // components/config/loader.py translate_value turns the string "2" into the integer 2.
  for (const std::string tp : {"2", "\"2\"", "'2'"}) {
    CAPTURE(tp);
    const ParsedRecipe r = ParseAutoModelRecipe(Recipe(tp, "\"4\""), "a.yaml", 16);
    CHECK(r.layout.tp == 2);
    CHECK(r.layout.dp == 8);
    CHECK(r.layout.local_batch_size == 4);
    CHECK(r.global_batch == 64);
  }
  // A float stays a float (plain, or quoted: literal_eval("2.0") is 2.0), which the device mesh
  // cannot take: refused at the key.
  for (const std::string tp : {"2.0", "\"2.0\"", "2e0"}) {
    CAPTURE(tp);
    const InputError e = test::ErrorOf([&] { (void)ParseAutoModelRecipe(Recipe(tp, "4"), "a.yaml", 16); });
    CHECK(e.loc().file == "a.yaml");
    CHECK(e.loc().line == 6);
    CHECK(e.loc().column == 3);
    CHECK(e.field() == "distributed.tp_size");
    CHECK(e.message() == "expected an integer, found '" + std::string(tp[0] == '"' ? "2.0" : tp) + "' (a float; write 2)");
  }
  const InputError e = test::ErrorOf([&] { (void)ParseAutoModelRecipe(Recipe("2", "4.5"), "a.yaml", 16); });
  CHECK(e.field() == "step_scheduler.local_batch_size");
  CHECK(e.loc().line == 3);
  CHECK(e.message() == "expected an integer, found '4.5'");
}

TEST_CASE("read_automodel: a key meshplan reads is refused outside its section") {
  // tp_size under step_scheduler: was read as tp 1 (StepSchedulerConfig raises for it in AutoModel).
  struct Case {
    std::string text, field, message;
    int line, column;
  };
  const std::string base = "distributed:\n  strategy: fsdp2\nstep_scheduler:\n  global_batch_size: 64\n  local_batch_size: 2\n";
  for (const Case& c : std::vector<Case>{
           {base + "  tp_size: 8\n", "step_scheduler.tp_size",
            "expected tp_size under distributed:, found it under step_scheduler:", 6, 3},
           {base + "  pp_microbatch_size: 1\n", "step_scheduler.pp_microbatch_size",
            "expected pp_microbatch_size under distributed.pipeline:, found it under step_scheduler:", 6, 3},
           {base + "tp_size: 8\n", "tp_size", "expected tp_size under distributed:, found it at the top level", 6, 1},
           {base + "seq_len: 4096\n", "seq_len", "expected seq_len under dataset:, found it at the top level", 6, 1},
           {"distributed:\n  strategy: fsdp2\n  local_batch_size: 2\n", "distributed.local_batch_size",
            "expected local_batch_size under step_scheduler:, found it under distributed:", 3, 3},
           {"distributed:\n  pp_size: 2\n  pp_schedule: 1f1b\n  pipeline: {}\n", "distributed.pp_schedule",
            "expected pp_schedule under distributed.pipeline:, found it under distributed:", 3, 3},
           {"distributed:\n  pp_size: 2\n  pipeline:\n    tp_size: 2\n", "distributed.pipeline.tp_size",
            "expected tp_size under distributed:, found it under distributed.pipeline:", 4, 5},
       }) {
    CAPTURE(c.text);
    const InputError e = test::ErrorOf([&] { (void)ParseAutoModelRecipe(c.text, "a.yaml", 16); });
    CHECK(e.loc().line == c.line);
    CHECK(e.loc().column == c.column);
    CHECK(e.field() == c.field);
    CHECK(e.message() == c.message);
  }
  // step_scheduler.dp_size is a runtime argument AutoModel expects there (dropped since 0.5), and
  // sections meshplan does not read keep any key (model: passes its keys to from_pretrained).
  const ParsedRecipe r = ParseAutoModelRecipe(base + "  dp_size: 8\n  max_steps: 10\nmodel:\n  tp_size: 2\n"
                                                     "validation_dataset:\n  seq_len: 1024\n",
                                              "a.yaml", 16);
  CHECK(r.layout.tp == 1);
  CHECK(r.layout.dp == 16);
}

TEST_CASE("read_automodel: model.backend gives the MoE dispatcher and the fake gate as BackendConfig takes them") {
  const std::string base = Recipe("1", "4") + "  ep_size: 8\n";
  // No backend: BackendConfig's defaults with DeepEP installed: deepep, the learned gate.
  {
    const Layout l = ParseAutoModelRecipe(base, "a.yaml", 8).layout;
    CHECK(l.am_backend.dispatcher == AmDispatcher::kDeepEP);
    CHECK_FALSE(l.am_backend.fake_balanced_gate);
    CHECK_FALSE(l.am_backend.ConsecutiveExperts());
  }
  // The benchmark recipes' backend (examples/llm_benchmark/deepseek/deepseek_v3_te_deepep.yaml).
  {
    const ParsedRecipe r = ParseAutoModelRecipe(
        base + "model:\n  _target_: nemo_automodel.NeMoAutoModelForCausalLM.from_config\n  backend:\n"
               "    _target_: nemo_automodel.components.models.common.BackendConfig\n    attn: te\n    experts: torch_mm\n"
               "    dispatcher: hybridep\n    dispatcher_num_sms: 64\n    fake_balanced_gate: true\n"
               "    enable_fsdp_optimizations: true\n",
        "a.yaml", 8);
    CHECK(r.layout.am_backend.dispatcher == AmDispatcher::kHybridEP);
    CHECK(r.layout.am_backend.ConsecutiveExperts());
  }
  // Noise above 0 spreads the fake gate's choice like a learned gate's.
  {
    const Layout l = ParseAutoModelRecipe(base + "model: {backend: {dispatcher: torch, fake_balanced_gate: true, "
                                                 "fake_gate_noise: 0.3}}\n",
                                          "a.yaml", 8)
                         .layout;
    CHECK(l.am_backend.dispatcher == AmDispatcher::kTorch);
    CHECK(l.am_backend.fake_balanced_gate);
    CHECK_FALSE(l.am_backend.ConsecutiveExperts());
  }
  // uccl_ep: priced with DeepEP's figures, and the recipe's notes say so.
  {
    const ParsedRecipe r = ParseAutoModelRecipe(base + "model: {backend: {dispatcher: uccl_ep}}\n", "a.yaml", 8);
    CHECK(r.layout.am_backend.dispatcher == AmDispatcher::kUcclEp);
    REQUIRE(r.defaults_used.size() == 1);
    CHECK(r.defaults_used[0].find("DeepEP's published bandwidths") != std::string::npos);
  }
  // An unknown dispatcher, an unknown BackendConfig field and a noise out of [0, 1] are refused at the key.
  {
    const InputError e = test::ErrorOf(
        [&] { (void)ParseAutoModelRecipe(base + "model:\n  backend:\n    dispatcher: DeepEP\n", "a.yaml", 8); });
    CHECK(e.field() == "model.backend.dispatcher");
    CHECK(e.loc().line == 10);
    CHECK(std::string(e.what()).find("torch, deepep, hybridep, uccl_ep, mok") != std::string::npos);
  }
  {
    const InputError e = test::ErrorOf(
        [&] { (void)ParseAutoModelRecipe(base + "model:\n  backend:\n    fake_balanced_gates: true\n", "a.yaml", 8); });
    CHECK(e.field().find("fake_balanced_gates") != std::string::npos);
  }
  CHECK_THROWS_AS(ParseAutoModelRecipe(base + "model: {backend: {fake_gate_noise: 1.5}}\n", "a.yaml", 8), InputError);
  CHECK_THROWS_AS(ParseAutoModelRecipe(base + "model: {backend: hybridep}\n", "a.yaml", 8), InputError);
}
