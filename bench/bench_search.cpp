// Layouts scored per second per core, and wall time, for fixed planning problems
// (issue "Search the whole layout space at interactive speed").
//
// Each benchmark runs the full Plan() of one problem. Counters:
//   considered  layouts or subtrees tested by the rules (PlanResult::enumerated)
//   scored      layouts that passed every rule and were costed (PlanResult::valid)
//   pruned      subtrees cut by branch-and-bound (PlanResult::pruned)
//   scored/s/core  scored layouts per CPU-second of the process
#include <benchmark/benchmark.h>

#include <ctime>
#include <thread>

#include "meshplan/search.hpp"
#include "../tests/fixtures/plan_request.hpp"

using namespace meshplan;

namespace {

PlanRequest Problem(const char* model, const char* system, int64_t gpus, int64_t seq, int64_t gbs, Framework fw) {
  PlanRequest req = test::PresetRequest(model, system, gpus, seq, gbs);
  req.framework = fw;
  req.top_n = 5;
  req.max_micro_batch = 16;
  return req;
}

void RunPlan(benchmark::State& state, PlanRequest req) {
  req.threads = static_cast<int>(state.range(0));
  PlanResult r;
  const std::clock_t cpu0 = std::clock();
  for (auto _ : state) {
    r = Plan(req);
    benchmark::DoNotOptimize(r.top.data());
  }
  const double cpu_s = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  state.counters["considered"] = static_cast<double>(r.enumerated);
  state.counters["scored"] = static_cast<double>(r.valid);
  state.counters["pruned"] = static_cast<double>(r.pruned);
  // Per core = per CPU-second of the whole process (all search threads), so a loaded
  // machine does not inflate or deflate it the way wall time would.
  state.counters["scored/s/core"] = cpu_s > 0 ? static_cast<double>(r.valid) * state.iterations() / cpu_s : 0.0;
}

}  // namespace

#define MESHPLAN_BENCH(name, ...)                                                                      \
  static void name(benchmark::State& state) { RunPlan(state, Problem(__VA_ARGS__)); }                   \
  BENCHMARK(name)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime()

MESHPLAN_BENCH(Llama70B_32xH100_AutoModel, "llama3.1-70b", "dgx-h100", 32, 8192, 512, Framework::kAutoModel);
MESHPLAN_BENCH(Llama70B_32xH100_MBridge, "llama3.1-70b", "dgx-h100", 32, 8192, 512, Framework::kMegatronBridge);
MESHPLAN_BENCH(Llama405B_16384xH100_AutoModel, "llama3.1-405b", "dgx-h100", 16384, 8192, 16384, Framework::kAutoModel);
MESHPLAN_BENCH(Llama405B_16384xH100_MBridge, "llama3.1-405b", "dgx-h100", 16384, 8192, 16384, Framework::kMegatronBridge);
MESHPLAN_BENCH(DeepSeekV3_2048xH100_AutoModel, "deepseek-v3", "dgx-h100", 2048, 4096, 8192, Framework::kAutoModel);
MESHPLAN_BENCH(DeepSeekV3_2048xH100_MBridge, "deepseek-v3", "dgx-h100", 2048, 4096, 8192, Framework::kMegatronBridge);
MESHPLAN_BENCH(DeepSeekV3_16384xGB200_AutoModel, "deepseek-v3", "gb200-nvl72", 16384, 4096, 32768, Framework::kAutoModel);
MESHPLAN_BENCH(DeepSeekV3_16384xGB200_MBridge, "deepseek-v3", "gb200-nvl72", 16384, 4096, 32768, Framework::kMegatronBridge);

BENCHMARK_MAIN();
