// Fuzz target: the AutoModel recipe reader (used by `check` and `explain`) and everything a
// read recipe is handed to: every rule's check and explanation, the stage split, and the
// cost model when the layout is valid. The first 4 bytes choose the world size, the model
// preset, sequence length and precision; the rest is the recipe text.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "meshplan/framework.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/hardware.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/rules.hpp"

namespace {
const std::vector<meshplan::ModelSpec>& Models() {
  static const std::vector<meshplan::ModelSpec> models = [] {
    std::vector<meshplan::ModelSpec> out;
    for (const std::string& n : meshplan::ListModelPresets()) {
      meshplan::ModelSpec m = meshplan::LoadModel(n);
      if (!m.is_hybrid()) out.push_back(std::move(m));  // hybrid presets: refused by check
    }
    return out;
  }();
  return models;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  static const meshplan::SystemSpec system = meshplan::LoadSystem("dgx-h100");
  const auto& models = Models();
  // World size 1..2^20 with small values likely; seq_len 1..2^24.
  const int64_t gpus = data[0] < 200 ? data[0] + 1 : (int64_t{1} << (data[0] % 21)) * (1 + data[1] % 3);
  const meshplan::ModelSpec& model = models[data[1] % models.size()];
  const int64_t seq_len = int64_t{1} << (data[2] % 25);
  std::string_view text(reinterpret_cast<const char*>(data + 4), size - 4);
  meshplan::ParsedRecipe r;
  try {
    r = meshplan::ParseAutoModelRecipe(text, "fuzz.yaml", gpus > (1 << 20) ? 1 << 20 : gpus);
  } catch (const meshplan::InputError&) {
    return 0;
  }
  meshplan::TrainSetup setup;
  setup.num_gpus = gpus > (1 << 20) ? 1 << 20 : gpus;
  setup.seq_len = seq_len;
  setup.global_batch = r.global_batch;
  setup.precision = data[3] & 1 ? meshplan::Precision::kFp8 : meshplan::Precision::kBf16;
  for (auto v : {meshplan::AutoModelVersion::kV05, meshplan::AutoModelVersion::kV04}) {
    meshplan::RuleContext ctx{model, setup, r.layout, v};
    for (const meshplan::Rule* rule : meshplan::AllFailures(ctx)) (void)rule->explain(ctx);
    if (!meshplan::FirstFailure(ctx)) {
      meshplan::CostModel cm(model, system, setup);
      meshplan::Cost c = Score(cm, r.layout);
      if (c.step_seconds < 0) __builtin_trap();
    }
  }
  (void)meshplan::Describe(r.layout);
  (void)meshplan::SplitStages(model.num_layers, r.layout);
  return 0;
}
