#pragma once
/// \file accuracy.hpp
/// The accuracy of meshplan's cost model against measured runs: the fit of a system's
/// Megatron-Core step-time constants to published runs (`meshplan validate --fit`) and the
/// compute split it fits. The calibration of a system from microbenchmarks (`meshplan
/// calibrate`) is calibrate.hpp; both fits share one least-squares core
/// (planner/accuracy/least_squares.hpp).

#include <string>
#include <vector>

#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"

namespace meshplan {

/// The compute term of a Megatron-Bridge layout's slowest pipeline rank, split as MegatronTime
/// scales it with the system's fitted constants (seconds per step): GEMMs, attention core,
/// HBM-bound kernels, kernel launches; and the rank's bubble fraction (bubble / compute).
struct MegatronComputeSplit {
  double gemm = 0, attention = 0, memory_bound = 0, kernels = 0, bubble_fraction = 0;
};
/// MegatronComputeSplit of `layout` (a Megatron-Bridge layout) under `system.megatron_fit`.
MegatronComputeSplit SplitMegatronCompute(const ModelSpec& model, const SystemSpec& system, const TrainSetup& setup,
                                          const Layout& layout);

/// Weight of validate --fit's ridge term toward the physical model's constants (1, 1, 4 us):
/// it keeps systems with few rows near the physical model.
inline constexpr double kMegatronFitRidge = 0.1;

/// Outcome of fitting one system's Megatron-Core step-time constants (FitMegatronTime).
struct MegatronFitOutcome {
  MegatronTimeFit fit;
  std::vector<double> residuals;      ///< (predicted − published) / published, per row
  std::vector<double> loo_residuals;  ///< the same with the row left out of the fit
  std::vector<std::string> fitted;    ///< names of the constants fitted (others stay at the prior)
};

}  // namespace meshplan
