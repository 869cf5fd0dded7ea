// How the fitted Megatron-Core step-time constants transfer (validate --transfer,
// planner/accuracy/transfer.cpp): the table of the Megatron-Bridge perf rows, printed on every
// run and fenced against regressions; the schemes on synthetic rows of known constants; the
// family names and the borrowing rule by hand; and the published dense runs on A100 and H100
// (tests/data/published_dense_runs.csv), which no fit has seen.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "accuracy/least_squares.hpp"
#include "accuracy/megatron_fit.hpp"
#include "accuracy/transfer.hpp"
#include "cli/commands.hpp"
#include "cost/time.hpp"
#include "meshplan/accuracy.hpp"
#include "meshplan/hardware.hpp"

using namespace meshplan;

namespace {

const TransferGroup* FindGroup(const TransferReport& t, const std::string& kind, const std::string& name) {
  for (const TransferGroup& g : t.groups) {
    if (g.kind == kind && g.name == name) return &g;
  }
  return nullptr;
}

// A synthetic row whose published step is what `truth` predicts for it (GEMM, HBM-bound and
// kernel terms cycling with periods 5, 7 and 4, as in megatron_fit_test.cpp).
accuracy::FitRow TruthRow(int i, const std::string& system, const std::string& model, const MegatronTimeFit& truth) {
  accuracy::FitRow r;
  r.system = system;
  r.model = model;
  r.label = system + " " + std::to_string(i);
  r.pp = 1 + i % 3 * 3;  // 1, 4, 7: one row in each depth bucket in turn
  r.gemm = 1.0 + 0.37 * (i % 5);
  r.memory_bound = 0.5 + 0.3 * (i % 7);
  r.kernels = 100000.0 + 90000.0 * (i % 4);
  r.published_step = accuracy::FitPredict(r, truth);
  return r;
}

MegatronTimeFit Truth(double gemm) {
  MegatronTimeFit f;
  f.gemm_bf16 = gemm;
  f.memory_bound = 1.6;
  f.kernel_overhead = 6e-6;
  return f;
}

}  // namespace

TEST_CASE("transfer: the Megatron-Bridge perf rows' transfer table is printed and fenced") {
  const auto start = std::chrono::steady_clock::now();
  cli::ValidateOptions o;
  o.runs = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/mbridge_perf_dev.csv";
  o.rank_top = 0;
  o.transfer = true;
  std::printf("\n");
  CHECK(cli::RunValidate(o, stdout) == 0);
  const ValidateReport report = Validate(o);
  const TransferReport& t = report.transfer;
  REQUIRE(t.rows.size() == 130);
  const TransferGroup* all = FindGroup(t, "all", "all rows");
  REQUIRE(all != nullptr);
  CHECK(all->rows == 130);
  // The in-sample and leave-one-out columns are the fit's own residuals (validate --fit's summary).
  CHECK(all->median[kInSample] == doctest::Approx(report.fit_median));
  CHECK(all->p90[kInSample] == doctest::Approx(report.fit_p90));
  CHECK(all->median[kLeaveOneOut] == doctest::Approx(report.fit_loo_median));
  CHECK(all->p90[kLeaveOneOut] == doctest::Approx(report.fit_loo_p90));
  // Every row is in one system, one family and one depth bucket.
  int systems = 0, families = 0, depths = 0;
  for (const TransferGroup& g : t.groups) {
    if (g.kind == "system") systems += g.rows;
    if (g.kind == "family") families += g.rows;
    if (g.kind == "pp") depths += g.rows;
  }
  CHECK(systems == 130);
  CHECK(families == 130);
  CHECK(depths == 130);
  // A regression fence, not a target: the targets are leave-one-system-out median
  // <= 10% and p90 <= 20%, which every leave-one-system-out column misses. Borrowing the
  // other systems' fits (the former rule for an unfitted system) is 25.9% / 59.8% (GB300
  // borrowing B300's fit is 36% off at the median); the physical constants of each GPU
  // generation (the rule now, cost::MegatronPhysicalFit), with no row of any system fitted,
  // 17.7% / 39.8%; a fit pooled over the other systems 13.5% / 28.3%. Pricing each perf row's
  // own flex backend (HybridEP rows had been priced as DeepEP) made the physical, in-sample,
  // leave-one-out and leave-family-out medians better and the pooled one worse (10.4% before):
  // the pooled fit now carries GB200's lower GEMM constant to GB300 (17.5% there, 10.5% before).
  // The fences sit a little above these values so that a change that makes transfer worse
  // fails here and says why.
  CHECK(all->median[kLosoBorrowed] <= 0.27);
  CHECK(all->p90[kLosoBorrowed] <= 0.62);
  CHECK(all->median[kLosoPooled] <= 0.145);
  CHECK(all->p90[kLosoPooled] <= 0.295);
  CHECK(all->median[kLosoPhysical] <= 0.19);
  CHECK(all->p90[kLosoPhysical] <= 0.41);
  CHECK(all->median[kLeaveFamilyOut] <= 0.09);  // 8.0%
  CHECK(all->p90[kLeaveFamilyOut] <= 0.30);     // 28.9%
  CHECK(all->median[kLeaveModelOut] <= 0.085);  // 7.7%: the family's other sizes stay in the fit
  CHECK(all->p90[kLeaveModelOut] <= 0.285);     // 27.3%
  // The physical rule transfers better than borrowing (median and p90).
  CHECK(all->median[kLosoPhysical] < all->median[kLosoBorrowed]);
  CHECK(all->p90[kLosoPhysical] < all->p90[kLosoBorrowed]);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("transfer test: %.2f s (both validate passes)\n", seconds);
}

