// The least-squares core of calibrate and validate --fit (planner/accuracy/least_squares.cpp)
// on problems small enough to solve by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "accuracy/least_squares.hpp"

using namespace meshplan::accuracy;

namespace {

// Rows (1, x) and targets 2 + 3x for x = 1..4: the line y = 2 + 3x exactly.
void Line(Eigen::MatrixXd& A, Eigen::VectorXd& b) {
  A.resize(4, 2);
  b.resize(4);
  for (int i = 0; i < 4; ++i) {
    A(i, 0) = 1.0;
    A(i, 1) = i + 1.0;
    b(i) = 2.0 + 3.0 * (i + 1.0);
  }
}

}  // namespace

TEST_CASE("least squares: an exact line is recovered") {
  Eigen::MatrixXd A;
  Eigen::VectorXd b;
  Line(A, b);
  const BoundedSolution s = SolveBounded(A, b, {Unknown{}, Unknown{}});
  CHECK(s.x[0] == doctest::Approx(2.0).epsilon(1e-12));
  CHECK(s.x[1] == doctest::Approx(3.0).epsilon(1e-12));
  CHECK_FALSE(s.fixed[0]);
  CHECK_FALSE(s.fixed[1]);
}

TEST_CASE("least squares: an intercept below its bound is fixed and the slope refitted alone") {
  // Intercept >= 2.5: fixed there, the slope is then sum x (y - 2.5) / sum x^2
  // = sum x (3x - 0.5) / sum x^2 = 3 - 0.5 * 10 / 30 = 17/6.
  Eigen::MatrixXd A;
  Eigen::VectorXd b;
  Line(A, b);
  Unknown intercept;
  intercept.lower = 2.5;
  const BoundedSolution s = SolveBounded(A, b, {intercept, Unknown{}});
  CHECK(s.fixed[0]);
  CHECK(s.x[0] == 2.5);
  CHECK(s.x[1] == doctest::Approx(17.0 / 6.0).epsilon(1e-12));
  // A value of its own to fix at (calibrate's fallback latency): 1, slope 3 + 10/30 = 10/3.
  intercept.fixed_at = 1.0;
  intercept.lower = 2.5;
  const BoundedSolution t = SolveBounded(A, b, {intercept, Unknown{}});
  CHECK(t.x[0] == 1.0);
  CHECK(t.x[1] == doctest::Approx(10.0 / 3.0).epsilon(1e-12));
}

TEST_CASE("least squares: the ridge pulls toward the prior and an unused unknown keeps it") {
  // Rows x = 1 and x = 3 with ridge 2 toward prior 0: (x-1)^2 + (x-3)^2 + 2x^2 is least at x = 1.
  Eigen::MatrixXd A(2, 2);
  A << 1.0, 5.0, 1.0, 7.0;
  Eigen::VectorXd b(2);
  b << 1.0, 3.0;
  Unknown unused;
  unused.used = false;
  unused.prior = 0.25;
  const BoundedSolution s = SolveBounded(A, b, {Unknown{}, unused}, 2.0);
  CHECK(s.x[0] == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(s.x[1] == 0.25);
}

TEST_CASE("least squares: quantiles interpolate between order statistics and relative errors divide by the measured") {
  CHECK(Quantile({3, 1, 2, 4}, 0.5) == 2.5);
  CHECK(Quantile({3, 1, 2, 4}, 0.9) == doctest::Approx(3.7));  // position 2.7: 3 + 0.7 x (4 - 3)
  CHECK(Quantile({}, 0.5) == 0.0);
  CHECK(RelativeError(110, 100) == doctest::Approx(0.1));
}
