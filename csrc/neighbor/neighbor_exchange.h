// NeighborExchange: how the engine thread carries out neighbor ops, talking
// only to the ranks each call sends to or receives from.
//
// Vocabulary:
//   call      one submitted neighbor op: a list of ExchangeSteps run one after
//             the other (one for neighbor_allreduce / allgather, three for
//             the hierarchical op).
//   step key  (match name + step suffix, seq): how a step meets its peers'
//             steps. seq counts this rank's earlier submissions of the name
//             (of the op, for unnamed calls), so no agreement is needed.
//   outbox    entries waiting to go to one peer; all entries for a peer leave
//             together in one control message when the outbox is flushed
//             (once a thread waits, or a cycle after the last submission;
//             outbox.h).
//   inline    a small tensor travels inside the control message; a larger one
//             in its own data message (a "lane") straight from its buffer.
//   mailbox   entries that arrived before this rank reached their step, and
//             the steps this rank is done with (mailbox.h).
//   resolved  a peer of a step is done with: its data reduced or placed (or
//             sent and, with the topology check, confirmed), or the pair failed.
//   goodbye   the last entry a rank that shuts down sends every other rank;
//             calls still waiting for it fail then (and not before: what it
//             sent before leaving still completes the calls that need it).
//
// Receive-side reduction: out = self_weight·x first, then each contribution is
// added as it lands — from the control message, or through one scratch buffer
// per step for lanes, one lane at a time — so a step holds at most about one
// extra tensor, never one per neighbour. When the sum builds up in the output
// itself (float32/float64, not in place), the first lane lands there directly
// while the next one fills the scratch buffer: two lanes move at once, and a
// single neighbour's tensor is never copied twice. float16/bfloat16 accumulate in
// float32. A failing pair (mismatch, rejected call) fails the call on both
// ranks with a message naming them; the call still completes its exchanges
// with its other peers, so no one is left waiting; its later steps do not run
// (they would send what the failed step left incomplete): their peers are told
// why instead (RejectLaterSteps).
//
// Files: neighbor_exchange.cc (calls, steps, sending, completion),
// neighbor_delivery.cc (what arrives), neighbor_departure.cc (failed pairs,
// stalls, shutdown), neighbor_devices.cc (calls on the device path, ranks
// that disagree on the device), neighbor_lanes.cc (when the receive of a lane
// from another host starts: lane_queue.h), mailbox.cc (early arrivals, stale check).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "flock/common/buffer_pool.h"
#include "flock/common/counters.h"
#include "flock/common/status.h"
#include "flock/common/timeline.h"
#include "flock/neighbor/device_calls.h"
#include "flock/neighbor/lane_queue.h"
#include "flock/neighbor/mailbox.h"
#include "flock/neighbor/neighbor_wire.h"
#include "flock/neighbor/outbox.h"
#include "flock/neighbor/step_accumulator.h"
#include "flock/requests/exchange_step.h"
#include "flock/requests/pending_request.h"
#include "flock/transport/transport.h"

namespace flock {

class NeighborExchange {
 public:
  using Clock = std::chrono::steady_clock;
  using FinishFn =
      std::function<void(PendingRequest&, Status, std::shared_ptr<GatheredTensor> gathered)>;

  struct Options {
    int64_t inline_limit_bytes = 64 << 10;   // larger tensors travel in lanes
    int64_t message_limit_bytes = 64 << 20;  // inline bytes per control message
    double cycle_time_ms = 5;
    // Lanes from a peer on another host: bytes received at once at most (at
    // least one lane; <= 0: no limit), newest first (lane_queue.h).
    int64_t lane_budget_bytes = 4 << 20;
    double lane_max_wait_s = 5;
    // By rank: does the peer run on this host? Empty: every peer does.
    std::vector<bool> peer_on_this_host;
  };

  // Lanes in flight that finish soon if polled (MPI progresses them only
  // inside its calls), and whether one of them has a peer on this host.
  struct Transfers {
    bool any = false;
    bool on_this_host = false;
  };

  NeighborExchange(Transport& transport, Options options, EngineCounters& counters,
                   Timeline& timeline, FinishFn finish);

