#pragma once
/// \file risk.hpp
/// The uncertainty every prediction carries, from the cost model's measured errors: a
/// step-time band (the leave-one-out errors `meshplan validate --fit` reports, by kind of
/// layout) and a probability of running out of memory at the chosen headroom (the memory
/// model's largest measured under-prediction). The planner ranks by the expected step with
/// that risk priced in, and calls layouts within the band of the best a tie
/// (docs/ranking.md).

#include "meshplan/cost.hpp"

namespace meshplan {

/// One entry of a measured-error table: a relative error and where it was measured.
struct ErrorBand {
  double value = 0;            ///< relative error (0.071: 7.1%)
  int rows = 0;                ///< how many measured or published rows it rests on
  const char* source = "";     ///< which run and rows (file, command, group)
};

/// Where a Megatron-Core prediction's step-time constants come from (MegatronTimeFit): the
/// system's own fit, another system's (an unfitted system borrows the fit of the same GPU die,
/// ApplyUnfittedMegatronFit) or none (the physical model).
enum class FitOrigin { kOwn, kBorrowed, kPhysical };

/// What a prediction of this kind is grouped by: which runtime prices it, dense or MoE model,
/// whether the job spans more than one NVLink (scale-up) domain and, for Megatron-Core, where
/// the system's step-time constants come from.
struct ErrorKind {
  CostRuntime runtime = CostRuntime::kPyTorchEager;
  bool moe = false;
  bool multi_domain = false;  ///< GPUs > the system's scale-up domain (DGX: 8, NVL72: 72)
  FitOrigin fit = FitOrigin::kOwn;  ///< Megatron-Core only; AutoModel's model fits nothing
};

/// The kind of every layout of a job: runtime of `framework_runtime`, model.is_moe(),
/// num_gpus above system.scaleup_domain_gpus (gpus_per_node when the domain is not given),
/// and system.megatron_fit's origin (fitted, borrowed, physical).
ErrorKind ErrorKindOf(CostRuntime framework_runtime, const ModelSpec& model, const SystemSpec& system,
                      const TrainSetup& setup);

/// The step-time band: median |leave-one-out step-time residual| of `meshplan validate
/// tests/data/mbridge_perf_dev.csv --fit` (hwdb/systems/*.yaml `residuals:`, bracketed
/// figures) for Megatron-Core layouts; for AutoModel layouts (nothing fitted: every error is
/// out of sample) the H200 step-time measurements (dense) and AutoModel's published benchmark
/// rows (MoE). Values and rows: planner/search/risk.cpp; tests/search/risk_test.cpp recomputes
/// them from those runs. Throws nothing.
ErrorBand StepErrorBand(const ErrorKind& kind);

/// The absolute step-time error of a Megatron-Core prediction on a system without its own fit
/// (kind.fit kBorrowed or kPhysical): median |leave-one-system-out residual| of the rule the
/// system is priced with (`validate mbridge_perf_dev.csv --transfer`, LOSO borrow / LOSO phys),
/// dense or MoE. Printed beside the prediction; the ranking keeps StepErrorBand, since a system's
/// constants being off moves every layout of the job alike and does not make two layouts a tie.
/// ErrorBand{} (value 0) for a fitted system or an AutoModel layout. Throws nothing.
ErrorBand UnfittedSystemErrorBand(const ErrorKind& kind);

/// The memory model's band on the side that runs out of memory: the largest measured
/// under-prediction of the peak, relative to the peak (planner/search/risk.cpp). Throws nothing.
ErrorBand MemoryErrorBand(CostRuntime runtime);

/// The risk of one scored layout.
struct Risk {
  double step_band = 0;              ///< relative half-width of the step-time band (0.071: ±7.1%)
  double memory_band_bytes = 0;      ///< MemoryErrorBand × the predicted peak, bytes
  double margin_bytes = 0;           ///< capacity_bytes − predicted peak (the table's "headroom" column)
  /// P(the real peak exceeds capacity_bytes): the relative error of the predicted peak taken as
  /// normal with the memory band as two standard deviations (0.5 at zero margin, 0.023 at a
  /// margin of one band).
  double oom_probability = 0;
  /// step_seconds / (1 − oom_probability, at least 0.001): the step of the throughput
  /// expected when a run that runs out of memory yields nothing. What the planner ranks by.
  double expected_step_seconds = 0;
  bool tie = false;  ///< set by RiskRanked: within the step band of the best expected step
};

/// The risk of `cost` (a scored, fitting or not, layout of kind `kind`). Throws nothing.
Risk AssessRisk(const ErrorKind& kind, const Cost& cost);

}  // namespace meshplan
