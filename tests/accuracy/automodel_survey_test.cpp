// The published-runs survey's NeMo AutoModel rows (ids 117, 118, 119, 121: AutoModel
// docs/performance-summary.mdx, DGX-H100 BF16) are priced as AutoModel layouts, the ones of
// their benchmark recipes (recipes/automodel-benchmarks/), not as Megatron-Core layouts; and
// MaskedCrossEntropy(fp32_upcast=False), which those recipes set, is read and priced.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "accuracy/measured_cases.hpp"
#include "accuracy/published_runs.hpp"
#include "cost/memory.hpp"
#include "fixtures/plan_request.hpp"
#include "meshplan/accuracy.hpp"
#include "meshplan/diag.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/search.hpp"

using namespace meshplan;

TEST_CASE("memory: MaskedCrossEntropy without fp32_upcast keeps the loss buffers in the logits' dtype") {
  // bf16 logits 2 B + log_softmax output, nll grad and log_softmax grad at 2 B each.
  CHECK(cost::LogitsBytesPerTokenVocab(1, false, 2.0, false) == doctest::Approx(8));
  // TP 4 shards the held logits (2/4); with loss_parallel the loss buffers too (6/4).
  CHECK(cost::LogitsBytesPerTokenVocab(4, false, 2.0, false) == doctest::Approx(6.5));
  CHECK(cost::LogitsBytesPerTokenVocab(4, true, 2.0, false) == doctest::Approx(2.0));
  // The default upcast: 2 + 3 x 4; fp32 logits are 4 B with or without it.
  CHECK(cost::LogitsBytesPerTokenVocab(1, false, 2.0, true) == doctest::Approx(14));
  CHECK(cost::LogitsBytesPerTokenVocab(1, false, 4.0, false) == doctest::Approx(16));
}

TEST_CASE("memory: the loss's bytes per logit match MaskedCrossEntropy measured on H200 with and without fp32_upcast") {
  // tools/measure/loss_memory.py: peak allocated above the bf16 logits over forward + backward.
  std::ifstream in(test::kMeasuredDir + "h200_loss_memory.jsonl");
  REQUIRE(in.good());
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("environment")) continue;
    ++cases;
    const bool upcast = j.at("fp32_upcast").get<bool>();
    CAPTURE(line);
    const double predicted = cost::LogitsBytesPerTokenVocab(1, false, 2.0, upcast) - 2.0;  // less the logits
    CHECK(j.at("bytes_per_logit").get<double>() == doctest::Approx(predicted).epsilon(0.002));
  }
  CHECK(cases == 8);
}

TEST_CASE("recipe: AutoModel loss_fn fp32_upcast is read for MaskedCrossEntropy only") {
  const std::string dist = "distributed: {strategy: fsdp2}\nstep_scheduler: {global_batch_size: 8, local_batch_size: 1}\n";
  CHECK(ParseAutoModelRecipe(dist, "r.yaml", 8).layout.loss_fp32_upcast);
  CHECK_FALSE(ParseAutoModelRecipe(dist + "loss_fn: {_target_: nemo_automodel.components.loss.masked_ce.MaskedCrossEntropy, "
                                          "fp32_upcast: false}\n",
                                   "r.yaml", 8)
                  .layout.loss_fp32_upcast);
  // Another loss class: its own dtype handling is not MaskedCrossEntropy's; priced as the default.
  CHECK(ParseAutoModelRecipe(dist + "loss_fn: {_target_: some.OtherLoss, fp32_upcast: false}\n", "r.yaml", 8)
            .layout.loss_fp32_upcast);
  CHECK_THROWS_AS(ParseAutoModelRecipe(dist + "loss_fn: {fp32_upcast: maybe}\n", "r.yaml", 8), InputError);
}

