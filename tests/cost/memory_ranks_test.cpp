// The megatron-bridge profile prices every pipeline rank from its own layers, tables and
// in-flight micro-batches, and the output rank's loss at the loss kernel's bytes; a published
// row without a recipe-settings entry takes its performance recipe function's settings.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cost/cost_fixtures.hpp"
#include "frameworks/megatron_bridge/recipe_functions.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;
using test::Rel;

namespace {

// Llama-3-70B on 32 H100s: TP 8 (SP), PP 4, MBS 1, GBS 128 at 8192 tokens, with `extra` model keys.
Layout Read70b(const std::string& extra) {
  const std::string text =
      "model:\n  tensor_model_parallel_size: 8\n  pipeline_model_parallel_size: 4\n  sequence_parallel: true\n"
      "  seq_length: 8192\n" + extra + "train: {global_batch_size: 128, micro_batch_size: 1}\n"
      "ddp: {use_distributed_optimizer: true}\n";
  return ParseMegatronRecipe(text, "r.yaml", 32).layout;
}

}  // namespace

TEST_CASE("memory ranks: a pipeline layout is as heavy as its heaviest rank and not its average") {
  const ModelSpec m = test::Llama3_70B();
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(32, 8192, 128);
  const CostModel cm(m, sys, setup);
  const Layout l = Read70b("");
  const std::vector<MemoryBreakdown> r = cm.RankMemories(ToCostView(l, cm.model(), cm.setup()));
  REQUIRE(r.size() == 4);
  // 20 decoder layers each; rank 0 holds the embedding, rank 3 the output layer and final norm.
  const double table = 8192.0 * 129024.0 / 8.0;  // h·V/t, V = 128256 padded to 128·8
  CHECK(r[0].weights - r[1].weights == Rel(2.0 * table));
  CHECK(r[3].weights - r[1].weights == Rel(2.0 * (table + 8192.0)));
  // 1F1B: rank r holds 4 - r micro-batches in flight, so activations fall 4 : 3 : 2 : 1 apart
  // from the estimator's per-pipeline terms.
  CHECK(r[0].activations / r[3].activations == doctest::Approx(4.0).epsilon(0.02));
  CHECK(r[1].activations / r[3].activations == doctest::Approx(3.0).epsilon(0.02));
  // Only the output rank keeps the loss's logits: one micro-batch of 8192 tokens, V/t each at 4
  // bytes (native fused cross-entropy, Megatron-Core's default), plus the final norm and output
  // layer inputs (2h each, sequence-parallel over t).
  CHECK(r[0].logits == 0.0);
  CHECK(r[3].logits == Rel(8192.0 * (4.0 * 8192.0 / 8.0 + 129024.0 * 4.0 / 8.0)));
  const Cost c = Score(cm, l);
  double heaviest = 0;
  for (const MemoryBreakdown& x : r) heaviest = std::max(heaviest, x.Total());
  CHECK(c.memory.Total() == heaviest);
  CHECK(c.memory.Total() == r[0].Total());
}

TEST_CASE("memory ranks: TE's parallel cross-entropy keeps the bf16 logits at 2 bytes each instead of 4") {
  const ModelSpec m = test::Llama3_70B();
  const CostModel cm(m, test::DgxH100(), test::Setup(32, 8192, 128));
  const Layout native = Read70b("");
  const Layout te = Read70b("  cross_entropy_fusion_impl: te\n");
  const Layout unfused = Read70b("  cross_entropy_loss_fusion: false\n  cross_entropy_fusion_impl: te\n");
  CHECK(!native.mb.te_cross_entropy);
  CHECK(te.mb.te_cross_entropy);
  CHECK(!unfused.mb.te_cross_entropy);
  const auto logits = [&](const Layout& l) { return cm.RankMemories(ToCostView(l, cm.model(), cm.setup()))[3].logits; };
  CHECK(logits(native) - logits(te) == Rel(8192.0 * 129024.0 * 2.0 / 8.0));
  CHECK(logits(unfused) == logits(native));
  // Another value is refused with the field named.
  CHECK_THROWS_WITH_AS(Read70b("  cross_entropy_fusion_impl: apex\n"),
                       doctest::Contains("cross_entropy_fusion_impl"), InputError);
}