TEST_CASE("transfer: each scheme predicts with the constants it names (synthetic rows of known constants)") {
  // Systems "a" and "b" share a GPU compute capability; "a" rows follow GEMM factor 1.3,
  // "b" rows 1.8 (memory_bound 1.6, 6 us per kernel for both), 240 rows each of two model
  // families. Left out, "a" borrows "b"'s in-sample fit (the median of one), and pooled it is
  // fitted on b's rows alone: the same constants, so both predict a's rows as b's fit does.
  std::map<std::string, std::vector<accuracy::FitRow>> rows;
  for (int i = 0; i < 240; ++i) {
    rows["a"].push_back(TruthRow(i, "a", i % 2 ? "llama3-8b" : "qwen3-8b", Truth(1.3)));
    rows["b"].push_back(TruthRow(i, "b", i % 2 ? "llama3-70b" : "qwen3-30b-a3b", Truth(1.8)));
  }
  std::map<std::string, SystemSpec> systems;
  systems["a"].gpu.compute_capability = 9.0;
  systems["b"].gpu.compute_capability = 9.0;
  std::vector<SystemFit> fits;
  for (const auto& [name, r] : rows) {
    SystemFit f;
    f.system = name;
    f.outcome = accuracy::FitMegatronTime(r);
    fits.push_back(f);
  }
  const TransferReport t = accuracy::MeasureTransfer(rows, systems, fits);
  REQUIRE(t.rows.size() == 480);
  for (const TransferRow& r : t.rows) {
    const accuracy::FitRow* row = nullptr;
    for (const accuracy::FitRow& x : rows.at(r.system)) {
      if (x.label == r.label) row = &x;
    }
    REQUIRE(row != nullptr);
    const MegatronTimeFit& other = fits[r.system == "a" ? 1 : 0].outcome.fit;
    const double expected = accuracy::FitPredict(*row, other) / row->published_step - 1.0;
    // Noise-free rows: in-sample, LOO and leave-family-out (the other family has the same
    // constants) are exact up to the ridge's pull toward the prior (within 2%); the left-out
    // system gets the other system's fitted constants exactly.
    CHECK(std::fabs(r.residual[kInSample]) < 0.02);
    CHECK(std::fabs(r.residual[kLeaveOneOut]) < 0.02);
    CHECK(std::fabs(r.residual[kLeaveFamilyOut]) < 0.02);
    CHECK(std::fabs(r.residual[kLeaveModelOut]) < 0.02);  // the system's other model, same constants
    CHECK(r.residual[kLosoBorrowed] == doctest::Approx(expected).epsilon(1e-9));
    CHECK(r.residual[kLosoPooled] == doctest::Approx(expected).epsilon(1e-9));
    CHECK(r.residual[kLosoPhysical] ==
          doctest::Approx(accuracy::FitPredict(*row, cost::MegatronPhysicalFit()) / row->published_step - 1.0));
    // a's 1.3 rows priced with b's constants (about 1.8) come out slow, b's fast.
    CHECK((r.system == "a" ? r.residual[kLosoBorrowed] > 0.05 : r.residual[kLosoBorrowed] < -0.05));
  }
  // Groups: 2 systems, 2 families ("llama", "qwen"), 3 depth buckets, all.
  CHECK(t.groups.size() == 2 + 2 + 3 + 1);
  REQUIRE(FindGroup(t, "family", "qwen") != nullptr);
  CHECK(FindGroup(t, "family", "qwen")->rows == 240);
  REQUIRE(FindGroup(t, "pp", "5+") != nullptr);
  CHECK(FindGroup(t, "pp", "5+")->rows == 160);  // i % 3 == 2 for 80 of 240 rows, two systems
}

