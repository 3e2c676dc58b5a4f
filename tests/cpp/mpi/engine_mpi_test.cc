// The engine over real MPI: requests submitted in a different random order on
// every rank, fusion, and a mismatch reported on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "../support/engine_requests.h"
#include "tests_runtime.h"

namespace flock::testing {
namespace {

HandleId Submit(Engine& engine, const std::string& name, std::vector<double>& data) {
  return SubmitAllreduce(engine, name, data, DataType::kFloat64);
}

Status Wait(Engine& engine, HandleId handle) {
  return WaitFor(engine, handle);
}

TEST(EngineMpi, RandomOrderOnEveryRank) {
  Engine& engine = SharedRuntime()->engine();
  const int rank = SharedRuntime()->rank(), size = SharedRuntime()->size();
  std::vector<int> order(40);
  for (int i = 0; i < 40; ++i) order[static_cast<size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(17 + rank));
  std::vector<std::vector<double>> data(40);
  std::vector<HandleId> handles(40);
  for (int i : order) {
    data[static_cast<size_t>(i)].assign(static_cast<size_t>(1 + 37 * i), rank + 0.5 * i);
    handles[static_cast<size_t>(i)] =
        Submit(engine, "mpi.t" + std::to_string(i), data[static_cast<size_t>(i)]);
  }
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(Wait(engine, handles[static_cast<size_t>(i)]).ok());
    const double expected = size * (size - 1) / 2.0 + size * 0.5 * i;
    for (double v : data[static_cast<size_t>(i)]) ASSERT_EQ(v, expected);
  }
}

TEST(EngineMpi, FusesSmallTensorsAndReportsMismatches) {
  Engine& engine = SharedRuntime()->engine();
  const int rank = SharedRuntime()->rank(), size = SharedRuntime()->size();
  const int64_t batches_before = engine.counters().batches;
  std::vector<std::vector<double>> data(100, std::vector<double>(512, 1.0));
  std::vector<HandleId> handles;
  for (int i = 0; i < 100; ++i)
    handles.push_back(Submit(engine, "mpi.f" + std::to_string(i), data[static_cast<size_t>(i)]));
  for (HandleId h : handles) ASSERT_TRUE(Wait(engine, h).ok());
  EXPECT_LE(engine.counters().batches - batches_before, 2);
  EXPECT_EQ(data[0][0], static_cast<double>(size));
  if (size < 2) return;
  std::vector<double> odd(rank == size - 1 ? 3 : 2, 1.0);
  Status status = Wait(engine, Submit(engine, "mpi.bad", odd));
  EXPECT_EQ(status.code(), StatusCode::kMismatch);
  EXPECT_NE(status.message().find("rank " + std::to_string(size - 1) + " has [3]"),
            std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace flock::testing
