// The least-squares fit of the Megatron-Core step-time constants (planner/accuracy/megatron_fit.cpp,
// validate --fit) on synthetic rows built from known constants.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "accuracy/megatron_fit.hpp"
#include "cost/cost_fixtures.hpp"

namespace meshplan {
namespace {

// Constants of a synthetic fit: bf16 and fp8 GEMM factors, memory_bound 1.6, 6 us per kernel.
MegatronTimeFit SyntheticTruth(double gemm_bf16, double gemm_fp8) {
  MegatronTimeFit truth;
  truth.gemm_bf16 = gemm_bf16;
  truth.gemm_fp8 = gemm_fp8;
  truth.memory_bound = 1.6;
  truth.kernel_overhead = 6e-6;
  return truth;
}

// Row i of a synthetic fit: GEMM, HBM-bound and kernel terms cycling with different periods
// (5, 7, 4) so that the constants are told apart.
accuracy::FitRow SyntheticRow(int i, Precision precision) {
  accuracy::FitRow r;
  r.precision = precision;
  r.gemm = 1.0 + 0.37 * (i % 5);
  r.memory_bound = 0.5 + 0.3 * (i % 7);
  r.kernels = 100000.0 + 90000.0 * (i % 4);
  return r;
}

TEST_CASE("megatron time: the fit recovers known constants from synthetic rows") {
  // 240 rows built from known constants (gemm_bf16 1.3, gemm_fp8 1.8, memory_bound 1.6, 6 us
  // per kernel) with no noise: the ridge term (0.1, pulling toward the prior) is small against
  // 240 rows, so the fit returns them within 2%, and leaves the absent FP4 constant at its prior.
  const MegatronTimeFit truth = SyntheticTruth(1.3, 1.8);
  std::vector<accuracy::FitRow> rows;
  for (int i = 0; i < 240; ++i) {
    accuracy::FitRow r = SyntheticRow(i, i % 2 ? Precision::kFp8 : Precision::kBf16);
    r.attention = 0.1 + 0.05 * (i % 3);
    r.bubble_fraction = 0.05 * (i % 3);
    r.fixed = 0.02 * (i % 6);
    r.published_step = accuracy::FitPredict(r, truth);
    rows.push_back(r);
  }
  const MegatronFitOutcome f = accuracy::FitMegatronTime(rows);
  CHECK(f.fit.gemm_bf16 == test::Rel(1.3).epsilon(0.02));
  CHECK(f.fit.gemm_fp8 == test::Rel(1.8).epsilon(0.02));
  CHECK(f.fit.memory_bound == test::Rel(1.6).epsilon(0.02));
  CHECK(f.fit.kernel_overhead == test::Rel(6e-6).epsilon(0.02));
  CHECK(f.fit.gemm_fp4 == 1.0);
  CHECK(f.fit.rows == 240);
  CHECK(f.fit.residual_median < 0.02);
  REQUIRE(f.loo_residuals.size() == rows.size());
}

TEST_CASE("megatron time: a GEMM constant run by one model only takes the constant of a precision run by two") {
  // FP8 rows of two models, BF16 rows of one: the BF16 constant is not told apart from that
  // model's own costs, so BF16 rows share the FP8 constant (1.5 in the data), and so does the
  // absent FP4 one.
  const MegatronTimeFit truth = SyntheticTruth(1.5, 1.5);
  std::vector<accuracy::FitRow> rows;
  for (int i = 0; i < 60; ++i) {
    accuracy::FitRow r = SyntheticRow(i, i % 3 == 0 ? Precision::kBf16 : Precision::kFp8);
    r.model = r.precision == Precision::kBf16 ? "gpt-oss-120b" : (i % 3 == 1 ? "qwen3-30b-a3b" : "deepseek-v3");
    r.published_step = accuracy::FitPredict(r, truth);
    // The one BF16 model misses a cost of its own: on its own the BF16 constant would take it.
    if (r.precision == Precision::kBf16) r.published_step *= 1.3;
    rows.push_back(r);
  }
  const MegatronFitOutcome f = accuracy::FitMegatronTime(rows);
  CHECK(f.fit.gemm_bf16 == f.fit.gemm_fp8);
  CHECK(f.fit.gemm_fp4 == f.fit.gemm_fp8);
  CHECK(f.fit.gemm_fp8 < 2.0);  // the BF16 model's 30% pulls it up only partly (the fit of both)
  CHECK(std::find(f.fitted.begin(), f.fitted.end(), "gemm_bf16 = gemm_fp8") != f.fitted.end());
  CHECK(std::find(f.fitted.begin(), f.fitted.end(), "gemm_fp8") != f.fitted.end());
  // A second BF16 model makes the BF16 constant its own.
  for (size_t i = 0; i < rows.size(); i += 6) {
    if (rows[i].precision == Precision::kBf16) rows[i].model = "llama3-70b";
  }
  const MegatronFitOutcome g = accuracy::FitMegatronTime(rows);
  CHECK(g.fit.gemm_bf16 > g.fit.gemm_fp8 * 1.2);
  CHECK(std::find(g.fitted.begin(), g.fitted.end(), "gemm_bf16") != g.fitted.end());
}

TEST_CASE("megatron time: the fit clamps a constant that would turn negative") {
  // Published steps shorter than the GEMM time alone: memory_bound cannot be negative, so it
  // is clamped at 0, and the GEMM constant, which would take the rest (0.8), stops at its
  // bound 1 (no GEMM beats MAMF); with every constant on its bound the fit ends there.
  std::vector<accuracy::FitRow> rows;
  for (int i = 0; i < 6; ++i) {
    accuracy::FitRow r;
    r.gemm = 1.0 + i;
    r.memory_bound = 5.0;
    r.kernels = 1e6;
    r.published_step = 0.8 * r.gemm;
    rows.push_back(r);
  }
  const MegatronFitOutcome f = accuracy::FitMegatronTime(rows);
  CHECK(f.fit.memory_bound == 0.0);
  CHECK(f.fit.kernel_overhead < 1e-7);  // ~0: the GEMM constant explains the rows
  CHECK(f.fit.gemm_bf16 == 1.0);
}

}  // namespace
}  // namespace meshplan