TEST_CASE("transfer: model families and the borrowing rule by hand") {
  CHECK(ModelFamily("llama3.1-405b") == "llama");
  CHECK(ModelFamily("llama3-8b") == "llama");
  CHECK(ModelFamily("qwen3-235b-a22b") == "qwen");
  CHECK(ModelFamily("gpt-oss-120b") == "gpt-oss");
  CHECK(ModelFamily("deepseek-v3") == "deepseek");
  CHECK(ModelFamily("kimi-k2") == "kimi");
  CHECK(ModelFamily("mixtral-8x22b") == "mixtral");
  CHECK(ModelFamily("/x/models/paper/gpt-1.7b.yaml") == "gpt");
  // Same compute capability: the median of the matching fits only (1.2 and 2.0 -> 1.6); none
  // matching: the median over all three (1.2, 2.0, 3.0 -> 2.0).
  auto fit = [](double g) {
    MegatronTimeFit f;
    f.fitted = true;
    f.gemm_bf16 = g;
    return f;
  };
  const std::vector<FittedSystemConstants> fitted = {{"x", 10.0, fit(1.2)}, {"y", 10.0, fit(2.0)}, {"z", 9.0, fit(3.0)}};
  SystemSpec blackwell, ampere;
  blackwell.gpu.compute_capability = 10.0;
  ampere.gpu.compute_capability = 8.0;
  BorrowMegatronFitFrom(blackwell, fitted);
  BorrowMegatronFitFrom(ampere, fitted);
  CHECK(blackwell.megatron_fit.gemm_bf16 == doctest::Approx(1.6));
  CHECK(ampere.megatron_fit.gemm_bf16 == doctest::Approx(2.0));
  CHECK_FALSE(ampere.megatron_fit.fitted);
  CHECK(ampere.megatron_fit.borrowed_from.find("the median of x, y, z") == 0);
}

