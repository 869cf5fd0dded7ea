// `meshplan calibrate MEASUREMENTS... --system BASE -o hwdb/systems/NAME.yaml`.
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
  const SystemSpec base = LoadSystem(o.system, o.hwdb);
  const CalibrationFit fit = Calibrate(base, ReadCalibrationPoints(o.files));
  std::printf("%-32s %-15s %4s %14s %12s %12s %9s\n", "point", "op", "n", "bytes|flop", "measured_s", "predicted_s",
              "residual");
  for (const auto& r : fit.residuals) {
    std::printf("%-32s %-15s %4lld %14.4g %12.4g %12.4g %+8.1f%%%s\n", r.point.where.c_str(), r.point.op.c_str(),
                static_cast<long long>(r.point.n), r.point.kind == "gemm" ? r.point.flop : r.point.bytes,
                r.point.seconds, r.predicted, 100 * r.residual, r.fitted ? "" : " (not fitted)");
  }
  std::printf("fit: scale-up latency %.2f us/step, busbw %.1f GB/s (efficiency %.3f of %.0f GB/s); bf16 GEMM %.0f "
              "TFLOP/s, fp8 %.0f TFLOP/s; compute_efficiency %.3f -> %.3f; RMS residual %.1f%%\n",
              fit.scaleup_latency_s * 1e6, fit.scaleup_busbw / 1e9, fit.system.scaleup_busbw_efficiency,
              base.scaleup_bandwidth / 1e9, fit.bf16_rate / 1e12, fit.fp8_rate / 1e12, base.compute_efficiency,
              fit.system.compute_efficiency, 100 * fit.rms_residual);
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
