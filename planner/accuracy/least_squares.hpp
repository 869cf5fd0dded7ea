#pragma once
/// \file least_squares.hpp
/// The least-squares core shared by meshplan's two fits: `meshplan calibrate` (collective and
/// GEMM microbenchmarks, calibrate.cpp) and `meshplan validate --fit` (Megatron-Core step-time
/// constants on published runs, megatron_fit.cpp). Both fit a model linear in its constants on
/// relative residuals, with bounds on some constants; the callers build the weighted rows.
/// Private to planner/accuracy.

#include <Eigen/Dense>

#include <limits>
#include <vector>

namespace meshplan::accuracy {

/// One unknown of SolveBounded.
struct Unknown {
  bool used = true;  ///< false: not solved for; stays at `prior` and its column is ignored
  double prior = 0;  ///< the ridge term's target, and the value of an unknown not used
  /// Smallest accepted solution (-infinity: unbounded). A solve giving less, or a value that is
  /// not finite, fixes a bounded unknown at `fixed_at` and solves the others again (an active set).
  double lower = -std::numeric_limits<double>::infinity();
  double fixed_at = std::numeric_limits<double>::quiet_NaN();  ///< NaN: fixed at `lower`
};

/// Outcome of SolveBounded: one value per unknown, and which of them a bound fixed.
struct BoundedSolution {
  std::vector<double> x;
  std::vector<bool> fixed;
};

/// Minimises |A x - b|^2 + ridge * sum_j (x_j - prior_j)^2 over the used unknowns that no bound
/// has fixed. `A` has one column per unknown and one row per measurement, already weighted by
/// the caller (divided by the measured value, so that residuals are relative); a fixed unknown's
/// column moves to the right-hand side. After each solve every free unknown that breaks its
/// bound is fixed and the rest solved again, at most unknowns + 1 solves. Solved with Eigen's
/// column-pivoting Householder QR (the ridge as sqrt(ridge) rows), one free unknown without a
/// ridge by the closed form a.b / a.a. Throws nothing; with no free unknown, x is the priors
/// and fixed values.
BoundedSolution SolveBounded(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, const std::vector<Unknown>& unknowns,
                             double ridge = 0);

/// (predicted - measured) / measured: the relative residual both fits minimise and
/// `meshplan validate` reports as a row's error.
inline double RelativeError(double predicted, double measured) { return (predicted - measured) / measured; }

/// The q-quantile (q in [0, 1]) of `v`, interpolated linearly between the two nearest order
/// statistics (numpy's default); 0 for an empty `v`. The median and p90 of residuals and errors.
double Quantile(std::vector<double> v, double q);

}  // namespace meshplan::accuracy
