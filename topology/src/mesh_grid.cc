// MeshGrid2DGraph: a rows x cols grid without wrap-around, with
// Metropolis-Hastings weights (see generators.h).
//
// Vocabulary: cell (r, c) is rank r * cols + c; its grid neighbours are the
// cells left, right, above and below that exist; deg(i) counts i's grid
// neighbours plus i itself (Bluefog's convention, "degree counts self").
#include <cmath>
#include <vector>

#include "check.h"
#include "flock/topology/generators.h"

namespace flock {
namespace topology {

using detail::fail;

std::pair<int, int> DefaultMeshShape(int size) {
  detail::check_size(size, "DefaultMeshShape(", size, ")");
  int rows = static_cast<int>(std::sqrt(static_cast<double>(size)));
  // Correct a float square root that lands one off.
  while (static_cast<long long>(rows + 1) * (rows + 1) <= size) ++rows;
  while (static_cast<long long>(rows) * rows > size) --rows;
  while (size % rows != 0) --rows;
  return {rows, size / rows};
}

namespace {

// Grid neighbours of every cell, self excluded, ascending.
std::vector<std::vector<int>> grid_neighbors(int rows, int cols) {
  std::vector<std::vector<int>> neighbors(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      auto& list = neighbors[static_cast<std::size_t>(r) * cols + c];
      if (r > 0) list.push_back((r - 1) * cols + c);
      if (c > 0) list.push_back(r * cols + c - 1);
      if (c + 1 < cols) list.push_back(r * cols + c + 1);
      if (r + 1 < rows) list.push_back((r + 1) * cols + c);
    }
  }
  return neighbors;
}

}  // namespace

Graph MeshGrid2DGraph(int size, std::pair<int, int> shape) {
  detail::check_size(size, "MeshGrid2DGraph(", size, ")");
  if (shape.first == 0 && shape.second == 0) shape = DefaultMeshShape(size);
  const int rows = shape.first;
  const int cols = shape.second;
  if (rows < 1 || cols < 1 || static_cast<long long>(rows) * cols != size) {
    fail("MeshGrid2DGraph(", size, ", {", rows, ", ", cols, "}): shape ", rows, " x ", cols,
         " does not hold ", size, " nodes");
  }
  const auto neighbors = grid_neighbors(rows, cols);
  Graph g(size, /*weighted=*/true);
  for (int i = 0; i < size; ++i) {
    const auto deg_i = neighbors[i].size() + 1;
    double given = 0.0;
    for (int j : neighbors[i]) {
      const auto deg_j = neighbors[j].size() + 1;
      const double w = 1.0 / static_cast<double>(deg_i > deg_j ? deg_i : deg_j);
      g.add_edge(i, j, w);
      given += w;
    }
    g.add_edge(i, i, 1.0 - given);
  }
  return g;
}

}  // namespace topology
}  // namespace flock
