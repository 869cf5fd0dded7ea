// Recipe functions with a pipeline-layout builder (DeepSeek-V3's _get_deepseek_v3_pipeline_layout):
// Megatron-Bridge's scripts/training/recipe_runner.py sync_model_pipeline_layout re-runs the
// builder after a PP or VP override that sets no model.pipeline_model_parallel_layout, and the
// builder raises for (PP, VP) pairs outside its table ((1,1), (4,1), (8,1), (4,2), (16,1), (8,2),
// (4,4) at Megatron-Bridge 067f987d). meshplan writes the split it priced as a layout for them.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "frameworks/megatron_bridge/recipe_functions.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

std::map<std::string, std::string> Overrides(const std::string& model, int64_t pp, int64_t vpp, MbPpSplit split) {
  PlanRequest req;
  req.model = LoadModel(model);
  req.system = LoadSystem("gb200-nvl72");
  req.framework = FindFramework("megatron-bridge")->id;
  req.setup.num_gpus = 72;
  req.setup.seq_len = 4096;
  req.setup.global_batch = 1024;
  Layout l;
  l.framework = req.framework;
  l.tp = 4;
  l.pp = pp;
  l.vpp = vpp;
  l.ep = 8;
  l.etp = 1;
  l.dp = 72 / (4 * pp);
  l.pp_split = split;
  l.mtp_layers = req.model.mtp_num_layers;
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : MegatronOverrides(l, req)) out[k] = v;
  return out;
}

}  // namespace

TEST_CASE("layout builder: the DeepSeek-V3 and Kimi-K2 recipes install one and the Qwen3 and Llama recipes do not") {
  using megatron_bridge::LayoutBuilderOf;
  CHECK(LayoutBuilderOf("deepseek_v3_pretrain_config") == "_get_deepseek_v3_pipeline_layout");
  // The perf recipe builds on deepseek_v3_pretrain_config(), which installs it.
  CHECK(LayoutBuilderOf("deepseek_v3_pretrain_256gpu_gb200_bf16_config") == "_get_deepseek_v3_pipeline_layout");
  // Not in the dumped table (its config needs remote code), but scanned from its source.
  CHECK(megatron_bridge::FindRecipeFunction("kimi_k2_pretrain_config") == nullptr);
  CHECK(LayoutBuilderOf("kimi_k2_pretrain_config") == "_get_kimi_k2_pipeline_layout");
  CHECK(LayoutBuilderOf("qwen3_30b_a3b_pretrain_config").empty());
  CHECK(LayoutBuilderOf("llama31_70b_pretrain_config").empty());
  CHECK(LayoutBuilderOf("no_such_config").empty());
}

TEST_CASE("layout builder: DeepSeek-V3 PP 9 (no builder entry) gets its accounted split written as a layout") {
  // 61 decoder layers + embedding + loss = 63 = 9 x 7: the first stage 6 decoders beside the
  // embedding, the last 6 beside the MTP layer and the loss (the accounted split priced).
  const auto o = Overrides("deepseek-v3", 9, 1, MbPpSplit::kAccountEmbeddingLoss);
  REQUIRE(o.count("model.pipeline_model_parallel_layout") == 1);
  const std::string v = o.at("model.pipeline_model_parallel_layout");
  const PpLayoutParse p = ParsePpLayoutString(v.substr(1, v.size() - 2));
  REQUIRE(p.ok);
  REQUIRE(p.stages.size() == 9);
  CHECK(p.stages.front() == "E" + std::string(6, 't'));
  for (size_t s = 1; s + 1 < p.stages.size(); ++s) CHECK(p.stages[s] == std::string(7, 't'));
  CHECK(p.stages.back() == std::string(6, 't') + "mL");
  // Megatron-Core refuses a layout beside account_for_* true (transformer_config.py).
  CHECK(o.at("model.account_for_embedding_in_pipeline_split") == "false");
  CHECK(o.at("model.account_for_loss_in_pipeline_split") == "false");
  // PP 1: the builder returns None for (1, 1); nothing is written.
  CHECK(Overrides("deepseek-v3", 1, 1, MbPpSplit::kEven).count("model.pipeline_model_parallel_layout") == 0);
  // Kimi-K2 (61 layers, no MTP) PP 9: the same split, without the MTP layer.
  const auto k = Overrides("kimi-k2", 9, 1, MbPpSplit::kAccountEmbeddingLoss);
  REQUIRE(k.count("model.pipeline_model_parallel_layout") == 1);
  CHECK(k.at("model.pipeline_model_parallel_layout") ==
        "\"Etttttt|ttttttt|ttttttt|ttttttt|ttttttt|ttttttt|ttttttt|ttttttt|ttttttL\"");
}

TEST_CASE("layout builder: a recipe without one keeps account_for_* and writes no layout") {
  // Qwen3-30B-A3B: 48 layers + 2 = 50 = 5 x 10, the accounted split.
  const auto o = Overrides("qwen3-30b-a3b", 5, 1, MbPpSplit::kAccountEmbeddingLoss);
  CHECK(o.count("model.pipeline_model_parallel_layout") == 0);
  CHECK(o.at("model.account_for_embedding_in_pipeline_split") == "true");
  CHECK(o.at("model.account_for_loss_in_pipeline_split") == "true");
}
