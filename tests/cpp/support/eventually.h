// Eventually: polls a condition every millisecond until it holds or 10 s pass.
#pragma once

#include <chrono>
#include <thread>

namespace flock {

template <typename Condition>
bool Eventually(Condition condition) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return condition();
}

}  // namespace flock
