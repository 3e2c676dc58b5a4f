// Test helper: for one iteration k, ask a schedule about every node at once and
// check that the lists are well formed (sorted, in range, no self, no
// duplicates) and that sends and receives agree:
//   r in send_ranks(k, s)  <=>  s in recv_ranks(k, r).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flock/topology/schedule.h"

namespace flock {
namespace topology {
namespace testing_util {

inline void expect_well_formed(const std::vector<int>& list, int self, int n,
                               const std::string& label) {
  EXPECT_TRUE(std::is_sorted(list.begin(), list.end())) << label;
  EXPECT_EQ(std::adjacent_find(list.begin(), list.end()), list.end()) << label << " duplicate";
  for (int other : list) {
    EXPECT_NE(other, self) << label << " names itself";
    EXPECT_TRUE(other >= 0 && other < n) << label << " out of range " << other;
  }
}

// Checks iterations 0..last of `schedule`; `name` labels failures.
inline void expect_sends_match_receives(const DynamicSchedule& schedule, std::int64_t last,
                                        const std::string& name) {
  const int n = schedule.size();
  for (std::int64_t k = 0; k <= last; ++k) {
    std::vector<std::vector<int>> sends(n);
    std::vector<std::vector<int>> recvs(n);
    for (int r = 0; r < n; ++r) {
      const std::string label = name + " k=" + std::to_string(k) + " r=" + std::to_string(r);
      sends[r] = schedule.send_ranks(k, r);
      recvs[r] = schedule.recv_ranks(k, r);
      expect_well_formed(sends[r], r, n, label + " send");
      expect_well_formed(recvs[r], r, n, label + " recv");
    }
    // Transposing by hand (not through transpose_rank_lists, tested apart).
    std::vector<std::vector<int>> expected_recvs(n);
    for (int s = 0; s < n; ++s) {
      for (int r : sends[s]) {
        if (r >= 0 && r < n) expected_recvs[r].push_back(s);
      }
    }
    EXPECT_EQ(recvs, expected_recvs) << name << " k=" << k;
  }
}

}  // namespace testing_util
}  // namespace topology
}  // namespace flock
