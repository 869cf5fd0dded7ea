// The default --headroom of each framework against the allocator losses measured on H200
// (tools/measure/mcore_alloc_limit.py, tools/measure/alloc_limit.py).
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "meshplan/framework.hpp"

using namespace meshplan;

namespace {

struct Loss {
  double expandable = 0, default_allocator = 0;  // largest (slack + bisection step) / total
  int rows = 0;
};

Loss LargestLoss(const std::string& name) {
  std::ifstream in(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/measured/" + name);
  REQUIRE(in.good());
  Loss loss;
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("environment")) continue;
    if (j.contains("error")) continue;  // a case that did not run at all (no limit to measure)
    const double share = (j.at("slack_bytes").get<double>() + j.at("bisection_step_bytes").get<double>()) /
                         j.at("total_bytes").get<double>();
    double& into = j.at("alloc_conf").get<std::string>().empty() ? loss.default_allocator : loss.expandable;
    into = std::max(into, share);
    ++loss.rows;
  }
  return loss;
}

}  // namespace

TEST_CASE("headroom: Megatron-Bridge's default is Megatron-Core's measured fragmentation with expandable segments") {
  const Loss mcore = LargestLoss("h200_mcore_alloc_limit.jsonl");
  CHECK(mcore.rows == 6);
  const double h = FindFramework("megatron-bridge")->default_headroom;
  // It covers every measured case (the largest loss, 1.78%, plus the 128 MiB step) ...
  CHECK(mcore.expandable <= h);
  // ... and is not padded beyond it by more than a quarter of a percent.
  CHECK(h - mcore.expandable < 0.0025);
  // The default allocator loses up to 8.1% on the same steps: the 2% holds only with
  // expandable_segments, which Megatron-Bridge's recipes and meshplan's launch files set.
  CHECK(mcore.default_allocator > 0.08);
  CHECK(mcore.default_allocator < 0.10);
}

TEST_CASE("headroom: AutoModel's default covers the one-GPU losses with expandable segments but not FSDP2's pools") {
  const Loss hf = LargestLoss("h200_alloc_limit.jsonl");
  const double h = FindFramework("automodel")->default_headroom;
  CHECK(hf.expandable < 0.005);  // 0.2-0.4% measured: the 10% is kept for what one GPU does not show
  CHECK(hf.expandable <= h);
  CHECK(h == doctest::Approx(0.10));
}
