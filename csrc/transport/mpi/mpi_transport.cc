#include "flock/transport/mpi/mpi_transport.h"

#include <algorithm>
#include <climits>

#include "flock/common/logging.h"
#include "flock/transport/mpi/mpi_check.h"

namespace flock {
namespace {

// MPI counts are ints: longer buffers go in chunks of at most this many elements.
constexpr int64_t kMaxChunk = INT_MAX / 8;

bool g_flock_initialized_mpi = false;

Status EnsureMpiInitialized(int* thread_level) {
  int initialized = 0;
  FLOCK_MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) {
      return Status::NotInitialized(
          "MPI was already finalized in this process; it cannot be "
          "initialized again (call flock.shutdown(), not MPI_Finalize)");
    }
    FLOCK_MPI_CHECK(MPI_Query_thread(thread_level));
    return Status::OK();
  }
  FLOCK_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, thread_level));
  g_flock_initialized_mpi = true;
  return Status::OK();
}

Status CheckCount(int64_t value, const char* what) {
  if (value > INT_MAX) {
    return Status::Unsupported(std::string(what) + " of " + std::to_string(value) +
                               " bytes exceeds MPI's 2 GiB limit for this operation");
  }
  return Status::OK();
}

// Every rank must emulate the same machines, and they must split the world
// evenly: otherwise the split below makes a layout no machine-level op can use.
// Collective, so every rank returns the same error.
Status CheckEmulatedMachines(MPI_Comm world, int local_size, const std::string& variable) {
  int size = 0;
  MPI_Comm_size(world, &size);
  std::vector<int> all(static_cast<size_t>(size));
  FLOCK_MPI_CHECK(MPI_Allgather(&local_size, 1, MPI_INT, all.data(), 1, MPI_INT, world));
  for (int r = 1; r < size; ++r) {
    if (all[static_cast<size_t>(r)] != all[0]) {
      return Status::InvalidArgument("ranks disagree on the emulated machine size (" + variable +
                                     " or its alias): rank 0 "
                                     "has " +
                                     std::to_string(all[0]) + ", rank " + std::to_string(r) +
                                     " has " + std::to_string(all[static_cast<size_t>(r)]) +
                                     " (0: unset); set it for the whole job");
    }
  }
  if (local_size > 0 && size % local_size != 0) {
    return Status::InvalidArgument(variable + "=" + std::to_string(local_size) +
                                   " does not divide the world size " + std::to_string(size) +
                                   ": emulated machines need the same number of ranks each");
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<MpiTransport>> MpiTransport::Create(int local_size_override,
                                                           const std::string& variable) {
  std::unique_ptr<MpiTransport> transport(new MpiTransport());
  FLOCK_RETURN_IF_ERROR(transport->Init(local_size_override, variable));
  return transport;
}

Status MpiTransport::Init(int local_size_override, const std::string& variable) {
  FLOCK_RETURN_IF_ERROR(EnsureMpiInitialized(&thread_level_));
  MPI_Comm& world = comms_[static_cast<int>(CommGroup::kWorld)];
  FLOCK_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &world));
  FLOCK_MPI_CHECK(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN));
  int world_rank = 0;
  MPI_Comm_rank(world, &world_rank);

  FLOCK_RETURN_IF_ERROR(CheckEmulatedMachines(world, local_size_override, variable));
  MPI_Comm& local = comms_[static_cast<int>(CommGroup::kLocal)];
  if (local_size_override > 0) {
    FLOCK_MPI_CHECK(MPI_Comm_split(world, world_rank / local_size_override, world_rank, &local));
  } else {
    FLOCK_MPI_CHECK(
        MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &local));
  }
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm& cross = comms_[static_cast<int>(CommGroup::kCross)];
  FLOCK_MPI_CHECK(MPI_Comm_split(world, local_rank, world_rank, &cross));

  FLOCK_MPI_CHECK(MPI_Comm_dup(world, &comms_[static_cast<int>(CommGroup::kControl)]));
  FLOCK_MPI_CHECK(MPI_Comm_dup(world, &comms_[static_cast<int>(CommGroup::kNeighbor)]));

  for (int g = 0; g < kNumCommGroups; ++g) {
    FLOCK_MPI_CHECK(MPI_Comm_set_errhandler(comms_[g], MPI_ERRORS_RETURN));
    MPI_Comm_rank(comms_[g], &ranks_[g]);
    MPI_Comm_size(comms_[g], &sizes_[g]);
  }
  SetLogRank(world_rank);
  FLOCK_RETURN_IF_ERROR(FindHostPeers(world));
  FindWindowModel();
  idle_yield_ = std::make_unique<IdleYieldSwitch>(IdleYieldSwitch::FindOpenMpiSwitch());
  return types_.Create();
}

