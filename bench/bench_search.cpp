// Layouts scored per second per core, and wall time, for fixed planning problems
// (issue "Search the whole layout space at interactive speed").
//
// Each plan benchmark runs the full Plan() of one problem, with 1 and 2 search threads. Counters:
//   considered  layouts or subtrees tested by the rules (PlanResult::enumerated)
//   scored      layouts that passed every rule and were costed (PlanResult::valid)
//   pruned      subtrees cut by branch-and-bound (PlanResult::pruned)
//   skipped%    the share of the layouts an unpruned search scores (PlanRequest::prune false)
//               that branch-and-bound leaves unscored
//   scored/s/core  scored layouts per CPU-second of the process
//   bare/s/core    layouts generated per CPU-second by the walk alone (ForEachLayout: the mesh
//                  and feature rules, no scoring), the limit a search could reach
//   x_bare      CPU time per scored layout / CPU time per generated layout
//   peak_MB     the benchmark process's peak resident memory so far (getrusage)
// Check_* runs CheckRecipe (`meshplan check`) of an invalid recipe with its nearest layouts and
// Sweep_* SweepLayouts (`plan --sweep-gpus`) of 10 GPU counts, whole commands less their
// printing, on every hardware thread (their requests use the default thread count).
#include <benchmark/benchmark.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>
#include <thread>

#include "meshplan/commands.hpp"
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

double PeakMegabytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: kilobytes
}

// Layouts generated per CPU-second by the walk alone (no scoring), with req's thread count.
double BareRate(const PlanRequest& req) {
  int64_t n = 0;
  const std::clock_t cpu0 = std::clock();
  ForEachLayout(req, [&n](const Layout& l) {
    benchmark::DoNotOptimize(l.tp);
    ++n;
    return true;
  });
  const double cpu_s = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  return cpu_s > 0 ? static_cast<double>(n) / cpu_s : 0.0;
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
  PlanRequest unpruned = req;
  unpruned.prune = false;
  const int64_t all = Plan(unpruned).valid;
  state.counters["skipped%"] = all > 0 ? 100.0 * (1.0 - static_cast<double>(r.valid) / static_cast<double>(all)) : 0.0;
  // Per core = per CPU-second of the whole process (all search threads), so a loaded
  // machine does not inflate or deflate it the way wall time would.
  const double rate = cpu_s > 0 ? static_cast<double>(r.valid) * state.iterations() / cpu_s : 0.0;
  state.counters["scored/s/core"] = rate;
  const double bare = BareRate(req);
  state.counters["bare/s/core"] = bare;
  state.counters["x_bare"] = rate > 0 ? bare / rate : 0.0;
  state.counters["peak_MB"] = PeakMegabytes();
}

// A Megatron-Bridge recipe for DeepSeek-V3 with EP 48 (NVIDIA's TP 2, PP 16 layout string of
// tests/data/recipes/mbridge_1_9b_deepseek_v3_pretrain_1024gpu_h100.yaml): 48 divides neither
// the 256 experts nor, with PP 16, the 2048 GPUs.
constexpr const char* kDeepSeekEp48 =
    "model: {tensor_model_parallel_size: 2, pipeline_model_parallel_size: 16, virtual_pipeline_model_parallel_size: null,\n"
    "        context_parallel_size: 1, expert_model_parallel_size: 48, expert_tensor_parallel_size: 1, sequence_parallel: true,\n"
    "        seq_length: 4096, mtp_num_layers: 1,\n"
    "        pipeline_model_parallel_layout: \"Etttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tmL\",\n"
    "        moe_token_dispatcher_type: alltoall}\n"
    "train: {global_batch_size: 4096, micro_batch_size: 1}\n"
    "ddp: {use_distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true}\n";

// The same with EP 64 and micro-batch 8: valid, above the usable memory (nearest layouts and
// the comparison with the planner's search).
std::string DeepSeekTooLarge() {
  std::string s = kDeepSeekEp48;
  s.replace(s.find("expert_model_parallel_size: 48"), 30, "expert_model_parallel_size: 64");
  s.replace(s.find("micro_batch_size: 1"), 19, "micro_batch_size: 8");
  return s;
}

void RunCheck(benchmark::State& state, const std::string& recipe, const char* model, int64_t gpus) {
  char path[] = "/tmp/meshplan_bench_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0 || write(fd, recipe.data(), recipe.size()) != static_cast<ssize_t>(recipe.size())) {
    state.SkipWithError("cannot write the recipe file");
    return;
  }
  close(fd);
  CheckInput in;
  in.recipe = path;
  in.setup.model = model;
  in.setup.system = "dgx-h100";
  in.setup.gpus = gpus;
  size_t nearest = 0;
  for (auto _ : state) {
    const CheckReport rep = CheckRecipe(in);
    nearest = rep.documents.empty() ? 0 : rep.documents[0].nearest.size();
    benchmark::DoNotOptimize(nearest);
  }
  std::remove(path);
  state.counters["nearest"] = static_cast<double>(nearest);
  state.counters["peak_MB"] = PeakMegabytes();
}

void RunSweep(benchmark::State& state, const char* model, Framework fw, std::vector<int64_t> gpus, int64_t seq,
              int64_t gbs) {
  PlanInput in;
  in.model = model;
  in.system = "dgx-h100";
  in.framework = fw;
  in.seq_len = seq;
  in.global_batch = gbs;
  in.sweep_gpus = std::move(gpus);
  int64_t scored = 0;
  const std::clock_t cpu0 = std::clock();
  for (auto _ : state) {
    const SweepReport rep = SweepLayouts(in);
    scored = 0;
    for (const SweepPoint& p : rep.points) scored += p.result.valid;
    benchmark::DoNotOptimize(scored);
  }
  const double cpu_s = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  state.counters["scored"] = static_cast<double>(scored);
  state.counters["scored/s/core"] = cpu_s > 0 ? static_cast<double>(scored) * state.iterations() / cpu_s : 0.0;
  state.counters["peak_MB"] = PeakMegabytes();
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

void Check_DeepSeekV3_EP48_2048xH100_MBridge(benchmark::State& state) { RunCheck(state, kDeepSeekEp48, "deepseek-v3", 2048); }
BENCHMARK(Check_DeepSeekV3_EP48_2048xH100_MBridge)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();
void Check_DeepSeekV3_TooLarge_2048xH100_MBridge(benchmark::State& state) {
  RunCheck(state, DeepSeekTooLarge(), "deepseek-v3", 2048);
}
BENCHMARK(Check_DeepSeekV3_TooLarge_2048xH100_MBridge)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

// 10 GPU counts, DeepSeek-V3 at seq 4096 (the benchmark problems' model and setup).
const std::vector<int64_t> kSweepGpus = {256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};
void Sweep_DeepSeekV3_10xGpus_AutoModel(benchmark::State& state) {
  RunSweep(state, "deepseek-v3", Framework::kAutoModel, kSweepGpus, 4096, 8192);
}
BENCHMARK(Sweep_DeepSeekV3_10xGpus_AutoModel)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();
void Sweep_DeepSeekV3_10xGpus_MBridge(benchmark::State& state) {
  RunSweep(state, "deepseek-v3", Framework::kMegatronBridge, kSweepGpus, 4096, 8192);
}
BENCHMARK(Sweep_DeepSeekV3_10xGpus_MBridge)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

BENCHMARK_MAIN();
