// The other ranks' window ops, as this rank's engine thread serves them: their
// data applied to this rank's windows, their gets answered, their win_mutex
// slots granted. A message this rank cannot take (no such window, a rank that
// is not an in-neighbour, another dtype or size) is answered with the reason,
// so the asking rank's op fails instead of waiting.
#include <cstring>

#include "flock/common/logging.h"
#include "flock/window/window_service.h"

namespace flock {

void WindowService::Serve(int from, const WindowMessage& m) {
  if (m.type != WindowMessageType::kAck && m.type != WindowMessageType::kGrant &&
      m.type != WindowMessageType::kGetReply)
    ++counters_.window_served;
  switch (m.type) {
    case WindowMessageType::kPut:
    case WindowMessageType::kAccumulate: OnPayload(from, m); break;
    case WindowMessageType::kGetRequest: OnGetRequest(from, m); break;
    case WindowMessageType::kLock: OnLock(from, m); break;
    case WindowMessageType::kUnlock: {
      std::shared_ptr<Window> window = table_.Find(m.window);
      if (window != nullptr) window->locks().UnlockRemote(from, from);
      grants_due_ = true;
      break;
    }
    case WindowMessageType::kAck: OnAck(from, m); break;
    case WindowMessageType::kGrant: OnAnswer(from, m); break;
    case WindowMessageType::kGetReply: {
      auto it = ops_.find(m.op);
      if (it == ops_.end() || m.code != StatusCode::kOk) {
        if (m.lane_tag >= 0) landings_.push_back({from, m, nullptr, nullptr, -1});
        if (it != ops_.end()) OnAnswer(from, m);
        break;
      }
      OnPayload(from, m);
      break;
    }
  }
}

Status WindowService::CheckArrival(int from, const WindowMessage& m, const Window* window) const {
  if (window == nullptr)
    return Status::InvalidArgument("rank " + std::to_string(rank_) + " has no window '" + m.window +
                                   "'");
  const bool reply = m.type == WindowMessageType::kGetReply;
  if (!reply && !window->is_in_neighbor(from)) {
    return Status::InvalidArgument(
        "rank " + std::to_string(from) + " is not an in-neighbour of rank " +
        std::to_string(rank_) + " in window '" + m.window + "' (the topology when it was created)");
  }
  if (m.dtype != window->dtype() || m.payload_bytes != window->bytes()) {
    return Status::Mismatch("window '" + m.window + "': rank " + std::to_string(from) + " sent " +
                            std::to_string(m.payload_bytes) + " bytes of " + DataTypeName(m.dtype) +
                            ", rank " + std::to_string(rank_) + " holds " +
                            std::to_string(window->bytes()) + " bytes of " +
                            DataTypeName(window->dtype()));
  }
  return Status::OK();
}

// A put, an accumulate or a get reply: inline, or announced for a lane.
void WindowService::OnPayload(int from, const WindowMessage& m) {
  const bool reply = m.type == WindowMessageType::kGetReply;
  auto op = reply ? ops_.find(m.op) : ops_.end();  // Serve checked that a reply's op exists
  std::shared_ptr<Window> window = reply ? op->second.window : table_.Find(m.window);
  Status ok = CheckArrival(from, m, window.get());
  if (!ok.ok()) {
    if (m.lane_tag >= 0) landings_.push_back({from, m, nullptr, nullptr, -1});
    if (reply) {
      WindowMessage failed = m;
      failed.code = ok.code();
      failed.error = ok.message();
      OnAnswer(from, failed);
    } else {
      Refuse(from, m, ok);
    }
    return;
  }
  WindowBuffer buffer = window->NewBuffer();
  if (m.lane_tag < 0) {
    if (m.payload_bytes > 0) std::memcpy(buffer->data(), m.payload, m.payload_bytes);
    Arrived(from, m, window, std::move(buffer));
    return;
  }
  Landing landing{from, m, window, std::move(buffer), -1};
  landing.header.payload = nullptr;
  auto started = transport_.StartRecv(landing.buffer->data(), m.payload_bytes, from, m.lane_tag,
                                      CommGroup::kNeighbor);
  if (!started.ok()) {
    if (transport_failure_.ok()) transport_failure_ = started.status();
    return;
  }
  landing.transfer = started.value();
  landings_.push_back(std::move(landing));
}

// The payload is here: a get reply completes this rank's op; another rank's
// put or accumulate is applied — once its slot is free, with require_mutex.
void WindowService::Arrived(int from, const WindowMessage& m, const std::shared_ptr<Window>& window,
                            WindowBuffer data) {
  if (m.type == WindowMessageType::kGetReply) {
    auto it = ops_.find(m.op);
    if (it == ops_.end()) return;
    OnGetReplyData(it->second, from, std::move(data));
    OnAnswer(from, m);
    return;
  }
  if (m.require_mutex) {
    const int64_t id = next_deferred_++;
    if (!window->locks().LockRemote(from, from, id, EdgeLocks::Purpose::kApplyArrival)) {
      deferred_[id] = Deferred{from, m, window, std::move(data)};
      return;
    }
    Apply(from, m, *window, data);
    window->locks().UnlockRemote(from, from);
    return;
  }
  Apply(from, m, *window, data);
}

void WindowService::Apply(int from, const WindowMessage& m, Window& window,
                          const WindowBuffer& data) {
  const std::optional<double> p = m.with_p ? std::optional<double>(m.p) : std::nullopt;
  Status applied = Status::OK();
  if (m.type == WindowMessageType::kPut)
    window.Replace(from, data, /*count_version=*/true, p);
  else
    applied = window.Accumulate(from, data->data(), p);
  WindowMessage ack;
  ack.type = WindowMessageType::kAck;
  ack.window = m.window;
  ack.op = m.op;
  if (!applied.ok()) {
    ack.code = applied.code();
    ack.error = applied.message();
  }
  Send(from, ack);
}

void WindowService::OnGetRequest(int from, const WindowMessage& m) {
  std::shared_ptr<Window> window = table_.Find(m.window);
  if (window == nullptr || !window->is_out_neighbor(from)) {
    Refuse(from, m,
           window == nullptr
               ? Status::InvalidArgument("rank " + std::to_string(rank_) + " has no window '" +
                                         m.window + "'")
               : Status::InvalidArgument("rank " + std::to_string(from) +
                                         " is not an out-neighbour of rank " +
                                         std::to_string(rank_) + " in window '" + m.window + "'"));
    return;
  }
  if (m.require_mutex) {
    const int64_t id = next_deferred_++;
    if (!window->locks().LockRemote(from, from, id, EdgeLocks::Purpose::kServeGet)) {
      deferred_[id] = Deferred{from, m, window, nullptr};
      return;
    }
  }
  ServeGet(from, m, window, m.require_mutex);
}

// This rank's own tensor, straight from the caller's memory (as Bluefog's
// window reads it): a get made with require_mutex holds the slot until sent.
void WindowService::ServeGet(int from, const WindowMessage& m,
                             const std::shared_ptr<Window>& window, bool holds_slot) {
  WindowMessage reply;
  reply.type = WindowMessageType::kGetReply;
  reply.window = m.window;
  reply.op = m.op;
  reply.dtype = window->dtype();
  reply.payload_bytes = window->bytes();
  SendPayloadTo(from, std::move(reply), static_cast<const char*>(window->self().data), -1, window,
                nullptr, holds_slot ? from : -1);
}

void WindowService::OnLock(int from, const WindowMessage& m) {
  std::shared_ptr<Window> window = table_.Find(m.window);
  if (window == nullptr) {
    Refuse(from, m,
           Status::InvalidArgument("rank " + std::to_string(rank_) + " has no window '" + m.window +
                                   "'"));
    return;
  }
  if (!window->locks().LockRemote(from, from, m.op, EdgeLocks::Purpose::kMutex)) return;
  WindowMessage grant;
  grant.type = WindowMessageType::kGrant;
  grant.window = m.window;
  grant.op = m.op;
  Send(from, grant);
}

void WindowService::Refuse(int from, const WindowMessage& m, const Status& why) {
  WindowMessage answer;
  answer.type = m.type == WindowMessageType::kGetRequest ? WindowMessageType::kGetReply
                : m.type == WindowMessageType::kLock     ? WindowMessageType::kGrant
                                                         : WindowMessageType::kAck;
  answer.window = m.window;
  answer.op = m.op;
  answer.dtype = m.dtype;
  answer.code = why.code();
  answer.error = why.message();
  Send(from, answer);
}

// Slots let go of by this rank's threads or other ranks: whoever waited next.
bool WindowService::HandOutGrants() {
  if (!grants_due_.exchange(false)) return false;
  bool any = false;
  for (const std::string& name : table_.Names()) {
    std::shared_ptr<Window> window = table_.Find(name);
    if (window == nullptr) continue;
    for (const EdgeLocks::Grant& g : window->locks().TakeGrants()) {
      any = true;
      if (g.purpose == EdgeLocks::Purpose::kMutex) {
        WindowMessage grant;
        grant.type = WindowMessageType::kGrant;
        grant.window = name;
        grant.op = g.op;
        Send(g.rank, grant);
        continue;
      }
      auto it = deferred_.find(g.op);
      if (it == deferred_.end()) continue;
      Deferred d = std::move(it->second);
      deferred_.erase(it);
      if (g.purpose == EdgeLocks::Purpose::kServeGet) {
        ServeGet(d.from, d.header, d.window, true);
      } else {
        Apply(d.from, d.header, *d.window, d.buffer);
        window->locks().UnlockRemote(d.from, d.from);
      }
    }
  }
  if (any) grants_due_ = true;  // a release above may have handed a slot on
  return any;
}

}  // namespace flock
