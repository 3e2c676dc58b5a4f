// Not a test of the suite: the one test of flock_mpi_failure_probe, which
// tests/python/single/test_failing_rank_aborts.py runs under mpiexec to prove that
// a failed test on one rank ends the whole job at once (AbortOnFailure in
// mpi_test_main.cc), instead of leaving the other ranks waiting for it.
#include <gtest/gtest.h>

#include "tests_runtime.h"

namespace flock::testing {
namespace {

TEST(DeliberateFailure, OnTheLastRankWhileTheOthersWaitForIt) {
  Transport& world = World();
  const int rank = world.rank(CommGroup::kWorld), size = world.size(CommGroup::kWorld);
  // FAIL returns: the last rank never joins the barrier the others wait in.
  if (rank == size - 1) FAIL() << "deliberate failure on rank " << rank;
  EXPECT_TRUE(world.Barrier(CommGroup::kWorld).ok());
}

}  // namespace
}  // namespace flock::testing
