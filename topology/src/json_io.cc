// Topology files (see json_io.h). Parsing goes through nlohmann::json; every
// check names the key or the edge index at fault, and load_json_file prefixes
// the path. The writer lays the file out by hand (one edge per line) and lets
// nlohmann::json format each edge, so numbers round-trip exactly.
#include "flock/topology/json_io.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "check.h"

namespace flock {
namespace topology {

using detail::fail;
using nlohmann::json;

namespace {

constexpr long long kMaxFileNodes = 1LL << 20;

const json& require(const json& doc, const char* key, json::value_t type, const char* type_name,
                    const std::string& where) {
  const auto it = doc.find(key);
  if (it == doc.end()) fail(where, ": missing key \"", key, "\"");
  const bool number_ok = type == json::value_t::number_integer && it->is_number_integer();
  if (it->type() != type && !number_ok) {
    fail(where, ": key \"", key, "\" must be ", type_name, ", got ", it->type_name());
  }
  return *it;
}

void check_header(const json& doc, const std::string& where) {
  if (!doc.is_object()) fail(where, ": the top level must be a JSON object");
  const auto& format = require(doc, "format", json::value_t::string, "a string", where);
  if (format.get<std::string>() != kTopologyFormat) {
    fail(where, ": format is \"", format.get<std::string>(), "\", expected \"", kTopologyFormat,
         "\"");
  }
  const auto& version = require(doc, "version", json::value_t::number_integer, "an integer", where);
  if (version.get<long long>() != kTopologyFormatVersion) {
    fail(where, ": unsupported version ", version.get<long long>(), " (this reader knows ",
         kTopologyFormatVersion, ")");
  }
}

// A refused edge entry for its message: as written when it is flat and short,
// else its type and size (dump() recurses once per level of nesting, so a
// deeply nested entry would overflow the stack).
std::string describe(const json& entry) {
  const bool flat = std::all_of(entry.begin(), entry.end(),
                                [](const json& element) { return element.is_primitive(); });
  if (entry.is_primitive() || flat) {
    std::string text = entry.dump();
    if (text.size() <= 80) return text;
  }
  return detail::cat(entry.type_name(), " of ", entry.size(), " elements");
}

// Adds edge entry `index` to g, refusing malformed entries and duplicates.
void add_entry(Graph& g, const json& entry, std::size_t index, const std::string& where) {
  const std::string at = detail::cat(where, ": edges[", index, "]");
  if (!entry.is_array() || entry.size() < 2 || entry.size() > 3) {
    fail(at, ": expected [from, to, weight], got ", describe(entry));
  }
  if (!entry[0].is_number_integer() || !entry[1].is_number_integer()) {
    fail(at, ": nodes must be integers, got ", describe(entry));
  }
  if (entry.size() == 3 && !entry[2].is_number()) fail(at, ": weight must be a number");
  const long long from = entry[0].get<long long>();
  const long long to = entry[1].get<long long>();
  for (long long node : {from, to}) {
    if (node < 0 || node >= g.size()) {
      fail(at, ": node ", node, " is out of range [0, ", g.size(), ")");
    }
  }
  const double weight = entry.size() == 3 ? entry[2].get<double>() : 1.0;
  detail::check_weight(weight, at);
  if (g.has_edge(static_cast<int>(from), static_cast<int>(to))) {
    fail(at, ": edge [", from, ", ", to, "] is listed twice");
  }
  g.add_edge(static_cast<int>(from), static_cast<int>(to), weight);
}

Graph parse(const std::string& text, const std::string& where) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(where, ": not valid JSON (byte ", e.byte, "): ", e.what());
  } catch (const json::exception& e) {  // e.g. out_of_range: a number too large for a double
    fail(where, ": not readable JSON: ", e.what());
  }
  check_header(doc, where);
  const auto& size = require(doc, "size", json::value_t::number_integer, "an integer", where);
  const auto& weighted = require(doc, "weighted", json::value_t::boolean, "true or false", where);
  const auto& edges = require(doc, "edges", json::value_t::array, "an array", where);
  const long long n = size.get<long long>();
  if (n < 1) fail(where, ": size must be >= 1, got ", n);
  // Graph(n) allocates per node: a few bytes of text must not ask for gigabytes.
  if (n > kMaxFileNodes) fail(where, ": size ", n, " is too large (at most ", kMaxFileNodes, ")");
  Graph g(static_cast<int>(n), weighted.get<bool>());
  for (std::size_t i = 0; i < edges.size(); ++i) add_entry(g, edges[i], i, where);
  return g;
}

}  // namespace

std::string to_json_string(const Graph& g) {
  std::ostringstream out;
  out << "{\n"
      << "  \"format\": " << json(kTopologyFormat).dump() << ",\n"
      << "  \"version\": " << kTopologyFormatVersion << ",\n"
      << "  \"size\": " << g.size() << ",\n"
      << "  \"weighted\": " << (g.is_weighted() ? "true" : "false") << ",\n"
      << "  \"edges\": [";
  const auto edges = g.edges();
  for (std::size_t i = 0; i < edges.size(); ++i) {
    out << (i == 0 ? "\n    " : ",\n    ")
        << json::array({edges[i].from, edges[i].to, edges[i].weight}).dump();
  }
  out << (edges.empty() ? "]\n" : "\n  ]\n") << "}\n";
  return out.str();
}

Graph from_json_string(const std::string& text) {
  return parse(text, "from_json_string");
}

void save_json_file(const Graph& g, const std::string& path) {
  std::ofstream file(path);
  if (!file) fail("save_json_file(", path, "): cannot open the file for writing");
  file << to_json_string(g);
  file.close();
  if (!file) fail("save_json_file(", path, "): writing failed");
}

Graph load_json_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) fail("load_json_file(", path, "): cannot open the file");
  std::ostringstream text;
  text << file.rdbuf();
  return parse(text.str(), detail::cat("load_json_file(", path, ")"));
}

}  // namespace topology
}  // namespace flock
