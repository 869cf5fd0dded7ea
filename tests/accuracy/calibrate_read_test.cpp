// `meshplan calibrate`: the measurement reader on the committed sweeps, the fit that wrote
// hwdb/systems/dgx-h200-calibrated.yaml, and the fallback when no positive latency fits.
// (Malformed measurement files: tests/bad_inputs/cases.txt, entrance "measurements".)
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "hardware/hwdb_parse.hpp"
#include "meshplan/calibrate.hpp"
#include "meshplan/diag.hpp"
#include "meshplan/hardware.hpp"

using namespace meshplan;

namespace {
const std::string kDir = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/calibration/";
}

TEST_CASE("calibrate: the committed H200 sweeps read back point by point and refit the committed system") {
  const std::vector<CalibrationPoint> gemm = ReadCalibrationPoints({kDir + "h200_gemm.jsonl"});
  const std::vector<CalibrationPoint> coll = ReadCalibrationPoints({kDir + "h200x2_collectives.jsonl"});
  CHECK(gemm.size() == 58);  // every "kind": "gemm" line; the environment line is skipped
  CHECK(coll.size() == 55);
  // First GEMM line: bf16 512x512x512 in 2.6340800523757934e-05 s.
  CHECK(gemm[0].kind == "gemm");
  CHECK(gemm[0].op == "bf16");
  CHECK(gemm[0].flop == 2.0 * 512 * 512 * 512);
  CHECK(gemm[0].seconds == doctest::Approx(2.6340800523757934e-05).epsilon(1e-12));
  CHECK(gemm[0].where.ends_with("h200_gemm.jsonl:2"));
  // First collective line: all_reduce over 2 GPUs of one node, 1024 bytes.
  CHECK(coll[0].op == "all_reduce");
  CHECK(coll[0].n == 2);
  CHECK(coll[0].nodes == 1);
  CHECK(coll[0].bytes == 1024);
  std::vector<CalibrationPoint> all = coll;
  all.insert(all.end(), gemm.begin(), gemm.end());
  const CalibrationFit fit = Calibrate(LoadSystem("dgx-h200"), all);
  // hwdb/systems/dgx-h200-calibrated.yaml: latency 29.319 us, efficiency 0.746794, compute 0.692046.
  const SystemSpec committed = LoadSystem("dgx-h200-calibrated");
  CHECK(fit.system.scaleup_latency == doctest::Approx(committed.scaleup_latency).epsilon(1e-4));
  CHECK(fit.system.scaleup_busbw_efficiency == doctest::Approx(committed.scaleup_busbw_efficiency).epsilon(1e-5));
  CHECK(fit.system.compute_efficiency == doctest::Approx(committed.compute_efficiency).epsilon(1e-5));
  CHECK(fit.rms_residual == doctest::Approx(0.136781).epsilon(1e-4));
}

TEST_CASE("calibrate: collectives without a positive latency keep the base latency and the system loads") {
  // all_reduce over 2 GPUs at 300 GB/s bus bandwidth, 64 MiB to 4 GiB (the latency is lost in
  // them), the smallest message 10% faster than the bandwidth alone allows: the two-term fit
  // gives a negative latency.
  std::string text = "{\"environment\": {\"gpu\": \"NVIDIA H200\"}}\n";
  const double bw = 300e9;
  for (int64_t bytes : {int64_t{1} << 26, int64_t{1} << 28, int64_t{1} << 30, int64_t{1} << 32}) {
    const double t = static_cast<double>(bytes) / bw * (bytes == (1 << 26) ? 0.9 : 1.0);
    char line[200];
    std::snprintf(line, sizeof line,
                  "{\"kind\": \"collective\", \"op\": \"all_reduce\", \"n\": 2, \"bytes\": %lld, \"seconds\": %.17g}\n",
                  static_cast<long long>(bytes), t);
    text += line;
  }
  const SystemSpec base = LoadSystem("dgx-h200");
  const CalibrationFit fit = Calibrate(base, ParseCalibrationPoints(text, "large_only.jsonl"));
  CHECK(fit.scaleup_latency_s == base.scaleup_latency);
  CHECK(fit.system.scaleup_latency == base.scaleup_latency);
  CHECK(fit.scaleup_busbw == doctest::Approx(bw).epsilon(0.05));
  // Labelled so: the latency kept, the bandwidth fitted from the 4 points.
  REQUIRE(fit.constants.size() == 5);
  CHECK(fit.constants[0].key == "scaleup_latency_us");
  CHECK(fit.constants[0].Label("dgx-h200") ==
        "kept at dgx-h200's value: the 4 measurements (one-node collectives of >= 1 MiB) give no positive latency "
        "(messages too large to resolve it)");
  CHECK(fit.constants[2].key == "scaleup_busbw_efficiency");
  CHECK(fit.constants[2].measurements == 4);
  const SystemSpec back = hardware::ParseSystem(CalibratedSystemYaml(fit, {"large_only.jsonl"}), "my-h200.yaml", {});
  CHECK(back.scaleup_latency == doctest::Approx(base.scaleup_latency).epsilon(1e-5));
  CHECK(back.scaleup_busbw_efficiency == doctest::Approx(fit.system.scaleup_busbw_efficiency).epsilon(1e-5));
}

TEST_CASE("calibrate: a measurement error names file and line and the column of the key") {
  const std::string text =
      "{\"kind\": \"gemm\", \"dtype\": \"bf16\", \"m\": 4096, \"n\": 4096, \"k\": 4096, \"seconds\": 0.00017}\n"
      "\n"
      "{\"kind\": \"gemm\", \"dtype\": \"bf16\", \"m\": 4096, \"n\": 4096, \"k\": 4096, \"seconds\": NaN}\n";
  try {
    ParseCalibrationPoints(text, "g.jsonl");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.loc().file == "g.jsonl");
    CHECK(e.loc().line == 3);
    CHECK(e.loc().column == 79);
    CHECK(e.field() == "seconds");
    CHECK(std::string(e.what()).find("expected a finite number, found NaN") != std::string::npos);
  }
  CHECK(ParseCalibrationPoints(text.substr(0, text.find('\n') + 1), "g.jsonl").size() == 1);
}
