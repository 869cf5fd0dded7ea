// Memory model ("pytorch" profile) against the peak memory measured on H200 GPUs by
// tools/measure/ (tests/data/measured/*.jsonl; settings recorded per case). Prints one row per
// case: measured and predicted peak allocated (torch.cuda.max_memory_allocated), the error,
// the predicted peak moment, and what the caching allocator reserved on top.
// Bounds (issue 4): every case within 10%, median absolute error <= 5%.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "accuracy/measured_cases.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/cost.hpp"

using namespace meshplan;

namespace {

struct Result {
  std::string file, id;
  double measured_alloc, predicted_alloc, measured_reserved, error;
  const char* phase;
};

std::vector<Result> Evaluate(const std::string& file, const SystemSpec& system) {
  std::vector<Result> out;
  for (const test::MeasuredCase& m : test::LoadMeasuredCases(file)) {
    const Cost c = Score(CostModel(m.model, system, m.setup, m.options), m.layout);
    Result x;
    x.file = file;
    x.id = m.id;
    x.measured_alloc = m.record.at("peak_alloc");
    x.measured_reserved = m.record.at("peak_reserved");
    x.predicted_alloc = c.memory.Allocated();
    x.error = (x.predicted_alloc - x.measured_alloc) / x.measured_alloc;
    x.phase = c.memory.phase;
    out.push_back(x);
  }
  return out;
}

}  // namespace

TEST_CASE("accuracy: pytorch memory profile vs peak allocated memory measured on H200") {
  const SystemSpec h200 = LoadSystem("dgx-h200");
  std::vector<Result> all;
  for (const char* f : {"h200_1gpu.jsonl", "h200_2gpu.jsonl", "h200_1gpu_expseg.jsonl", "h200_2gpu_expseg.jsonl"}) {
    for (const Result& r : Evaluate(f, h200)) all.push_back(r);
  }
  REQUIRE(all.size() == 74);
  const double gib = 1024.0 * 1024.0 * 1024.0;
  std::printf("\nPeak allocated memory per GPU, measured (tests/data/measured) vs predicted (pytorch profile)\n");
  std::printf("%-24s %-30s %9s %9s %7s  %-15s %9s %8s\n", "file", "case", "meas GiB", "pred GiB", "err%",
              "peak moment", "resv GiB", "resv/alc");
  std::vector<double> abs_err;
  for (const Result& r : all) {
    std::printf("%-24s %-30s %9.2f %9.2f %+7.2f  %-15s %9.2f %7.1f%%\n", r.file.c_str(), r.id.c_str(),
                r.measured_alloc / gib, r.predicted_alloc / gib, 100.0 * r.error, r.phase, r.measured_reserved / gib,
                100.0 * (r.measured_reserved / r.measured_alloc - 1.0));
    abs_err.push_back(std::fabs(r.error));
    CAPTURE(r.file);
    CAPTURE(r.id);
    CHECK(std::fabs(r.error) <= 0.01);
  }
  std::sort(abs_err.begin(), abs_err.end());
  const double median = 0.5 * (abs_err[(abs_err.size() - 1) / 2] + abs_err[abs_err.size() / 2]);
  std::printf("cases %zu, median |err| %.2f%%, max |err| %.2f%%\n", abs_err.size(), 100.0 * median,
              100.0 * abs_err.back());
  CHECK(median <= 0.01);
}

// fp32 master weights and the three Adam(W) implementations, FSDP2 and DDP wrapped on a
// one-rank group of one H200 (tools/measure/cases.py FP32_1GPU); DDP's fp32 model computes in
// fp32 (SDPA's math kernel for GQA: the "attention backward" moment). Bounds: median <= 3%,
// max <= 6%.
TEST_CASE("accuracy: pytorch memory profile vs H200 runs with fp32 master weights and each Adam implementation") {
  const SystemSpec h200 = LoadSystem("dgx-h200");
  const std::vector<Result> all = Evaluate("h200_1gpu_fp32.jsonl", h200);
  REQUIRE(all.size() == 25);
  const double gib = 1024.0 * 1024.0 * 1024.0;
  std::printf("\nPeak allocated memory, fp32 master weights / Adam implementations (h200_1gpu_fp32.jsonl)\n");
  std::printf("%-34s %9s %9s %7s  %-18s\n", "case", "meas GiB", "pred GiB", "err%", "peak moment");
  std::vector<double> abs_err;
  for (const Result& r : all) {
    // Not modelled, printed: FSDP2 with a bf16 model on a one-rank group (not an AutoModel
    // path, which skips the wrapper at world size 1; its two-GPU runs are within 0.1%).
    const bool modelled = r.id.find("-fsdp16-") == std::string::npos;
    std::printf("%-34s %9.2f %9.2f %+7.2f  %-18s%s\n", r.id.c_str(), r.measured_alloc / gib, r.predicted_alloc / gib,
                100.0 * r.error, r.phase, modelled ? "" : "  (not modelled: FSDP2 bf16 on a one-rank group)");
    if (!modelled) continue;
    abs_err.push_back(std::fabs(r.error));
    CAPTURE(r.id);
    CHECK(std::fabs(r.error) <= 0.06);
  }
  REQUIRE(abs_err.size() == 24);
  std::sort(abs_err.begin(), abs_err.end());
  const double median = 0.5 * (abs_err[(abs_err.size() - 1) / 2] + abs_err[abs_err.size() / 2]);
  std::printf("modelled cases %zu, median |err| %.2f%%, max |err| %.2f%%\n", abs_err.size(), 100.0 * median,
              100.0 * abs_err.back());
  CHECK(median <= 0.03);
}
