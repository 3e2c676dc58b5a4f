#include "flock/window/window_service.h"

#include <cstring>
#include <utility>

#include "flock/common/logging.h"
#include "flock/common/reduce_kernels.h"

namespace flock {

WindowService::WindowService(Transport& transport, WindowTable& table, int64_t inline_limit_bytes,
                             EngineCounters& counters, Timeline& timeline, FinishFn finish)
    : transport_(transport),
      table_(table),
      inline_limit_(inline_limit_bytes),
      rank_(transport.rank(CommGroup::kNeighbor)),
      counters_(counters),
      timeline_(timeline),
      finish_(std::move(finish)) {}

void WindowService::Add(PendingRequest request) {
  const int64_t id = next_op_++;
  Op& op = ops_[id];
  op.request = std::move(request);
  ++counters_.window_ops;
  // The op's span (begun at intake) gets its phase: until every peer answered.
  timeline_.Begin(op.request.op.name, "COMMUNICATE");
  const WindowCall& call = *op.request.op.window;
  op.window = table_.Find(call.window);
  if (op.window == nullptr) {
    op.status = Status::InvalidArgument("window '" + call.window +
                                        "' does not exist (it was freed, or never created)");
    TryFinish(id);
    return;
  }
  switch (op.request.op.kind) {
    case OpKind::kWinPut:
    case OpKind::kWinAccumulate: StartPut(op, id); break;
    case OpKind::kWinGet: StartGet(op, id); break;
    case OpKind::kWinLock: AskNextLock(op, id); break;
    case OpKind::kWinUnlock:
      for (const auto& [peer, unused] : call.peers) {
        WindowMessage m;
        m.type = WindowMessageType::kUnlock;
        m.window = call.window;
        Send(peer, m);
      }
      break;
    default: op.status = Status::Internal("not a window op"); break;
  }
  TryFinish(id);
}

// The sender scales: each destination gets weight·tensor (the tensor itself
// when the weight is 1, else a scaled copy), and with push-sum p_self·weight.
void WindowService::StartPut(Op& op, int64_t id) {
  const WindowCall& call = *op.request.op.window;
  const TensorView& tensor = op.request.op.tensor;
  const double p_self = op.window->p_self();
  for (const auto& [peer, weight] : call.peers) {
    WindowMessage m;
    m.type = op.request.op.kind == OpKind::kWinPut ? WindowMessageType::kPut
                                                   : WindowMessageType::kAccumulate;
    m.window = call.window;
    m.op = id;
    m.dtype = tensor.dtype;
    m.payload_bytes = tensor.size_bytes();
    m.require_mutex = call.require_mutex;
    m.with_p = call.with_p;
    m.p = p_self * weight;
    WindowBuffer scaled;
    const char* data = static_cast<const char*>(tensor.data);
    if (weight != 1.0 && tensor.num_elements() > 0) {
      scaled = op.window->NewBuffer();
      Status s =
          ScaledAdd(scaled->data(), weight, data, 0.0, data, tensor.num_elements(), tensor.dtype);
      if (!s.ok()) op.status = s;
      data = scaled->data();
    }
    // The op completes once its data is sent; the destination's acknowledgement
    // only fences later global ops (fenced()) and reports a refusal late.
    Unacked& unacked = unacked_[id];
    unacked.window = op.window;
    ++unacked.acks_due;
    SendPayloadTo(peer, std::move(m), data, id, op.window, std::move(scaled), -1);
  }
}

void WindowService::StartGet(Op& op, int64_t id) {
  const WindowCall& call = *op.request.op.window;
  for (const auto& [peer, weight] : call.peers) {
    op.weights[peer] = weight;
    WindowMessage m;
    m.type = WindowMessageType::kGetRequest;
    m.window = call.window;
    m.op = id;
    m.require_mutex = call.require_mutex;
    ++op.answers_due;
    Send(peer, m);
  }
}

// Slots are taken one peer after the other, in ascending rank order, so two
// ranks asking for the same slots never hold one each and wait for the other.
void WindowService::AskNextLock(Op& op, int64_t id) {
  const WindowCall& call = *op.request.op.window;
  if (!op.status.ok() || op.next_lock >= call.peers.size()) return;
  WindowMessage m;
  m.type = WindowMessageType::kLock;
  m.window = call.window;
  m.op = id;
  ++op.answers_due;
  Send(call.peers[op.next_lock++].first, m);
}

void WindowService::SendPayloadTo(int peer, WindowMessage header, const char* data, int64_t op,
                                  std::shared_ptr<Window> window, WindowBuffer buffer,
                                  int unlock_slot) {
  const bool lane = header.payload_bytes > inline_limit_;
  counters_.window_bytes += header.payload_bytes;
  if (!lane) {
    header.payload = data;
    Send(peer, header);
    if (unlock_slot >= 0) window->locks().UnlockRemote(unlock_slot, peer);
    return;
  }
  header.lane_tag = NextLaneTag(peer);
  Send(peer, header);
  auto started =
      transport_.StartSend(data, header.payload_bytes, peer, header.lane_tag, CommGroup::kNeighbor);
  if (!started.ok()) {
    if (transport_failure_.ok()) transport_failure_ = started.status();
    return;
  }
  Serving serving;
  serving.transfer = started.value();
  serving.op = op;
  serving.window = std::move(window);
  serving.buffer = std::move(buffer);
  serving.unlock_slot = unlock_slot;
  servings_.push_back(std::move(serving));
  auto it = ops_.find(op);
  if (it != ops_.end()) ++it->second.sends_due;
}

void WindowService::OnAck(int from, const WindowMessage& m) {
  auto it = unacked_.find(m.op);
  if (it == unacked_.end()) return;
  if (m.code != StatusCode::kOk) {
    const Status refused(m.code, "rank " + std::to_string(from) + " refused an earlier " +
                                     "put or accumulate: " + m.error);
    FLOCK_LOG(kWarning, "window") << "window '" << m.window << "': " << refused.message();
    it->second.window->NoteLateError(refused);
  }
  if (--it->second.acks_due == 0) unacked_.erase(it);
}

void WindowService::OnAnswer(int from, const WindowMessage& m) {
  auto it = ops_.find(m.op);
  if (it == ops_.end()) return;  // the op was abandoned
  Op& op = it->second;
  --op.answers_due;
  if (m.code != StatusCode::kOk) {
    if (op.status.ok()) op.status = Status(m.code, m.error);
  } else if (m.type == WindowMessageType::kGrant) {
    AskNextLock(op, m.op);
  }
  (void)from;
  TryFinish(m.op);
}

// A source's tensor arrived for this rank's get: scaled here (the receiver
// scales a get), it replaces that source's slot and counts a version.
void WindowService::OnGetReplyData(Op& op, int from, WindowBuffer data) {
  const double weight = op.weights.count(from) ? op.weights[from] : 1.0;
  if (weight != 1.0) {
    Status s = ScaleInPlace(data->data(), op.window->count(), op.window->dtype(), weight);
    if (!s.ok() && op.status.ok()) op.status = s;
  }
  op.window->Replace(from, std::move(data), /*count_version=*/true, std::nullopt);
}

void WindowService::TryFinish(int64_t id) {
  auto it = ops_.find(id);
  if (it == ops_.end()) return;
  Op& op = it->second;
  if (op.answers_due > 0 || op.sends_due > 0) return;
  const OpKind kind = op.request.op.kind;
  const WindowCall* call = op.request.op.window.get();
  if (op.status.ok() && (kind == OpKind::kWinPut || kind == OpKind::kWinAccumulate)) {
    // Bluefog's order: the tensor is scaled by self_weight once it was sent.
    if (call->self_weight != 1.0) {
      const TensorView& t = op.request.op.tensor;
      op.status = ScaleInPlace(t.data, t.num_elements(), t.dtype, call->self_weight);
    }
    if (call->with_p) op.window->set_p_self(op.window->p_self() * call->self_weight);
  }
  if (!op.status.ok() && kind == OpKind::kWinLock && op.next_lock > 1) {
    // The slots granted before the failure are let go again.
    for (size_t i = 0; i + 1 < op.next_lock; ++i) {
      WindowMessage m;
      m.type = WindowMessageType::kUnlock;
      m.window = call->window;
      Send(call->peers[i].first, m);
    }
  }
  Status status = op.status;
  if (!status.ok() && call != nullptr && status.message().find(call->window) == std::string::npos)
    status = Status(status.code(), std::string(OpKindName(kind)) + " on window '" + call->window +
                                       "': " + status.message());
  PendingRequest request = std::move(op.request);
  ops_.erase(it);
  timeline_.End(request.op.name);  // the phase; the finisher ends the op's span
  finish_(request, std::move(status));
}

void WindowService::Send(int peer, const WindowMessage& m) {
  std::vector<char> bytes = EncodeWindowMessage(m);
  counters_.control_bytes += static_cast<int64_t>(bytes.size());
  Status s = transport_.PostSend(std::move(bytes), peer, kMessageTag, CommGroup::kNeighbor);
  if (!s.ok() && transport_failure_.ok()) transport_failure_ = s;
}

void WindowService::Abandon(const std::string& reason) {
  for (auto& [id, op] : ops_) {
    timeline_.End(op.request.op.name);
    finish_(op.request, Status::Aborted(reason));
  }
  ops_.clear();
  deferred_.clear();
  unacked_.clear();
}

Status WindowService::TakeTransportFailure() {
  Status failure = transport_failure_;
  transport_failure_ = Status::OK();
  return failure;
}

}  // namespace flock