TEST_CASE("transfer: published dense runs on A100 and H100 without a fit of their own") {
  ValidateRequest req;
  req.runs = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/published_dense_runs.csv";
  req.rank_top = 0;
  cli::ValidateOptions o = req;
  std::printf("\n");
  CHECK(cli::RunValidate(o, stdout) == 0);
  const ValidateReport report = Validate(req);
  CHECK(report.summary.evaluated == 23);
  CHECK(report.summary.skipped == 1);  // OPT-175B: its batch of about 1000 sequences is not given exactly
  std::vector<double> a100, h100;
  for (const ValidateRow& row : report.rows) {
    if (!row.skip.empty()) continue;
    (row.label.rfind("#L", 0) == 0 ? h100 : a100).push_back(std::fabs(row.error));
    // Narayanan 2021 GPT-1.7B: 137 hardware TFLOP/s per GPU over eq. (3)'s 96 B s l h^2 (1 +
    // s/6h + V/16lh) FLOPs per batch: 137e12 / (96 * 24 * 2304^2 * (1 + 2048/13824 + 51200 /
    // 884736)) = 9287.9 tokens/s per GPU, the value compared (on tokens, not TFLOP/s).
    if (row.label == "#N1 GPT-1.7B 32") {
      const double flop_per_token =
          96.0 * 24 * 2304.0 * 2304.0 * (1 + 2048.0 / (6 * 2304) + 51200.0 / (16.0 * 24 * 2304));
      CHECK(row.on_tokens);
      CHECK(row.published == doctest::Approx(137e12 / flop_per_token).epsilon(1e-4));
      CHECK(row.layout.tp == 1);
      CHECK_FALSE(row.layout.use_distributed_optimizer);  // megatron_settings: 2021 Megatron-LM
    }
    // Korthikanti 2022 22B, full recompute: 4 x 2048 tokens per 1.42 s iteration on 8 GPUs.
    if (row.label == "#K1 GPT-22B 8") {
      CHECK(row.published == doctest::Approx(4.0 * 2048 / (1.42 * 8)).epsilon(1e-3));
      CHECK_FALSE(row.layout.sequence_parallel);
      CHECK(row.layout.mb.tp_comm_overlap == Tri::kFalse);
    }
  }
  REQUIRE(a100.size() == 20);
  REQUIRE(h100.size() == 3);
  const double a100_median = accuracy::Quantile(a100, 0.5), h100_median = accuracy::Quantile(h100, 0.5);
  std::printf("published dense runs: DGX A100 (the physical constants of its generation) median |error| %.1f%% over "
              "%zu rows; DGX H100 (Llama 3 405B, own fit) median %.1f%% over %zu rows\n",
              100 * a100_median, a100.size(), 100 * h100_median, h100.size());
  // DGX A100 has no fit: it prices with the physical constants (cost::MegatronPhysicalFit),
  // with Megatron-LM's unfused attention core and pipeline scatter / gather priced where the
  // rows ran them. The target, within 10% median on a system without its own fit, is
  // met: 7.0% when written (21.4% with the median of the fitted systems' constants and neither
  // mechanism; 27.1% with them borrowed and both mechanisms priced). A fence a little above.
  CHECK(a100_median <= 0.08);
  // No depth trend left: the PP 1 rows and the PP >= 35 rows both within 10% at the median.
  std::vector<double> shallow, deep;
  for (const ValidateRow& row : report.rows) {
    if (!row.skip.empty() || row.label.rfind("#L", 0) == 0) continue;
    if (row.layout.pp == 1) shallow.push_back(std::fabs(row.error));
    if (row.layout.pp >= 35) deep.push_back(std::fabs(row.error));
  }
  CHECK(accuracy::Quantile(shallow, 0.5) <= 0.10);
  CHECK(accuracy::Quantile(deep, 0.5) <= 0.10);
  // 35.6% when written: the rows' ZeRO-2 (the paper's FSDP "shards optimizer states and
  // gradients", priced as Megatron FSDP optim_grads) reduce-scatters the fp32 gradients every
  // micro-batch (31.3% while priced as the distributed optimizer, whose whole fp32 gradient
  // buffer put the layouts above the GPU's memory); the interleaved schedule the paper does not
  // size (VPP "?") is most of what is left (docs/accuracy.md).
  CHECK(h100_median <= 0.38);
}