// The memory model is a property of the one-sided component, seen through a
// window: ask a small window of this process alone (MPI_Win_allocate: OpenMPI's
// components refuse MPI_Win_create on a one-process communicator). Local, no
// other rank involved; a failure only means "not unified".
void MpiTransport::FindWindowModel() {
  MPI_Comm self = MPI_COMM_NULL;
  if (MPI_Comm_dup(MPI_COMM_SELF, &self) != MPI_SUCCESS) return;
  MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
  void* base = nullptr;
  MPI_Win window = MPI_WIN_NULL;
  if (MPI_Win_allocate(8, 1, MPI_INFO_NULL, self, &base, &window) == MPI_SUCCESS) {
    int* model = nullptr;
    int found = 0;
    MPI_Win_get_attr(window, MPI_WIN_MODEL, &model, &found);
    unified_window_model_ = found != 0 && model != nullptr && *model == MPI_WIN_UNIFIED;
    MPI_Win_free(&window);
  } else {
    FLOCK_LOG(kDebug, "transport") << "no MPI window could be allocated: model unknown";
  }
  MPI_Comm_free(&self);
}

Status MpiTransport::FindHostPeers(MPI_Comm world) {
  // The real shared-memory group, whatever the local group was made of.
  MPI_Comm host = MPI_COMM_NULL;
  FLOCK_MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host));
  MPI_Group host_group = MPI_GROUP_NULL, world_group = MPI_GROUP_NULL;
  FLOCK_MPI_CHECK(MPI_Comm_group(host, &host_group));
  FLOCK_MPI_CHECK(MPI_Comm_group(world, &world_group));
  int host_size = 0;
  FLOCK_MPI_CHECK(MPI_Group_size(host_group, &host_size));
  std::vector<int> host_ranks(static_cast<size_t>(host_size)), world_ranks(host_ranks.size());
  for (int i = 0; i < host_size; ++i) host_ranks[static_cast<size_t>(i)] = i;
  FLOCK_MPI_CHECK(MPI_Group_translate_ranks(host_group, host_size, host_ranks.data(), world_group,
                                            world_ranks.data()));
  on_this_host_.assign(static_cast<size_t>(sizes_[static_cast<int>(CommGroup::kWorld)]), false);
  for (int r : world_ranks) on_this_host_[static_cast<size_t>(r)] = true;
  MPI_Group_free(&host_group);
  MPI_Group_free(&world_group);
  MPI_Comm_free(&host);
  return Status::OK();
}

bool MpiTransport::on_this_host(int rank) const {
  return rank < 0 || static_cast<size_t>(rank) >= on_this_host_.size() ||
         on_this_host_[static_cast<size_t>(rank)];
}

