// Predicted against published throughput for NeMo AutoModel's own benchmark rows
// (shared/reference/published_runs_dev.csv ids 117, 118, 119, 121: AutoModel
// docs/performance-summary, H100 80GB SXM, BF16, FSDP2 + EP, mock data, balanced gate).
// The published layouts (their benchmark recipes, model.backend included) must pass every
// rule; the error of each prediction is printed. The one-node row is held within 12%; the three
// whose EP spans nodes are predicted 18-32% too fast, with the mechanisms not yet priced named in
// docs/accuracy.md ("AutoModel's published benchmark"), so no bound is asserted on them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "accuracy/published_runs.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/search.hpp"

using namespace meshplan;

namespace {

struct Row {
  int id;
  const char* model;
  int64_t gpus, seq, gbs;
  double tokens_per_s_per_gpu;  // published
  double tflops_per_gpu;        // published model TFLOP/s per GPU
};

}  // namespace

TEST_CASE("accuracy: AutoModel published H100 rows - layouts valid and throughput error printed") {
  // Each run's layout and model.backend (dispatcher, fake gate) from its benchmark recipe
  // (recipes/automodel-benchmarks/, the published row's batch sizes).
  const std::vector<Row> rows = {
      {119, "qwen3-30b-a3b", 8, 4096, 512, 12040, 277},
      {121, "gpt-oss-120b", 64, 4096, 512, 7626, 231},
      {117, "deepseek-v3", 256, 4096, 512, 1002, 250},
      {118, "kimi-k2", 256, 4096, 512, 924, 189},
  };
  const SystemSpec h100 = LoadSystem("dgx-h100");
  std::vector<double> errors;
  std::printf("\n%-4s %-15s %5s %12s %12s %8s %10s %10s %9s %8s %5s\n", "id", "model", "gpus", "tok/s pub",
              "tok/s pred", "err%", "TF pub", "TF pred", "FLOPconv", "GiB", "fits");
  for (const Row& r : rows) {
    CAPTURE(r.id);
    const ModelSpec m = LoadModel(r.model);
    TrainSetup s;
    s.num_gpus = r.gpus;
    s.seq_len = r.seq;
    s.global_batch = r.gbs;
    const auto bench = accuracy::FindAutoModelBenchmark(r.model, "dgx-h100", r.gpus);
    REQUIRE(bench);
    const Layout& layout = bench->layout;
    CHECK(layout.am_backend.ConsecutiveExperts());  // every benchmark recipe sets fake_balanced_gate
    const Rule* f = FirstFailure({m, s, layout});
    CHECK_MESSAGE(f == nullptr, std::string(f ? f->name : ""));
    const Cost c = Score(CostModel(m, h100, s), layout);
    // The model-FLOP convention matches the published one within rounding (megatron.md 3.6):
    // published TFLOP/s = published tokens/s x FLOP/token. GPT-OSS is the exception: its
    // published TFLOP/s imply 13% more FLOP per token than Megatron's formula (AutoModel's
    // own GPT-OSS count differs; not resolved), so it is printed, not checked.
    const double flop_per_token = ModelFlopsPerStep(m, s) / (r.seq * r.gbs);
    const double convention = r.tokens_per_s_per_gpu * flop_per_token / 1e12 / r.tflops_per_gpu;
    if (r.id != 121) CHECK(std::fabs(convention - 1) < 0.05);
    const double err = (c.tokens_per_s_per_gpu - r.tokens_per_s_per_gpu) / r.tokens_per_s_per_gpu;
    errors.push_back(std::fabs(err));
    if (r.id == 119) CHECK(std::fabs(err) < 0.12);  // Qwen3-30B-A3B, EP 8 inside one node
    // These runs trained on 80 GB GPUs, so "fits: no" is a memory-model miss.
    std::printf("%-4d %-15s %5lld %12.0f %12.0f %+8.1f %10.0f %10.0f %9.3f %8.1f %5s\n", r.id, r.model,
                static_cast<long long>(r.gpus), r.tokens_per_s_per_gpu, c.tokens_per_s_per_gpu, 100 * err,
                r.tflops_per_gpu, c.model_tflops_per_gpu, convention, c.memory.Total() / 1073741824.0,
                c.fits ? "yes" : "no");
  }
  std::sort(errors.begin(), errors.end());
  std::printf("median absolute throughput error: %.1f%%\n", 100 * (errors[1] + errors[2]) / 2);
}
