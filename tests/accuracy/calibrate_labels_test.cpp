// `meshplan calibrate` on measurements that cover only some constants: the constants a
// measurement covered are labelled "fitted from N measurements", the others keep the base
// system's value exactly (in the fit and in the written system file) and say why.
// Synthetic sweeps: tests/data/calibration/synthetic/ (exact model times, see their first line).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "hardware/hwdb_parse.hpp"
#include "meshplan/calibrate.hpp"
#include "meshplan/hardware.hpp"

using namespace meshplan;

namespace {

const std::string kData = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/calibration/";

// The constants in the order Calibrate lists them (the order of a system file).
enum { kScaleupLatency, kScaleoutLatency, kScaleupBusbw, kScaleoutBusbw, kCompute };

bool Has(const std::string& text, const std::string& fragment) { return text.find(fragment) != std::string::npos; }

// Every constant `fit` keeps must be the base system's, bit for bit, in the fit and in the
// system file it writes (read back by the hwdb loader).
void CheckKeptExactly(const CalibrationFit& fit, const SystemSpec& base, const std::vector<int>& kept) {
  const SystemSpec back = hardware::ParseSystem(CalibratedSystemYaml(fit, {"m.jsonl"}), "my-h200.yaml", {});
  auto member = [](const SystemSpec& s, int i) {
    const double v[] = {s.scaleup_latency, s.scaleout_latency, s.scaleup_busbw_efficiency,
                        s.scaleout_busbw_efficiency, s.compute_efficiency};
    return v[i];
  };
  for (int i : kept) {
    CAPTURE(fit.constants[i].key);
    CHECK_FALSE(fit.constants[i].fitted());
    CHECK(fit.constants[i].value == member(base, i));
    CHECK(member(fit.system, i) == member(base, i));
    CHECK(member(back, i) == member(base, i));
  }
  // Not constants, copied from the base: read back exactly too.
  CHECK(back.scaleup_bandwidth == base.scaleup_bandwidth);
  CHECK(back.nic_bandwidth == base.nic_bandwidth);
}

}  // namespace

TEST_CASE("calibrate: GEMMs only fit compute_efficiency and the collective constants keep the base values") {
  // bf16 t = 5 us + 2mnk / 600 TFLOP/s: the 2048, 4096 and 8192 cubes are fitted (1024 is only
  // reported). dgx-h200: compute_efficiency 0.80, MAMF 989 x 0.803 = 794.167 TFLOP/s, so the
  // fitted value is 0.80 x 600 / 794.167 = 0.604407.
  const SystemSpec base = LoadSystem("dgx-h200");
  const CalibrationFit fit = Calibrate(base, ReadCalibrationPoints({kData + "synthetic/gemm_only.jsonl"}));
  REQUIRE(fit.constants.size() == 5);
  CHECK(fit.constants[kScaleupLatency].key == "scaleup_latency_us");
  CHECK(fit.constants[kScaleoutLatency].key == "scaleout_latency_us");
  CHECK(fit.constants[kScaleupBusbw].key == "scaleup_busbw_efficiency");
  CHECK(fit.constants[kScaleoutBusbw].key == "scaleout_busbw_efficiency");
  CHECK(fit.constants[kCompute].key == "compute_efficiency");

  CHECK(fit.bf16_rate == doctest::Approx(600e12).epsilon(1e-9));
  CHECK(fit.fp8_rate == doctest::Approx(1200e12).epsilon(1e-9));
  const CalibratedConstant& compute = fit.constants[kCompute];
  CHECK(compute.measurements == 3);
  CHECK(compute.value == doctest::Approx(0.6044068816760203).epsilon(1e-9));
  CHECK(fit.system.compute_efficiency == compute.value);
  CHECK(compute.prior == 0.80);
  CHECK(compute.Label("dgx-h200") ==
        "fitted from 3 measurements (bf16 GEMMs with min(m,n,k) >= 2048: 600 TFLOP/s against the MAMF 794 TFLOP/s "
        "(bf16 peak x matmul_efficiency_bf16), times the base value)");
  CHECK(fit.constants[kScaleupLatency].Label("dgx-h200") == "kept at dgx-h200's value: no collective measurements");
  CHECK(fit.constants[kScaleupBusbw].Label("dgx-h200") == "kept at dgx-h200's value: no collective measurements");
  CHECK(fit.constants[kScaleoutLatency].Label("dgx-h200") ==
        "kept at dgx-h200's value: calibrate fits the one-node (scale-up) constants only; no multi-node measurements");
  CheckKeptExactly(fit, base, {kScaleupLatency, kScaleoutLatency, kScaleupBusbw, kScaleoutBusbw});
  CHECK(fit.scaleup_latency_s == 0);  // no collective predictions
  CHECK(fit.fitted_points == 6);      // three bf16 and three fp8 GEMMs of >= 2048

  // The file says the same, line by line; the header names no collective fit.
  const std::string yaml = CalibratedSystemYaml(fit, {"gemm_only.jsonl"});
  CHECK(Has(yaml, "\nscaleup_latency_us: 3.4   # kept at dgx-h200's value: no collective measurements\n"));
  CHECK(Has(yaml, "\nscaleout_latency_us: 14   # kept at dgx-h200's value: calibrate fits"));
  CHECK(Has(yaml, "\nscaleup_busbw_efficiency: 0.812   # kept at dgx-h200's value: no collective measurements\n"));
  CHECK(Has(yaml, "\nscaleout_busbw_efficiency: 0.94   # kept at dgx-h200's value"));
  CHECK(Has(yaml, "\ncompute_efficiency: 0.604407   # fitted from 3 measurements (bf16 GEMMs"));
  CHECK_FALSE(Has(yaml, "scale-up latency"));
  CHECK_FALSE(Has(yaml, "# fitted\n"));
  // And the table calibrate prints.
  const std::string table = CalibratedConstantsTable(fit);
  CHECK(Has(table, "scaleup_latency_us                  3.4          3.4  kept at dgx-h200's value: no collective"));
  CHECK(Has(table, "compute_efficiency             0.604407          0.8  fitted from 3 measurements"));
}

