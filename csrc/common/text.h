// Small text helpers for messages (error texts and log lines).
#pragma once

#include <string>
#include <vector>

namespace flock {

// "[0, 3, 5]": ranks as error messages and stall warnings list them.
inline std::string BracketedList(const std::vector<int>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

}  // namespace flock
