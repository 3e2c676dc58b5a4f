// The fake NCCL's C API: the subset of nccl.h (2.28.9) that flock calls,
// defined against the real header (tests only, never shipped; see
// fake_nccl_internal.h for the parts). Ops check their arguments on the host
// and return at once; the data moves later, in order with the stream's work.
// FAKE_CUDA_DRIVER=missing: calls that need a device fail with
// ncclUnhandledCudaError, as NCCL does on a machine without a driver.
#include <cstdint>

#include "fake_cuda_internal.h"
#include "fake_device.h"
#include "fake_nccl_internal.h"

namespace flock::fake::nccl {
namespace {

ncclResult_t NeedsDevice(const char* name) {
  if (!DriverMissing()) return ncclSuccess;
  return FailCall(ncclUnhandledCudaError,
                  std::string(name) + ": no CUDA driver (FAKE_CUDA_DRIVER=missing)");
}

ncclResult_t Submit(Op op, ncclComm_t comm, cudaStream_t stream, const char* name) {
  if (ncclResult_t r = NeedsDevice(name); r != ncclSuccess) return r;
  if (comm == nullptr) return FailCall(ncclInvalidArgument, std::string(name) + ": comm is NULL");
  op.comm = comm->state;
  op.stream = StreamOf(stream);
  return Enqueue(std::move(op), name);
}

Op MakeOp(OpKind kind, const void* send, void* recv, size_t count, ncclDataType_t dtype,
          ncclRedOp_t redop, int peer) {
  Op op;
  op.kind = kind;
  op.send = send;
  op.recv = recv;
  op.count = count;
  op.dtype = dtype;
  op.redop = redop;
  op.peer = peer;
  return op;
}

thread_local std::string last_error_copy;  // what ncclGetLastError's pointer shows

}  // namespace
}  // namespace flock::fake::nccl

namespace fn = flock::fake::nccl;
using fn::CallFailed;
using fn::OpKind;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return CallFailed(ncclInvalidArgument, "ncclGetVersion: NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (ncclResult_t r = fn::NeedsDevice("ncclGetUniqueId"); r != ncclSuccess) return r;
  if (id == nullptr) return CallFailed(ncclInvalidArgument, "ncclGetUniqueId: NULL");
  *id = fn::NewUniqueId();
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (ncclResult_t r = fn::NeedsDevice("ncclCommInitRank"); r != ncclSuccess) return r;
  if (comm == nullptr) return CallFailed(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
  std::shared_ptr<fn::CommState> state;
  const ncclResult_t r = fn::InitRank(&state, nranks, id, rank, flock::fake::CurrentDevice());
  if (r != ncclSuccess) return r;
  *comm = new ncclComm{std::move(state)};
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (comm == nullptr) return CallFailed(ncclInvalidArgument, "ncclCommFinalize: comm is NULL");
  fn::WaitForWork(*comm->state);
  std::lock_guard<std::mutex> lock(comm->state->mutex);
  return comm->state->error;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  fn::WaitForWork(*comm->state);  // queued work first; a failed comm is aborted
  fn::Abort(*comm->state);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  fn::Abort(*comm->state);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (comm == nullptr || error == nullptr)
    return CallFailed(ncclInvalidArgument, "ncclCommGetAsyncError: NULL");
  std::lock_guard<std::mutex> lock(comm->state->mutex);
  *error = comm->state->error;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr)
    return CallFailed(ncclInvalidArgument, "ncclCommCount: NULL");
  *count = comm->state->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr || device == nullptr)
    return CallFailed(ncclInvalidArgument, "ncclCommCuDevice: NULL");
  *device = comm->state->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr)
    return CallFailed(ncclInvalidArgument, "ncclCommUserRank: NULL");
  *rank = comm->state->rank;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {  // libnccl.so.2's texts
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

// The comm's async error if it has one, else this thread's last failed call.
// The text stays valid until this thread calls ncclGetLastError again.
const char* ncclGetLastError(ncclComm_t comm) {
  std::string& copy = fn::last_error_copy;
  copy.clear();
  if (comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->state->mutex);
    copy = comm->state->message;
  }
  if (copy.empty()) copy = fn::ThreadLastError();
  return copy.c_str();
}

ncclResult_t ncclGroupStart() {
  return fn::GroupStart();
}

ncclResult_t ncclGroupEnd() {
  return fn::GroupEnd();
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return fn::Submit(fn::MakeOp(OpKind::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer),
                    comm, stream, "ncclSend");
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return fn::Submit(fn::MakeOp(OpKind::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer),
                    comm, stream, "ncclRecv");
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return fn::Submit(fn::MakeOp(OpKind::kAllReduce, sendbuff, recvbuff, count, datatype, op, -1),
                    comm, stream, "ncclAllReduce");
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return fn::Submit(
      fn::MakeOp(OpKind::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root), comm,
      stream, "ncclBroadcast");
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return fn::Submit(fn::MakeOp(OpKind::kReduce, sendbuff, recvbuff, count, datatype, op, root),
                    comm, stream, "ncclReduce");
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return fn::Submit(
      fn::MakeOp(OpKind::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, -1), comm,
      stream, "ncclAllGather");
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return fn::Submit(
      fn::MakeOp(OpKind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1), comm,
      stream, "ncclReduceScatter");
}

ncclResult_t fake_nccl_inject_error(ncclComm_t comm, ncclResult_t code, int after_n_ops) {
  if (comm == nullptr || after_n_ops < 0)
    return CallFailed(ncclInvalidArgument, "fake_nccl_inject_error: NULL comm or negative count");
  fn::CommState& c = *comm->state;
  std::lock_guard<std::mutex> lock(c.mutex);
  c.fail_at_op = code == ncclSuccess ? UINT64_MAX : c.ops_launched + after_n_ops;
  c.fail_code = code;
  return ncclSuccess;
}

}  // extern "C"
