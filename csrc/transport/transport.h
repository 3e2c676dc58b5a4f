// Transport: the communication primitives every op is written against.
//
// Vocabulary: a *group* is one of the three communicators a runtime keeps —
// the world, the ranks of this machine (local), and the ranks with the same
// local rank on every machine (cross). Counts are element counts of `dtype`
// unless a name says bytes. Calls block until this rank's part is done.
// Only transport implementations include mpi.h or nccl.h.
#pragma once

#include <cstdint>
#include <vector>

#include "flock/common/data_type.h"
#include "flock/common/reduce_kernels.h"
#include "flock/common/status.h"

namespace flock {

// kControl is the world again, on a communicator of its own for the engine's
// negotiation messages, so they never meet data traffic; kNeighbor is the world
// once more, for the point-to-point traffic of neighbor ops.
enum class CommGroup : uint8_t { kWorld = 0, kLocal, kCross, kControl, kNeighbor };
constexpr int kNumCommGroups = 5;

// A point-to-point transfer in progress (StartSend / StartRecv).
using TransferId = int64_t;

const char* CommGroupName(CommGroup group);

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank(CommGroup group) const = 0;
  virtual int size(CommGroup group) const = 0;

  // recv[i] = reduction over the group of send[i]; send == recv reduces in place.
  // kAverage is reduced as a sum: the caller scales.
  virtual Status Allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                           CommGroup group) = 0;

  // Copies `bytes` bytes from `root` (a rank of the group) to every member.
  virtual Status Broadcast(void* buffer, int64_t bytes, int root, CommGroup group) = 0;

  // Gathers `bytes` bytes from every member, in rank order, into `recv`
  // (size bytes * group size).
  virtual Status Allgather(const void* send, int64_t bytes, void* recv, CommGroup group) = 0;

  // Like Allgather with a per-rank byte count; recv_bytes[r] is what rank r sends.
  virtual Status Allgatherv(const void* send, const std::vector<int64_t>& recv_bytes, void* recv,
                            CommGroup group) = 0;

  // Rank r of the group gets block r of the reduction: recv (count_per_rank
  // elements) = reduction over the group of send[r * count_per_rank, ...).
  // send holds size * count_per_rank elements; kAverage is reduced as a sum.
  virtual Status ReduceScatter(const void* send, void* recv, int64_t count_per_rank, DataType dtype,
                               ReduceOp op, CommGroup group) = 0;

  // Personalized exchange: send_bytes[r] bytes of `send` (packed in rank order)
  // go to rank r; recv_bytes[r] bytes from rank r land in `recv`, in rank order.
  virtual Status Alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                           const std::vector<int64_t>& recv_bytes, CommGroup group) = 0;
  // The most bytes one rank may send, or receive, in one Alltoallv (MPI: its
  // int displacements). Callers check every rank's totals against it, so an
  // exchange too large fails the same way on every rank instead of on some.
  virtual int64_t max_alltoall_bytes() const { return INT64_MAX; }

  virtual Status Barrier(CommGroup group) = 0;

  virtual Status Send(const void* buffer, int64_t bytes, int dest, int tag, CommGroup group) = 0;
  virtual Status Recv(void* buffer, int64_t bytes, int source, int tag, CommGroup group) = 0;

  // Control messages: PostSend returns at once and keeps the bytes until they
  // are delivered (progressed by ProgressSends and TryReceive). Messages from
  // one source with one tag arrive in the order they were posted.
  virtual Status PostSend(std::vector<char> bytes, int dest, int tag, CommGroup group) = 0;
  // Receives one waiting message (source -1 = any) if there is one: returns
  // true and fills *from and *bytes; false when nothing is waiting.
  virtual Result<bool> TryReceive(int source, int tag, CommGroup group, int* from,
                                  std::vector<char>* bytes) = 0;
  // Completes what it can of the posted sends; true when none is left.
  virtual Result<bool> ProgressSends() = 0;

  // Point-to-point transfers straight from / into caller memory, which must
  // stay valid until TestTransfer returns true (the id is then released).
  // A TestTransfer that returns an error also releases the id: the transfer
  // is over, and what of it was still pending has been cancelled.
  // Transfers between two ranks with one tag match in the order they started.
  virtual Result<TransferId> StartSend(const void* buffer, int64_t bytes, int dest, int tag,
                                       CommGroup group) = 0;
  virtual Result<TransferId> StartRecv(void* buffer, int64_t bytes, int source, int tag,
                                       CommGroup group) = 0;
  virtual Result<bool> TestTransfer(TransferId id) = 0;

  // The engine's loop brackets each pass with these. In between, a transport
  // may skip yielding the core inside calls that find nothing to do: the loop
  // decides itself when to yield. Blocking calls made meanwhile wait as usual.
  virtual void BeginPollingPass() {}
  virtual void EndPollingPass() {}
  // Whether this rank shares its cores with other ranks (MPI was told to
  // yield when idle): a waiting thread then polls on rather than sleeping.
  virtual bool shares_cores() const { return false; }

  // Ends every process of the job with `code` (used when a rank fails for good).
  virtual void Abort(int code) = 0;

  // Whether concurrent calls from several threads are allowed.
  virtual bool threads_supported() const = 0;

  // Whether one-sided memory is coherent without explicit synchronization
  // (MPI's MPI_WIN_UNIFIED memory model); Bluefog reports it to its users.
  virtual bool unified_window_model() const { return false; }

  // Whether world rank `rank` runs on this host (bytes to it move through
  // memory, not a network). Real hosts, even when FLOCK_LOCAL_SIZE fakes the
  // machine groups. A transport that cannot tell says yes.
  virtual bool on_this_host(int rank) const {
    (void)rank;
    return true;
  }
};

// Brackets one pass of polling (Transport::BeginPollingPass / EndPollingPass).
class PollingPass {
 public:
  explicit PollingPass(Transport& transport) : transport_(transport) {
    transport_.BeginPollingPass();
  }
  ~PollingPass() { transport_.EndPollingPass(); }
  PollingPass(const PollingPass&) = delete;
  PollingPass& operator=(const PollingPass&) = delete;

 private:
  Transport& transport_;
};

}  // namespace flock