TEST_CASE("validate: the survey's AutoModel rows are priced as their benchmark recipes' AutoModel layouts") {
  const auto qwen = accuracy::FindAutoModelBenchmark("qwen3-30b-a3b", "dgx-h100", 8);
  REQUIRE(qwen);
  CHECK(qwen->file == "recipes/automodel-benchmarks/qwen3_30b_a3b_8gpu.yaml");
  CHECK_FALSE(accuracy::FindAutoModelBenchmark("qwen3-30b-a3b", "dgx-h100", 16));

  ValidateRequest req;
  req.runs = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/published_runs_dev.csv";
  req.rank_top = 0;
  const ValidateReport report = Validate(req);
  int seen = 0;
  for (const ValidateRow& row : report.rows) {
    if (row.automodel_recipe.empty()) continue;
    ++seen;
    CAPTURE(row.label);
    REQUIRE(row.skip.empty());
    CHECK(row.layout.framework == FindFramework("automodel")->id);
    CHECK(row.layout.strategy == Strategy::kFsdp2);
    // MaskedCrossEntropy(fp32_upcast=False), or Nemotron 3 Ultra's FusedLinearCrossEntropy.
    const bool ultra = row.label.starts_with("#115 ");
    CHECK(row.layout.loss_fused_linear == ultra);
    if (!ultra) CHECK_FALSE(row.layout.loss_fp32_upcast);
    std::printf("%-28s %-52s %6.1f GiB %s\n", row.label.c_str(), row.automodel_recipe.c_str(),
                row.cost.memory.Total() / 1073741824.0, row.cost.fits ? "fits" : "predicted not to fit (it ran)");
    // The recipes' model.backend: the fake gate everywhere; hybridep where EP spans nodes
    // (DeepSeek-V3, GPT-OSS, Nemotron 3 Ultra), deepep for Kimi-K2 (EP 32 over 4 nodes),
    // Qwen3-30B and Nemotron 3 Nano (one node).
    CHECK(row.layout.am_backend.ConsecutiveExperts());
    const bool hybrid = row.label.starts_with("#117 ") || row.label.starts_with("#121 ") || ultra;
    CHECK(row.layout.am_backend.dispatcher == (hybrid ? AmDispatcher::kHybridEP : AmDispatcher::kDeepEP));
    if (row.label.starts_with("#117 ")) {  // PP 4 x EP 64, LBS 8 (AutoModel's published row), full AC
      CHECK(row.layout.pp == 4);
      CHECK(row.layout.ep == 64);
      CHECK(row.layout.dp == 64);
      CHECK(row.layout.local_batch_size == 8);
      CHECK(row.layout.recompute == Recompute::kFull);
      CHECK(row.layout.layers_per_stage == 2);
    }
    // These ran on 80 GB H100s: the three with activation checkpointing must be predicted below
    // the GPU's memory, and Qwen3-30B and Kimi-K2 fit at AutoModel's default headroom too.
    // DeepSeek-V3 (#117) holds 4.8 GiB of HybridEP buffers (EP 64 over 8 nodes: room for every
    // token of the group at one rank, cost::EpDispatcherBufferBytes) and comes out at 72 GiB,
    // inside the GPU but not inside the 10% headroom. GPT-OSS-120B (#121, no checkpointing) is
    // printed: its MoE activations are not measured.
    if (!row.label.starts_with("#121 ")) CHECK(row.cost.memory.Total() < 80e9);
    if (row.label.starts_with("#118 ") || row.label.starts_with("#119 ")) CHECK(row.cost.fits);
    // Nemotron 3 Nano (EP 8, LBS 4) and Ultra (EP 64, moe.reshard_after_forward true, fused
    // linear cross-entropy) ran with full AC on 80 GB: both fit at AutoModel's headroom.
    if (row.label.starts_with("#114 ") || ultra) CHECK(row.cost.fits);
  }
  CHECK(seen == 6);
}

TEST_CASE("plan: AutoModel layouts take the request's model.backend or else the learned gate and meshplan's dispatcher") {
  PlanRequest req = test::PresetRequest("deepseek-v3", "dgx-h100", 256, 4096, 512);
  req.max_layouts = 4000;
  req.threads = 1;
  int cross = 0, inside = 0;
  for (const Layout& l : automodel::Enumerate(req)) {
    CHECK_FALSE(l.am_backend.fake_balanced_gate);
    // deepep inside a node (8 GPUs), hybridep across (the rule the written recipe states).
    CHECK(l.am_backend.dispatcher == (l.ep > 8 ? AmDispatcher::kHybridEP : AmDispatcher::kDeepEP));
    (l.ep > 8 ? cross : inside) += 1;
  }
  CHECK(cross > 0);
  CHECK(inside > 0);
  // validate and check hand the recipe's backend to the search: every layout is priced with it.
  AmMoeBackend fake;
  fake.dispatcher = AmDispatcher::kDeepEP;
  fake.fake_balanced_gate = true;
  req.am_moe_backend = fake;
  for (const Layout& l : automodel::Enumerate(req)) {
    CHECK(l.am_backend.ConsecutiveExperts());
    CHECK(l.am_backend.dispatcher == AmDispatcher::kDeepEP);
  }
}

TEST_CASE("accuracy: Mixtral-8x7B under AutoModel is predicted below dense Llama 3.1 70B's MFU on the same GPUs") {
  // Measured: the Hugging Face Mixtral layer AutoModel trains spends 15.8 ms of eager kernels
  // beside 27.7 ms of GEMMs per 8192 tokens on H200 (tests/data/measured/h200_eager_profile_moe.jsonl),
  // a larger eager share than a dense layer's; AutoModel's dense Llama 70B runs at 39-40% MFU.
  for (int64_t gpus : {32, 64}) {
    CAPTURE(gpus);
    auto best_mfu = [&](const char* model) {
      PlanRequest req = test::PresetRequest(model, "dgx-h100", gpus, 4096, 512);
      req.top_n = 1;
      const PlanResult r = Plan(req);
      REQUIRE_FALSE(r.top.empty());
      return r.top.front().cost.mfu;
    };
    const double moe = best_mfu("mixtral-8x7b"), dense = best_mfu("llama3.1-70b");
    std::printf("%lld H100: Mixtral-8x7B MFU %.1f%%, Llama 3.1 70B %.1f%%\n", static_cast<long long>(gpus), 100 * moe,
                100 * dense);
    CHECK(moe < dense);
  }
}
