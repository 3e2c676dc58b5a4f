// The three ways spectral.cc finds |lambda_2| of a stochastic W (internal):
//
//   circulant  W[i][j] = c[(j - i) mod n]: its eigenvalues are the discrete
//              Fourier transform of the first row, exact, in O(n d) for d
//              nonzeros a row (exponential, ring and symmetric exponential
//              graphs are circulant).
//   dense      Eigen::EigenSolver on the n x n matrix, O(n^3): the reference,
//              and the fastest below a few hundred nodes.
//   sparse     Spectra's Arnoldi solver (GenEigsSolver) on sparse products, with
//              the eigenvalue 1 deflated: for a row-stochastic M (M 1 = 1),
//              M - 1 v^T with v = 1/n has M's eigenvalues with the 1 replaced by 0
//              (Brauer's theorem), so the largest modulus left is |lambda_2|.
//   reversible Spectra's Lanczos solver (SymEigsSolver) on the symmetrized W,
//              tried first by the sparse path: real eigenvalues, fast convergence.
#pragma once

#include <optional>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/SparseCore>

#include "flock/topology/graph.h"

namespace flock {
namespace topology {
namespace detail {

using RowMajorSparse = Eigen::SparseMatrix<double, Eigen::RowMajor>;

// The second largest modulus of W's eigenvalues when W is circulant; nullopt
// when it is not. Uses every core for large n.
std::optional<double> circulant_lambda2(const Graph& g);

// |lambda_2| of the product of the steps (n x n each) when every step is
// circulant; nullopt when one is not.
std::optional<double> circulant_product_lambda2(const std::vector<RowMajorSparse>& steps);

// The second largest modulus among the eigenvalues of a dense square matrix
// (counted with multiplicity); 0 for 1 x 1. `what` names the caller in errors.
double dense_lambda2(const Eigen::MatrixXd& m, const char* what);

// |lambda_2| of a row-stochastic M (at least 3 x 3) from Spectra's Lanczos solver
// when M is reversible for a stationary vector flock can guess (uniform or
// 1 / M_ii); nullopt when it is not, or Lanczos does not converge.
std::optional<double> reversible_lambda2(const RowMajorSparse& m);

// |lambda_2| of the product steps.back() * ... * steps.front() of row-stochastic
// matrices (at least 3 x 3), from Spectra. `what` names the caller in errors.
double sparse_lambda2(const std::vector<RowMajorSparse>& steps, const char* what);

}  // namespace detail
}  // namespace topology
}  // namespace flock
