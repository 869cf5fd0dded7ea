// Issue "calibration on the user's own cluster": how well do the datasheet dgx-h200 and the
// system calibrated from the H200 collective and GEMM sweeps (hwdb/systems/dgx-h200-calibrated.yaml,
// fitted by `meshplan calibrate` from tests/data/calibration/) predict the step times measured
// on the same H200 GPUs (tests/data/measured/, default allocator)? Prints every case and both
// median errors. Before the eager HBM-bound term (time.hpp kEager*Passes) the calibrated system
// was the better one (median 31% datasheet, 22% calibrated), its lower GEMM rate standing in
// for the missing time; with the term the datasheet one is: the calibration's GEMM sweep
// measured 687 TFLOP/s where the profiled training GEMMs of Llama 3.1 8B reach about 800
// (tests/data/measured/h200_eager_profile.jsonl: 6 x 218.1e6 x 8192 FLOP in 13.3 ms per layer).
#include "meshplan/framework.hpp"
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "accuracy/measured_cases.hpp"

using namespace meshplan;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return 0.5 * (v[(v.size() - 1) / 2] + v[v.size() / 2]);
}

}  // namespace

TEST_CASE("accuracy: the H200 systems predict the measured step times within 15% median") {
  const SystemSpec base = LoadSystem("dgx-h200");
  const SystemSpec calibrated = LoadSystem("dgx-h200-calibrated");
  std::vector<double> err_base, err_cal;
  std::printf("\nStep time per case, measured on H200 vs predicted (dgx-h200 / dgx-h200-calibrated)\n");
  std::printf("%-20s %-24s %9s %9s %8s %9s %8s\n", "file", "case", "meas s", "base s", "err%", "calib s", "err%");
  for (const char* f : {"h200_1gpu.jsonl", "h200_2gpu.jsonl"}) {
    for (const test::MeasuredCase& m : test::LoadMeasuredCases(f)) {
      const double measured = m.record.at("step_s");
      const double b = Score(CostModel(m.model, base, m.setup, m.options), m.layout).step_seconds;
      const double c = Score(CostModel(m.model, calibrated, m.setup, m.options), m.layout).step_seconds;
      err_base.push_back(std::fabs(b - measured) / measured);
      err_cal.push_back(std::fabs(c - measured) / measured);
      std::printf("%-20s %-24s %9.3f %9.3f %+8.1f %9.3f %+8.1f\n", f, m.id.c_str(), measured, b,
                  100 * (b - measured) / measured, c, 100 * (c - measured) / measured);
    }
  }
  REQUIRE(err_base.size() == 37);
  const double mb = Median(err_base), mc = Median(err_cal);
  std::printf("median |err|: dgx-h200 %.1f%%, dgx-h200-calibrated %.1f%%\n", 100 * mb, 100 * mc);
  CHECK(mb <= 0.15);
  CHECK(mc <= 0.15);
}

TEST_CASE("accuracy: FSDP2 / DDP / TP step times with NCCL held to 2 and 1 channels (comm-bound)") {
  // The same 20 two-GPU cases run with NCCL_MAX_NCHANNELS=2 and 1 (tests/data/measured/
  // h200_2gpu_ch2.jsonl, _ch1.jsonl; the unrestricted run of the same session is _ref.jsonl):
  // all-gather 30 / 15 GB/s, reduce-scatter 36 / 18 GB/s on the same GPUs
  // (tests/data/calibration/h200x2_collectives_ch*.jsonl), a per-GPU bandwidth like one
  // 400 Gb/s NIC's, so the communication that FSDP prefetch and DDP buckets must hide is
  // 10-25x longer than on NVLink. Each file is predicted with the system `meshplan calibrate`
  // fits to its own collective sweep (tests/data/calibration/systems/dgx-h200-nccl-ch*.yaml) and the
  // reference run with the datasheet dgx-h200: the overlap terms (kFsdpOverlapFraction, DDP
  // buckets, HiddenCommCost) are tested where they decide the step.
  const std::string dir = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/calibration/systems/";
  struct Run {
    const char* file;
    SystemSpec system;
  };
  const Run runs[] = {{"h200_2gpu_ref.jsonl", LoadSystem("dgx-h200")},
                      {"h200_2gpu_ch2.jsonl", LoadSystem(dir + "dgx-h200-nccl-ch2.yaml")},
                      {"h200_2gpu_ch1.jsonl", LoadSystem(dir + "dgx-h200-nccl-ch1.yaml")}};
  std::printf("\nStep time per case, NCCL channels limited: measured vs predicted\n");
  std::printf("%-20s %-28s %9s %9s %8s\n", "file", "case", "meas s", "pred s", "err%");
  std::vector<double> med;
  for (const Run& r : runs) {
    std::vector<double> err, signed_err;
    for (const test::MeasuredCase& m : test::LoadMeasuredCases(r.file)) {
      const double measured = m.record.at("step_s");
      const double p = Score(CostModel(m.model, r.system, m.setup, m.options), m.layout).step_seconds;
      err.push_back(std::fabs(p - measured) / measured);
      std::printf("%-20s %-28s %9.3f %9.3f %+8.1f\n", r.file, m.id.c_str(), measured, p, 100 * (p - measured) / measured);
    }
    REQUIRE(err.size() == 20);
    med.push_back(Median(err));
    std::printf("%s: median |err| %.1f%%\n", r.file, 100 * med.back());
  }
  // Today 5.3%, 7.3% and 8.3% (5.4%, 10.3% and 11.4% before DDP's gradients were priced in
  // bf16 with the embedding's bucket exposed, DTensor TP at 7 all-reduces per layer and FSDP2's
  // root reduce-scatter exposed: DDP was 7-23% slow at one channel, TP 2 Llama 3.1 8B 31% fast). Most FSDP2 cases are predicted 8-17% fast at 2 and 1
  // channels: the calibrated link has one busbw for every collective (39.3 and 20.1 GB/s,
  // fitted over all-reduce, all-gather and reduce-scatter), above the all-gather's 30.3 and
  // 15.2 GB/s that FSDP's gathers see; with the all-gather / reduce-scatter mean (33 and 17
  // GB/s) the FSDP medians were 7.4% and 8.9%.
  CHECK(med[0] <= 0.15);
  CHECK(med[1] <= 0.15);
  CHECK(med[2] <= 0.15);
  // defer_fsdp_grad_sync skips the reduce-scatter of every micro-batch but the last: measured
  // 2.786 s against 3.598 s with gradient accumulation 2 at one channel; priced so.
  const auto ch1 = test::LoadMeasuredCases("h200_2gpu_ch1.jsonl");
  double defer = 0, sync = 0;
  for (const test::MeasuredCase& m : ch1) {
    const double p = Score(CostModel(m.model, runs[2].system, m.setup, m.options), m.layout).step_seconds;
    if (m.id == "2g-fsdp-l8-s4k-b1-ga2-defer") defer = p;
    if (m.id == "2g-fsdp-l8-s4k-b1-ga2-sync") sync = p;
  }
  REQUIRE(sync > 0);
  CHECK(defer / sync == doctest::Approx(2.786 / 3.598).epsilon(0.1));
}
