// Window messages received and lanes progressed, on the engine thread.
#include "flock/common/logging.h"
#include "flock/window/window_service.h"

namespace flock {

int32_t WindowService::NextLaneTag(int peer) {
  return kLaneTagBase + static_cast<int32_t>(lane_counters_[peer]++ % kLaneTagRange);
}

bool WindowService::Poll() {
  bool did_work = Receive();
  did_work |= ProgressTransfers();
  did_work |= HandOutGrants();
  return did_work;
}

bool WindowService::Receive() {
  bool did_work = false;
  int from = 0;
  while (true) {
    auto bytes = std::make_shared<std::vector<char>>();
    auto got = transport_.TryReceive(-1, kMessageTag, CommGroup::kNeighbor, &from, bytes.get());
    if (!got.ok()) {
      if (transport_failure_.ok()) transport_failure_ = got.status();
      return true;
    }
    if (!got.value()) return did_work;
    did_work = true;
    auto decoded = DecodeWindowMessage(bytes);
    if (!decoded.ok()) {
      // Its sender's op cannot be told apart from the noise: the job cannot go on safely.
      if (transport_failure_.ok()) {
        transport_failure_ = Status::Internal(
            "rank " + std::to_string(rank_) + " could not read a window message from rank " +
            std::to_string(from) + ": " + decoded.status().message());
      }
      return true;
    }
    Serve(from, decoded.value());  // `bytes` holds an inline payload meanwhile
  }
}

bool WindowService::ProgressTransfers() {
  bool did_work = false;
  for (size_t i = 0; i < landings_.size();) {
    Landing& landing = landings_[i];
    if (landing.transfer < 0) {  // refused: drain the lane into a throwaway buffer
      landing.buffer = std::make_shared<PooledBuffer>();
      auto drained = std::make_shared<std::vector<char>>(landing.header.payload_bytes);
      auto started =
          transport_.StartRecv(drained->data(), landing.header.payload_bytes, landing.from,
                               landing.header.lane_tag, CommGroup::kNeighbor);
      if (!started.ok()) {
        if (transport_failure_.ok()) transport_failure_ = started.status();
        landings_.erase(landings_.begin() + static_cast<long>(i));
        continue;
      }
      landing.transfer = started.value();
      drains_.push_back(std::move(drained));  // kept until every drain ends (rare)
    }
    auto done = transport_.TestTransfer(landing.transfer);
    if (!done.ok() && transport_failure_.ok()) transport_failure_ = done.status();
    if (done.ok() && !done.value()) {
      ++i;
      continue;
    }
    did_work = true;
    Landing finished = std::move(landing);
    landings_.erase(landings_.begin() + static_cast<long>(i));
    if (done.ok() && finished.window != nullptr)
      Arrived(finished.from, finished.header, finished.window, std::move(finished.buffer));
  }
  if (landings_.empty()) drains_.clear();
  for (size_t i = 0; i < servings_.size();) {
    auto done = transport_.TestTransfer(servings_[i].transfer);
    if (!done.ok() && transport_failure_.ok()) transport_failure_ = done.status();
    if (done.ok() && !done.value()) {
      ++i;
      continue;
    }
    did_work = true;
    Serving finished = std::move(servings_[i]);
    servings_.erase(servings_.begin() + static_cast<long>(i));
    if (finished.unlock_slot >= 0)
      finished.window->locks().UnlockRemote(finished.unlock_slot, finished.unlock_slot);
    auto it = ops_.find(finished.op);
    if (it != ops_.end()) {
      --it->second.sends_due;
      TryFinish(finished.op);
    }
  }
  return did_work;
}

}  // namespace flock
