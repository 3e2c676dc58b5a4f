// |lambda_2| of a reversible row-stochastic M from Spectra's Lanczos solver (see
// spectral_solvers.h). M is reversible when some pi > 0 has pi_i M_ij = pi_j M_ji
// for every edge: then S = D^(1/2) M D^(-1/2), D = diag(pi), is symmetric with
// M's eigenvalues, all real. The pi tried are the ones flock's and Bluefog's
// weights give: uniform (W symmetric: Metropolis-Hastings) and 1 / M_ii (uniform
// weights on an undirected graph: mesh, star).
//
// Plain Lanczos answers at once when the spectrum's ends are well apart. On
// grid-like graphs they are not (a 10^5-node mesh has |lambda_2| = 1 - 1.2e-5 with
// more eigenvalues just below), so after a short try the ends are found by
// shift-invert: Lanczos on (sigma I - S)^-1, applied through a sparse Cholesky
// factorization, which spreads the eigenvalues nearest sigma far apart.
#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include <Spectra/SymEigsSolver.h>
#include <Eigen/SparseCholesky>

#include "spectral_solvers.h"

namespace flock {
namespace topology {
namespace detail {

namespace {

// Relative difference between S and S^T below which S counts as symmetric.
constexpr double kSymmetric = 1e-12;
constexpr Eigen::Index kWanted = 3;  // a grid's lambda_2 comes twice
constexpr Eigen::Index kLanczos = 32;
constexpr Eigen::Index kQuickRestarts = 10;  // then shift-invert
constexpr Eigen::Index kShiftInvertRestarts = 300;
constexpr double kTolerance = 1e-10;
// sigma = 1 + kShiftAbove1: (sigma I - S) stays positive definite, and the
// eigenvalue 1, which the shift would make the largest, is projected out.
constexpr double kShiftAbove1 = 1e-9;

struct Symmetric {
  RowMajorSparse s;
  Eigen::VectorXd u;  // the unit eigenvector of S for the eigenvalue 1
};

// x -> S x - u (u . x): S with the eigenvalue 1 replaced by 0.
class DeflatedSymmetric {
 public:
  using Scalar = double;

  explicit DeflatedSymmetric(const Symmetric& m) : m_(m) {}
  Eigen::Index rows() const { return m_.s.rows(); }
  Eigen::Index cols() const { return m_.s.rows(); }

  void perform_op(const double* x_in, double* y_out) const {
    const Eigen::Map<const Eigen::VectorXd> x(x_in, rows());
    Eigen::Map<Eigen::VectorXd> y(y_out, rows());
    y.noalias() = m_.s * x;
    y -= m_.u * m_.u.dot(x);
  }

 private:
  const Symmetric& m_;
};

// x -> P (sign (sigma I - S))^-1 P x, P = I - u u^T (the identity when !deflate).
class ShiftInverted {
 public:
  using Scalar = double;

  ShiftInverted(const Symmetric& m, double sigma, double sign, bool deflate)
      : m_(m), deflate_(deflate) {
    const Eigen::Index n = m.s.rows();
    Eigen::SparseMatrix<double> identity(n, n);
    identity.setIdentity();
    const Eigen::SparseMatrix<double> s = m.s;  // column-major, as the factorization wants
    const Eigen::SparseMatrix<double> a = sign * (sigma * identity - s);
    factor_.compute(a);
    ok_ = factor_.info() == Eigen::Success;
  }

  bool ok() const { return ok_; }
  Eigen::Index rows() const { return m_.s.rows(); }
  Eigen::Index cols() const { return m_.s.rows(); }

  void perform_op(const double* x_in, double* y_out) const {
    Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(x_in, rows());
    if (deflate_) x -= m_.u * m_.u.dot(x);
    Eigen::Map<Eigen::VectorXd> y(y_out, rows());
    y = factor_.solve(x);
    if (deflate_) y -= m_.u * m_.u.dot(y);
  }

