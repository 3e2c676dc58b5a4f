#include "flock/transport/nccl/nccl_transport.h"

#include <cstring>

#include "flock/common/logging.h"

namespace flock {
namespace {

// NCCL's element type for a flock dtype. bool travels as uint8 (its sum and
// max are "or", min and product "and": ReduceOpFor picks max or min).
Result<ncclDataType_t> NcclType(DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
    case DataType::kUInt8: return ncclUint8;
    case DataType::kInt8: return ncclInt8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kInt16: break;
  }
  return Status::Unsupported(std::string("NCCL has no ") + DataTypeName(dtype) +
                             " type: reduce CUDA tensors of this dtype as int32 (convert "
                             "them), or move them to the CPU");
}

ncclRedOp_t NcclOp(ReduceOp op, DataType dtype) {
  const bool is_bool = dtype == DataType::kBool;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return is_bool ? ncclMax : ncclSum;  // average: the caller scales
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProduct: return is_bool ? ncclMin : ncclProd;
  }
  return ncclSum;
}

// kWorld, kControl and kNeighbor are the same ranks: one communicator.
int CommIndex(CommGroup group) {
  return group == CommGroup::kLocal || group == CommGroup::kCross ? static_cast<int>(group) : 0;
}

}  // namespace

NcclTransport::NcclTransport(Transport& host, cudaStream_t stream, int device)
    : DeviceTransport(host), stream_(stream), device_(device) {}

NcclTransport::~NcclTransport() {
  AbortAll();
}

Status NcclTransport::Check(ncclResult_t result, const std::string& what) {
  if (result == ncclSuccess) return Status::OK();
  std::string message = "NCCL " + what + " failed: " + ncclGetErrorString(result);
  const char* detail = ncclGetLastError(nullptr);
  if (detail != nullptr && *detail != '\0') message += std::string(" (") + detail + ")";
  return Status::TransportError(message);
}

Result<ncclComm_t> NcclTransport::Comm(CommGroup group) {
  FLOCK_RETURN_IF_ERROR(failed_);
  ncclComm_t& comm = comms_[static_cast<size_t>(CommIndex(group))];
  if (comm != nullptr) return comm;
  const Status made = MakeComm(group, &comm);
  // Every rank of the group reached the same verdict (MakeComm agrees on it),
  // so keeping it fails the group's later ops alike instead of half retrying.
  if (!made.ok()) failed_ = made;
  FLOCK_RETURN_IF_ERROR(made);
  return comm;
}

// Rank 0 of the group makes the id and broadcasts it with whether it could;
// all join; an allreduce of "joined" (which is also the barrier NCCL's init
// wants after it) tells every rank whether all did.
Status NcclTransport::MakeComm(CommGroup group, ncclComm_t* comm) {
  struct {
    int32_t ok = 0;
    ncclUniqueId id;
  } offer;
  std::memset(&offer.id, 0, sizeof(offer.id));
  Status mine;
  if (host_.rank(group) == 0) {
    mine = Check(ncclGetUniqueId(&offer.id), "ncclGetUniqueId");
    offer.ok = mine.ok() ? 1 : 0;
  }
  FLOCK_RETURN_IF_ERROR(host_.Broadcast(&offer, sizeof(offer), 0, group));
  const std::string what = std::string("making the NCCL communicator of the ") +
                           CommGroupName(group) + " group (" + std::to_string(host_.size(group)) +
                           " ranks, this rank on device " + std::to_string(device_) + ")";
  if (!offer.ok) return mine.ok() ? Status::TransportError(what + ": rank 0 has no id") : mine;
  ncclComm_t made = nullptr;
  if (cudaSetDevice(device_) != cudaSuccess) {
    mine = Status::TransportError(what + ": cudaSetDevice failed");
  } else {
    mine = Check(ncclCommInitRank(&made, host_.size(group), offer.id, host_.rank(group)), what);
  }
  int32_t all_joined = mine.ok() ? 1 : 0;
  FLOCK_RETURN_IF_ERROR(
      host_.Allreduce(&all_joined, &all_joined, 1, DataType::kInt32, ReduceOp::kMin, group));
  if (all_joined == 1) {
    *comm = made;
    FLOCK_LOG(kDebug, "nccl") << what << ": ready";
    return Status::OK();
  }
  if (made != nullptr) (void)ncclCommAbort(made);
  return mine.ok() ? Status::TransportError(what + ": another rank of the group could not join")
                   : mine;
}

