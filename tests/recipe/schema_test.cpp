// Every key meshplan writes is one the framework's own configuration takes, at the path it
// takes it: Megatron-Bridge overrides against the recipe function's dumped config classes
// (recipes/megatron-bridge-recipe-functions.json), AutoModel keys against the strategy's config
// class, PipelineConfig, MoEParallelizerConfig and StepScheduler (recipes/automodel-schema.json).
// Both files are dumped from the frameworks' own code (tools/acceptance/).
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include "frameworks/automodel/schema.hpp"
#include "frameworks/megatron_bridge/recipe_functions.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

const char* kSystems[] = {"dgx-h100", "dgx-b200", "gb200-nvl72"};

PlanRequest Request(const std::string& model, const char* system, int64_t gpus, Framework fw) {
  PlanRequest req;
  req.model = LoadModel(model);
  req.system = LoadSystem(system);
  req.framework = fw;
  req.setup.num_gpus = gpus;
  req.setup.seq_len = 4096;
  req.setup.global_batch = 4 * gpus;
  req.top_n = 3;
  return req;
}

}  // namespace

TEST_CASE("schema: a planted wrong key fails (the wrong path and a typo)") {
  const auto* llama = megatron_bridge::FindRecipeFunction("llama31_70b_pretrain_config");
  const auto* qwen = megatron_bridge::FindRecipeFunction("qwen3_30b_a3b_pretrain_config");
  REQUIRE(llama != nullptr);
  REQUIRE(qwen != nullptr);
  // The Llama recipes' GPTModelConfig nests the TransformerConfig: the flat key is the
  // rejection Hydra gave every Llama launch ("Could not override 'model.tensor_model_parallel_size'").
  CHECK(llama->transformer_path == "model.transformer");
  CHECK_FALSE(megatron_bridge::SchemaProblem(*llama, "model.tensor_model_parallel_size", "4").empty());
  CHECK(megatron_bridge::SchemaProblem(*llama, "model.transformer.tensor_model_parallel_size", "4").empty());
  CHECK(megatron_bridge::OverridePath(llama, "model.tensor_model_parallel_size") ==
        "model.transformer.tensor_model_parallel_size");
  CHECK(megatron_bridge::OverridePath(llama, "model.seq_length") == "model.seq_length");  // a field of GPTModelConfig
  // Qwen3's provider takes the flat keys.
  CHECK(qwen->transformer_path == "model");
  CHECK(megatron_bridge::SchemaProblem(*qwen, "model.tensor_model_parallel_size", "4").empty());
  CHECK_FALSE(megatron_bridge::SchemaProblem(*qwen, "model.tensor_model_paralel_size", "4").empty());
  CHECK_FALSE(megatron_bridge::SchemaProblem(*qwen, "train.micro_batch_size", "true").empty());  // int | None
  CHECK_FALSE(megatron_bridge::SchemaProblem(*qwen, "trainer.micro_batch_size", "1").empty());
  CHECK(automodel::SchemaProblem("distributed", "tp_size", Strategy::kFsdp2).empty());
  CHECK(automodel::SchemaProblem("distributed", "sequence_parallel", Strategy::kFsdp2).empty());
  CHECK_FALSE(automodel::SchemaProblem("distributed", "sequence_paralel", Strategy::kFsdp2).empty());
  CHECK_FALSE(automodel::SchemaProblem("distributed.pipeline", "pp_micro_batch_size", Strategy::kFsdp2).empty());
  CHECK_FALSE(automodel::SchemaProblem("step_scheduler", "grad_acc_steps", Strategy::kFsdp2).empty());
}

