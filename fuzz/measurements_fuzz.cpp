// Fuzz target: the measurement reader of `meshplan calibrate` (JSON lines of
// tools/measure/collectives.py and gemm.py), the least-squares fit on every set of points it
// accepts, and the calibrated system it would write: when the fit passes the CLI's default
// --max-residual, the written YAML must be a system that meshplan itself can load. Any
// exception other than InputError, and any accepted point or fit outside its ranges, is a
// finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "hardware/hwdb_parse.hpp"
#include "meshplan/calibrate.hpp"
#include "meshplan/hardware.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const meshplan::SystemSpec base = meshplan::LoadSystem("dgx-h200");
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<meshplan::CalibrationPoint> points;
  try {
    points = meshplan::ParseCalibrationPoints(text, "fuzz.jsonl");
  } catch (const meshplan::InputError&) {
    return 0;
  }
  for (const auto& p : points) {
    if (!(p.seconds > 0) || !std::isfinite(p.seconds)) __builtin_trap();
    if (p.kind == "collective" && (p.n < 2 || p.nodes < 1 || p.nodes > p.n || !(p.bytes >= 1))) __builtin_trap();
    if (p.kind == "gemm" && (p.n < 1 || !(p.flop > 0) || !std::isfinite(p.flop))) __builtin_trap();
    if (p.kind != "collective" && p.kind != "gemm") __builtin_trap();
  }
  try {
    const meshplan::CalibrationFit fit = meshplan::Calibrate(base, points);
    if (fit.rms_residual <= 0.25) {  // the CLI writes this fit
      const std::string yaml = meshplan::CalibratedSystemYaml(fit, {"fuzz.jsonl"});
      try {
        const meshplan::SystemSpec s = meshplan::hardware::ParseSystem(yaml, "calibrated.yaml", {});
        if (!(s.scaleup_busbw_efficiency > 0) || !(s.compute_efficiency > 0)) __builtin_trap();
      } catch (const meshplan::InputError&) {
        __builtin_trap();  // calibrate would write a system that plan refuses
      }
    }
  } catch (const meshplan::InputError&) {
  }
  return 0;
}
