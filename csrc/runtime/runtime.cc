#include "flock/runtime/runtime.h"

#include <unistd.h>

#include <cstring>
#include <vector>

#include "flock/common/logging.h"
#include "flock/common/malloc_tuning.h"
#include "flock/transport/registry.h"

namespace flock {

Result<std::unique_ptr<Runtime>> Runtime::Create(const Config& config) {
  SetLogLevel(config.log_level);
  // Before MPI and the engine start their threads (see malloc_tuning.h).
  if (config.malloc_tuning) {
    const std::string malloc_tuning = TuneMallocForLargeBuffers(config.user_malloc_setting);
    FLOCK_LOG(kDebug, "runtime") << "malloc: " << malloc_tuning;
  }
  auto transport = CreateHostTransport(config);
  if (!transport.ok()) return transport.status();
  std::unique_ptr<Runtime> runtime(new Runtime(config, std::move(transport).value()));
  FLOCK_RETURN_IF_ERROR(runtime->DiscoverMachines());
  FLOCK_RETURN_IF_ERROR(runtime->DiscoverHosts());
  runtime->engine_ =
      std::make_unique<Engine>(*runtime->transport_, runtime->config_, runtime->machine_.hosts);
  FLOCK_RETURN_IF_ERROR(runtime->engine_->Start());
  FLOCK_LOG(kDebug, "runtime") << "initialized: size " << runtime->size() << ", local size "
                               << runtime->machine_.local_size << ", "
                               << runtime->machine_.machine_size << " machine(s)";
  return runtime;
}

Runtime::Runtime(Config config, std::unique_ptr<Transport> transport)
    : config_(std::move(config)), transport_(std::move(transport)) {}

Runtime::~Runtime() {
  if (engine_) engine_->Shutdown();
  if (gpu_) {
    const Status closed = gpu_->Shutdown();
    if (!closed.ok())
      FLOCK_LOG(kWarning, "runtime") << "closing the GPU backend: " << closed.message();
  }
}

Result<GpuBackend*> Runtime::Gpu() {
  std::lock_guard<std::mutex> lock(gpu_mutex_);
  if (gpu_) return gpu_.get();
  FLOCK_RETURN_IF_ERROR(gpu_failure_);
  // Devices are per real host: with FLOCK_LOCAL_SIZE faking machines, the
  // machine-local rank would give two ranks of one host the same device.
  int host_local_rank = 0;
  for (int r = 0; r < rank(); ++r) host_local_rank += transport_->on_this_host(r) ? 1 : 0;
  auto made = CreateGpuBackend(*transport_, config_, host_local_rank);
  if (!made.ok()) {
    gpu_failure_ = made.status();
    return gpu_failure_;
  }
  gpu_ = std::move(made).value();
  engine_->SetGpuBackend(gpu_.get());
  FLOCK_LOG(kDebug, "runtime") << "GPU backend ready on cuda:" << gpu_->device();
  return gpu_.get();
}

Status Runtime::DiscoverMachines() {
  Transport& t = *transport_;
  machine_.local_size = t.size(CommGroup::kLocal);
  machine_.local_rank = t.rank(CommGroup::kLocal);
  machine_.machine_size = size() / machine_.local_size;
  machine_.machine_rank = rank() / machine_.local_size;

  // Homogeneous: every machine has local_size ranks and rank = machine * L + local.
  const int mine[3] = {machine_.local_size, machine_.local_rank, t.rank(CommGroup::kCross)};
  std::vector<int> all(3 * static_cast<size_t>(size()));
  FLOCK_RETURN_IF_ERROR(t.Allgather(mine, sizeof(mine), all.data(), CommGroup::kWorld));
  machine_.homogeneous = true;
  for (int r = 0; r < size(); ++r) {
    const int local_size = all[3 * r], local_rank = all[3 * r + 1], machine = all[3 * r + 2];
    if (local_size != machine_.local_size || r != machine * local_size + local_rank) {
      machine_.homogeneous = false;
    }
  }
  return Status::OK();
}

// One allgather of fixed-size names at start-up, so that a rank that fails
// later can be reported with its host without asking anyone.
Status Runtime::DiscoverHosts() {
  constexpr size_t kNameBytes = 256;  // a host name is at most 255 bytes (POSIX HOST_NAME_MAX)
  std::vector<char> mine(kNameBytes, '\0');
  if (gethostname(mine.data(), kNameBytes - 1) != 0) mine.assign(kNameBytes, '\0');
  std::vector<char> all(kNameBytes * static_cast<size_t>(size()));
  FLOCK_RETURN_IF_ERROR(
      transport_->Allgather(mine.data(), kNameBytes, all.data(), CommGroup::kWorld));
  machine_.hosts.clear();
  for (int r = 0; r < size(); ++r) {
    const char* name = all.data() + kNameBytes * static_cast<size_t>(r);
    machine_.hosts.emplace_back(name, strnlen(name, kNameBytes - 1));
  }
  return Status::OK();
}

std::string Runtime::AutoName(const std::string& op) {
  return op + "." + std::to_string(auto_name_counters_[op]++);
}

}  // namespace flock