 private:
  const Symmetric& m_;
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> factor_;
  bool ok_ = false;
  bool deflate_ = false;
};

// S = D^(1/2) M D^(-1/2) when it is symmetric, for D = diag(pi).
std::optional<Symmetric> symmetrized(const RowMajorSparse& m, const Eigen::VectorXd& pi) {
  const Eigen::VectorXd root = pi.cwiseSqrt();
  RowMajorSparse s = m;  // scaled in place: a diagonal product expression inserts, O(n nnz)
  for (Eigen::Index i = 0; i < s.outerSize(); ++i) {
    for (RowMajorSparse::InnerIterator it(s, i); it; ++it)
      it.valueRef() *= root[i] / root[it.col()];
  }
  const RowMajorSparse transposed(s.transpose());
  if ((s - transposed).norm() > kSymmetric * s.norm()) return std::nullopt;
  return Symmetric{std::move(s), root.normalized()};
}

std::optional<Symmetric> symmetrized(const RowMajorSparse& m) {
  if (auto uniform = symmetrized(m, Eigen::VectorXd::Ones(m.rows()))) return uniform;
  const Eigen::VectorXd diagonal = m.diagonal();
  if (diagonal.minCoeff() <= 0.0) return std::nullopt;
  return symmetrized(m, diagonal.cwiseInverse());
}

// The eigenvalues Spectra finds for `op` (the `wanted` first by `rule`); nullopt
// when it breaks down (few distinct eigenvalues) or does not converge.
template <typename Op>
std::optional<Eigen::VectorXd> lanczos(Op& op, Eigen::Index wanted, Spectra::SortRule rule,
                                       Eigen::Index max_restarts) {
  const Eigen::Index n = op.rows();
  Spectra::SymEigsSolver<Op> solver(op, std::min(wanted, n - 2), std::min(n, kLanczos));
  solver.init();  // Spectra's fixed pseudo-random start: the same answer every run
  try {
    solver.compute(rule, max_restarts, kTolerance);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (solver.info() != Spectra::CompInfo::Successful) return std::nullopt;
  return solver.eigenvalues();
}

// The eigenvalue of S nearest one end of [-1, 1] by shift-invert, sigma = 1 + kShiftAbove1.
// Top: the largest below 1, sigma - 1 / theta for the largest theta of
// P (sigma I - S)^-1 P (u's eigenvalue there is 0). Bottom: the smallest,
// 1 / theta - sigma for the largest theta of (S + sigma I)^-1.
std::optional<double> end_eigenvalue(const Symmetric& m, bool top) {
  const double sigma = 1.0 + kShiftAbove1;
  const double sign = top ? 1.0 : -1.0;
  ShiftInverted op(m, sign * sigma, sign, /*deflate=*/top);
  if (!op.ok()) return std::nullopt;
  const auto theta = lanczos(op, 2, Spectra::SortRule::LargestAlge, kShiftInvertRestarts);
  if (!theta) return std::nullopt;
  const double distance = 1.0 / theta->maxCoeff();  // from sigma (top) or -sigma (bottom)
  return top ? sigma - distance : distance - sigma;
}

}  // namespace

std::optional<double> reversible_lambda2(const RowMajorSparse& m) {
  const auto symmetric = symmetrized(m);
  if (!symmetric) return std::nullopt;
  DeflatedSymmetric deflated(*symmetric);
  if (const auto found =
          lanczos(deflated, kWanted, Spectra::SortRule::LargestMagn, kQuickRestarts)) {
    return std::min(found->cwiseAbs().maxCoeff(), 1.0);
  }
  const auto top = end_eigenvalue(*symmetric, /*top=*/true);
  if (!top) return std::nullopt;
  // Gershgorin: every eigenvalue of M is >= 2 min_i M_ii - 1 (S_ii = M_ii).
  const double floor = 2.0 * symmetric->s.diagonal().minCoeff() - 1.0;
  if (-floor <= *top) return std::clamp(*top, 0.0, 1.0);
  const auto lowest = end_eigenvalue(*symmetric, /*top=*/false);
  if (!lowest) return std::nullopt;
  return std::min(std::max(std::abs(*top), std::abs(*lowest)), 1.0);
}

}  // namespace detail
}  // namespace topology
}  // namespace flock
