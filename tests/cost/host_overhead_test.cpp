// The AutoModel time model's host constants (time.hpp kHost*) are the least-squares slopes of
// the step time against the layer count measured on H200 (tools/measure/host_overhead.py,
// tests/data/measured/h200_host_overhead_*.jsonl): refitted here from the data. And RankTime
// charges the host time the GPU's own work does not cover.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "accuracy/measured_cases.hpp"
#include "cost/cost_fixtures.hpp"
#include "cost/time.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/cost.hpp"

namespace meshplan {
namespace {

using Key = std::tuple<std::string, int64_t, std::string>;  // wrapper, tp, activation checkpointing

std::map<Key, std::vector<std::pair<double, double>>> ReadPoints() {
  std::map<Key, std::vector<std::pair<double, double>>> pts;
  for (const char* f : {"h200_host_overhead_run1.jsonl", "h200_host_overhead_2gpu.jsonl", "h200_host_overhead_1gpu.jsonl"}) {
    std::ifstream in(test::kMeasuredDir + f);
    REQUIRE(in.good());
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (!j.contains("layers")) continue;  // the environment and fit lines
      pts[{j.at("kind").get<std::string>(), j.at("tp").get<int64_t>(), j.at("ac").get<std::string>()}].push_back(
          {j.at("layers").get<double>(), j.at("step_s").get<double>()});
    }
  }
  return pts;
}

double Slope(const std::vector<std::pair<double, double>>& p) {
  double mx = 0, my = 0;
  for (const auto& [x, y] : p) mx += x, my += y;
  mx /= double(p.size());
  my /= double(p.size());
  double sxy = 0, sxx = 0;
  for (const auto& [x, y] : p) sxy += (x - mx) * (y - my), sxx += (x - mx) * (x - mx);
  return sxy / sxx;
}

}  // namespace

TEST_CASE("host overhead: the per-layer host constants are the slopes of the measured H200 steps") {
  const auto pts = ReadPoints();
  const std::pair<const char*, cost::HostLayerSeconds> wrappers[] = {
      {"plain", cost::kHostPlain}, {"ddp", cost::kHostDdp}, {"fsdp2", cost::kHostFsdp2}};
  for (const auto& [kind, h] : wrappers) {
    CAPTURE(kind);
    CHECK(Slope(pts.at({kind, 1, "none"})) == doctest::Approx(h.none).epsilon(0.005));
    CHECK(Slope(pts.at({kind, 1, "full"})) == doctest::Approx(h.full).epsilon(0.005));
    CHECK(Slope(pts.at({kind, 1, "selective"})) == doctest::Approx(h.selective).epsilon(0.005));
  }
  CHECK(Slope(pts.at({"fsdp2", 2, "none"})) == doctest::Approx(cost::kHostFsdp2Tp.none).epsilon(0.005));
  CHECK(Slope(pts.at({"fsdp2", 2, "full"})) == doctest::Approx(cost::kHostFsdp2Tp.full).epsilon(0.005));
  CHECK(Slope(pts.at({"fsdp2", 2, "selective"})) == doctest::Approx(cost::kHostFsdp2Tp.selective).epsilon(0.005));
  // DTensor TP more than doubles the host time of a layer without checkpointing.
  CHECK(cost::kHostFsdp2Tp.none > 2.0 * cost::kHostFsdp2.none);
}

TEST_CASE("host overhead: RankTime charges the host time the GPU's work does not cover") {
  const ModelSpec m = test::TinyLlama();  // 4 layers, h 1024
  SystemSpec sys = test::DgxH100();
  // 2 GPUs, TP 2, 256 tokens, one micro-batch: the GPU's work is microseconds, so the step is
  // the host's: 4 layers x kHostFsdp2Tp.none (19.06 ms) = 76.2 ms in all, the GPU's part
  // (compute and communication) inside it.
  const TrainSetup small = test::Setup(2, 256, 1);
  Layout l;
  l.tp = 2;
  l.dp = 1;
  const Cost c = Score(CostModel(m, sys, small), l);
  const TimeBreakdown& t = c.time;
  const double gpu = t.GpuSeconds();
  CHECK(t.host > 0);
  CHECK(gpu + t.host == test::Rel(4 * cost::kHostFsdp2Tp.none).epsilon(1e-9));
  // Without TP (FSDP2 on 2 GPUs, DP 2): 4 x 7.80 ms.
  Layout fsdp;
  fsdp.dp = 2;
  const TimeBreakdown& f = Score(CostModel(m, sys, small), fsdp).time;
  CHECK(f.compute + f.tp_comm + f.dp_comm + f.host == test::Rel(4 * cost::kHostFsdp2.none).epsilon(1e-9));
  // Llama-3 70B at 8192 tokens: a layer's GEMMs alone (6 x 0.86e9 / 2 x 8192 FLOP, about 26 ms
  // at H100 rates) outlast its 19.06 ms of host time; no host time.
  CHECK(Score(CostModel(test::Llama3_70B(), sys, test::Setup(2, 8192, 1)), l).time.host == 0.0);
  // The same layer at 1024 tokens is host-bound again.
  CHECK(Score(CostModel(test::Llama3_70B(), sys, test::Setup(2, 1024, 1)), l).time.host > 0.0);
  // MoE models run AutoModel's own Transformer Engine layers: not measured, no host term.
  CHECK(Score(CostModel(test::DeepSeekV3(), sys, test::Setup(8, 256, 8)), Layout{}).time.host == 0.0);
}

TEST_CASE("host overhead: the Megatron-Core host seconds per kernel are the median of the measured H200 fits") {
  // tools/measure/host_per_kernel.py: per (run, layer kind) the slope of the step time over the
  // slope of the profiled kernel count against the layer count; refitted here from the points.
  std::ifstream in(test::kMeasuredDir + "h200_host_per_kernel.jsonl");
  REQUIRE(in.good());
  std::map<std::tuple<int64_t, std::string, int64_t>, std::vector<std::pair<double, double>>> time, kernels;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (!j.contains("layers")) continue;
    const auto key = std::make_tuple(j.at("run").get<int64_t>(), j.at("kind").get<std::string>(), j.at("experts").get<int64_t>());
    time[key].push_back({j.at("layers").get<double>(), j.at("step_s").get<double>()});
    kernels[key].push_back({j.at("layers").get<double>(), j.at("kernels").get<double>()});
  }
  REQUIRE(time.size() == 6);  // 2 runs x (dense, MoE with 4 and with 16 local experts)
  std::vector<double> per_kernel;
  for (const auto& [key, pts] : time) per_kernel.push_back(Slope(pts) / Slope(kernels.at(key)));
  std::sort(per_kernel.begin(), per_kernel.end());
  CHECK(per_kernel.front() > 30e-6);
  CHECK(per_kernel.back() < 45e-6);
  CHECK(0.5 * (per_kernel[2] + per_kernel[3]) == doctest::Approx(cost::kHostSecondsPerKernel).epsilon(0.01));
  // Sixteen local experts cost the host about 5 ms more per layer than four (their GEMM loop).
  CHECK(Slope(time.at({1, "moe", 16})) - Slope(time.at({1, "moe", 4})) > 4e-3);
}

}  // namespace meshplan