TEST_CASE("memory ranks: a published row's recipe function gives its offloading and gradient dtype") {
  // Megatron-Bridge perf_recipes/llama/gb200/llama3.py llama3_70b_pretrain_64gpu_gb200_fp8cs_config
  // (067f987d): Megatron FSDP, cpu_offloading_num_layers 40, grad_reduce_in_fp32 false.
  const std::string name = megatron_bridge::PerfRecipeFunctionName("llama3-70b", "gb200-nvl72", "fp8cs", 64);
  CHECK(name == "llama3_70b_pretrain_64gpu_gb200_fp8cs_config");
  const megatron_bridge::RecipeFunction* fn = megatron_bridge::FindRecipeFunction(name);
  REQUIRE(fn != nullptr);
  const recipe::PerfRecipeSettings s = megatron_bridge::PerfSettingsOfRecipeFunction(*fn, LoadSystem("gb200-nvl72"));
  CHECK(s.cpu_offloading_num_layers == 40);
  CHECK(!s.runtime.grad_reduce_in_fp32);
  CHECK(s.recompute == Recompute::kNone);
  // DeepSeek-V3 on 256 B200, MXFP8: selective recompute of mla_up_proj and mlp, flex dispatcher
  // with DeepEP (B200 takes it), EP overlap on.
  const megatron_bridge::RecipeFunction* ds =
      megatron_bridge::FindRecipeFunction(megatron_bridge::PerfRecipeFunctionName("deepseek-v3", "dgx-b200", "fp8mx", 256));
  REQUIRE(ds != nullptr);
  const recipe::PerfRecipeSettings d = megatron_bridge::PerfSettingsOfRecipeFunction(*ds, LoadSystem("dgx-b200"));
  CHECK(d.recompute == Recompute::kSelective);
  CHECK(d.recompute_modules == (kRecomputeMlaUpProj | kRecomputeMlp));
  CHECK(d.runtime.dispatcher == MbDispatcher::kFlex);
  CHECK(d.runtime.flex_backend == MbFlexBackend::kDeepEP);
  CHECK(d.runtime.ep_a2a_overlap == Tri::kTrue);
  // No function for a preset or system Megatron-Bridge has none for.
  CHECK(megatron_bridge::PerfRecipeFunctionName("mixtral-8x7b", "dgx-h100", "bf16", 64).empty());
  CHECK(megatron_bridge::PerfRecipeFunctionName("llama3-70b", "mi300x-8", "bf16", 64).empty());
}

TEST_CASE("memory ranks: the precision-aware optimizer keeps fp32 master remainders and bf16 moments in 6 bytes") {
  const ModelSpec m = test::Llama3_70B();
  const CostModel cm(m, test::DgxH100(), test::Setup(32, 8192, 128));
  auto read = [](const std::string& optimizer) {
    const std::string text =
        "model:\n  tensor_model_parallel_size: 8\n  pipeline_model_parallel_size: 4\n  sequence_parallel: true\n"
        "  seq_length: 8192\ntrain: {global_batch_size: 128, micro_batch_size: 1}\n"
        "ddp: {use_distributed_optimizer: true}\noptimizer: " + optimizer + "\n";
    return ParseMegatronRecipe(text, "r.yaml", 32).layout;
  };
  const Layout plain = read("{optimizer: adam}");
  const Layout aware = read("{use_precision_aware_optimizer: true, exp_avg_dtype: torch.bfloat16, "
                            "exp_avg_sq_dtype: torch.bfloat16, main_params_dtype: torch.float32}");
  const Layout no_remainders = read("{use_precision_aware_optimizer: true, exp_avg_dtype: bf16, "
                                    "exp_avg_sq_dtype: bf16, store_param_remainders: false}");
  CHECK(plain.mb.optimizer_state_bytes == 12.0);
  CHECK(aware.mb.optimizer_state_bytes == 6.0);          // int16 remainders + 2 + 2
  CHECK(no_remainders.mb.optimizer_state_bytes == 8.0);  // fp32 master + 2 + 2
  const auto opt = [&](const Layout& l) { return cm.RankMemories(ToCostView(l, cm.model(), cm.setup()))[1].optimizer; };
  CHECK(opt(aware) == Rel(opt(plain) * 6.0 / 12.0));
  // Megatron-Core's OptimizerConfig refuses these; so does the reader, naming the field.
  CHECK_THROWS_WITH_AS(read("{exp_avg_dtype: torch.bfloat16}"), doctest::Contains("optimizer.exp_avg_dtype"), InputError);
  CHECK_THROWS_WITH_AS(read("{use_precision_aware_optimizer: true, optimizer: sgd}"),
                       doctest::Contains("only supported with adam"), InputError);
  CHECK_THROWS_WITH_AS(read("{use_precision_aware_optimizer: true, exp_avg_dtype: torch.int3}"),
                       doctest::Contains("found 'torch.int3'"), InputError);
}

TEST_CASE("memory ranks: a hybrid model's MTP layer is priced in the scored layout as in its ranks") {
  // DeepSeek-V4 Flash (43 layers and one MTP layer of DeepSeek-V4 attention + MoE blocks,
  // ModelSpec::mtp_pattern) on 128 GB200, TP 1 PP 1 EP 64: the scored memory (CostModel::Evaluate,
  // through the CostTables' rank plan) is the one rank's memory as RankMemories prices it, with
  // the MTP layer's blocks on that rank (the rank plan's model copy had left mtp_pattern out,
  // 43 layers' worth instead of 44: 2.2% less on every term).
  const ModelSpec m = LoadModel("deepseek-v4-flash");
  REQUIRE(m.mtp_num_layers == 1);
  REQUIRE_FALSE(m.mtp_pattern.empty());
  const SystemSpec sys = LoadSystem("gb200-nvl72");
  const TrainSetup setup = test::Setup(128, 4096, 2048);
  const CostModel cm(m, sys, setup);
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.strategy = Strategy::kDdp;
  l.use_distributed_optimizer = true;
  l.ep = 64;
  l.etp = 1;
  l.dp = 128;
  l.mtp_layers = 1;
  SetMegatronMicroBatch(l, 1, setup);
  const CostView v = ToCostView(l, cm.model(), cm.setup());
  const std::vector<MemoryBreakdown> r = cm.RankMemories(v);
  REQUIRE(r.size() == 1);
  const Cost c = cm.Evaluate(v);
  CHECK(c.memory.Total() == doctest::Approx(r[0].Total()));
  CHECK(c.memory.activations == doctest::Approx(r[0].activations));
}