Status NcclTransport::Allreduce(const void* send, void* recv, int64_t count, DataType dtype,
                                ReduceOp op, CommGroup group) {
  FLOCK_ASSIGN_OR_RETURN(const ncclDataType_t type, NcclType(dtype));
  FLOCK_ASSIGN_OR_RETURN(ncclComm_t comm, Comm(group));
  return Check(
      ncclAllReduce(send, recv, static_cast<size_t>(count), type, NcclOp(op, dtype), comm, stream_),
      "allreduce");
}

Status NcclTransport::Broadcast(void* buffer, int64_t bytes, int root, CommGroup group) {
  FLOCK_ASSIGN_OR_RETURN(ncclComm_t comm, Comm(group));
  return Check(
      ncclBroadcast(buffer, buffer, static_cast<size_t>(bytes), ncclUint8, root, comm, stream_),
      "broadcast");
}

Status NcclTransport::Allgather(const void* send, int64_t bytes, void* recv, CommGroup group) {
  FLOCK_ASSIGN_OR_RETURN(ncclComm_t comm, Comm(group));
  return Check(ncclAllGather(send, recv, static_cast<size_t>(bytes), ncclUint8, comm, stream_),
               "allgather");
}

// NCCL has no allgatherv: one broadcast per rank, in one group (as Horovod).
Status NcclTransport::Allgatherv(const void* send, const std::vector<int64_t>& recv_bytes,
                                 void* recv, CommGroup group) {
  FLOCK_ASSIGN_OR_RETURN(ncclComm_t comm, Comm(group));
  const int me = host_.rank(group);
  FLOCK_RETURN_IF_ERROR(GroupStart());
  Status status;
  int64_t offset = 0;
  for (size_t r = 0; r < recv_bytes.size() && status.ok(); ++r) {
    char* slot = static_cast<char*>(recv) + offset;
    const void* from = static_cast<int>(r) == me ? send : slot;
    status = Check(ncclBroadcast(from, slot, static_cast<size_t>(recv_bytes[r]), ncclUint8,
                                 static_cast<int>(r), comm, stream_),
                   "allgatherv's broadcast");
    offset += recv_bytes[r];
  }
  const Status ended = GroupEnd();
  return status.ok() ? ended : status;
}

Status NcclTransport::ReduceScatter(const void* send, void* recv, int64_t count_per_rank,
                                    DataType dtype, ReduceOp op, CommGroup group) {
  FLOCK_ASSIGN_OR_RETURN(const ncclDataType_t type, NcclType(dtype));
  FLOCK_ASSIGN_OR_RETURN(ncclComm_t comm, Comm(group));
  return Check(ncclReduceScatter(send, recv, static_cast<size_t>(count_per_rank), type,
                                 NcclOp(op, dtype), comm, stream_),
               "reducescatter");
}