TEST_CASE("schema: the recipe function's own settings are the table's") {
  const auto* qwen = megatron_bridge::FindRecipeFunction("qwen3_30b_a3b_pretrain_config");
  REQUIRE(qwen != nullptr);
  // recipes/qwen/h100/qwen3_moe.py (067f987d): TE CUDA graphs of the router, flex / HybridEP.
  CHECK(qwen->ModelValue("cuda_graph_impl") == "transformer_engine");
  CHECK(qwen->ModelValue("moe_token_dispatcher_type") == "flex");
  const MbRuntime h100 = megatron_bridge::RecipeRuntime(qwen, LoadSystem("dgx-h100"), nullptr);
  CHECK(h100.dispatcher == MbDispatcher::kFlex);
  CHECK(h100.flex_backend == MbFlexBackend::kHybridEP);
  CHECK(h100.cuda_graph == MbCudaGraph::kTransformerEngine);
  CHECK(h100.cuda_graph_scope == (kGraphMoeRouter | kGraphMoePreprocess));
  // Qwen3-235B's DeepEP is not built for GB200 (flex_dispatcher_backend.py): HybridEP, said so.
  const auto* big = megatron_bridge::FindRecipeFunction("qwen3_235b_a22b_pretrain_config");
  REQUIRE(big != nullptr);
  std::vector<std::string> notes;
  const MbRuntime gb = megatron_bridge::RecipeRuntime(big, LoadSystem("gb200-nvl72"), &notes);
  CHECK(gb.flex_backend == MbFlexBackend::kHybridEP);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("DeepEP") != std::string::npos);
  CHECK(megatron_bridge::RecipeRuntime(big, LoadSystem("dgx-h100"), nullptr).flex_backend == MbFlexBackend::kDeepEP);
  CHECK(big->CommOverlapNone());
  CHECK_FALSE(qwen->CommOverlapNone());
}

TEST_CASE("schema: every Megatron-Bridge override plan emits is in its recipe function's schema") {
  int checked = 0;
  for (const char* model : {"llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "llama3-8b", "qwen3-30b-a3b",
                            "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-20b", "gpt-oss-120b"}) {
    for (const char* system : kSystems) {
      for (int64_t gpus : {8, 64, 256}) {
        const PlanRequest req = Request(model, system, gpus, Framework::kMegatronBridge);
        const auto* fn = megatron_bridge::RecipeFunctionOf(req);
        CAPTURE(model);
        CAPTURE(system);
        CAPTURE(gpus);
        REQUIRE(fn != nullptr);
        const PlanResult r = Plan(req);
        for (const Candidate& c : r.top) {
          for (const auto& [key, value] : MegatronOverrides(c.layout, req)) {
            CAPTURE(key);
            CAPTURE(value);
            CHECK(megatron_bridge::SchemaProblem(*fn, key, value) == "");
            ++checked;
          }
        }
      }
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("schema: every AutoModel key plan emits is in AutoModel's schema") {
  int checked = 0;
  for (const char* model : {"llama3.1-8b", "llama3.1-70b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-20b"}) {
    for (const char* system : kSystems) {
      for (int64_t gpus : {8, 64, 256}) {
        const PlanRequest req = Request(model, system, gpus, Framework::kAutoModel);
        const PlanResult r = Plan(req);
        for (size_t i = 0; i < r.top.size(); ++i) {
          const YAML::Node y = YAML::Load(AutoModelRecipeYaml(r.top[i], req, static_cast<int>(i + 1)));
          const Strategy s = r.top[i].layout.strategy;
          CAPTURE(model);
          CAPTURE(system);
          CAPTURE(gpus);
          for (const auto& kv : y["distributed"]) {
            const std::string k = kv.first.Scalar();
            CHECK(automodel::SchemaProblem("distributed", k, s) == "");
            if ((k == "pipeline" || k == "moe") && kv.second.IsMap()) {
              for (const auto& inner : kv.second) {
                CHECK(automodel::SchemaProblem("distributed." + k, inner.first.Scalar(), s) == "");
              }
            }
            ++checked;
          }
          for (const auto& kv : y["step_scheduler"]) {
            CHECK(automodel::SchemaProblem("step_scheduler", kv.first.Scalar(), s) == "");
            ++checked;
          }
        }
      }
    }
  }
  CHECK(checked > 200);
}