TEST_CASE("calibrate: collectives only fit the scale-up constants and compute_efficiency keeps the base value") {
  // t = steps x 10 us + bytes x busfactor / 360 GB/s for all_reduce and all_gather over 2 and 8
  // GPUs of one node: the 1 MiB, 16 MiB and 256 MiB messages (12 points) are fitted, 4 KiB and
  // the 2-node all_reduce only reported. busbw 360 / 450 GB/s = 0.8.
  const SystemSpec base = LoadSystem("dgx-h200");
  const CalibrationFit fit = Calibrate(base, ReadCalibrationPoints({kData + "synthetic/collectives_only.jsonl"}));
  REQUIRE(fit.constants.size() == 5);
  const CalibratedConstant& latency = fit.constants[kScaleupLatency];
  CHECK(latency.measurements == 12);
  CHECK(latency.value == doctest::Approx(10e-6).epsilon(1e-9));
  CHECK(latency.prior == base.scaleup_latency);
  CHECK(latency.Label("dgx-h200") == "fitted from 12 measurements (one-node collectives of >= 1 MiB)");
  const CalibratedConstant& busbw = fit.constants[kScaleupBusbw];
  CHECK(busbw.measurements == 12);
  CHECK(busbw.value == doctest::Approx(0.8).epsilon(1e-9));
  CHECK(fit.scaleup_busbw == doctest::Approx(360e9).epsilon(1e-9));
  CHECK(busbw.Label("dgx-h200") ==
        "fitted from 12 measurements (one-node collectives of >= 1 MiB: busbw 360.0 GB/s of the 450 GB/s "
        "scaleup_gbps_per_gpu)");
  CHECK(fit.constants[kCompute].Label("dgx-h200") == "kept at dgx-h200's value: no bf16 GEMM measurements");
  CHECK(fit.constants[kScaleoutLatency].Label("dgx-h200") ==
        "kept at dgx-h200's value: calibrate fits the one-node (scale-up) constants only; 1 multi-node collective "
        "measurement reported, not fitted");
  CheckKeptExactly(fit, base, {kScaleoutLatency, kScaleoutBusbw, kCompute});
  CHECK(fit.bf16_rate == 0);
  CHECK(fit.fitted_points == 12);

  const std::string yaml = CalibratedSystemYaml(fit, {"collectives_only.jsonl"});
  CHECK(Has(yaml, "\nscaleup_latency_us: 10   # fitted from 12 measurements (one-node collectives of >= 1 MiB)\n"));
  CHECK(Has(yaml, "\nscaleup_busbw_efficiency: 0.8   # fitted from 12 measurements"));
  CHECK(Has(yaml, "\ncompute_efficiency: 0.8   # kept at dgx-h200's value: no bf16 GEMM measurements\n"));
  CHECK_FALSE(Has(yaml, "GEMM rate"));
}