  // Takes a neighbor-op request (its op.steps say what to do).
  void Add(PendingRequest request);
  // A neighbor op this rank runs on the device path (negotiated: engine.cc):
  // numbered like the host path's calls (sets request.neighbor_call), so a
  // peer's host-path entry for it is seen as a device conflict. An error when
  // rank 0 withdrew that call before this rank got to it.
  Status AddDeviceCall(PendingRequest& request);
  // That call ended (ran or failed): what arrives for it later is stale.
  void EndDeviceCall(const PendingRequest& request);
  // Device calls whose peers run them on the host path, to report to rank 0.
  std::vector<DeviceConflict> TakeDeviceConflicts() { return device_calls_.TakeConflicts(); }
  // Rank 0 withdrew call `call` of `match_name` (ranks disagree on its device):
  // a host-path call fails its open pairs with `status` (every peer got the
  // same answer); a call not reached yet fails when it is submitted.
  void Withdraw(const std::string& match_name, int64_t call, const Status& status);
  // Receives control messages, progresses transfers, completes steps and calls.
  bool Poll();
  // Sends the outboxes when due (or now, with `force`); true when it sent.
  bool Flush(bool force);
  // Warns about steps waiting longer than `warn_s` for a peer; fails them past `fail_s` (> 0).
  // Returns the peers it failed steps for (none: nothing stalled that long).
  std::vector<int> CheckStalls(double warn_s, double fail_s);
  // This rank shuts down: its calls fail (a step with transfers in flight
  // ends when they do), and every other rank gets a goodbye.
  void Depart();
  // Departed, every other rank's goodbye heard, nothing in flight: the
  // engine thread may stop without leaving a peer or a transfer behind.
  bool done() const;
  // A transport error met on the engine thread (the first since the last
  // call); the engine ends the job with it (Engine::FailTransport).
  Status TakeTransportFailure();
  // Ends every call still here with `reason`, without telling anyone (the
  // engine stops; the transport cancels what is still in flight).
  void Abandon(const std::string& reason);

  bool busy() const { return !steps_.empty() || !discards_.empty(); }
  // The engine polls without sleeping for lanes on this host, and with a
  // short back-off for lanes that cross a network (see Engine::Idle).
  Transfers transfers() const;
  bool has_unsent() const { return !outbox_.empty(); }
  // The steps' scratch buffers kept for reuse (thread-safe, unlike the rest).
  BufferPool& scratch_pool() { return pool_; }
  Clock::time_point flush_deadline() const;

 private:
  // A submitted call and what its steps share.
  struct Call {
    PendingRequest request;
    std::string match_name;
    int64_t seq = 0;
    size_t next_step = 0;
    Status status;              // the first error of any step
    PooledBuffer mean, result;  // StepBuffer::kMean / kResult
    std::shared_ptr<GatheredTensor> gathered;
  };
  struct Incoming {
    const StepRecv* spec = nullptr;
    bool arrived = false;
    bool resolved = false;
    double scale = 1.0;
    int32_t lane_tag = -1;
    int64_t bytes = 0;
    TransferId transfer = -1;    // a lane straight into its place (kPlace, kGather)
    std::vector<char> piece;     // kGather: this peer's tensor
    std::vector<int64_t> shape;  // kGather: its shape
  };
  struct Outgoing {
    const StepSend* spec = nullptr;
    const char* data = nullptr;
    bool flushed = false;
    bool confirmed = false;  // the receiver's notice arrived (or no check)
    bool rejected = false;
    TransferId lane = -1;  // -1 none, >= 0 in flight, -2 done
  };
  // An Incoming's transfer, or a step's scratch transfer, waiting in lanes_.
  static constexpr TransferId kLaneQueued = -3;
  // Where a lane lands: the sum itself, the step's scratch buffer, or its place.
  enum class LaneInto { kSum, kScratch, kPlace };
  // A lane receive waiting in lanes_: what StartReceiveNow needs once it may start.
  struct QueuedReceive {
    std::string step_key;
    int index = -1;  // in Step::in
    char* target = nullptr;
    LaneInto into = LaneInto::kPlace;
  };
  struct Step {
    std::shared_ptr<Call> call;
    const ExchangeStep* spec = nullptr;
    std::string match_name;  // the call's match name + the step's suffix
    char* target = nullptr;
    std::vector<Incoming> in;
    std::vector<Outgoing> out;
    StepAccumulator sum;               // kReduce: the receive-side reduction
    TransferId scratch_transfer = -1;  // kReduce: the lane landing in sum.scratch()
    Status status;
    Clock::time_point started;
    bool stall_warned = false;
    bool moving = false;  // listed in moving_
  };
  struct Discard {
    TransferId transfer;
    int peer;
    std::unique_ptr<std::vector<char>> buffer;
  };

