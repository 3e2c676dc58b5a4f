// Static topology generators (see generators.h for the table of definitions).
// The circulant ones reduce to choosing the distance set D and calling
// CirculantGraph; the mesh grid and the star build their edges directly.
#include "flock/topology/generators.h"

#include <cstdint>
#include <set>

#include "check.h"

namespace flock {
namespace topology {

using detail::fail;

namespace {

// True when x == base^k for some integer k >= 0 (exact integer arithmetic:
// Bluefog's float logarithm misses e.g. 243 = 3^5).
bool is_power_of(std::int64_t x, std::int64_t base) {
  if (x < 1) return false;
  while (x % base == 0) x /= base;
  return x == 1;
}

void check_base(int base, const char* where, int size) {
  if (base < 2) fail(where, "(", size, ", ", base, "): base must be >= 2");
}

}  // namespace

Graph CirculantGraph(int size, const std::vector<int>& distances) {
  detail::check_size(size, "CirculantGraph(", size, ", ...)");
  std::set<int> unique;
  for (int d : distances) {
    if (d < 1 || d >= size) {
      fail("CirculantGraph(", size, ", ...): distance ", d, " is outside [1, ", size, ")");
    }
    unique.insert(d);
  }
  const double w = 1.0 / static_cast<double>(unique.size() + 1);
  Graph g(size, /*weighted=*/true);
  // Row i in ascending order of targets (the Graph's rows then only grow at their
  // end; in any other order a fully connected graph costs O(n^3) moves): first the
  // distances that wrap past n - 1, then i itself, then the rest.
  for (int i = 0; i < size; ++i) {
    const auto first_wrapping = unique.lower_bound(size - i);
    for (auto it = first_wrapping; it != unique.end(); ++it) g.add_edge(i, i + *it - size, w);
    g.add_edge(i, i, w);
    for (auto it = unique.begin(); it != first_wrapping; ++it) g.add_edge(i, i + *it, w);
  }
  return g;
}

Graph ExponentialTwoGraph(int size) {
  detail::check_size(size, "ExponentialTwoGraph(", size, ")");
  return ExponentialGraph(size, 2);
}

Graph ExponentialGraph(int size, int base) {
  detail::check_size(size, "ExponentialGraph(", size, ", ", base, ")");
  check_base(base, "ExponentialGraph", size);
  std::vector<int> distances;
  // 64-bit so that d * base cannot overflow before the comparison.
  for (std::int64_t d = 1; d < size; d *= base) distances.push_back(static_cast<int>(d));
  return CirculantGraph(size, distances);
}

Graph SymmetricExponentialGraph(int size, int base) {
  detail::check_size(size, "SymmetricExponentialGraph(", size, ", ", base, ")");
  check_base(base, "SymmetricExponentialGraph", size);
  std::vector<int> distances;
  for (int d = 1; d < size; ++d) {
    const int shortest = d <= size - d ? d : size - d;
    if (is_power_of(shortest, base)) distances.push_back(d);
  }
  return CirculantGraph(size, distances);
}

Graph StarGraph(int size, int center_rank) {
  detail::check_size(size, "StarGraph(", size, ", ", center_rank, ")");
  detail::check_node(center_rank, size, "StarGraph(", size, ", ", center_rank, ")");
  const double share = 1.0 / size;
  Graph g(size, /*weighted=*/true);
  for (int i = 0; i < size; ++i) {
    if (i == center_rank) {
      g.add_edge(i, i, share);
      continue;
    }
    g.add_edge(i, i, 1.0 - share);
    g.add_edge(i, center_rank, share);
    g.add_edge(center_rank, i, share);
  }
  return g;
}

Graph RingGraph(int size, int connect_style) {
  detail::check_size(size, "RingGraph(", size, ", ", connect_style, ")");
  if (connect_style < 0 || connect_style > 2) {
    fail("RingGraph(", size, ", ", connect_style, "): connect_style must be 0 (both sides), ",
         "1 (left) or 2 (right)");
  }
  if (size == 1) return CirculantGraph(1, {});
  const int left = size - 1;  // i sends to i - 1
  const int right = 1;        // i sends to i + 1
  // For size 2 left == right, so every style gives four weights of 1/2.
  if (connect_style == 1) return CirculantGraph(size, {left});
  if (connect_style == 2) return CirculantGraph(size, {right});
  return CirculantGraph(size, {left, right});
}

Graph FullyConnectedGraph(int size) {
  detail::check_size(size, "FullyConnectedGraph(", size, ")");
  std::vector<int> distances;
  for (int d = 1; d < size; ++d) distances.push_back(d);
  return CirculantGraph(size, distances);
}

}  // namespace topology
}  // namespace flock
