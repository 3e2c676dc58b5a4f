// DeviceTransport: a Transport over device memory, stream ordered (its calls
// queue work on the backend's stream), with the extras the GPU backend needs:
// grouped point-to-point (NCCL's group semantics), asynchronous error checks
// and an orderly shutdown. Two exist: NcclTransport, and StagedTransport
// (FLOCK_GPU_VIA_MPI=1: the host transport through pinned memory).
#pragma once

#include "flock/transport/transport.h"

namespace flock {

class DeviceTransport : public Transport {
 public:
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
};

}  // namespace flock
