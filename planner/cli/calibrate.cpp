// `meshplan calibrate MEASUREMENTS... --system BASE -o hwdb/systems/NAME.yaml`: CLI11 wiring and
// the printing of meshplan::Calibrate's fit (planner/accuracy/calibrate.cpp).
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "meshplan/calibrate.hpp"
#include "meshplan/recipe.hpp"

namespace meshplan::cli {

void AddCalibrateCommand(CLI::App& app, CalibrateOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "fit a system's latency, bandwidth and efficiency constants to tools/measure/ sweeps");
  cmd->add_option("measurements", o.files, "collectives.jsonl / gemm.jsonl files")->required();
  cmd->add_option("--system", o.system, "base system (name or YAML path)")->required();
  cmd->add_option("-o,--out", o.out, "calibrated system YAML to write")->required();
  cmd->add_option("--hwdb", o.hwdb, "hardware database directory (default: the embedded hwdb/)");
  cmd->add_option("--max-residual", o.max_residual,
                  "refuse the fit when the RMS relative residual of the fitted points exceeds this (default 0.25)");
  cmd->add_flag("--force", o.force, "replace --out if it exists");
}

int RunCalibrate(const CalibrateOptions& o) {
  if (!(o.max_residual > 0 && o.max_residual <= 10)) {
    throw InputError({"<command line>", 0, 0}, "--max-residual",
                     "expected a relative residual in (0, 10], found " + std::to_string(o.max_residual));
  }
  const SystemSpec base = LoadSystem(o.system, o.hwdb);
  const auto points = ReadCalibrationPoints(o.files);
  RefuseOtherGpu(points, base, o.system);
  CheckOutputPath(o.out, "--out", o.force);  // before the fit is printed
  const CalibrationFit fit = Calibrate(base, points);
  std::printf("%-32s %-15s %4s %14s %12s %12s %9s\n", "point", "op", "n", "bytes|flop", "measured_s", "predicted_s",
              "residual");
  for (const auto& r : fit.residuals) {
    std::printf("%-32s %-15s %4lld %14.4g %12.4g %12.4g %+8.1f%%%s\n", r.point.where.c_str(), r.point.op.c_str(),
                static_cast<long long>(r.point.n), r.point.kind == "gemm" ? r.point.flop : r.point.bytes,
                r.point.seconds, r.predicted, 100 * r.residual, r.fitted ? "" : " (not fitted)");
  }
  std::printf("\n%s", CalibratedConstantsTable(fit).c_str());
  std::printf("fit: RMS relative residual %.1f%% over %d fitted points", 100 * fit.rms_residual, fit.fitted_points);
  if (fit.fp8_rate > 0) std::printf("; fp8 large-GEMM rate %.0f TFLOP/s (no system constant)", fit.fp8_rate / 1e12);
  std::printf("\n");
  if (!(fit.rms_residual <= o.max_residual)) {
    std::cerr << "meshplan: calibration refused: RMS relative residual " << 100 * fit.rms_residual << "% exceeds "
              << 100 * o.max_residual << "% (--max-residual); the measurements do not follow the model\n";
    return 1;
  }
  WriteFileAtomically(o.out, CalibratedSystemYaml(fit, o.files), o.force);
  std::printf("wrote %s\n", o.out.c_str());
  return 0;
}

}  // namespace meshplan::cli
