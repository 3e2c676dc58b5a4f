#include "flock/neighbor/mailbox.h"

#include <utility>

namespace flock {

std::string StepKey(const std::string& name, int64_t seq) {
  const std::string number = std::to_string(seq);
  std::string key;
  key.reserve(name.size() + 1 + number.size());  // one allocation, not three
  key.append(name).append(1, '\x1f').append(number);
  return key;
}

bool Mailbox::Done(const std::string& name, int64_t seq) const {
  auto it = done_.find(name);
  if (it == done_.end()) return false;
  return seq < it->second.below || it->second.above.count(seq) > 0;
}

void Mailbox::MarkDone(const std::string& name, int64_t seq) {
  DoneCalls& done = done_[name];
  if (seq < done.below) return;
  if (seq == done.below && done.above.empty()) {  // in order, the usual case: no set node
    ++done.below;
    return;
  }
  done.above.insert(seq);
  // Calls end nearly in order: the set only holds the few that overtook one.
  while (!done.above.empty() && *done.above.begin() == done.below) {
    done.above.erase(done.above.begin());
    ++done.below;
  }
}

void Mailbox::Keep(const std::string& name, int64_t seq, Arrival arrival) {
  kept_[StepKey(name, seq)].push_back(std::move(arrival));
}

std::vector<Arrival> Mailbox::Take(const std::string& name, int64_t seq) {
  if (kept_.empty()) return {};
  auto it = kept_.find(StepKey(name, seq));
  if (it == kept_.end()) return {};
  std::vector<Arrival> arrivals = std::move(it->second);
  kept_.erase(it);
  return arrivals;
}

std::vector<Arrival> Mailbox::TakeAll() {
  std::vector<Arrival> all;
  for (auto& [key, arrivals] : kept_) {
    for (Arrival& a : arrivals) all.push_back(std::move(a));
  }
  kept_.clear();
  return all;
}

size_t Mailbox::done_above_watermark(const std::string& name) const {
  auto it = done_.find(name);
  return it == done_.end() ? 0 : it->second.above.size();
}

}  // namespace flock
