// AutoModel's own MoE layers (GPT-OSS, Qwen3-MoE, DeepSeek-V3) against one layer's saved
// tensors measured on one H200 by tools/measure/automodel_moe_memory.py
// (tests/data/measured/h200_automodel_moe_memory.jsonl: AutoModel 36044ad built from
// models/<name>.json at 1 and 2 decoder layers, bf16, experts torch_mm, fake balanced gate,
// PyTorch attention and norms; the forward's allocator growth at 2 layers less at 1). The
// "pytorch" profile's per-token layer bytes without checkpointing must be within 5% of each.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "cost/memory.hpp"
#include "meshplan/model.hpp"

using namespace meshplan;

TEST_CASE("memory: AutoModel's own MoE layers' saved tensors as measured on H200") {
  std::ifstream in(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/measured/h200_automodel_moe_memory.jsonl");
  REQUIRE(in.good());
  std::string line;
  int cases = 0;
  double worst = 0;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (!j.contains("kind") || j.at("kind") != "per_layer") continue;
    const std::string name = j.at("model");
    const ModelSpec m = LoadModel(name);
    const double measured = j.at("bytes_per_token");
    const double predicted = cost::LayerActivationBytes(m, /*moe_layer=*/true, Recompute::kNone).PerRank(1, false);
    const double err = predicted / measured - 1.0;
    std::printf("AutoModel MoE layer %-14s %6d tokens: measured %9.0f B/token, predicted %9.0f (%+.1f%%)\n",
                name.c_str(), int(j.at("tokens")), measured, predicted, 100.0 * err);
    CHECK(std::fabs(err) <= 0.05);
    worst = std::max(worst, std::fabs(err));
    ++cases;
  }
  CHECK(cases == 8);
  std::printf("AutoModel MoE layers: %d cases, largest |error| %.1f%%\n", cases, 100.0 * worst);
}
