// topology_experiment: how fast average consensus runs on each topology, measured
// and predicted from the spectrum. No MPI: every node is simulated in-process.
//
//   topology_experiment [--csv FILE] [--eps 1e-6] [--seed 2024] [--sizes 8,16,32,64]
//                       [--max-steps 100000] [--check]
//
// For each size n and each of Bluefog's generators (plus the one-peer dynamic
// schedule on ExponentialTwoGraph(n)) it prints
//   degree     the largest out-degree (self excluded): messages a node sends per
//              step (1 for the one-peer schedule),
//   gap        the spectral gap 1 - |lambda_2(W)|; for the dynamic schedule the
//              per-step gap 1 - |lambda_2(P)|^(1/p) of one period P of p steps,
//   measured   steps x <- W^T x from a fixed random start until the distance to
//              the average has shrunk by eps (flock/topology/consensus.h),
//   predicted  ceil(log eps / log |lambda_2|) (whole periods for the dynamic one),
//   result     "yes" when measured and predicted agree within the tolerance of
//              consensus_matches_prediction (dynamic: measured <= predicted),
//              "NO" when they do not, "capped" when the prediction is beyond
//              --max-steps (the run is not simulated: said, not counted as a
//              disagreement), "never" when the spectrum says consensus is never
//              reached, and "error: ..." when the spectrum cannot be had,
//   seconds    the row's wall time (graph, spectrum and run),
//   MB         the process's resident memory at the end of the row, the row's
//              graph still alive.
// Sizes up to 10^6 finish (7.7 min for the 10^6 rows here): circulant graphs'
// spectra and those of one-peer periods are exact and O(n d), reversible ones
// (mesh, star) come from Lanczos and shift-invert, the runs use every core
// (docs/performance/topology.md has the numbers).
// --csv also writes the rows to FILE; --check exits 1 when a row says NO.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <flock/topology/topology.h>

namespace topo = flock::topology;

