// Runtime: what init() creates and shutdown() destroys — the config, the
// transport and the machine layout — passed to everything that needs them.
// The Python bindings hold the only pointer to it.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "transport/transport.h"

namespace flock {

struct MachineLayout {
  int local_size = 1;
  int local_rank = 0;
  int machine_size = 1;     // size / local_size, as Bluefog defines it
  int machine_rank = 0;     // rank / local_size
  bool homogeneous = true;  // equal local sizes, ranks laid out machine by machine
};

class Runtime {
 public:
  static Result<std::unique_ptr<Runtime>> Create(const Config& config);
  ~Runtime();

  Transport& transport() { return *transport_; }
  const Config& config() const { return config_; }
  const MachineLayout& machine() const { return machine_; }
  int rank() const { return transport_->rank(CommGroup::kWorld); }
  int size() const { return transport_->size(CommGroup::kWorld); }

  // A deterministic name for an unnamed request: "<op>.<n>" for the n-th of that op.
  std::string AutoName(const std::string& op);

 private:
  Runtime(Config config, std::unique_ptr<Transport> transport);
  Status DiscoverMachines();

  Config config_;
  std::unique_ptr<Transport> transport_;
  MachineLayout machine_;
  std::map<std::string, long long> auto_name_counters_;
};

}  // namespace flock
