#pragma once
/// \file calibrate.hpp
/// `meshplan calibrate`: fits a system's collective latency / bus-bandwidth efficiency and its
/// compute efficiency to measurements of tools/measure/collectives.py and gemm.py by weighted
/// least squares (Eigen), and writes the calibrated system YAML.

#include <string>
#include <string_view>
#include <vector>

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
/// unreadable, empty or non-regular file and for a file without any measurement line.
std::vector<CalibrationPoint> ReadCalibrationPoints(const std::vector<std::string>& files);

/// A fitted point: measured and predicted seconds; residual = predicted / measured - 1.
struct CalibrationResidual {
  CalibrationPoint point;
  double predicted = 0;
  double residual = 0;
  bool fitted = false;  ///< used by the fit (large messages / large GEMMs) or only reported
};

/// Outcome of Calibrate.
struct CalibrationFit {
  SystemSpec system;                 ///< base system with the fitted constants
  double scaleup_latency_s = 0;      ///< fitted seconds per collective step (0 if no collective data)
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
/// message size) or when the fitted latency exceeds 0.1 s per step (hwdb's limit).
CalibrationFit Calibrate(const SystemSpec& base, const std::vector<CalibrationPoint>& points);

/// The calibrated system as a hwdb/systems YAML (published units), with the fit as comments.
std::string CalibratedSystemYaml(const CalibrationFit& fit, const std::vector<std::string>& sources);

}  // namespace meshplan