TEST_CASE("calibrate: the committed H200 sweeps one file at a time fit only their own constants") {
  // hwdb/systems/dgx-h200-calibrated.yaml was fitted from both files: latency 29.319 us, busbw
  // efficiency 0.746794 from the collectives, compute_efficiency 0.692046 from the GEMMs.
  const SystemSpec base = LoadSystem("dgx-h200");
  const SystemSpec both = LoadSystem("dgx-h200-calibrated");
  const CalibrationFit gemm = Calibrate(base, ReadCalibrationPoints({kData + "h200_gemm.jsonl"}));
  CHECK(gemm.constants[kCompute].fitted());
  CHECK(gemm.system.compute_efficiency == doctest::Approx(both.compute_efficiency).epsilon(1e-5));
  CheckKeptExactly(gemm, base, {kScaleupLatency, kScaleoutLatency, kScaleupBusbw, kScaleoutBusbw});
  const CalibrationFit coll = Calibrate(base, ReadCalibrationPoints({kData + "h200x2_collectives.jsonl"}));
  CHECK(coll.constants[kScaleupLatency].fitted());
  CHECK(coll.constants[kScaleupBusbw].fitted());
  CHECK(coll.system.scaleup_latency == doctest::Approx(both.scaleup_latency).epsilon(1e-4));
  CHECK(coll.system.scaleup_busbw_efficiency == doctest::Approx(both.scaleup_busbw_efficiency).epsilon(1e-5));
  CheckKeptExactly(coll, base, {kScaleoutLatency, kScaleoutBusbw, kCompute});
}

TEST_CASE("calibrate: base values of more than 6 digits are written back exactly") {
  const SystemSpec base = hardware::ParseSystem(
      "display_name: long digits\ngpu: h200\ngpus_per_node: 8\nscaleup_domain_gpus: 8\n"
      "scaleup_gbps_per_gpu: 450.123456789\nscaleup_latency_us: 3.4123456789\nnics_per_node: 8\n"
      "nic_gbit: 400.123456789\nscaleout_latency_us: 14.123456789\nscaleup_busbw_efficiency: 0.8123456789\n"
      "scaleout_busbw_efficiency: 0.9412345678\ncompute_efficiency: 0.7123456789\n",
      "long-digits.yaml", {});
  const CalibrationFit fit = Calibrate(base, ReadCalibrationPoints({kData + "synthetic/gemm_only.jsonl"}));
  CheckKeptExactly(fit, base, {kScaleupLatency, kScaleoutLatency, kScaleupBusbw, kScaleoutBusbw});
  const std::string yaml = CalibratedSystemYaml(fit, {});
  CHECK(Has(yaml, "\nscaleup_latency_us: 3.4123456789   # kept at long-digits's value"));
  CHECK(Has(yaml, "\nscaleup_busbw_efficiency: 0.8123456789   # kept at long-digits's value"));
  CHECK(Has(yaml, "\nscaleup_gbps_per_gpu: 450.123456789\n"));
}

TEST_CASE("calibrate: a base system's megatron_time_fit is reported as not carried over") {
  // dgx-h100 has a megatron_time_fit (meshplan validate --fit); the calibrated file has none.
  const SystemSpec base = LoadSystem("dgx-h100");
  REQUIRE(base.megatron_fit.fitted);
  const CalibrationFit fit = Calibrate(base, ReadCalibrationPoints({kData + "synthetic/gemm_only.jsonl"}));
  CHECK(fit.dropped_megatron_fit);
  const std::string yaml = CalibratedSystemYaml(fit, {"gemm_only.jsonl"});
  CHECK(Has(yaml, "# megatron_time_fit of dgx-h100 not carried over"));
  CHECK(Has(CalibratedConstantsTable(fit), "megatron_time_fit of dgx-h100 not carried over"));
  CHECK_FALSE(hardware::ParseSystem(yaml, "my-h100.yaml", {}).megatron_fit.fitted);
  CHECK_FALSE(Calibrate(LoadSystem("dgx-h200"), ReadCalibrationPoints({kData + "synthetic/gemm_only.jsonl"}))
                  .dropped_megatron_fit);
}
