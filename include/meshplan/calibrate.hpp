#pragma once
/// \file calibrate.hpp
/// `meshplan calibrate`: fits a system's collective latency / bus-bandwidth efficiency and its
/// compute efficiency to measurements of tools/measure/collectives.py and gemm.py by weighted
/// least squares (Eigen), and (--runs) its Megatron-Core step-time constants to measured
/// training runs (CalibrateFromRuns), and writes the calibrated system YAML.

#include <string>
#include <string_view>
#include <vector>

#include "meshplan/accuracy.hpp"
#include "meshplan/hardware.hpp"

namespace meshplan {

/// One measured point (a JSON line of collectives.jsonl or gemm.jsonl).
struct CalibrationPoint {
  std::string kind;      ///< "collective" or "gemm"
  std::string op;        ///< collective: all_reduce, all_gather, reduce_scatter, all_to_all, send_recv; gemm: dtype
  int64_t n = 0;         ///< collective group size
  int64_t nodes = 1;     ///< nodes the group spans
  double bytes = 0;      ///< collective: bytes of the full buffer
  double flop = 0;       ///< gemm: 2 m n k
  double seconds = 0;    ///< measured time per call
  std::string where;     ///< "file:line" for messages
  std::string file;      ///< the measurement file
  int line = 0;          ///< its line (1-based)
  std::string gpu;       ///< the GPU its file's {"environment"} line names ("" if none)
};

/// Parses the text of one JSON-lines measurement file named `file` (blank lines and the
/// {"environment"} line are skipped). Throws InputError naming file, line, the column of the
/// key, the field, what was expected and what was found, for: malformed JSON (NaN and
/// Infinity included), NUL bytes, lines over 64 KiB, nesting deeper than 64, duplicate keys,
/// a missing or mistyped field, an unknown kind / op / dtype, and numbers out of range
/// (seconds in [1e-9, 3600], collective n in [2, 2^20], bytes in [1, 2^40], nodes_spanned in
/// [1, n], GEMM m, n, k in [1, 2^20]).
std::vector<CalibrationPoint> ParseCalibrationPoints(std::string_view text, const std::string& file);

/// Reads JSON-lines measurement files with ParseCalibrationPoints. Throws InputError for an
/// unreadable, empty or non-regular file, for a file without any measurement line and for a
/// file given twice (its points would count double).
std::vector<CalibrationPoint> ReadCalibrationPoints(const std::vector<std::string>& files);

/// Whether the GPU named by a measurement's environment line (torch.cuda.get_device_name:
/// "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X") is `gpu`: its model word (the first after
/// the vendor words NVIDIA, AMD, Instinct, Tesla) appears among the words of gpu.display_name
/// or gpu.name, case-insensitively. True when `measured` is empty (no environment line).
bool MeasuredOnGpu(const std::string& measured, const GpuSpec& gpu);

/// Throws InputError (field environment.gpu, at line 1 of the point's file) for the first point
/// not MeasuredOnGpu of `base`'s GPU: another GPU's measurements would give this system another
/// GPU's numbers. `system_arg` is how the base system was named (--system), for the message.
void RefuseOtherGpu(const std::vector<CalibrationPoint>& points, const SystemSpec& base, const std::string& system_arg);

/// A fitted point: measured and predicted seconds; residual = predicted / measured - 1.
struct CalibrationResidual {
  CalibrationPoint point;
  double predicted = 0;
  double residual = 0;
  bool fitted = false;  ///< used by the fit (large messages / large GEMMs) or only reported
};

/// Where one constant of the calibrated system comes from: fitted from `measurements` points,
/// or (measurements == 0) kept at the base system's value because no measurement covered it.
struct CalibratedConstant {
  std::string key;       ///< its hwdb/systems key, e.g. "scaleup_latency_us"
  double value = 0;      ///< SI (seconds or a fraction), as in SystemSpec
  double prior = 0;      ///< the base system's value, SI
  double unit = 1;       ///< SI value of one unit of the key (1e-6 for the `_us` keys)
  int measurements = 0;  ///< points the fit of this constant used; 0: kept at `prior`
  std::string basis;     ///< fitted: which points (and any clamp); kept: why no measurement covered it
  bool fitted() const { return measurements > 0; }
  /// "fitted from 33 measurements (...)" or "kept at dgx-h200's value: ..." (`base` names the base system).
  std::string Label(const std::string& base) const;
};

/// Outcome of Calibrate.
struct CalibrationFit {
  SystemSpec system;                 ///< base system with the fitted constants
  std::string base_name;             ///< the base system's name (file stem)
  /// The five constants a calibrated system file holds, in its order: scaleup_latency_us,
  /// scaleout_latency_us, scaleup_busbw_efficiency, scaleout_busbw_efficiency, compute_efficiency.
  std::vector<CalibratedConstant> constants;
  /// The base system had a `megatron_time_fit:` (meshplan validate --fit), which the calibrated
  /// system does not carry: it was fitted against the base system's constants.
  bool dropped_megatron_fit = false;
  int fitted_points = 0;             ///< points of rms_residual
  double scaleup_latency_s = 0;      ///< seconds per collective step of the fit's predictions (0 if no
                                     ///< collective data; the base latency when the fit gives no positive one)
  double scaleup_busbw = 0;          ///< fitted bus bandwidth, bytes/s
  double bf16_rate = 0, fp8_rate = 0;  ///< fitted large-GEMM FLOP/s (0 if no data)
  double rms_residual = 0;           ///< over the fitted points
  std::vector<CalibrationResidual> residuals;
};

/// Fits, on the scale-up collective points of messages >= 1 MiB, t = steps(op, n) * latency +
/// bytes * busfactor(op, n) / busbw (ring steps 2(n-1) for all-reduce, n-1 for all-gather /
/// reduce-scatter / all-to-all, 1 for send/recv; bus factors of nccl-tests PERFORMANCE.md),
/// and on GEMMs with min(m, n, k) >= 2048, t = t0 + flop / rate, each by least squares on
/// relative residuals. The system then gets scaleup_latency = latency, scaleup_busbw_efficiency
/// = busbw / scaleup_bandwidth, and compute_efficiency scaled by bf16 rate / (bf16 peak x
/// matmul_efficiency_bf16) (the measured large-GEMM rate replaces the published MAMF). When the
/// collective points give no positive latency, the base system's latency is kept and only the
/// bandwidth is fitted. Throws InputError (field "MEASUREMENTS") when there are too few points
/// to fit, when the fitted bus bandwidth is not positive (times that do not grow with the
/// message size) or when the fitted latency exceeds 0.1 s per step (hwdb's limit). Constants
/// that no measurement covers (the scale-up ones without collective points, compute_efficiency
/// without bf16 GEMM points, the scale-out ones always) keep the base system's value exactly;
/// `constants` says which were fitted and from how many points.
CalibrationFit Calibrate(const SystemSpec& base, const std::vector<CalibrationPoint>& points);

/// The constants of `fit`, one line each: key, value, base value and where the value comes
/// from (CalibratedConstant::Label), then the note on a dropped megatron_time_fit, if any.
std::string CalibratedConstantsTable(const CalibrationFit& fit);

/// The calibrated system as a hwdb/systems YAML (published units), with the fit as comments:
/// each constant's line says whether it was fitted (from how many measurements) or kept at
/// the base system's value and why. A kept value reads back exactly as the base system's.
std::string CalibratedSystemYaml(const CalibrationFit& fit, const std::vector<std::string>& sources);

/// One Megatron-Core step-time constant (MegatronTimeFit, `megatron_time_fit:`) of a runs
/// calibration: its value, the prior the fit's ridge pulls it toward, and where it comes from.
struct RunsFitConstant {
  std::string key;    ///< gemm_bf16, gemm_fp8, gemm_fp4, memory_bound or kernel_overhead_us
  double value = 0;   ///< a dimensionless factor; microseconds for kernel_overhead_us
  double prior = 0;   ///< the ridge's prior: 1 for the factors, 4 us per kernel
  bool fitted = false;  ///< fitted from this constant's own runs (not shared, not kept)
  std::string basis;  ///< "fitted from 12 runs of 3 models", "= gemm_fp8: ...", "kept at the prior: ..."
};

/// `calibrate --runs`: a system's Megatron-Core step-time constants fitted to measured runs.
struct RunsCalibration {
  SystemFit fit;                   ///< the fit (accuracy/megatron_fit.cpp FitMegatronTime) and its rows' labels
  std::vector<ValidateRow> rows;   ///< every data row of the runs file, priced or skipped, in file order
  int fitted_rows = 0;             ///< runs the fit used (priced Megatron-Core layouts of flat decoders)
  std::vector<RunsFitConstant> constants;  ///< the five constants, in megatron_time_fit's order
};

/// Prices every run of `runs` (a Megatron-Bridge performance-table CSV, the columns of
/// tests/data/mbridge_perf_dev.csv; InputError for `validate`'s survey format) at its layout on
/// `system`, whatever the run's system cell says, with the recipe settings of
/// `recipe_settings` (recipes/megatron-bridge-perf.yaml's schema; "" = the embedded file,
/// "none" = meshplan's emitted settings), and fits the step-time constants to the measured
/// step times exactly as `validate --fit` fits a system (FitMegatronTime: least squares on
/// relative step time, ridge kMegatronFitRidge toward the prior; a GEMM constant per precision
/// only from runs of at least kFitMinModels models). Runs of models with a layer pattern
/// (Mamba-2, Gated DeltaNet, DeepSeek-V4 attention: ModelSpec::is_hybrid) and AutoModel runs are
/// priced, not fitted. fit.source is "RUNS, N rows".
/// Throws InputError as Validate does (an unreadable or malformed runs or settings file).
RunsCalibration CalibrateFromRuns(const SystemSpec& system, const std::string& runs, const std::string& hwdb,
                                  const std::string& recipe_settings);

/// What a runs calibration needs to identify each constant, as lines of text (calibrate --runs
/// prints it): how many runs of which kind.
std::string RunsCalibrationNeeds();

}  // namespace meshplan
