// The AutoModel time model's eager HBM-bound constants (time.hpp kEager*Passes) are the least
// squares fit of the per-layer kernel time profiled on H200 (tools/measure/eager_profile.py,
// tests/data/measured/h200_eager_profile.jsonl): refitted here from the data.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "accuracy/measured_cases.hpp"
#include "cost/time.hpp"

namespace meshplan {

TEST_CASE("eager ops: the per-layer and loss constants are the fit of the profiled H200 kernels") {
  std::ifstream in(test::kMeasuredDir + "h200_eager_profile.jsonl");
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);  // environment
  constexpr double kHbm = 4.8e12;  // H200 HBM3e peak, bytes/s (hwdb/gpus/h200.yaml)
  std::vector<std::vector<double>> rows;
  std::vector<double> passes, loss;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    const double tokens = j.at("tokens").get<double>();
    const bool qk_norm = j.at("model").get<std::string>().rfind("qwen3", 0) == 0;  // Qwen3: q/k RMSNorm
    const double qk = qk_norm ? j.at("q_dim").get<double>() + j.at("kv_dim").get<double>() : 0.0;
    rows.push_back({j.at("hidden").get<double>(), j.at("intermediate").get<double>(), qk});
    // 2-byte element passes per token at the HBM peak.
    passes.push_back(j.at("layer_other_s").get<double>() * kHbm / 2.0 / tokens);
    loss.push_back(j.at("rest_other_s").get<double>() * kHbm / 2.0 / tokens / j.at("vocab").get<double>());
  }
  REQUIRE(rows.size() == 6);
  Eigen::MatrixXd a(6, 3);
  Eigen::VectorXd y(6);
  for (int i = 0; i < 6; ++i) {
    for (int k = 0; k < 3; ++k) a(i, k) = rows[size_t(i)][size_t(k)];
    y(i) = passes[size_t(i)];
  }
  const Eigen::VectorXd x = a.colPivHouseholderQr().solve(y);
  CHECK(cost::kEagerHiddenPasses == doctest::Approx(x(0)).epsilon(0.01));
  CHECK(cost::kEagerFfnPasses == doctest::Approx(x(1)).epsilon(0.01));
  CHECK(cost::kEagerQkNormPasses == doctest::Approx(x(2)).epsilon(0.01));
  // The fit reproduces every profiled model within 5%.
  const Eigen::VectorXd fit = a * x;
  for (int i = 0; i < 6; ++i) CHECK(fit(i) == doctest::Approx(y(i)).epsilon(0.05));
  std::sort(loss.begin(), loss.end());
  CHECK(cost::kEagerLossVocabPasses == doctest::Approx(0.5 * (loss[2] + loss[3])).epsilon(0.01));
}

}  // namespace meshplan
