// Fuzz target: the search entry point as `meshplan plan` drives it. The first 16 bytes are
// the command-line numbers (GPU count, sequence length, global batch, presets, strategies,
// top, micro-batch, headroom); the rest, if not empty, is a model file that replaces the
// preset when it parses. Each search has a 2 s deadline, as --max-seconds gives.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "meshplan/commands.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/search.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 16) return 0;
  static const std::vector<std::string> models = [] {
    std::vector<std::string> out;
    for (const std::string& n : meshplan::ListModelPresets()) {
      if (!meshplan::LoadModel(n).is_hybrid()) out.push_back(n);  // hybrid presets: refused by plan
    }
    return out;
  }();
  static const std::vector<std::string> systems = meshplan::ListSystems();
  auto u32 = [&](size_t i) { return uint32_t(data[i]) | uint32_t(data[i + 1]) << 8 | uint32_t(data[i + 2]) << 16; };
  meshplan::PlanInput o;
  o.model = models[data[0] % models.size()];
  o.system = systems[data[1] % systems.size()];
  o.gpus = data[2] & 0x80 ? int64_t(u32(3)) % (1 << 21) : data[3];  // 0..2^21: also out of range
  o.seq_len = int64_t{1} << (data[6] % 26);
  o.global_batch = data[7] & 0x80 ? int64_t(u32(8)) : data[8];
  o.precision = data[11] & 1 ? meshplan::Precision::kFp8 : meshplan::Precision::kBf16;
  if (data[11] & 2) o.releases.automodel = meshplan::AutoModelVersion::kV04;
  if (data[11] & 4) o.strategies.push_back(meshplan::Strategy::kFsdp2);
  if (data[11] & 8) o.strategies.push_back(meshplan::Strategy::kMegatronFsdp);
  if (data[11] & 16) o.strategies.push_back(meshplan::Strategy::kDdp);
  o.top = 1 + data[12] % 8;
  o.max_micro_batch = 1 + data[13] % 64;
  o.headroom = data[14] / 255.0 * 0.9;
  o.max_seconds = 2;
  try {
    meshplan::PlanRequest req = meshplan::BuildPlanRequest(o);
    if (size > 16) {
      std::string_view text(reinterpret_cast<const char*>(data + 16), size - 16);
      req.model = meshplan::ParseModel(text, "fuzz.json");
      if (req.model.is_hybrid()) return 0;  // refused by LoadInputs: no cost-model terms
    }
    const meshplan::PlanResult r = meshplan::Plan(req);
    if (!r.top.empty()) {
      (void)meshplan::RankTable(r, req);
      (void)meshplan::RecipesYaml(r, req);
      (void)meshplan::ResultJson(r, req);
    }
  } catch (const meshplan::InputError&) {
  }
  return 0;
}