// NCCL has no alltoallv: a send and a receive per rank, in one group.
Status NcclTransport::Alltoallv(const void* send, const std::vector<int64_t>& send_bytes,
                                void* recv, const std::vector<int64_t>& recv_bytes,
                                CommGroup group) {
  FLOCK_ASSIGN_OR_RETURN(ncclComm_t comm, Comm(group));
  FLOCK_RETURN_IF_ERROR(GroupStart());
  Status status;
  int64_t sent = 0;
  int64_t received = 0;
  for (size_t r = 0; r < send_bytes.size() && status.ok(); ++r) {
    const int peer = static_cast<int>(r);
    if (send_bytes[r] > 0) {
      status = Check(ncclSend(static_cast<const char*>(send) + sent,
                              static_cast<size_t>(send_bytes[r]), ncclUint8, peer, comm, stream_),
                     "alltoall's send to rank " + std::to_string(peer));
    }
    if (status.ok() && recv_bytes[r] > 0) {
      status = Check(ncclRecv(static_cast<char*>(recv) + received,
                              static_cast<size_t>(recv_bytes[r]), ncclUint8, peer, comm, stream_),
                     "alltoall's receive from rank " + std::to_string(peer));
    }
    sent += send_bytes[r];
    received += recv_bytes[r];
  }
  const Status ended = GroupEnd();
  return status.ok() ? ended : status;
}

Status NcclTransport::Send(const void* buffer, int64_t bytes, int dest, int /*tag*/,
                           CommGroup group) {
  FLOCK_ASSIGN_OR_RETURN(ncclComm_t comm, Comm(group));
  return Check(ncclSend(buffer, static_cast<size_t>(bytes), ncclUint8, dest, comm, stream_),
               "send to rank " + std::to_string(dest));
}

Status NcclTransport::Recv(void* buffer, int64_t bytes, int source, int /*tag*/, CommGroup group) {
  FLOCK_ASSIGN_OR_RETURN(ncclComm_t comm, Comm(group));
  return Check(ncclRecv(buffer, static_cast<size_t>(bytes), ncclUint8, source, comm, stream_),
               "receive from rank " + std::to_string(source));
}

Status NcclTransport::GroupStart() {
  return Check(ncclGroupStart(), "ncclGroupStart");
}

Status NcclTransport::GroupEnd() {
  return Check(ncclGroupEnd(), "ncclGroupEnd");
}

std::vector<CommGroup> NcclTransport::communicators() const {
  std::vector<CommGroup> made;
  for (size_t g = 0; g < comms_.size(); ++g) {
    if (comms_[g] != nullptr) made.push_back(static_cast<CommGroup>(g));
  }
  return made;
}

Status NcclTransport::CheckAsyncErrors() {
  if (!failed_.ok()) return failed_;
  for (ncclComm_t comm : comms_) {
    if (comm == nullptr) continue;
    ncclResult_t async = ncclSuccess;
    Status status = Check(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
    if (status.ok()) status = Check(async, "communication (asynchronous error)");
    if (!status.ok()) {
      failed_ = status;
      AbortAll();
      return failed_;
    }
  }
  return Status::OK();
}

void NcclTransport::AbortAll() {
  for (ncclComm_t& comm : comms_) {
    if (comm != nullptr) (void)ncclCommAbort(comm);
    comm = nullptr;
  }
}

// Finalize waits until the communicator is quiescent on every rank, so it is
// used only when every member says it is healthy (each existing communicator
// was made by an op all its members ran, so all of them get here); else abort.
Status NcclTransport::Shutdown() {
  Status status = CheckAsyncErrors();
  for (size_t g = 0; g < comms_.size(); ++g) {
    ncclComm_t& comm = comms_[g];
    if (comm == nullptr) continue;
    int32_t healthy = status.ok() ? 1 : 0;
    const CommGroup group = static_cast<CommGroup>(g);
    Status done = host_.Allreduce(&healthy, &healthy, 1, DataType::kInt32, ReduceOp::kMin, group);
    if (done.ok() && healthy == 1) done = Check(ncclCommFinalize(comm), "ncclCommFinalize");
    if (done.ok() && healthy == 1) done = Check(ncclCommDestroy(comm), "ncclCommDestroy");
    if (!done.ok() || healthy != 1) (void)ncclCommAbort(comm);
    if (status.ok()) status = done;
    comm = nullptr;
  }
  return status;
}

}  // namespace flock
