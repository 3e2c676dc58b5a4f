#include "flock/transport/cuda/staged_transport.h"

#include <algorithm>

#include "flock/transport/cuda/cuda_status.h"

namespace flock {
namespace {

// The tag of device point-to-point traffic on the host transport's groups
// (ops run in the coordinator's order, so pairs match by order).
constexpr int kStagedTag = 0x6701;

}  // namespace

StagedTransport::StagedTransport(Transport& host, cudaStream_t stream)
    : DeviceTransport(host), stream_(stream) {}

StagedTransport::~StagedTransport() {
  (void)Shutdown();
}

Result<char*> StagedTransport::Pinned(int slot, int64_t bytes) {
  if (bytes <= pinned_bytes_[slot]) return pinned_[slot];
  const int64_t size = std::max(bytes, 2 * pinned_bytes_[slot]);
  if (pinned_[slot] != nullptr) {
    FLOCK_CUDA_RETURN_IF_ERROR(cudaFreeHost(pinned_[slot]), "freeing outgrown pinned memory");
    pinned_[slot] = nullptr;
    pinned_bytes_[slot] = 0;
  }
  void* made = nullptr;
  FLOCK_CUDA_RETURN_IF_ERROR(cudaMallocHost(&made, static_cast<size_t>(size)),
                             "allocating " + std::to_string(size) + " bytes of pinned memory");
  pinned_[slot] = static_cast<char*>(made);
  pinned_bytes_[slot] = size;
  return pinned_[slot];
}

Status StagedTransport::ToHost(void* host, const void* device, int64_t bytes) {
  if (bytes == 0) return Status::OK();
  staged_bytes_ += bytes;
  return gpu::CudaStatus(
      cudaMemcpyAsync(host, device, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream_),
      "staging device data in pinned memory");
}

Status StagedTransport::ToDevice(void* device, const void* host, int64_t bytes) {
  if (bytes == 0) return Status::OK();
  staged_bytes_ += bytes;
  return gpu::CudaStatus(
      cudaMemcpyAsync(device, host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream_),
      "copying staged data back to the device");
}

Status StagedTransport::WaitForStream() {
  return gpu::CudaStatus(cudaStreamSynchronize(stream_),
                         "waiting for flock's stream before an MPI call");
}

Status StagedTransport::Allreduce(const void* send, void* recv, int64_t count, DataType dtype,
                                  ReduceOp op, CommGroup group) {
  const int64_t bytes = count * static_cast<int64_t>(DataTypeSize(dtype));
  FLOCK_ASSIGN_OR_RETURN(char* pinned, Pinned(0, bytes));
  FLOCK_RETURN_IF_ERROR(ToHost(pinned, send, bytes));
  FLOCK_RETURN_IF_ERROR(WaitForStream());
  FLOCK_RETURN_IF_ERROR(host_.Allreduce(pinned, pinned, count, dtype, op, group));
  return ToDevice(recv, pinned, bytes);
}

Status StagedTransport::Broadcast(void* buffer, int64_t bytes, int root, CommGroup group) {
  FLOCK_ASSIGN_OR_RETURN(char* pinned, Pinned(0, bytes));
  if (host_.rank(group) == root) FLOCK_RETURN_IF_ERROR(ToHost(pinned, buffer, bytes));
  FLOCK_RETURN_IF_ERROR(WaitForStream());
  FLOCK_RETURN_IF_ERROR(host_.Broadcast(pinned, bytes, root, group));
  if (host_.rank(group) == root) return Status::OK();
  return ToDevice(buffer, pinned, bytes);
}

Status StagedTransport::Allgather(const void* send, int64_t bytes, void* recv, CommGroup group) {
  return Allgatherv(send, std::vector<int64_t>(static_cast<size_t>(host_.size(group)), bytes), recv,
                    group);
}

Status StagedTransport::Allgatherv(const void* send, const std::vector<int64_t>& recv_bytes,
                                   void* recv, CommGroup group) {
  const int64_t mine = recv_bytes[static_cast<size_t>(host_.rank(group))];
  int64_t total = 0;
  for (int64_t b : recv_bytes) total += b;
  FLOCK_ASSIGN_OR_RETURN(char* in, Pinned(0, mine));
  FLOCK_ASSIGN_OR_RETURN(char* out, Pinned(1, total));
  FLOCK_RETURN_IF_ERROR(ToHost(in, send, mine));
  FLOCK_RETURN_IF_ERROR(WaitForStream());
  FLOCK_RETURN_IF_ERROR(host_.Allgatherv(in, recv_bytes, out, group));
  return ToDevice(recv, out, total);
}

Status StagedTransport::ReduceScatter(const void* send, void* recv, int64_t count_per_rank,
                                      DataType dtype, ReduceOp op, CommGroup group) {
  const int64_t block = count_per_rank * static_cast<int64_t>(DataTypeSize(dtype));
  const int64_t whole = block * host_.size(group);
  FLOCK_ASSIGN_OR_RETURN(char* in, Pinned(0, whole));
  FLOCK_ASSIGN_OR_RETURN(char* out, Pinned(1, block));
  FLOCK_RETURN_IF_ERROR(ToHost(in, send, whole));
  FLOCK_RETURN_IF_ERROR(WaitForStream());
  FLOCK_RETURN_IF_ERROR(host_.ReduceScatter(in, out, count_per_rank, dtype, op, group));
  return ToDevice(recv, out, block);
}

Status StagedTransport::Alltoallv(const void* send, const std::vector<int64_t>& send_bytes,
                                  void* recv, const std::vector<int64_t>& recv_bytes,
                                  CommGroup group) {
  int64_t sent = 0;
  int64_t received = 0;
  for (int64_t b : send_bytes) sent += b;
  for (int64_t b : recv_bytes) received += b;
  FLOCK_ASSIGN_OR_RETURN(char* in, Pinned(0, sent));
  FLOCK_ASSIGN_OR_RETURN(char* out, Pinned(1, received));
  FLOCK_RETURN_IF_ERROR(ToHost(in, send, sent));
  FLOCK_RETURN_IF_ERROR(WaitForStream());
  FLOCK_RETURN_IF_ERROR(host_.Alltoallv(in, send_bytes, out, recv_bytes, group));
  return ToDevice(recv, out, received);
}

Status StagedTransport::Send(const void* buffer, int64_t bytes, int dest, int, CommGroup group) {
  group_.push_back({true, const_cast<void*>(buffer), bytes, dest, group});
  return group_depth_ > 0 ? Status::OK() : GroupEnd();
}

Status StagedTransport::Recv(void* buffer, int64_t bytes, int source, int, CommGroup group) {
  group_.push_back({false, buffer, bytes, source, group});
  return group_depth_ > 0 ? Status::OK() : GroupEnd();
}

Status StagedTransport::GroupStart() {
  ++group_depth_;
  return Status::OK();
}

Status StagedTransport::GroupEnd() {
  if (group_depth_ > 0) --group_depth_;
  if (group_depth_ > 0) return Status::OK();
  std::vector<Transfer> group;
  group.swap(group_);
  return RunGroup(group);
}

// Sends staged first, then every transfer posted at once and completed
// together (the order of the calls on the two sides need not match), then
// the received bytes queued back to the device.
Status StagedTransport::RunGroup(const std::vector<Transfer>& group) {
  int64_t total = 0;
  for (const Transfer& t : group) total += t.bytes;
  FLOCK_ASSIGN_OR_RETURN(char* pinned, Pinned(0, total));
  std::vector<char*> slots;
  char* next = pinned;
  for (const Transfer& t : group) {
    slots.push_back(next);
    if (t.send) FLOCK_RETURN_IF_ERROR(ToHost(next, t.device, t.bytes));
    next += t.bytes;
  }
  FLOCK_RETURN_IF_ERROR(WaitForStream());
  std::vector<TransferId> ids;
  for (size_t i = 0; i < group.size(); ++i) {
    const Transfer& t = group[i];
    Result<TransferId> id = t.send
                                ? host_.StartSend(slots[i], t.bytes, t.peer, kStagedTag, t.group)
                                : host_.StartRecv(slots[i], t.bytes, t.peer, kStagedTag, t.group);
    FLOCK_RETURN_IF_ERROR(id.status());
    ids.push_back(id.value());
  }
  for (size_t i = 0; i < ids.size();) {
    FLOCK_ASSIGN_OR_RETURN(const bool done, host_.TestTransfer(ids[i]));
    i += done ? 1 : 0;
  }
  for (size_t i = 0; i < group.size(); ++i) {
    if (!group[i].send) FLOCK_RETURN_IF_ERROR(ToDevice(group[i].device, slots[i], group[i].bytes));
  }
  return Status::OK();
}

Status StagedTransport::Shutdown() {
  for (int slot = 0; slot < 2; ++slot) {
    if (pinned_[slot] != nullptr) (void)cudaFreeHost(pinned_[slot]);
    pinned_[slot] = nullptr;
    pinned_bytes_[slot] = 0;
  }
  return Status::OK();
}

}  // namespace flock
