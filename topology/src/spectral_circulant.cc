// |lambda_2| of a circulant W from its first row (see spectral_solvers.h):
// lambda_k = sum_d c_d exp(2 pi i d k / n), every k in [0, n), with the roots
// of unity from one table, split over the cores for large n. Circulant matrices
// share their eigenvectors, so a product of circulant steps has the products of
// the steps' lambda_k as eigenvalues: one period of a schedule such as one-peer
// exponential, whose eigenvalues crowd near one modulus and defeat Arnoldi.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "spectral_solvers.h"

namespace flock {
namespace topology {
namespace detail {

namespace {

using Offsets = std::vector<std::pair<std::int64_t, double>>;  // (j - i) mod n, weight

// Entries that equal as doubles are the same weight: generators compute every
// row the same way, and a matrix that differs anywhere is not circulant.
constexpr double kSameWeight = 1e-15;

// The first row as offsets, when every row i is it shifted by i. for_each_entry(i, f)
// calls f(column, weight) for every entry of row i: a Graph's or a sparse matrix's.
template <typename ForEachEntry>
std::optional<Offsets> circulant_row(std::int64_t n, const ForEachEntry& for_each_entry) {
  Offsets row;
  for_each_entry(0, [&row](std::int64_t to, double weight) { row.emplace_back(to, weight); });
  std::vector<double> by_offset(static_cast<std::size_t>(n), -1.0);
  for (const auto& [offset, weight] : row) by_offset[static_cast<std::size_t>(offset)] = weight;
  for (std::int64_t i = 1; i < n; ++i) {
    std::size_t entries = 0;
    bool same = true;
    for_each_entry(i, [&](std::int64_t to, double weight) {
      const double expected = by_offset[static_cast<std::size_t>(((to - i) % n + n) % n)];
      same = same && expected >= 0.0 && std::abs(expected - weight) <= kSameWeight;
      ++entries;
    });
    if (!same || entries != row.size()) return std::nullopt;
  }
  return row;
}

std::optional<Offsets> circulant_row(const Graph& g) {
  return circulant_row(g.size(), [&g](std::int64_t i, const auto& visit) {
    for (const auto& [to, weight] : g.out_edges(static_cast<int>(i))) visit(to, weight);
  });
}

std::optional<Offsets> circulant_row(const RowMajorSparse& m) {
  return circulant_row(m.rows(), [&m](std::int64_t i, const auto& visit) {
    for (RowMajorSparse::InnerIterator it(m, i); it; ++it) visit(it.col(), it.value());
  });
}

// The two largest moduli (with multiplicity) of prod_s lambda_k(step s) for k
// in [begin, end).
std::pair<double, double> top_two(const std::vector<Offsets>& rows,
                                  const std::vector<std::complex<double>>& roots,
                                  std::int64_t begin, std::int64_t end) {
  const std::int64_t n = static_cast<std::int64_t>(roots.size());
  double first = -1.0, second = -1.0;
  for (std::int64_t k = begin; k < end; ++k) {
    double modulus = 1.0;
    for (const Offsets& row : rows) {
      std::complex<double> sum = 0.0;
      for (const auto& [offset, weight] : row)
        sum += weight * roots[static_cast<std::size_t>((offset * k) % n)];
      modulus *= std::abs(sum);
    }
    if (modulus > first) {
      second = first;
      first = modulus;
    } else if (modulus > second) {
      second = modulus;
    }
  }
  return {first, second};
}

// |lambda_2| of the product of the circulant matrices with these first rows.
double lambda2_of_rows(const std::vector<Offsets>& rows, std::int64_t n) {
  std::int64_t terms = 0;
  for (const Offsets& row : rows) terms += static_cast<std::int64_t>(row.size());
  const double pi = std::acos(-1.0);
  std::vector<std::complex<double>> roots(static_cast<std::size_t>(n));
  for (std::int64_t m = 0; m < n; ++m) {
    roots[static_cast<std::size_t>(m)] =
        std::polar(1.0, 2.0 * pi * static_cast<double>(m) / static_cast<double>(n));
  }
  // Threads pay from about a million terms (n times the rows' nonzeros).
  const int threads = n * terms < (1 << 20)
                          ? 1
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::pair<double, double>> found(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      found[static_cast<std::size_t>(t)] =
          top_two(rows, roots, n * t / threads, n * (t + 1) / threads);
    });
  }
  for (auto& worker : workers) worker.join();
  std::vector<double> best;
  for (const auto& [first, second] : found) best.insert(best.end(), {first, second});
  std::sort(best.rbegin(), best.rend());
  return std::max(best[1], 0.0);
}

}  // namespace

std::optional<double> circulant_lambda2(const Graph& g) {
  auto row = circulant_row(g);
  if (!row) return std::nullopt;
  return lambda2_of_rows({std::move(*row)}, g.size());
}

std::optional<double> circulant_product_lambda2(const std::vector<RowMajorSparse>& steps) {
  std::vector<Offsets> rows;
  for (const RowMajorSparse& step : steps) {
    auto row = circulant_row(step);
    if (!row) return std::nullopt;
    rows.push_back(std::move(*row));
  }
  return lambda2_of_rows(rows, steps.front().rows());
}

}  // namespace detail
}  // namespace topology
}  // namespace flock
