// |lambda_2| from Spectra's Arnoldi solver on sparse products with the
// eigenvalue 1 deflated, and from Eigen's dense solver (see spectral_solvers.h).
#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include <Spectra/GenEigsSolver.h>
#include <Eigen/Eigenvalues>

#include "check.h"
#include "spectral_solvers.h"

namespace flock {
namespace topology {
namespace detail {

namespace {

// x -> (M_{p-1} ... M_0) x - 1 mean(x): the product's eigenvalues with its
// eigenvalue 1 (eigenvector 1, the matrices being row-stochastic) replaced by 0.
class DeflatedProduct {
 public:
  using Scalar = double;

  explicit DeflatedProduct(const std::vector<RowMajorSparse>& steps)
      : steps_(steps), work_(steps.front().rows()), next_(steps.front().rows()) {}

  Eigen::Index rows() const { return work_.size(); }
  Eigen::Index cols() const { return work_.size(); }

  void perform_op(const double* x_in, double* y_out) const {
    const Eigen::Map<const Eigen::VectorXd> x(x_in, work_.size());
    work_ = x;
    for (const RowMajorSparse& step : steps_) {
      next_.noalias() = step * work_;
      work_.swap(next_);
    }
    Eigen::Map<Eigen::VectorXd>(y_out, work_.size()) = work_.array() - x.mean();
  }

 private:
  const std::vector<RowMajorSparse>& steps_;
  mutable Eigen::VectorXd work_, next_;
};

// Ritz values wanted, and the Krylov space kept between restarts: a few more
// than one, because the largest moduli of these graphs come in conjugate pairs
// and in clusters.
constexpr Eigen::Index kWanted = 4;
constexpr Eigen::Index kKrylov = 32;
constexpr Eigen::Index kWideKrylov = 96;  // the second try, when the first does not converge
constexpr Eigen::Index kWideKrylovNodes = 20000;  // above, a second try costs minutes
constexpr Eigen::Index kMaxRestarts = 300;
constexpr double kTolerance = 1e-11;
// Up to this size a solver that cannot converge is replaced by the dense one on
// the deflated operator (at most about a second).
constexpr Eigen::Index kDenseFallbackNodes = 400;

}  // namespace

double dense_lambda2(const Eigen::MatrixXd& m, const char* what) {
  if (m.rows() == 1) return 0.0;
  Eigen::EigenSolver<Eigen::MatrixXd> solver(m, /*computeEigenvectors=*/false);
  if (solver.info() != Eigen::Success) fail(what, ": the dense eigenvalue solver did not converge");
  std::vector<double> moduli;
  moduli.reserve(static_cast<std::size_t>(m.rows()));
  for (Eigen::Index k = 0; k < solver.eigenvalues().size(); ++k)
    moduli.push_back(std::abs(solver.eigenvalues()[k]));
  std::nth_element(moduli.begin(), moduli.begin() + 1, moduli.end(), std::greater<double>());
  return moduli[1];
}

namespace {

// The largest modulus among a dense matrix's eigenvalues.
double largest_modulus(const Eigen::MatrixXd& m, const char* what) {
  Eigen::EigenSolver<Eigen::MatrixXd> solver(m, /*computeEigenvectors=*/false);
  if (solver.info() != Eigen::Success) fail(what, ": the dense eigenvalue solver did not converge");
  return solver.eigenvalues().cwiseAbs().maxCoeff();
}

// The deflated operator as a dense matrix, one column a product (small n only).
Eigen::MatrixXd dense_operator(const DeflatedProduct& op) {
  const Eigen::Index n = op.rows();
  Eigen::MatrixXd m(n, n);
  Eigen::VectorXd unit = Eigen::VectorXd::Zero(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    unit[j] = 1.0;
    op.perform_op(unit.data(), m.col(j).data());
    unit[j] = 0.0;
  }
  return m;
}

// Whether the operator sends a generic vector to (numerically) 0: then every
// eigenvalue is 0 and Arnoldi would break down (one exact averaging step: a fully
// connected graph, a period of one-peer exponential on 2^k nodes).
bool is_zero_operator(const DeflatedProduct& op) {
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(op.rows(), 1.0, 2.0).array().sin();
  Eigen::VectorXd y(op.rows());
  op.perform_op(v.data(), y.data());
  return y.norm() <= 1e-13 * v.norm();
}

// Spectra with a Krylov space of `krylov` vectors; nullopt when it does not converge.
std::optional<double> arnoldi_largest(DeflatedProduct& op, Eigen::Index krylov) {
  const Eigen::Index n = op.rows();
  const Eigen::Index wanted = std::min(kWanted, n - 2);
  Spectra::GenEigsSolver<DeflatedProduct> solver(op, wanted,
                                                 std::min(n, std::max(krylov, 2 * wanted + 1)));
  solver.init();  // Spectra's fixed pseudo-random start: the same answer every run
  try {
    solver.compute(Spectra::SortRule::LargestMagn, kMaxRestarts, kTolerance);
  } catch (const std::exception&) {
    return std::nullopt;  // a breakdown: few distinct eigenvalues
  }
  if (solver.info() != Spectra::CompInfo::Successful) return std::nullopt;
  return solver.eigenvalues().cwiseAbs().maxCoeff();
}

}  // namespace

double sparse_lambda2(const std::vector<RowMajorSparse>& steps, const char* what) {
  const Eigen::Index n = steps.front().rows();
  if (n < 3) fail(what, ": the sparse solver needs 3 nodes or more, got ", n);
  DeflatedProduct op(steps);
  if (n <= kKrylov) return std::min(largest_modulus(dense_operator(op), what), 1.0);
  if (is_zero_operator(op)) return 0.0;
  if (steps.size() == 1) {
    if (const auto found = reversible_lambda2(steps.front())) return *found;
  }
  if (const auto found = arnoldi_largest(op, kKrylov)) return std::min(*found, 1.0);
  if (n <= kWideKrylovNodes) {
    if (const auto found = arnoldi_largest(op, kWideKrylov)) return std::min(*found, 1.0);
  }
  if (n <= kDenseFallbackNodes) return std::min(largest_modulus(dense_operator(op), what), 1.0);
  fail(what,
       ": the sparse eigenvalue solver did not converge (the largest moduli of this graph "
       "are too close together for Arnoldi's method at ",
       n, " nodes)");
}

}  // namespace detail
}  // namespace topology
}  // namespace flock
