// calibrate --runs (planner/accuracy/calibrate_runs.cpp): a system's Megatron-Core step-time
// constants fitted to measured runs, on the published DGX H100 rows of the perf table.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "meshplan/calibrate.hpp"
#include "meshplan/data.hpp"

namespace meshplan {
namespace {

const std::string kSource = MESHPLAN_SOURCE_DIR;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// Header and the rows whose system cell is `system` of the committed perf table, written as
// DIR/mbridge_perf_dev.csv (the name the committed fits' `source:` carries).
std::string RowsOf(const std::string& system, const std::string& dir) {
  std::istringstream in(ReadText(kSource + "/tests/data/mbridge_perf_dev.csv"));
  std::ostringstream os;
  std::string line;
  std::getline(in, line);
  os << line << "\n";
  while (std::getline(in, line)) {
    if (line.find("," + system + ",") != std::string::npos) os << line << "\n";
  }
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/mbridge_perf_dev.csv";
  std::ofstream(path) << os.str();
  return path;
}

const RunsFitConstant& Constant(const RunsCalibration& rc, const std::string& key) {
  for (const RunsFitConstant& c : rc.constants) {
    if (c.key == key) return c;
  }
  FAIL("no constant " << key);
  return rc.constants.front();
}

TEST_CASE("calibrate --runs: the DGX H100 rows give the committed dgx-h100 fit and its block byte for byte") {
  // The committed hwdb/systems/dgx-h100.yaml was fitted by `validate mbridge_perf_dev.csv --fit`
  // on the table's 20 priced DGX H100 rows. The same rows given to calibrate --runs on the
  // same system (its name keys the published recipe settings) must give the same constants
  // and, written into the system file, the same file byte for byte.
  const std::string dir = std::filesystem::temp_directory_path().string() + "/meshplan_calibrate_runs_test";
  const std::string csv = RowsOf("DGX-H100", dir);
  const SystemSpec h100 = LoadSystem("dgx-h100");
  RunsCalibration rc = CalibrateFromRuns(h100, csv, "", "");
  CHECK(rc.fitted_rows == 20);
  const MegatronTimeFit& f = rc.fit.outcome.fit;
  CHECK(f.gemm_fp8 == doctest::Approx(h100.megatron_fit.gemm_fp8).epsilon(1e-4));
  CHECK(f.gemm_bf16 == doctest::Approx(h100.megatron_fit.gemm_bf16).epsilon(1e-4));
  CHECK(f.memory_bound == doctest::Approx(h100.megatron_fit.memory_bound).epsilon(1e-4));
  CHECK(f.kernel_overhead == doctest::Approx(h100.megatron_fit.kernel_overhead).epsilon(1e-4));
  const std::string committed = std::string(*data::FindEmbedded("hwdb/systems/dgx-h100.yaml"));
  CHECK(SystemYamlWithFit(committed, rc.fit) == committed);
  // Where each constant came from: the BF16 rows are GPT-OSS's alone (one model), so BF16 takes
  // FP8's constant; FP8 rows of five models fit their own; no FP4 rows.
  CHECK(Constant(rc, "gemm_fp8").fitted);
  CHECK(Constant(rc, "gemm_fp8").basis == "fitted from 17 runs of 5 models in FP8");
  CHECK_FALSE(Constant(rc, "gemm_bf16").fitted);
  CHECK(Constant(rc, "gemm_bf16").basis.rfind("= gemm_fp8: BF16 runs of 1 model", 0) == 0);
  CHECK(Constant(rc, "gemm_fp4").basis.rfind("= gemm_fp8: no FP4 runs", 0) == 0);
  CHECK(Constant(rc, "kernel_overhead_us").value == doctest::Approx(h100.megatron_fit.kernel_overhead * 1e6));
  std::filesystem::remove_all(dir);
}

TEST_CASE("calibrate --runs: runs of one model fit its GEMM constant alone and say so") {
  // Only the Llama 3 70B rows (FP8 pre-training and SFT, one model): no precision has runs of two models, so FP8's
  // GEMM constant is fitted on that model's runs alone, the basis says what that risks, and
  // with fewer runs than constants the shared constants say the ridge holds them near the prior.
  const std::string dir = std::filesystem::temp_directory_path().string() + "/meshplan_calibrate_runs_one_model";
  std::filesystem::create_directories(dir);
  std::istringstream in(ReadText(kSource + "/tests/data/mbridge_perf_dev.csv"));
  std::ostringstream os;
  std::string line;
  std::getline(in, line);
  os << line << "\n";
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.find(",LLAMA3_70B,DGX-H100,") != std::string::npos && line.find(",LoRA,") == std::string::npos) {
      os << line << "\n";
      ++rows;
    }
  }
  REQUIRE(rows == 4);
  const std::string csv = dir + "/runs.csv";
  std::ofstream(csv) << os.str();
  const RunsCalibration rc = CalibrateFromRuns(LoadSystem("dgx-h100"), csv, "", "");
  CHECK(rc.fitted_rows == 4);
  CHECK(Constant(rc, "gemm_fp8").fitted);
  CHECK(Constant(rc, "gemm_fp8").basis.find("of 1 model in FP8 (no precision has runs of 2 models") !=
        std::string::npos);
  CHECK(Constant(rc, "gemm_bf16").basis == "kept at the prior: no BF16 runs");
  CHECK(Constant(rc, "gemm_bf16").value == 1.0);
  CHECK(Constant(rc, "memory_bound").basis.find("the ridge keeps it near the prior") != std::string::npos);
  CHECK(rc.fit.source == "runs.csv, 4 rows");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace meshplan
