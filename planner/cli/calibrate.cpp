// `meshplan calibrate [MEASUREMENTS...] [--runs RUNS.csv] --system BASE -o hwdb/systems/NAME.yaml`:
// CLI11 wiring and the printing of meshplan::Calibrate's fit (planner/accuracy/calibrate.cpp) and
// of CalibrateFromRuns' (planner/accuracy/calibrate_runs.cpp).
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "meshplan/calibrate.hpp"
#include "meshplan/recipe.hpp"

namespace meshplan::cli {

void AddCalibrateCommand(CLI::App& app, CalibrateOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "fit a system's latency, bandwidth and efficiency constants to tools/measure/ sweeps, and (--runs) its "
      "Megatron-Core step-time constants to measured training runs");
  cmd->add_option("measurements", o.files, "collectives.jsonl / gemm.jsonl files (optional with --runs)");
  cmd->add_option("--runs", o.runs,
                  "measured Megatron-Bridge training runs on this system (CSV with the columns of a Megatron-Bridge "
                  "performance table: release,task,model,system,gpus,precision,gbs,mbs,seq,fsdp,tp,pp,cp,vp,ep,ga,"
                  "tokens_per_s_per_gpu,model_tflops_per_gpu; the system cell is ignored): fit megatron_time_fit to them");
  cmd->add_option("--recipe-settings", o.recipe_settings,
                  "with --runs: YAML of the runs' recipe settings (schema of recipes/megatron-bridge-perf.yaml, keyed by "
                  "--system's name); default: the embedded file; 'none': meshplan's emitted settings");
  cmd->add_option("--system", o.system, "base system (name or YAML path)")->required();
  cmd->add_option("-o,--out", o.out, "calibrated system YAML to write")->required();
  cmd->add_option("--hwdb", o.hwdb, "hardware database directory (default: the embedded hwdb/)");
  cmd->add_option("--max-residual", o.max_residual,
                  "refuse the fit when the RMS relative residual of the fitted points, or of the --runs step times, "
                  "exceeds this (default 0.25)");
  cmd->add_flag("--force", o.force, "replace --out if it exists");
}

namespace {

// Prints each run of a runs calibration, the constants and what the fit needs.
void PrintRunsFit(const RunsCalibration& rc, const std::string& system) {
  std::printf("\nruns on %s (--runs): %d fitted\n", system.c_str(), rc.fitted_rows);
  std::printf("%-56s %10s %10s\n", "run", "residual", "left out");
  const MegatronFitOutcome& o = rc.fit.outcome;
  for (size_t i = 0; i < rc.fit.labels.size() && i < o.residuals.size(); ++i) {
    std::printf("%-56s %+9.1f%% %+9.1f%%\n", rc.fit.labels[i].c_str(), 100 * o.residuals[i],
                100 * o.loo_residuals[i]);
  }
  int not_fitted = 0, skipped = 0;
  for (const ValidateRow& r : rc.rows) {
    if (r.skip.empty()) {
      ++not_fitted;
    } else if (++skipped <= 20) {
      std::printf("skipped line %d (%s): %s\n", r.line, r.label.c_str(), r.skip_shown.c_str());
    }
  }
  if (skipped > 20) std::printf("skipped %d more lines\n", skipped - 20);
  if (rc.rows.empty()) std::printf("no data rows\n");
  not_fitted -= rc.fitted_rows;
  if (not_fitted > 0) {
    std::printf("priced, not fitted %d: models with a layer pattern (Mamba-2, Gated DeltaNet, DeepSeek-V4 attention) or AutoModel runs\n", not_fitted);
  }
  if (rc.fitted_rows == 0) return;
  std::printf("\n%-20s %10s %8s  %s\n", "megatron_time_fit", "value", "prior", "from");
  for (const RunsFitConstant& c : rc.constants) {
    std::printf("%-20s %10.4f %8.2f  %s\n", c.key.c_str(), c.value, c.prior, c.basis.c_str());
  }
  std::printf("fit: median |residual| %.1f%%, p90 %.1f%%; left out: median %.1f%%\n",
              100 * o.fit.residual_median, 100 * o.fit.residual_p90, 100 * rc.fit.loo_median);
  std::printf("\n%s", RunsCalibrationNeeds().c_str());
}

}  // namespace

int RunCalibrate(const CalibrateOptions& o) {
  if (o.files.empty() && o.runs.empty()) {
    throw InputError({"<command line>", 0, 0}, "measurements",
                     "expected tools/measure/ measurement files, --runs RUNS.csv, or both; found neither");
  }
  if (!(o.max_residual > 0 && o.max_residual <= 10)) {
    throw InputError({"<command line>", 0, 0}, "--max-residual",
                     "expected a relative residual in (0, 10], found " + std::to_string(o.max_residual));
  }
  const SystemSpec base = LoadSystem(o.system, o.hwdb);
  std::vector<CalibrationPoint> points;
  if (!o.files.empty()) {
    points = ReadCalibrationPoints(o.files);
    RefuseOtherGpu(points, base, o.system);
  }
  CheckOutputPath(o.out, "--out", o.force);  // before any fit is printed
  SystemSpec priced = base;
  std::string yaml;
  if (o.files.empty()) {
    yaml = SystemYamlText(o.system, o.hwdb);
  } else {
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
    yaml = CalibratedSystemYaml(fit, o.files);
    priced = fit.system;
  }
  if (!o.runs.empty()) {
    // The runs are priced on the system being written, under --system's name (--recipe-settings
    // entries key on it; the embedded table's on the shipped systems' names).
    RunsCalibration rc = CalibrateFromRuns(priced, o.runs, o.hwdb, o.recipe_settings);
    PrintRunsFit(rc, priced.name);
    if (rc.fitted_rows == 0) {
      throw InputError({o.runs, 0, 0}, "--runs",
                       "expected at least one run of a Megatron-Core layout that meshplan can price on " + priced.name +
                           " (see the skipped runs above); nothing was written");
    }
    // The runs must follow the model: a mistyped throughput would otherwise drive the constants
    // to their bounds and write a system no prediction should use.
    double sq = 0;
    for (double r : rc.fit.outcome.residuals) sq += r * r;
    const double rms = std::sqrt(sq / double(rc.fit.outcome.residuals.size()));
    if (!(rms <= o.max_residual)) {
      std::cerr << "meshplan: calibration refused: RMS relative step-time residual of the runs " << 100 * rms
                << "% exceeds " << 100 * o.max_residual
                << "% (--max-residual); the runs do not follow the model (a mistyped throughput, or runs of "
                   "another system?); nothing was written\n";
      return 1;
    }
    rc.fit.written_by = "`meshplan calibrate --runs RUNS.csv`";
    yaml = SystemYamlWithFit(yaml, rc.fit);
  }
  WriteFileAtomically(o.out, yaml, o.force);
  std::printf("wrote %s\n", o.out.c_str());
  return 0;
}

}  // namespace meshplan::cli
