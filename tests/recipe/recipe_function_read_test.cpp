// check reads a Megatron-Bridge override file as overrides of its recipe function: the three
// recipe shapes Megatron-Bridge's own code refused at start-up (acceptance run on meshplan
// fc8ee2b, Megatron-Bridge 067f987d / Megatron-LM d98e8a64) are refused here with a named rule or
// an input error that says what to write.
#include <doctest/doctest.h>

#include <algorithm>

#include "meshplan/diag.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/rules.hpp"

using namespace meshplan;

namespace {

std::vector<std::string> Failing(const ParsedRecipe& p, const ModelSpec& m, const SystemSpec& sys, int64_t gpus) {
  TrainSetup s{gpus, p.seq_len > 0 ? p.seq_len : 4096, p.global_batch};
  RuleContext ctx{m, s, p.layout, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  std::vector<std::string> names;
  for (const Rule* r : AllFailures(ctx)) names.emplace_back(r->name);
  return names;
}

bool Has(const std::vector<std::string>& v, const char* name) { return std::find(v.begin(), v.end(), std::string(name)) != v.end(); }

}  // namespace

TEST_CASE("recipe function: a Llama key written flat is refused and the nested path named") {
  const char* text = "model:\n  tensor_model_parallel_size: 4\ntrain:\n  global_batch_size: 128\n";
  try {
    ParseMegatronRecipe(text, "l.yaml", 32, nullptr, "llama31_70b_pretrain_config");
    FAIL("accepted");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("l.yaml:2:3") != std::string::npos);
    CHECK(what.find("write it as model.transformer.tensor_model_parallel_size") != std::string::npos);
  }
  // Nested, as the recipe's GPTModelConfig takes it: read as the model's TP.
  const ParsedRecipe ok = ParseMegatronRecipe("model:\n  transformer:\n    tensor_model_parallel_size: 4\n", "l.yaml", 32,
                                              nullptr, "llama31_70b_pretrain_config");
  CHECK(ok.layout.tp == 4);
  // Without a recipe function, both forms read (the file alone does not say which it is for).
  CHECK(ParseMegatronRecipe(text, "l.yaml", 32).layout.tp == 4);
  CHECK_THROWS_AS(ParseMegatronRecipe(text, "l.yaml", 32, nullptr, "no_such_recipe_config"), InputError);
}

TEST_CASE("recipe function: Qwen3-235B-A22B PP 2 x VPP 47 takes the recipe's account_for_* split and fails") {
  const ModelSpec m = LoadModel("qwen3-235b-a22b");
  const SystemSpec sys = LoadSystem("dgx-h100");
  const char* text =
      "model:\n  tensor_model_parallel_size: 1\n  pipeline_model_parallel_size: 2\n"
      "  virtual_pipeline_model_parallel_size: 47\n  context_parallel_size: 1\n  sequence_parallel: false\n"
      "  expert_model_parallel_size: 8\ntrain:\n  global_batch_size: 1024\n  micro_batch_size: 1\n";
  // 94 layers + embedding + loss = 96 = 2 x 48: 48 per rank is not a multiple of 47
  // (transformer_config.py: "number of layers on each pipeline rank: 48 ... must be divisible by 47").
  const ParsedRecipe with = ParseMegatronRecipe(text, "q.yaml", 128, &m, "qwen3_235b_a22b_pretrain_config");
  CHECK(with.layout.pp_split == MbPpSplit::kAccountEmbeddingLoss);
  CHECK(Has(Failing(with, m, sys, 128), "mb_vpp_divides_layers"));
  // Written explicitly false (as plan writes it): 94 / 2 = 47 per rank, one layer per virtual stage.
  const ParsedRecipe plain = ParseMegatronRecipe(
      std::string(text).replace(std::string(text).find("  expert_model"), 0,
                                "  account_for_embedding_in_pipeline_split: false\n  account_for_loss_in_pipeline_split: false\n"),
      "q.yaml", 128, &m, "qwen3_235b_a22b_pretrain_config");
  CHECK_FALSE(Has(Failing(plain, m, sys, 128), "mb_vpp_divides_layers"));
}

TEST_CASE("recipe function: Qwen3-30B-A3B full recompute under the recipe's Transformer Engine CUDA graphs fails") {
  const ModelSpec m = LoadModel("qwen3-30b-a3b");
  const SystemSpec sys = LoadSystem("dgx-h100");
  const char* text =
      "model:\n  tensor_model_parallel_size: 1\n  expert_model_parallel_size: 8\n  recompute_granularity: full\n"
      "  recompute_method: uniform\n  recompute_num_layers: 1\ntrain:\n  global_batch_size: 128\n  micro_batch_size: 1\n";
  const ParsedRecipe p = ParseMegatronRecipe(text, "q.yaml", 8, &m, "qwen3_30b_a3b_pretrain_config");
  CHECK(p.layout.mb.cuda_graph == MbCudaGraph::kTransformerEngine);
  CHECK(Has(Failing(p, m, sys, 8), "mb_cuda_graph_recompute"));
  REQUIRE(p.defaults_used.size() == 1);
  CHECK(p.defaults_used[0].find("model.cuda_graph_impl=transformer_engine") != std::string::npos);
  // The header meshplan writes names the recipe function: the same reading without --mb-recipe.
  const std::string headed = std::string("# recipe function: qwen3_30b_a3b_pretrain_config (its override paths)\n") + text;
  CHECK(Has(Failing(ParseMegatronRecipe(headed, "q.yaml", 8, &m), m, sys, 8), "mb_cuda_graph_recompute"));
  // With CUDA graphs off, as plan writes a full-recompute layout, the rule passes.
  const ParsedRecipe off = ParseMegatronRecipe(std::string(text) + "", "q.yaml", 8, &m, "");
  CHECK_FALSE(Has(Failing(off, m, sys, 8), "mb_cuda_graph_recompute"));
}
