// For every row of mbridge_perf_dev.csv (Megatron-Bridge published performance configurations)
// whose model has a preset, the published layout (TP, PP, CP, VP, EP, MBS, FSDP or not) passes
// every Megatron rule and is produced by EnumerateLayouts. Rows without a preset are counted.
#include <set>
#include <doctest/doctest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "meshplan/framework.hpp"
#include "meshplan/search.hpp"
#include "frameworks/megatron_bridge/space.hpp"

using namespace meshplan;

namespace {

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

// "2 (4)" -> 2; "n/a" or "" -> fallback.
int64_t Num(const std::string& s, int64_t fallback) {
  if (s.empty() || s == "n/a") return fallback;
  return std::stoll(s);
}

std::string Preset(const std::string& model) {
  static const std::map<std::string, std::string> k = {
      {"LLAMA3_70B", "llama3-70b"},          {"LLAMA3.1_405B", "llama3.1-405b"}, {"LLAMA3_8B", "llama3-8b"},
      {"Qwen3_235B_a22B", "qwen3-235b-a22b"}, {"Qwen3_30B_a3B", "qwen3-30b-a3b"}, {"GPT OSS 120B", "gpt-oss-120b"},
      {"DeepSeekV3", "deepseek-v3"},          {"Kimi_K2", "kimi-k2"},               {"DeepSeekV4 Flash", "deepseek-v4-flash"},
      {"Nemotron_3_Nano", "nemotron-3-nano"}, {"Nemotron_3_Super", "nemotron-3-super"}, {"Nemotron_3_Ultra", "nemotron-3-ultra"}};
  std::string base = model.substr(0, model.find(" ("));
  auto it = k.find(base);
  return it == k.end() ? "" : it->second;
}

std::string System(const std::string& s) {
  if (s == "DGX-H100") return "dgx-h100";
  if (s == "DGX-B200") return "dgx-b200";
  if (s == "DGX-B300") return "dgx-b300";
  if (s == "DGX-GB200") return "gb200-nvl72";
  if (s == "DGX-GB300") return "gb300-nvl72";
  return "";
}

}  // namespace

