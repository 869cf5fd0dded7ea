// The bounded, ridge-regularised least squares of calibrate and validate --fit.
#include "accuracy/least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace meshplan::accuracy {

BoundedSolution SolveBounded(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, const std::vector<Unknown>& unknowns,
                             double ridge) {
  const long n = long(unknowns.size());
  BoundedSolution out;
  out.fixed.assign(unknowns.size(), false);
  for (const Unknown& u : unknowns) out.x.push_back(u.prior);
  for (long pass = 0; pass <= n; ++pass) {
    std::vector<long> free;
    for (long j = 0; j < n; ++j) {
      if (unknowns[size_t(j)].used && !out.fixed[size_t(j)]) free.push_back(j);
    }
    if (free.empty()) break;  // every used unknown sits on its bound
    Eigen::VectorXd rhs = b;
    for (long j = 0; j < n; ++j) {
      if (out.fixed[size_t(j)]) rhs -= out.x[size_t(j)] * A.col(j);
    }
    Eigen::VectorXd sol(long(free.size()));
    if (free.size() == 1 && ridge == 0) {
      sol(0) = A.col(free[0]).dot(rhs) / A.col(free[0]).squaredNorm();
    } else {
      const long extra = ridge > 0 ? long(free.size()) : 0;
      Eigen::MatrixXd M = Eigen::MatrixXd::Zero(A.rows() + extra, long(free.size()));
      Eigen::VectorXd v = Eigen::VectorXd::Zero(A.rows() + extra);
      for (size_t c = 0; c < free.size(); ++c) M.col(long(c)).head(A.rows()) = A.col(free[c]);
      v.head(A.rows()) = rhs;
      const double s = std::sqrt(ridge);
      for (long c = 0; c < extra; ++c) {
        M(A.rows() + c, c) = s;
        v(A.rows() + c) = s * unknowns[size_t(free[size_t(c)])].prior;
      }
      sol = M.colPivHouseholderQr().solve(v);
    }
    bool again = false;
    for (size_t c = 0; c < free.size(); ++c) {
      const Unknown& u = unknowns[size_t(free[c])];
      double& x = out.x[size_t(free[c])];
      x = sol(long(c));
      if (u.lower > -std::numeric_limits<double>::infinity() && !(std::isfinite(x) && x >= u.lower)) {
        x = std::isnan(u.fixed_at) ? u.lower : u.fixed_at;
        out.fixed[size_t(free[c])] = true;
        again = true;
      }
    }
    if (!again) break;
  }
  return out;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos)), hi = size_t(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

}  // namespace meshplan::accuracy
