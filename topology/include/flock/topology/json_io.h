// Topology files: a Graph saved as JSON.
//
//   {
//     "format": "flock-topology",
//     "version": 1,
//     "size": 4,
//     "weighted": true,
//     "edges": [
//       [0, 0, 0.5], [0, 1, 0.5],
//       ...
//     ]
//   }
//
// Vocabulary:
//   edge entry   [from, to, weight]: W[from][to] = weight; self loops are
//                entries [i, i, w]. Writers always write three elements sorted
//                by (from, to); readers also accept [from, to] (weight 1.0),
//                handy for hand-written unweighted files.
//   weighted     Graph::is_weighted(): whether the weights are meant as mixing
//                weights (see graph.h).
// Readers reject, with a TopologyError naming the file (when there is one) and
// the problem: text that is not JSON (with the byte offset) or holds a number
// no double can, a missing or mistyped key, another format, an unsupported
// version, a size < 1 or > 2^20, a malformed edge entry, a node out of range,
// a negative or non-finite weight, and an edge listed twice. Unknown extra keys
// are ignored. Weights are written with enough digits to read back bit-identical.
#pragma once

#include <string>

#include "flock/topology/graph.h"

namespace flock {
namespace topology {

inline constexpr const char* kTopologyFormat = "flock-topology";
inline constexpr int kTopologyFormatVersion = 1;

// The whole file as a string (one edge per line, ends with a newline).
std::string to_json_string(const Graph& g);
Graph from_json_string(const std::string& text);

void save_json_file(const Graph& g, const std::string& path);
Graph load_json_file(const std::string& path);

}  // namespace topology
}  // namespace flock