  static std::string Key(const std::string& match_name, int64_t seq);
  static std::string Describe(const Call& call);
  void Reject(const Call& call, const std::vector<int>& peers, const Status& status);
  void StartStep(const std::shared_ptr<Call>& call);
  // kReduce: where the sum builds up, this rank's part pending; kPlace: this rank's slice placed.
  void PlaceSelf(Step& step, const char* self);
  NeighborEntry EntryOf(const Step& step, NeighborEntryType type,
                        const std::vector<int64_t>& shape) const;
  // The step's data (and, with the check, its expectations) to its peers' outboxes.
  void QueueSends(Step& step, const std::string& key);
  // Peers that left (or whose messages cannot be read) before the step started.
  void ResolveLeftPeers(Step& step);
  char* Buffer(Call& call, StepBuffer buffer) const;
  void Route(int from, NeighborEntry entry, const std::shared_ptr<const std::vector<char>>& bytes);
  void Deliver(Step& step, int from, const NeighborEntry& entry);
  void DeliverData(Step& step, int from, const NeighborEntry& entry);
  // Data from a peer this step does not receive from: refused on both sides.
  void RefuseUnexpected(Step& step, int from, const NeighborEntry& entry);
  // kReduce: into the accumulator itself, the scratch lane queue, or added now.
  void ReduceArrival(Step& step, int index, const NeighborEntry& entry);
  // kPlace / kGather: copied inline, or a lane straight into its place.
  void PlaceArrival(Step& step, Incoming& in, const NeighborEntry& entry);
  void DeliverExpect(Step& step, int from, const NeighborEntry& entry);
  void DeliverReject(Step& step, int from, const NeighborEntry& entry);
  void HandleStale(int from, const NeighborEntry& entry);
  Status CheckShapes(const Step& step, int from, const NeighborEntry& entry,
                     const std::vector<int64_t>& expected, const char* role) const;
  void FailPair(Step& step, int peer, const Status& status);
  void MarkUnreadable(int peer, const Status& status);
  void NoteTransportFailure(const Status& status);
  // FailPair without telling the peer (it left, or this rank is leaving).
  void AbandonPair(Step& step, int peer, const Status& status);
  // A call failed in a step: its later steps are not run, their peers are told why.
  void RejectLaterSteps(Call& call);
  // The peers a step still waits for (data, a confirmation, a lane).
  static std::vector<int> OpenPeers(const Step& step);
  void OnGoodbye(int from);
  bool TryCompleteAll();
  void Queue(int peer, Outbound outbound);
  // Is this queued entry still to be sent (its peer here, its step and pair alive)?
  bool StillToSend(int peer, const Outbound& outbound) const;
  void Send(OutboxMessage& message);
  // neighbor_lanes.cc: the receive of source `index`'s lane into `target`
  // starts now (a peer on this host) or waits in lanes_ for its turn.
  void StartReceive(Step& step, int index, char* target, LaneInto into);
  // Returns the transfer started, or -1 (the pair failed).
  TransferId StartReceiveNow(Step& step, int index, char* target, LaneInto into);
  // Starts the queued receives that the budget lets go now.
  bool StartQueuedReceives();
  // A receive ended: if it counted in the budget, its bytes leave it.
  void ReceiveEnded(TransferId transfer);
  bool on_this_host(int peer) const;
  void QueueReject(int peer, const std::string& match_name, int64_t seq, const Status& status);
  void DrainLane(int from, const NeighborEntry& entry);
  // The steps of call `seq` of `match_name` will not run here: later arrivals are stale.
  void MarkCallDone(const std::string& match_name, int64_t seq, OpKind kind);
  // Starts the next queued lane into the step's scratch buffer, if it is free.
  void StartNextLane(Step& step);
  // The lane in the scratch buffer: landed? Added, or waiting for the sum's own lane.
  bool ScratchProgress(Step& step);
  // Polls the transfers of the steps in moving_ only: a pass need not visit
  // every step in flight (161 for ResNet-50's gradients) to find the few
  // whose lanes are moving.
  bool ProgressMoving();
  bool ProgressStep(Step& step);
  void MarkMoving(Step& step);  // after starting one of its transfers
  static bool HasTransfers(const Step& step);
  // Every peer resolved, no lane in flight: the step can complete.
  static bool Finished(const Step& step);
  bool TryComplete(const std::string& key);
  Status FinishStep(Step& step);
  void FinishCall(Call& call);

  Transport& transport_;
  const Options options_;
  const int rank_;
  const int size_;
  EngineCounters& counters_;
  Timeline& timeline_;
  FinishFn finish_;

  BufferPool pool_;  // first: the buffers of steps and calls go back to it
  std::unordered_map<std::string, Step> steps_;  // by step key
  // The steps with a transfer in flight (each once, Step::moving): a step
  // leaves only in ProgressMoving, once its last transfer ended, and a step
  // ends only without transfers, so none here is erased (Abandon clears both).
  std::vector<Step*> moving_;
  std::vector<Step*> polling_;  // ProgressMoving's snapshot of moving_ (empty between passes)
  std::unordered_map<std::string, int64_t> call_numbers_;  // next seq per call match name
  DeviceCalls device_calls_;  // this rank's calls on the device path (neighbor_devices.cc)
  Mailbox mailbox_;
  Outbox outbox_;
  LaneQueue lanes_;  // receives of lanes from peers on other hosts
  std::unordered_map<uint64_t, QueuedReceive> queued_receives_;       // by LaneQueue::Lane::id
  std::unordered_map<TransferId, std::pair<int, int64_t>> budgeted_;  // (peer, bytes) in flight
  uint64_t next_lane_id_ = 0;
  std::vector<Discard> discards_;
  bool departed_ = false;         // Depart() ran: nothing more is sent
  std::unordered_set<int> gone_;  // ranks whose goodbye arrived
  // Ranks that sent a message this rank could not decode, and why: every call
  // with them fails (MarkUnreadable).
  std::unordered_map<int, std::string> unreadable_;
  Status transport_failure_;
};

}  // namespace flock
