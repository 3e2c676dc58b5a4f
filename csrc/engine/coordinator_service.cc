#include "flock/engine/coordinator_service.h"

#include <utility>

#include "flock/engine/wire.h"

namespace flock {

CoordinatorService::CoordinatorService(Transport& transport, Coordinator& coordinator,
                                       EngineCounters& counters, FailFn fail)
    : transport_(transport),
      coordinator_(coordinator),
      counters_(counters),
      fail_(std::move(fail)) {}

bool CoordinatorService::Poll(std::vector<Response>* answers) {
  bool did_work = false;
  int from = 0;
  for (const int tag : {kReadyTag, kShutdownTag, kWithdrawTag}) {
    while (true) {
      auto got = transport_.TryReceive(-1, tag, CommGroup::kControl, &from, &bytes_);
      if (!got.ok()) {
        fail_(got.status(), "receiving control messages");
        return true;
      }
      if (!got.value()) break;
      did_work = true;
      Take(tag, from, bytes_);
    }
  }
  *answers = coordinator_.TakeResponses();
  if (answers->empty()) return did_work;
  Answer(*answers);
  return true;
}

void CoordinatorService::Take(int tag, int from, const std::vector<char>& bytes) {
  if (tag == kShutdownTag) {
    auto stalled = DecodeShutdown(bytes, transport_.size(CommGroup::kControl));
    if (!stalled.ok()) {
      coordinator_.Break("rank 0 could not read rank " + std::to_string(from) + "'s shutdown (" +
                         stalled.status().message() + "); global ops are off");
    }
    coordinator_.AddShutdown(from, stalled.ok() ? stalled.value() : std::vector<int>{});
    return;
  }
  if (tag == kWithdrawTag) {
    auto withdrawal = DecodeWithdrawal(bytes);
    if (withdrawal.ok()) {
      coordinator_.Withdraw(withdrawal.value());
    } else {
      coordinator_.Break("rank 0 could not read rank " + std::to_string(from) + "'s withdrawal (" +
                         withdrawal.status().message() + "); global ops are off");
    }
    return;
  }
  auto entries = DecodeReady(bytes);
  Status s =
      entries.ok() ? coordinator_.AddReady(from, entries.value(), Clock::now()) : entries.status();
  if (!s.ok()) {
    coordinator_.Break("rank 0 could not take rank " + std::to_string(from) + "'s announcement (" +
                       s.message() + "); global ops are off");
  }
}

void CoordinatorService::Answer(const std::vector<Response>& responses) {
  const std::vector<char> encoded = EncodeResponses(responses);
  for (int r = 1; r < transport_.size(CommGroup::kControl); ++r) {
    counters_.control_bytes += static_cast<int64_t>(encoded.size());
    Status s = transport_.PostSend(encoded, r, kResponseTag, CommGroup::kControl);
    if (!s.ok()) fail_(s, "answering rank " + std::to_string(r));
  }
}

}  // namespace flock