namespace {
// Cancels and releases the requests still pending (completed ones are
// already MPI_REQUEST_NULL). A receive that had begun to arrive may still
// complete into its buffer; MPI offers no way to stop it.
void CancelPending(std::vector<MPI_Request>& requests) {
  for (MPI_Request& request : requests) {
    if (request == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&request);
    MPI_Request_free(&request);
  }
}
}  // namespace

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  types_.Free();
  if (finalized) return;
  for (auto& [id, requests] : transfers_) CancelPending(requests);
  for (PostedSend& send : posted_sends_) {
    // Undelivered control messages at teardown are abandoned, not waited for.
    MPI_Cancel(&send.request);
    MPI_Request_free(&send.request);
  }
  for (MPI_Comm& c : comms_) {
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
}

void MpiTransport::FinalizeIfOwned() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_flock_initialized_mpi && !finalized) MPI_Finalize();
}

MPI_Comm MpiTransport::comm(CommGroup group) const {
  return comms_[static_cast<int>(group)];
}
int MpiTransport::rank(CommGroup group) const {
  return ranks_[static_cast<int>(group)];
}
int MpiTransport::size(CommGroup group) const {
  return sizes_[static_cast<int>(group)];
}

Status MpiTransport::Allreduce(const void* send, void* recv, int64_t count, DataType dtype,
                               ReduceOp op, CommGroup group) {
  IdleYieldSwitch::Blocking blocking(*idle_yield_);
  const MPI_Datatype type = types_.Datatype(dtype);
  const MPI_Op mpi_op = types_.Op(dtype, op);
  const auto elem = static_cast<int64_t>(DataTypeSize(dtype));
  for (int64_t offset = 0; offset < count; offset += kMaxChunk) {
    const int n = static_cast<int>(std::min(kMaxChunk, count - offset));
    char* out = static_cast<char*>(recv) + offset * elem;
    const void* in = send == recv ? MPI_IN_PLACE : static_cast<const char*>(send) + offset * elem;
    FLOCK_MPI_CHECK(MPI_Allreduce(in, out, n, type, mpi_op, comm(group)));
  }
  return Status::OK();
}

Status MpiTransport::Broadcast(void* buffer, int64_t bytes, int root, CommGroup group) {
  IdleYieldSwitch::Blocking blocking(*idle_yield_);
  for (int64_t offset = 0; offset < bytes; offset += kMaxChunk) {
    const int n = static_cast<int>(std::min(kMaxChunk, bytes - offset));
    FLOCK_MPI_CHECK(MPI_Bcast(static_cast<char*>(buffer) + offset, n, MPI_BYTE, root, comm(group)));
  }
  return Status::OK();
}

Status MpiTransport::Allgather(const void* send, int64_t bytes, void* recv, CommGroup group) {
  IdleYieldSwitch::Blocking blocking(*idle_yield_);
  FLOCK_RETURN_IF_ERROR(CheckCount(bytes * size(group), "allgather"));
  FLOCK_MPI_CHECK(MPI_Allgather(send, static_cast<int>(bytes), MPI_BYTE, recv,
                                static_cast<int>(bytes), MPI_BYTE, comm(group)));
  return Status::OK();
}

Status MpiTransport::Allgatherv(const void* send, const std::vector<int64_t>& recv_bytes,
                                void* recv, CommGroup group) {
  IdleYieldSwitch::Blocking blocking(*idle_yield_);
  std::vector<int> counts(recv_bytes.size());
  std::vector<int> displs(recv_bytes.size());
  int64_t total = 0;
  for (size_t r = 0; r < recv_bytes.size(); ++r) {
    FLOCK_RETURN_IF_ERROR(CheckCount(total, "allgather"));
    displs[r] = static_cast<int>(total);
    counts[r] = static_cast<int>(recv_bytes[r]);
    total += recv_bytes[r];
  }
  FLOCK_RETURN_IF_ERROR(CheckCount(total, "allgather"));
  const int mine = counts[static_cast<size_t>(rank(group))];
  FLOCK_MPI_CHECK(MPI_Allgatherv(send, mine, MPI_BYTE, recv, counts.data(), displs.data(), MPI_BYTE,
                                 comm(group)));
  return Status::OK();
}

