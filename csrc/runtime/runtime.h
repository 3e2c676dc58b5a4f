// Runtime: what init() creates and shutdown() destroys — the config, the
// transport and the machine layout — passed to everything that needs them.
// The Python bindings hold the only pointer to it.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "flock/common/config.h"
#include "flock/common/status.h"
#include "flock/engine/engine.h"
#include "flock/transport/gpu_backend.h"
#include "flock/transport/transport.h"

namespace flock {

namespace topology {
class Graph;  // flock/topology/graph.h
}  // namespace topology

struct MachineLayout {
  int local_size = 1;
  int local_rank = 0;
  int machine_size = 1;     // size / local_size, as Bluefog defines it
  int machine_rank = 0;     // rank / local_size
  bool homogeneous = true;  // equal local sizes, ranks laid out machine by machine
  // Each rank's host name (gethostname), by rank: errors that report a failed
  // rank name its host too (python/flock/_rank_hosts.py).
  std::vector<std::string> hosts;
};

class Runtime {
 public:
  // Starts the transport and the engine thread.
  static Result<std::unique_ptr<Runtime>> Create(const Config& config);
  // Shuts the engine down (collective: returns once every rank has shut down).
  ~Runtime();

  Transport& transport() { return *transport_; }
  Engine& engine() { return *engine_; }
  const Config& config() const { return config_; }
  const MachineLayout& machine() const { return machine_; }
  int rank() const { return transport_->rank(CommGroup::kWorld); }
  int size() const { return transport_->size(CommGroup::kWorld); }

  // The GPU backend, made at the first call (the first CUDA tensor: a job
  // without one never initialises CUDA); an Unsupported error in a build
  // without one, or why it could not start (kept: later calls fail alike).
  Result<GpuBackend*> Gpu();
  // The GPU backend if a CUDA tensor has made it, else null (never makes it).
  GpuBackend* gpu_if_made() {
    std::lock_guard<std::mutex> lock(gpu_mutex_);
    return gpu_.get();
  }

  // turn_on/off_win_ops_with_associated_p: push-sum weights travel with window data.
  bool win_ops_with_p() const { return win_ops_with_p_.load(); }
  void set_win_ops_with_p(bool on) { win_ops_with_p_.store(on); }

  // A deterministic name for an unnamed request: "<op>.<n>" for the n-th of that op.
  std::string AutoName(const std::string& op);

  // The rank topology (set_topology: nodes are ranks) and the machine topology
  // (set_machine_topology: nodes are machines); null until set. The Python
  // layer checks a graph and that every rank agrees on it before storing it.
  // A stored graph is never modified: a reader (e.g. a neighbor op) keeps the
  // snapshot it took even if a new topology is set meanwhile.
  std::shared_ptr<const topology::Graph> topology() const {
    std::lock_guard<std::mutex> lock(topology_mutex_);
    return topology_;
  }
  void set_topology(std::shared_ptr<const topology::Graph> graph) {
    std::lock_guard<std::mutex> lock(topology_mutex_);
    topology_ = std::move(graph);
  }
  std::shared_ptr<const topology::Graph> machine_topology() const {
    std::lock_guard<std::mutex> lock(topology_mutex_);
    return machine_topology_;
  }
  void set_machine_topology(std::shared_ptr<const topology::Graph> graph) {
    std::lock_guard<std::mutex> lock(topology_mutex_);
    machine_topology_ = std::move(graph);
  }

 private:
  Runtime(Config config, std::unique_ptr<Transport> transport);
  Status DiscoverMachines();
  Status DiscoverHosts();

  Config config_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Engine> engine_;  // declared after the transport: stopped before it
  std::mutex gpu_mutex_;
  std::unique_ptr<GpuBackend> gpu_;  // shut down after the engine, before the transport
  Status gpu_failure_;
  MachineLayout machine_;
  std::map<std::string, long long> auto_name_counters_;
  std::atomic<bool> win_ops_with_p_{false};
  mutable std::mutex topology_mutex_;
  std::shared_ptr<const topology::Graph> topology_;
  std::shared_ptr<const topology::Graph> machine_topology_;
};

}  // namespace flock
