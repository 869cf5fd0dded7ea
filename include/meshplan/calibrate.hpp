#pragma once
/// \file calibrate.hpp
/// `meshplan calibrate`: fits a system's collective latency / bus-bandwidth efficiency and its
/// compute efficiency to measurements of tools/measure/collectives.py and gemm.py by weighted
/// least squares (Eigen), and writes the calibrated system YAML.

#include <string>
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

/// Reads JSON-lines measurement files (the {"environment"} line is skipped). Throws
/// InputError (file, line, field) for unreadable files, malformed JSON or missing fields.
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
/// matmul_efficiency_bf16) (the measured large-GEMM rate replaces the published MAMF). Throws
/// InputError (field "MEASUREMENTS") when there are too few points to fit.
CalibrationFit Calibrate(const SystemSpec& base, const std::vector<CalibrationPoint>& points);

/// The calibrated system as a hwdb/systems YAML (published units), with the fit as comments.
std::string CalibratedSystemYaml(const CalibrationFit& fit, const std::vector<std::string>& sources);

}  // namespace meshplan