Status MpiTransport::ReduceScatter(const void* send, void* recv, int64_t count_per_rank,
                                   DataType dtype, ReduceOp op, CommGroup group) {
  IdleYieldSwitch::Blocking blocking(*idle_yield_);
  if (count_per_rank > INT_MAX) {
    return Status::Unsupported("reducescatter of " + std::to_string(count_per_rank) +
                               " elements per rank exceeds MPI's count limit");
  }
  // One rank: output and input may be the same buffer, which MPI allows only as MPI_IN_PLACE.
  FLOCK_MPI_CHECK(MPI_Reduce_scatter_block(send == recv ? MPI_IN_PLACE : send, recv,
                                           static_cast<int>(count_per_rank), types_.Datatype(dtype),
                                           types_.Op(dtype, op), comm(group)));
  return Status::OK();
}

namespace {

// MPI's int counts and displacements of a packed per-rank byte layout.
Status ByteLayout(const std::vector<int64_t>& bytes, std::vector<int>* counts,
                  std::vector<int>* displs) {
  int64_t total = 0;
  for (int64_t n : bytes) {
    FLOCK_RETURN_IF_ERROR(CheckCount(total + n, "alltoall"));
    displs->push_back(static_cast<int>(total));
    counts->push_back(static_cast<int>(n));
    total += n;
  }
  return Status::OK();
}

}  // namespace

Status MpiTransport::Alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                               const std::vector<int64_t>& recv_bytes, CommGroup group) {
  IdleYieldSwitch::Blocking blocking(*idle_yield_);
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  FLOCK_RETURN_IF_ERROR(ByteLayout(send_bytes, &send_counts, &send_displs));
  FLOCK_RETURN_IF_ERROR(ByteLayout(recv_bytes, &recv_counts, &recv_displs));
  FLOCK_MPI_CHECK(MPI_Alltoallv(send, send_counts.data(), send_displs.data(), MPI_BYTE, recv,
                                recv_counts.data(), recv_displs.data(), MPI_BYTE, comm(group)));
  return Status::OK();
}

Status MpiTransport::Barrier(CommGroup group) {
  IdleYieldSwitch::Blocking blocking(*idle_yield_);
  FLOCK_MPI_CHECK(MPI_Barrier(comm(group)));
  return Status::OK();
}

Status MpiTransport::Send(const void* buffer, int64_t bytes, int dest, int tag, CommGroup group) {
  IdleYieldSwitch::Blocking blocking(*idle_yield_);
  FLOCK_RETURN_IF_ERROR(CheckCount(bytes, "send"));
  FLOCK_MPI_CHECK(MPI_Send(buffer, static_cast<int>(bytes), MPI_BYTE, dest, tag, comm(group)));
  return Status::OK();
}

Status MpiTransport::Recv(void* buffer, int64_t bytes, int source, int tag, CommGroup group) {
  IdleYieldSwitch::Blocking blocking(*idle_yield_);
  FLOCK_RETURN_IF_ERROR(CheckCount(bytes, "receive"));
  FLOCK_MPI_CHECK(MPI_Recv(buffer, static_cast<int>(bytes), MPI_BYTE, source, tag, comm(group),
                           MPI_STATUS_IGNORE));
  return Status::OK();
}

Status MpiTransport::PostSend(std::vector<char> bytes, int dest, int tag, CommGroup group) {
  FLOCK_RETURN_IF_ERROR(CheckCount(static_cast<int64_t>(bytes.size()), "control message"));
  posted_sends_.push_back(PostedSend{MPI_REQUEST_NULL, std::move(bytes)});
  PostedSend& send = posted_sends_.back();
  FLOCK_MPI_CHECK(MPI_Isend(send.bytes.data(), static_cast<int>(send.bytes.size()), MPI_BYTE, dest,
                            tag, comm(group), &send.request));
  return Status::OK();
}