TEST_CASE("megatron search: every published mbridge_perf_dev layout is valid and enumerated") {
  std::ifstream f(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/mbridge_perf_dev.csv");
  REQUIRE(f.good());
  std::string line;
  std::getline(f, line);
  int checked = 0, skipped = 0;
  std::map<std::string, int> skipped_models;
  std::map<std::string, ModelSpec> models;
  std::map<std::string, SystemSpec> systems;
  while (std::getline(f, line)) {
    const std::vector<std::string> c = Split(line);
    REQUIRE(c.size() >= 16);
    const std::string preset = Preset(c[2]);
    if (preset.empty()) {
      ++skipped;
      ++skipped_models[c[2]];
      continue;
    }
    CAPTURE(line);
    if (!models.count(preset)) models[preset] = LoadModel(preset);
    if (!systems.count(c[3])) systems[c[3]] = LoadSystem(System(c[3]));
    PlanRequest req;
    req.framework = Framework::kMegatronBridge;
    req.model = models[preset];
    req.system = systems[c[3]];
    req.setup.num_gpus = Num(c[4], 0);
    req.setup.global_batch = Num(c[6], 0);
    req.setup.seq_len = Num(c[8], 0);
    const bool fsdp = Num(c[9], 0) > 0;
    Layout l;
    l.framework = Framework::kMegatronBridge;
    l.tp = Num(c[10], 1);
    l.pp = Num(c[11], 1);
    l.cp = Num(c[12], 1);
    l.vpp = Num(c[13], 1);
    l.ep = Num(c[14], 1);
    l.etp = req.model.is_moe() && l.tp > 1 ? 1 : 0;  // published MoE recipes pin ETP 1
    l.dp = req.setup.num_gpus / (l.tp * l.pp * l.cp);
    l.sequence_parallel = l.tp > 1;
    l.use_distributed_optimizer = true;
    l.mb.use_megatron_fsdp = fsdp;
    const int64_t L = req.model.num_layers;
    l.pp_split = l.pp == 1 || L % l.pp == 0 ? MbPpSplit::kEven
                 : (L + 2) % l.pp == 0      ? MbPpSplit::kAccountEmbeddingLoss
                                            : MbPpSplit::kLayout;
    search::ApplyEmittedSettings(l, req.system);
    const int64_t mbs = Num(c[7], 1);
    SetMegatronMicroBatch(l, mbs, req.setup);
    RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
    const Rule* r = FirstFailure(ctx);
    CHECK_MESSAGE(r == nullptr, (r ? std::string(r->name) + ": " + r->explain(ctx) : std::string()));
    req.max_micro_batch = std::max<int64_t>(16, mbs);
    bool found = false;
    for (const Layout& e : EnumerateLayouts(req)) {
      if (e.tp == l.tp && e.pp == l.pp && e.cp == l.cp && e.vpp == l.vpp && e.ep == l.ep &&
          e.micro_batch() == mbs && e.mb.use_megatron_fsdp == fsdp && e.EffectiveEtp() == l.EffectiveEtp()) {
        found = true;
        break;
      }
    }
    CHECK(found);
    ++checked;
  }
  std::cout << "mbridge_perf_dev.csv: " << checked << " rows checked, " << skipped << " skipped (no preset):";
  for (const auto& [m, n] : skipped_models) std::cout << " " << m << " x" << n;
  std::cout << "\n";
  CHECK(checked == 168);  // every row, the hybrid Nemotron 3 and DeepSeek-V4 Flash ones included
  CHECK(skipped == 0);
}

TEST_CASE("megatron search: plan searches the dispatchers the GPU runs with the recipe function own first") {
  // DGX H100 (compute capability 9): DeepEP and HybridEP both run (Megatron-Bridge
  // validate_flex_dispatcher_backend), so an alltoall recipe gets both flex backends besides.
  MbRuntime own;
  own.ep_a2a_overlap = Tri::kTrue;
  const std::vector<MbRuntime> h100 = search::DispatcherChoices(own, LoadSystem("dgx-h100").gpu);
  REQUIRE(h100.size() == 3);
  CHECK(h100[0].dispatcher == MbDispatcher::kAlltoall);
  CHECK(h100[1].dispatcher == MbDispatcher::kFlex);
  CHECK(h100[1].flex_backend == MbFlexBackend::kHybridEP);
  CHECK(h100[2].flex_backend == MbFlexBackend::kDeepEP);
  for (const MbRuntime& rt : h100) CHECK(rt.ep_a2a_overlap == Tri::kTrue);  // the other settings kept
  // GB200 ("NVIDIA GB200", compute capability 10): DeepEP is not built for it; a HybridEP
  // recipe keeps HybridEP first and gets alltoall besides.
  own.dispatcher = MbDispatcher::kFlex;
  own.flex_backend = MbFlexBackend::kHybridEP;
  const std::vector<MbRuntime> gb200 = search::DispatcherChoices(own, LoadSystem("gb200-nvl72").gpu);
  REQUIRE(gb200.size() == 2);
  CHECK(gb200[0].flex_backend == MbFlexBackend::kHybridEP);
  CHECK(gb200[1].dispatcher == MbDispatcher::kAlltoall);
}

TEST_CASE("megatron search: a request with fixed software settings keeps its dispatcher") {
  PlanRequest req;
  req.framework = Framework::kMegatronBridge;
  req.model = LoadModel("qwen3-30b-a3b");
  req.system = LoadSystem("dgx-h100");
  req.setup.num_gpus = 16;
  req.setup.seq_len = 4096;
  req.setup.global_batch = 256;
  MbRuntime fixed;  // alltoall
  req.mb_runtime = fixed;
  for (const Layout& l : EnumerateLayouts(req)) {
    if (l.ep > 1) CHECK(l.mb.token_dispatcher == MbDispatcher::kAlltoall);
  }
  // Without it, plan's space holds the recipe function's own dispatcher only, unless asked to
  // search them (--search-dispatchers): then alltoall and both flex backends the H100 runs.
  req.mb_runtime.reset();
  auto dispatchers = [&req] {
    std::set<std::pair<int, int>> seen;
    for (const Layout& l : EnumerateLayouts(req)) {
      if (l.ep == 1) continue;
      seen.insert({int(l.mb.token_dispatcher), int(l.mb.flex_backend)});
      if (l.mb.token_dispatcher == MbDispatcher::kFlex) CHECK(l.mb.flex_backend != MbFlexBackend::kNone);
    }
    return seen;
  };
  CHECK(dispatchers().size() == 1);
  req.mb_search_dispatchers = true;
  const std::set<std::pair<int, int>> searched = dispatchers();
  CHECK(searched.size() == 3);
  CHECK(searched.count({int(MbDispatcher::kAlltoall), int(MbFlexBackend::kNone)}) == 1);
  CHECK(searched.count({int(MbDispatcher::kFlex), int(MbFlexBackend::kDeepEP)}) == 1);
  CHECK(searched.count({int(MbDispatcher::kFlex), int(MbFlexBackend::kHybridEP)}) == 1);
}
