// DeviceTransport: a Transport over device memory, stream ordered (its calls
// queue work on the backend's stream), with the extras the GPU backend needs:
// grouped point-to-point (NCCL's group semantics), asynchronous error checks
// and an orderly shutdown. Two exist: NcclTransport, and StagedTransport
// (FLOCK_GPU_VIA_MPI=1: the host transport through pinned memory). Both work
// over the host transport's groups: ranks, barriers and aborts are the host's,
// and the host-only calls (control messages, lanes) are refused here once.
#pragma once

#include <vector>

#include "flock/transport/transport.h"

namespace flock {

class DeviceTransport : public Transport {
 public:
  explicit DeviceTransport(Transport& host) : host_(host) {}

  int rank(CommGroup group) const override { return host_.rank(group); }
  int size(CommGroup group) const override { return host_.size(group); }
  Status Barrier(CommGroup group) override { return host_.Barrier(group); }
  void Abort(int code) override { host_.Abort(code); }
  bool threads_supported() const override { return false; }  // the engine thread only
  bool on_this_host(int rank) const override { return host_.on_this_host(rank); }

  // Host-only: control messages and lanes never carry device memory (Internal errors).
  Status PostSend(std::vector<char> bytes, int dest, int tag, CommGroup group) override;
  Result<bool> TryReceive(int source, int tag, CommGroup group, int* from,
                          std::vector<char>* bytes) override;
  Result<bool> ProgressSends() override { return true; }
  Result<TransferId> StartSend(const void* buffer, int64_t bytes, int dest, int tag,
                               CommGroup group) override;
  Result<TransferId> StartRecv(void* buffer, int64_t bytes, int source, int tag,
                               CommGroup group) override;
  Result<bool> TestTransfer(TransferId id) override;

  // Send/Recv between these are posted together: their order need not match
  // the peers' order of calls.
  virtual Status GroupStart() = 0;
  virtual Status GroupEnd() = 0;
  // Readies `group` for the calls that follow (NCCL: makes its communicator,
  // which must not happen inside a group); every member of the group calls it.
  virtual Status Prepare(CommGroup group) {
    (void)group;
    return Status::OK();
  }
  virtual Status CheckAsyncErrors() = 0;
  virtual Status Shutdown() = 0;
  // Bytes moved through host memory so far (0 for a transport that never stages).
  virtual int64_t staged_bytes() const { return 0; }
  // The groups that have a communicator of their own so far (NCCL's).
  virtual std::vector<CommGroup> communicators() const { return {}; }

 protected:
  Transport& host_;
};

}  // namespace flock