Result<bool> MpiTransport::TryReceive(int source, int tag, CommGroup group, int* from,
                                      std::vector<char>* bytes) {
  int flag = 0;
  MPI_Status status;
  FLOCK_MPI_CHECK(
      MPI_Iprobe(source < 0 ? MPI_ANY_SOURCE : source, tag, comm(group), &flag, &status));
  if (!flag) return false;
  int count = 0;
  FLOCK_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
  bytes->resize(static_cast<size_t>(count));
  // Probed, but a message over the eager limit still waits for its sender.
  IdleYieldSwitch::Blocking blocking(*idle_yield_);
  FLOCK_MPI_CHECK(MPI_Recv(bytes->data(), count, MPI_BYTE, status.MPI_SOURCE, tag, comm(group),
                           MPI_STATUS_IGNORE));
  *from = status.MPI_SOURCE;
  return true;
}

Result<bool> MpiTransport::ProgressSends() {
  for (auto it = posted_sends_.begin(); it != posted_sends_.end();) {
    int done = 0;
    FLOCK_MPI_CHECK(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE));
    it = done ? posted_sends_.erase(it) : std::next(it);
  }
  return posted_sends_.empty();
}

// MPI counts are ints: a transfer is cut into messages of at most this many bytes.
constexpr int64_t kMaxMessageBytes = INT_MAX;

Result<TransferId> MpiTransport::StartSend(const void* buffer, int64_t bytes, int dest, int tag,
                                           CommGroup group) {
  std::vector<MPI_Request> requests;
  const char* data = static_cast<const char*>(buffer);
  int64_t offset = 0;
  do {
    const int n = static_cast<int>(std::min(kMaxMessageBytes, bytes - offset));
    requests.push_back(MPI_REQUEST_NULL);
    Status posted =
        MpiStatus(MPI_Isend(data + offset, n, MPI_BYTE, dest, tag, comm(group), &requests.back()),
                  "MPI_Isend");
    if (!posted.ok()) {
      CancelPending(requests);  // the chunks already posted of a > 2 GiB transfer
      return posted;
    }
    offset += n;
  } while (offset < bytes);
  const TransferId id = next_transfer_++;
  transfers_.emplace(id, std::move(requests));
  return id;
}

Result<TransferId> MpiTransport::StartRecv(void* buffer, int64_t bytes, int source, int tag,
                                           CommGroup group) {
  std::vector<MPI_Request> requests;
  char* data = static_cast<char*>(buffer);
  int64_t offset = 0;
  do {
    const int n = static_cast<int>(std::min(kMaxMessageBytes, bytes - offset));
    requests.push_back(MPI_REQUEST_NULL);
    Status posted =
        MpiStatus(MPI_Irecv(data + offset, n, MPI_BYTE, source, tag, comm(group), &requests.back()),
                  "MPI_Irecv");
    if (!posted.ok()) {
      CancelPending(requests);
      return posted;
    }
    offset += n;
  } while (offset < bytes);
  const TransferId id = next_transfer_++;
  transfers_.emplace(id, std::move(requests));
  return id;
}

Result<bool> MpiTransport::TestTransfer(TransferId id) {
  auto it = transfers_.find(id);
  if (it == transfers_.end()) return Status::Internal("unknown transfer " + std::to_string(id));
  int done = 0;
  Status tested = MpiStatus(MPI_Testall(static_cast<int>(it->second.size()), it->second.data(),
                                        &done, MPI_STATUSES_IGNORE),
                            "MPI_Testall");
  if (!tested.ok()) {
    // Failed (say, a longer message than the receive): over for the caller.
    CancelPending(it->second);
    transfers_.erase(it);
    return tested;
  }
  if (done) transfers_.erase(it);
  return done != 0;
}

void MpiTransport::Abort(int code) {
  // flockrun reads this line (ENGINE_ABORT_RE in launcher/flockrun/relay.py).
  FLOCK_LOG(kError, "transport") << "aborting the job with exit code " << code;
  MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace flock
