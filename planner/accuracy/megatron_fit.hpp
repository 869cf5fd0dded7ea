#pragma once
/// \file megatron_fit.hpp
/// Least-squares fit of a system's Megatron-Core step-time constants (MegatronTimeFit) on
/// published runs, for `meshplan validate --fit`; solved by the shared least-squares core
/// (least_squares.hpp) that `meshplan calibrate` uses too; the block it writes is
/// WriteSystemFit's (accuracy.hpp). Private to planner/accuracy.

#include <string>
#include <vector>

#include "meshplan/accuracy.hpp"
#include "meshplan/cost.hpp"
#include "cost/time.hpp"
#include "meshplan/hardware.hpp"

namespace meshplan::accuracy {

/// One published run reduced to the physical terms of its slowest pipeline rank (seconds,
/// kernels a count) and its published step time (seconds).
struct FitRow {
  std::string system, label;
  std::string model;  ///< the row's model (preset name): a GEMM constant needs kFitMinModels of them
  int64_t pp = 1;     ///< pipeline stages of the row's layout (validate --transfer's depth buckets)
  Precision precision = Precision::kBf16;
  double gemm = 0, attention = 0, memory_bound = 0, kernels = 0, bubble_fraction = 0;
  double fixed = 0;  ///< exposed communication + optimizer: not scaled by the fit
  double optimizer = 0;  ///< the optimizer part of `fixed` (the host does not wait for it)
  double host = 0;       ///< host seconds issuing the layers' kernels (MegatronTerms::host)
  cost::MegatronHostSync sync;  ///< dropless MoE host-sync segments (MegatronTerms::sync)
  double published_step = 0;
  EpTraffic ep;  ///< the slowest rank's EP all-to-all (MegatronTerms::ep_busy, ep_nvlink, ep_rdma, ep)
};

/// Terms of `layout` (a Megatron-Bridge layout) for the fit.
FitRow MakeFitRow(const ModelSpec& model, const SystemSpec& system, const TrainSetup& setup, const Layout& layout,
                  double published_step);

/// Predicted step time of `row` under `fit` (MegatronTime of its terms).
double FitPredict(const FitRow& row, const MegatronTimeFit& fit);

/// Fits gemm_<precision> (for each precision whose rows come from at least kFitMinModels
/// models; any other precision, with rows or none, takes the constant of the identified
/// precision with the most rows, whose rows then fit it together: the measured sustained rate
/// of large GEMMs below MAMF is about the same in both, 1/1.15 BF16 and 1/1.20 FP8 on H200,
/// time.hpp; when no precision is identified, each precision with rows is fitted on its own,
/// as with one model's own measurements, and one without rows stays at the prior, 1),
/// memory_bound and kernel_overhead to
/// `rows` (all of one system) by minimising Σ ((predicted − published)/published)² plus a
/// ridge term kMegatronFitRidge·Σ (x − prior)² on each constant relative to its prior (1, 1,
/// 4 us), which keeps systems with few rows near the physical model. Linear in the constants:
///   published − (1+b)·attention − fixed = (1+b)·(g_p·gemm + m·memory_bound + k·kernels).
/// Bounds (active set): g_p ≥ 1 (no GEMM beats its MAMF time), m ≥ 0, k ≥ 0.
/// Rows whose predicted step is host-bound (cost::MegatronHostBound > 0) do not depend on the
/// GPU constants: after each solve they are set aside and the rest solved again, until the
/// host-bound set stops changing (at most 4 rounds); their residuals still count below.
/// Solved by SolveBounded (Eigen's column-pivoting Householder QR). Throws nothing; an empty
/// `rows` returns the prior.
MegatronFitOutcome FitMegatronTime(const std::vector<FitRow>& rows);
/// FitMegatronTime's constants alone (no residuals, no leave-one-out refits); `rows` may mix
/// systems (validate --transfer's pooled fit: the constants are ratios to each row's own
/// datasheet rates).
MegatronTimeFit FitMegatronConstants(const std::vector<FitRow>& rows);
/// Distinct models a precision's rows must come from for its GEMM constant to be fitted: with
/// one model, a cost the model misses (GPT-OSS's BF16 rows on DGX H100 and B200, all run with
/// the alltoall dispatcher) would be charged to the system's GEMMs and slow every other model.
inline constexpr int kFitMinModels = 2;

}  // namespace meshplan::accuracy
