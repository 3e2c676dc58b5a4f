// topology_experiment: how fast average consensus runs on each topology, measured
// and predicted from the spectrum. No MPI: every node is simulated in-process.
//
//   topology_experiment [--csv FILE] [--eps 1e-6] [--seed 2024] [--sizes 8,16,32,64] [--check]
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
//   agrees     whether measured and predicted agree within the tolerance of
//              consensus_matches_prediction (dynamic: measured <= predicted).
// --csv also writes the rows to FILE; --check exits 1 when a row disagrees.
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
  bool check = false;
};

struct Row {
  int n = 0;
  std::string name;
  int degree = 0;
  double gap = 0.0;
  std::int64_t measured = -1;   // -1: did not converge
  std::int64_t predicted = -1;  // -1: never
  bool agrees = false;
};

constexpr std::int64_t kMaxIterations = 1000000;

int max_out_degree(const topo::Graph& g) {
  int degree = 0;
  for (int i = 0; i < g.size(); ++i) degree = std::max(degree, g.out_degree(i));
  return degree;
}

Row static_row(int n, const std::string& name, const topo::Graph& g, const Options& options) {
  Row row{n, name, max_out_degree(g), topo::spectral_gap(g)};
  const topo::ConsensusRun run =
      topo::run_consensus(g, topo::random_start(n, options.seed), options.eps, kMaxIterations);
  row.measured = run.converged ? run.iterations : -1;
  row.predicted = topo::predicted_consensus_iterations(g, options.eps).value_or(-1);
  row.agrees = row.measured >= 0 && row.predicted >= 0 &&
               topo::consensus_matches_prediction(row.measured, row.predicted, options.eps);
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
  const topo::ConsensusRun run = topo::run_consensus(schedule, topo::random_start(n, options.seed),
                                                     options.eps, kMaxIterations);
  row.measured = run.converged ? run.iterations : -1;
  row.predicted =
      topo::predicted_periodic_consensus_iterations(schedule, period, options.eps).value_or(-1);
  row.agrees = row.measured >= 0 && row.predicted >= 0 && row.measured <= row.predicted;
  return row;
}

std::vector<Row> run_all(const Options& options) {
  std::vector<Row> rows;
  for (int n : options.sizes) {
    rows.push_back(static_row(n, "ExponentialTwoGraph", topo::ExponentialTwoGraph(n), options));
    rows.push_back(
        static_row(n, "ExponentialGraph(base 3)", topo::ExponentialGraph(n, 3), options));
    rows.push_back(
        static_row(n, "SymmetricExponentialGraph", topo::SymmetricExponentialGraph(n), options));
    rows.push_back(static_row(n, "MeshGrid2DGraph", topo::MeshGrid2DGraph(n), options));
    rows.push_back(static_row(n, "StarGraph", topo::StarGraph(n), options));
    rows.push_back(static_row(n, "RingGraph(style 0)", topo::RingGraph(n, 0), options));
    rows.push_back(static_row(n, "RingGraph(style 2)", topo::RingGraph(n, 2), options));
    rows.push_back(static_row(n, "FullyConnectedGraph", topo::FullyConnectedGraph(n), options));
    rows.push_back(one_peer_row(n, options));
  }
  return rows;
}

void print_table(const std::vector<Row>& rows, const Options& options) {
  std::printf("average consensus to relative error %g, start: uniform [-1, 1) with seed %u\n",
              options.eps, options.seed);
  std::printf("%4s  %-32s %6s %9s %9s %9s  %s\n", "n", "topology", "degree", "gap", "measured",
              "predicted", "agrees");
  for (const Row& r : rows) {
    std::printf("%4d  %-32s %6d %9.5f %9lld %9lld  %s\n", r.n, r.name.c_str(), r.degree, r.gap,
                static_cast<long long>(r.measured), static_cast<long long>(r.predicted),
                r.agrees ? "yes" : "NO");
  }
}

bool write_csv(const std::vector<Row>& rows, const std::string& path) {
  std::ofstream out(path);
  out << "n,topology,degree,spectral_gap,measured,predicted,agrees\n";
  out.precision(10);
  for (const Row& r : rows) {
    out << r.n << ",\"" << r.name << "\"," << r.degree << "," << r.gap << "," << r.measured << ","
        << r.predicted << "," << (r.agrees ? 1 : 0) << "\n";
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
    } else {
      std::cerr << "usage: " << argv[0]
                << " [--csv FILE] [--eps 1e-6] [--seed 2024] [--sizes 8,16,32,64] [--check]\n";
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
        if (!r.agrees) return 1;
      }
    }
  } catch (const std::exception& e) {  // TopologyError, std::stoi/stod
    std::cerr << "topology_experiment: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
