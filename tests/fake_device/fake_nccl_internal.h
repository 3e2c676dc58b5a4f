// What the fake NCCL's files share (tests only; docs/design/gpu-fake-device.md):
//   fake_nccl_comm.cc        ids, the socket mesh of ncclCommInitRank, errors, teardown
//   fake_nccl_group.cc       groups on the host, and the stream task that runs one
//   fake_nccl_exchange.cc    a group's messages over the sockets, progressed with poll()
//   fake_nccl_collectives.cc what each op sends, receives and writes; the reductions
//   fake_nccl_api.cc         the extern "C" functions of nccl.h
#pragma once

#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fake_stream.h"

namespace flock::fake::nccl {

// One communicator's rank. Stream tasks share it (shared_ptr), so that a task
// still queued when ncclCommAbort frees the handle finds it and returns.
struct CommState {
  int nranks = 0, rank = 0, device = 0;
  double timeout_s = 60;  // FAKE_NCCL_TIMEOUT_S at init: the watchdog
  std::vector<int> fds;   // a connected socket per peer rank; -1 for this rank

  std::mutex mutex;
  std::condition_variable changed;
  // Guarded by mutex. Stream tasks of one comm take turns in launch order
  // (tickets), so that ops on several streams keep the order ranks agreed on.
  uint64_t tickets_issued = 0, tickets_done = 0;
  bool holding = false;  // a task holds the turn and may use fds
  ncclResult_t error = ncclSuccess;
  std::string message;  // for ncclGetLastError
  uint64_t ops_launched = 0;
  uint64_t fail_at_op = UINT64_MAX;  // injection: this op index fails
  ncclResult_t fail_code = ncclRemoteError;
  uint64_t collectives = 0;                       // sequence numbers of collectives
  std::vector<uint64_t> sends_to, receives_from;  // and of p2p ops, per peer
  std::atomic<bool> aborted{false};
};

enum class OpKind : int32_t {
  kSend,
  kRecv,
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
};

// One call of ncclSend/ncclRecv/a collective, checked and waiting for its group.
struct Op {
  OpKind kind;
  std::shared_ptr<CommState> comm;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // elements (allgather, reduce-scatter: per rank)
  ncclDataType_t dtype = ncclUint8;
  ncclRedOp_t redop = ncclSum;
  int peer = -1;  // send/recv: the peer; broadcast/reduce: the root
  Stream* stream = nullptr;
  uint64_t seq = 0;    // per comm (collectives) or per comm and peer (p2p)
  uint64_t index = 0;  // the comm's op count, for injected failures
};

// Precedes every message, so that the receiver can check it matches its call.
struct WireHeader {
  uint64_t seq;
  uint64_t bytes;
  int32_t kind;  // OpKind; p2p messages say kSend
  int32_t dtype;
  int32_t redop;  // -1 when the op does not reduce
  int32_t root;   // -1 unless broadcast/reduce
  bool operator==(const WireHeader& o) const {
    return seq == o.seq && bytes == o.bytes && kind == o.kind && dtype == o.dtype &&
           redop == o.redop && root == o.root;
  }
};
std::string Describe(const WireHeader& h);

// fake_nccl_comm.cc
ncclResult_t CallFailed(ncclResult_t code, const std::string& why);  // for ncclGetLastError
const std::string& ThreadLastError();
void SetAsyncError(CommState& comm, ncclResult_t code, const std::string& why);
ncclUniqueId NewUniqueId();
ncclResult_t InitRank(std::shared_ptr<CommState>* out, int nranks, const ncclUniqueId& id, int rank,
                      int device);
void Abort(CommState& comm);        // releases blocked tasks, closes the sockets
void WaitForWork(CommState& comm);  // until launched work is done or failed

// fake_nccl_group.cc
ncclResult_t GroupStart();
ncclResult_t GroupEnd();
// Checks op, then launches it or keeps it for the open group.
ncclResult_t Enqueue(Op op, const char* name);
// CallFailed, and the open group (if any) fails at its ncclGroupEnd.
ncclResult_t FailCall(ncclResult_t code, const std::string& why);

// fake_nccl_collectives.cc
size_t ElementSize(ncclDataType_t dtype);  // 0 for an unknown type
ncclResult_t Validate(const Op& op, const char* name);
WireHeader HeaderOf(const Op& op);

// An op while it runs: what each rank contributed (by rank; empty for this one).
struct OpRun {
  const Op* op;
  std::vector<std::vector<char>> from;
};

// Messages of one group task, progressed together (fake_nccl_exchange.cc).
class Exchange {
 public:
  enum class Outcome { kDone, kFailed, kAborted };
  void Send(CommState* comm, int peer, const WireHeader& h, const void* data);
  void Receive(CommState* comm, int peer, const WireHeader& expected, void* into);
  // Until every message went through; kFailed after recording the error on its
  // comm; kAborted when one of the comms is aborted.
  Outcome Run(double timeout_s);

 private:
  struct Outgoing {
    WireHeader header;
    const char* data;
    size_t done = 0;  // of the header and data
  };
  struct Incoming {
    WireHeader expected, got;
    char* into;
    size_t done = 0;
  };
  struct Link {  // one comm's connection to one peer
    CommState* comm;
    int peer, fd;
    std::deque<Outgoing> out;
    std::deque<Incoming> in;
  };
  Link& LinkTo(CommState* comm, int peer);
  bool MatchSelf(Link& link);
  bool Write(Link& link);
  bool Read(Link& link);
  bool PollOnce(int timeout_ms);
  void Fail(Link& link, ncclResult_t code, const std::string& why);
  void TimedOut(double timeout_s);

  std::deque<Link> links_;
  bool failed_ = false;
};

void PlanOp(OpRun& run, Exchange& exchange);
void FinishOp(const OpRun& run);  // writes the results once all messages arrived

}  // namespace flock::fake::nccl

struct ncclComm {
  std::shared_ptr<flock::fake::nccl::CommState> state;
};