namespace {

struct Options {
  std::string csv_path;
  double eps = 1e-6;
  std::uint32_t seed = 2024;
  std::vector<int> sizes = {8, 16, 32, 64};
  std::int64_t max_steps = 100000;
  bool check = false;
};

struct Row {
  int n = 0;
  std::string name;
  int degree = 0;
  double gap = 0.0;
  std::int64_t measured = -1;   // -1: did not converge
  std::int64_t predicted = -1;  // -1: never
  std::string result;           // yes, NO, capped, never, error: ...
  double seconds = 0.0;
  double megabytes = 0.0;
};

// Resident memory of this process in MB (Linux), 0 when it cannot be read.
double resident_megabytes() {
  std::ifstream statm("/proc/self/statm");
  long long pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return 0.0;
  return static_cast<double>(pages_resident) * 4096.0 / 1e6;
}

int max_out_degree(const topo::Graph& g) {
  int degree = 0;
  for (int i = 0; i < g.size(); ++i) degree = std::max(degree, g.out_degree(i));
  return degree;
}

// A simulated row's verdict: its counts agree within the tolerance that
// applies (agree), or not; a run that did not reach eps within a cap the
// prediction fits in disagrees too.
std::string verdict(const Row& r, bool agree) {
  return r.measured >= 0 && agree ? "yes" : "NO";
}

Row static_row(int n, const std::string& name, const topo::Graph& g, const Options& options) {
  Row row{n, name, max_out_degree(g), topo::spectral_gap(g)};
  row.predicted = topo::predicted_consensus_iterations(g, options.eps).value_or(-1);
  if (row.predicted < 0 || row.predicted > options.max_steps) {  // said, not simulated
    row.result = row.predicted < 0 ? "never" : "capped";
    return row;
  }
  const topo::ConsensusRun run = topo::run_consensus(g, topo::random_start(n, options.seed),
                                                     options.eps, options.max_steps + 2);
  row.measured = run.converged ? run.iterations : -1;
  row.result =
      verdict(row, topo::consensus_matches_prediction(row.measured, row.predicted, options.eps, n));
  return row;
}

// One-peer on ExponentialTwoGraph(n): every rank has the same out-degree,
// which is the schedule's period.
Row one_peer_row(int n, const Options& options) {
  const topo::Graph base = topo::ExponentialTwoGraph(n);
  const topo::DynamicOnePeer schedule(base);
  const std::int64_t period = std::max(1, base.out_degree(0));
  const double lambda2 = topo::period_second_eigenvalue_modulus(schedule, period);
  Row row{n, "DynamicOnePeer(ExponentialTwo)", n > 1 ? 1 : 0,
          1.0 - std::pow(lambda2, 1.0 / static_cast<double>(period))};
  row.predicted =
      topo::predicted_periodic_consensus_iterations(schedule, period, options.eps).value_or(-1);
  if (row.predicted < 0 || row.predicted > options.max_steps) {
    row.result = row.predicted < 0 ? "never" : "capped";
    return row;
  }
  const topo::ConsensusRun run = topo::run_consensus(schedule, topo::random_start(n, options.seed),
                                                     options.eps, options.max_steps + 2);
  row.measured = run.converged ? run.iterations : -1;
  row.result = verdict(row, row.measured <= row.predicted);
  return row;
}

// One row, timed; a spectrum that cannot be had is said in the row.
Row timed_row(int n, const std::string& name, const std::function<Row()>& make) {
  const auto start = std::chrono::steady_clock::now();
  Row row;
  try {
    row = make();
  } catch (const topo::TopologyError& error) {
    row = Row{n, name};
    row.result = std::string("error: ") + error.what();
  }
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.megabytes = resident_megabytes();
  return row;
}

std::vector<Row> run_all(const Options& options) {
  using Make = std::function<topo::Graph(int)>;
  const std::vector<std::pair<std::string, Make>> generators = {
      {"ExponentialTwoGraph", [](int n) { return topo::ExponentialTwoGraph(n); }},
      {"ExponentialGraph(base 3)", [](int n) { return topo::ExponentialGraph(n, 3); }},
      {"SymmetricExponentialGraph", [](int n) { return topo::SymmetricExponentialGraph(n); }},
      {"MeshGrid2DGraph", [](int n) { return topo::MeshGrid2DGraph(n); }},
      {"StarGraph", [](int n) { return topo::StarGraph(n); }},
      {"RingGraph(style 0)", [](int n) { return topo::RingGraph(n, 0); }},
      {"RingGraph(style 2)", [](int n) { return topo::RingGraph(n, 2); }},
      {"FullyConnectedGraph", [](int n) { return topo::FullyConnectedGraph(n); }}};
  std::vector<Row> rows;
  for (int n : options.sizes) {
    for (const auto& [name, make] : generators) {
      if (name == "FullyConnectedGraph" && n > 4096) continue;  // n^2 edges
      rows.push_back(timed_row(n, name, [&, n] { return static_row(n, name, make(n), options); }));
      std::fflush(stdout);
    }
    rows.push_back(timed_row(n, "DynamicOnePeer(ExponentialTwo)",
                             [&, n] { return one_peer_row(n, options); }));
  }
  return rows;
}

void print_table(const std::vector<Row>& rows, const Options& options) {
  std::printf(
      "average consensus to relative error %g, start: uniform [-1, 1) with seed %u, "
      "at most %lld steps\n",
      options.eps, options.seed, static_cast<long long>(options.max_steps));
  std::printf("%7s  %-32s %6s %9s %9s %11s %8s %7s  %s\n", "n", "topology", "degree", "gap",
              "measured", "predicted", "seconds", "MB", "result");
  for (const Row& r : rows) {
    std::string result = r.result;
    if (result == "capped") {
      result = "capped: predicted " + std::to_string(r.predicted) + " steps, more than " +
               std::to_string(options.max_steps) + ": not simulated";
    }
    std::printf("%7d  %-32s %6d %9.3g %9lld %11lld %8.2f %7.0f  %s\n", r.n, r.name.c_str(), r.degree,
                r.gap, static_cast<long long>(r.measured), static_cast<long long>(r.predicted),
                r.seconds, r.megabytes, result.c_str());
  }
}

bool write_csv(const std::vector<Row>& rows, const std::string& path) {
  std::ofstream out(path);
  out << "n,topology,degree,spectral_gap,measured,predicted,result,seconds,resident_mb\n";
  out.precision(10);
  for (const Row& r : rows) {
    out << r.n << ",\"" << r.name << "\"," << r.degree << "," << r.gap << "," << r.measured << ","
        << r.predicted << ",\"" << r.result << "\"," << r.seconds << "," << r.megabytes << "\n";
  }
  return static_cast<bool>(out);
}

std::vector<int> parse_sizes(const std::string& text) {
  std::vector<int> sizes;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) sizes.push_back(std::stoi(item));
  return sizes;
}

bool parse_args(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--check") {
      options->check = true;
    } else if (arg == "--csv" && has_value) {
      options->csv_path = argv[++i];
    } else if (arg == "--eps" && has_value) {
      options->eps = std::stod(argv[++i]);
    } else if (arg == "--seed" && has_value) {
      options->seed = static_cast<std::uint32_t>(std::stoul(argv[++i]));
    } else if (arg == "--sizes" && has_value) {
      options->sizes = parse_sizes(argv[++i]);
    } else if (arg == "--max-steps" && has_value) {
      options->max_steps = std::stoll(argv[++i]);
    } else {
      std::cerr << "usage: " << argv[0]
                << " [--csv FILE] [--eps 1e-6] [--seed 2024] [--sizes 8,16,32,64]"
                   " [--max-steps 100000] [--check]\n";
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    if (!parse_args(argc, argv, &options)) return 2;
    const std::vector<Row> rows = run_all(options);
    print_table(rows, options);
    if (!options.csv_path.empty() && !write_csv(rows, options.csv_path)) {
      std::cerr << "cannot write " << options.csv_path << "\n";
      return 1;
    }
    if (options.check) {
      for (const Row& r : rows) {
        if (r.result == "NO" || r.result.rfind("error", 0) == 0) return 1;
      }
    }
  } catch (const std::exception& e) {  // TopologyError, std::stoi/stod
    std::cerr << "topology_experiment: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
