// WindowService: the engine thread's part of the window ops (design and
// measurements: docs/windows.md). It sends this rank's puts, accumulates,
// gets and win_mutex requests and completes each once its peers answer; and
// it serves the other ranks' — applying their data to this rank's windows,
// answering their gets, granting their slots — while this rank's own threads
// compute: the engine thread keeps looking for window messages as long as a
// window exists (Engine::PlanIdle), so no rank waits for a busy one.
//
// Files: window_service.cc (this rank's ops), window_serving.cc (the other
// ranks'), window_transfers.cc (lanes in flight).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flock/common/counters.h"
#include "flock/common/status.h"
#include "flock/common/timeline.h"
#include "flock/requests/pending_request.h"
#include "flock/transport/transport.h"
#include "flock/window/window_table.h"
#include "flock/window/window_wire.h"

namespace flock {

class WindowService {
 public:
  using FinishFn = std::function<void(PendingRequest&, Status)>;

  // Window messages go on the neighbor communicator under their own tag, and
  // payloads above `inline_limit_bytes` on lane tags of their own.
  static constexpr int kMessageTag = 2;
  static constexpr int kLaneTagBase = 30200;
  static constexpr int kLaneTagRange = 2500;

  WindowService(Transport& transport, WindowTable& table, int64_t inline_limit_bytes,
                EngineCounters& counters, Timeline& timeline, FinishFn finish);

  // A window op of this rank (kWinPut, kWinAccumulate, kWinGet, kWinLock, kWinUnlock).
  void Add(PendingRequest request);
  // Receives, applies, answers, progresses lanes; true when anything happened.
  bool Poll();
  // Ops of this rank or transfers in flight.
  bool busy() const {
    return !ops_.empty() || !landings_.empty() || !servings_.empty() || !unacked_.empty();
  }
  // Every put and accumulate of this rank has been applied at its destinations.
  // A global op waits for this before it is announced (Engine::SendReady), so
  // "win_put, barrier(), win_update" sees the data everywhere.
  bool fenced() const { return unacked_.empty(); }
  // Windows exist: other ranks may send at any time.
  bool open() const { return !table_.empty(); }
  // A slot became free or a grant is due (any thread): Poll has work.
  void NoteGrants() { grants_due_ = true; }
  // The engine stops: every op fails with `reason`, transfers are left to the transport.
  void Abandon(const std::string& reason);
  Status TakeTransportFailure();

 private:
  struct Op {
    PendingRequest request;
    std::shared_ptr<Window> window;
    int answers_due = 0;
    int sends_due = 0;
    Status status;
    std::map<int, double> weights;  // get: the scale per source
    size_t next_lock = 0;           // kWinLock: the peer asked next
  };
  struct Landing {  // a payload arriving on a lane
    int from = 0;
    WindowMessage header;
    std::shared_ptr<Window> window;  // null: drained (the message was refused)
    WindowBuffer buffer;
    TransferId transfer = -1;
  };
  struct Serving {  // a lane leaving: this rank's data (a put's or a get's reply)
    TransferId transfer = -1;
    int64_t op = 0;  // this rank's op, or -1: a get reply
    std::shared_ptr<Window> window;
    WindowBuffer buffer;   // the scaled copy, if any
    int unlock_slot = -1;  // a get served under the requester's slot
  };
  struct Unacked {  // a put or accumulate that completed before its destinations applied it
    std::shared_ptr<Window> window;
    int acks_due = 0;
  };
  struct Deferred {  // waits for its slot (require_mutex)
    int from = 0;
    WindowMessage header;
    std::shared_ptr<Window> window;
    WindowBuffer buffer;  // kPut / kAccumulate: the landed data
  };

  // window_service.cc: this rank's ops.
  void StartPut(Op& op, int64_t id);
  void StartGet(Op& op, int64_t id);
  void AskNextLock(Op& op, int64_t id);
  void SendPayloadTo(int peer, WindowMessage header, const char* data, int64_t op,
                     std::shared_ptr<Window> window, WindowBuffer buffer, int unlock_slot);
  void OnAnswer(int from, const WindowMessage& m);
  void OnAck(int from, const WindowMessage& m);
  void OnGetReplyData(Op& op, int from, WindowBuffer data);
  void TryFinish(int64_t id);
  void Send(int peer, const WindowMessage& m);

  // window_serving.cc: the other ranks' ops.
  // An inline payload points into the received message, which the caller holds.
  void Serve(int from, const WindowMessage& m);
  void OnPayload(int from, const WindowMessage& m);
  void Arrived(int from, const WindowMessage& m, const std::shared_ptr<Window>& window,
               WindowBuffer data);
  void Apply(int from, const WindowMessage& m, Window& window, const WindowBuffer& data);
  void OnGetRequest(int from, const WindowMessage& m);
  void ServeGet(int from, const WindowMessage& m, const std::shared_ptr<Window>& window,
                bool holds_slot);
  void OnLock(int from, const WindowMessage& m);
  void Refuse(int from, const WindowMessage& m, const Status& why);
  bool HandOutGrants();
  // Why `window` cannot take `m` from `from` (OK if it can).
  Status CheckArrival(int from, const WindowMessage& m, const Window* window) const;

  // window_transfers.cc
  int32_t NextLaneTag(int peer);
  bool ProgressTransfers();
  bool Receive();

  Transport& transport_;
  WindowTable& table_;
  const int64_t inline_limit_;
  const int rank_;
  EngineCounters& counters_;
  Timeline& timeline_;
  FinishFn finish_;
  std::map<int64_t, Op> ops_;  // by op id
  int64_t next_op_ = 1;
  std::vector<Landing> landings_;
  std::vector<Serving> servings_;
  std::map<int64_t, Deferred> deferred_;  // by local id (EdgeLocks' op)
  std::map<int64_t, Unacked> unacked_;    // by op id
  int64_t next_deferred_ = 1;
  std::map<int, int64_t> lane_counters_;                    // per peer
  std::vector<std::shared_ptr<std::vector<char>>> drains_;  // refused lanes' throwaway buffers
  std::atomic<bool> grants_due_{false};
  Status transport_failure_;
};

}  // namespace flock
