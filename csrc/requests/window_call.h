// WindowCall: what a window op (win_put, win_accumulate, win_get, win_mutex)
// asks of the engine beyond its tensor: which window, which peers with which
// weights, and the options. Pure data, resolved and checked before submission
// (runtime/windows.cc).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace flock {

struct WindowCall {
  std::string window;
  // put / accumulate: destinations and the weight each gets (the sender scales);
  // get: sources and the weight this rank scales their tensor by on arrival;
  // lock / unlock: the ranks whose slot for this rank is taken (weights unused).
  std::vector<std::pair<int, double>> peers;
  double self_weight = 1.0;  // put / accumulate: the tensor is scaled by it once sent
  bool require_mutex = false;
  bool with_p = false;  // put / accumulate: the push-sum weight travels with the data
};

}  // namespace flock
