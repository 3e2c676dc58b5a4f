// Window ops over real MPI, from C++ (runtime/windows.h): puts and accumulates
// against the values every rank computes for every other, versions, a reader
// thread updating while the engine thread applies arrivals (what TSan checks
// here), slot locks, and a busy rank whose engine thread serves the others.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include <flock/topology/generators.h>

#include "../support/engine_requests.h"
#include "flock/runtime/collectives.h"
#include "flock/runtime/windows.h"
#include "tests_runtime.h"

namespace flock::testing {
namespace {

std::vector<double> ValueOf(int rank, size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 10.0 * rank + static_cast<double>(i) + 1.0;
  return v;
}

TensorView View(std::vector<double>& v) {
  return TensorView{v.data(), DataType::kFloat64, {static_cast<int64_t>(v.size())}, Device{}};
}

class WindowMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime_ = SharedRuntime().get();
    runtime_->set_topology(
        std::make_shared<const topology::Graph>(topology::ExponentialGraph(runtime_->size())));
    rank_ = runtime_->rank();
    graph_ = runtime_->topology();
  }
  std::vector<int> Ins() const {
    std::vector<int> in;
    for (int j : graph_->in_neighbors(rank_))
      if (j != rank_) in.push_back(j);
    return in;
  }
  Status Run(Result<OpRequest> op) {
    if (!op.ok()) return op.status();
    const TensorView tensor = op.value().tensor;
    auto handle = runtime_->engine().Submit(std::move(op).value(), tensor, nullptr);
    if (!handle.ok()) return handle.status();
    return WaitFor(runtime_->engine(), handle.value());
  }
  Status Barrier() {
    std::vector<double> one{1.0};
    return Allreduce(*runtime_, View(one), View(one), AllreduceOptions{});
  }
  Runtime* runtime_ = nullptr;
  int rank_ = 0;
  std::shared_ptr<const topology::Graph> graph_;
};

TEST_F(WindowMpi, PutsAccumulatesAndVersionsMatchTheReference) {
  const size_t n = 20000;  // 160 KB: lanes
  std::vector<double> x = ValueOf(rank_, n);
  ASSERT_TRUE(WinCreate(*runtime_, "cpp.w", View(x), nullptr, /*zero_init=*/true).ok());
  ASSERT_TRUE(
      Run(MakeWinPut(*runtime_, OpKind::kWinPut, View(x), "cpp.w", 1.0, std::nullopt, false)).ok());
  ASSERT_TRUE(
      Run(MakeWinPut(*runtime_, OpKind::kWinAccumulate, View(x), "cpp.w", 1.0, std::nullopt, true))
          .ok());
  ASSERT_TRUE(Barrier().ok());
  auto versions = WinVersions(*runtime_, "cpp.w");
  ASSERT_TRUE(versions.ok());
  for (int j : Ins()) EXPECT_EQ(versions.value()[j], 1) << "put from " << j;
  WeightList ones;
  for (int j : Ins()) ones.emplace_back(j, 1.0);
  std::vector<double> out(n);
  ASSERT_TRUE(
      WinUpdate(*runtime_, "cpp.w", WinUpdateOptions{0.5, ones, true, true}, View(out)).ok());
  for (size_t i = 0; i < n; i += 997) {
    double expected = 0.5 * x[i];
    for (int j : Ins()) expected += 2.0 * ValueOf(j, n)[i];  // put, then accumulate
    ASSERT_DOUBLE_EQ(out[i], expected) << i;
  }
  ASSERT_TRUE(Barrier().ok());
  ASSERT_TRUE(WinFree(*runtime_, std::string("cpp.w")).ok());
}

TEST_F(WindowMpi, AReaderThreadUpdatesWhileArrivalsAreApplied) {
  const size_t n = 4096;
  std::vector<double> x = ValueOf(rank_, n);
  ASSERT_TRUE(WinCreate(*runtime_, "cpp.r", View(x), nullptr, false).ok());
  ASSERT_TRUE(Barrier().ok());
  std::thread reader([&] {
    std::vector<double> out(n);
    for (int i = 0; i < 50; ++i)
      ASSERT_TRUE(WinUpdate(*runtime_, "cpp.r", WinUpdateOptions{}, View(out)).ok());
  });
  for (int i = 0; i < 30; ++i) {
    std::vector<double> mine = ValueOf(rank_, n);
    ASSERT_TRUE(Run(MakeWinPut(*runtime_, OpKind::kWinPut, View(mine), "cpp.r", std::nullopt,
                               std::nullopt, i % 2 == 0))
                    .ok());
  }
  reader.join();
  ASSERT_TRUE(Barrier().ok());
  ASSERT_TRUE(WinFree(*runtime_, std::string("cpp.r")).ok());
}

TEST_F(WindowMpi, ABusyRankServesGetsAndMutexes) {
  if (runtime_->size() < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<double> x = ValueOf(rank_, 64);
  ASSERT_TRUE(WinCreate(*runtime_, "cpp.b", View(x), nullptr, false).ok());
  ASSERT_TRUE(Barrier().ok());
  if (rank_ == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));  // no flock call
  } else {
    const auto start = std::chrono::steady_clock::now();
    std::vector<int> in = Ins();
    if (std::find(in.begin(), in.end(), 0) != in.end())
      ASSERT_TRUE(Run(MakeWinGet(*runtime_, "cpp.b", WeightList{{0, 1.0}}, true)).ok());
    ASSERT_TRUE(Run(MakeWinMutex(*runtime_, "cpp.b", std::vector<int>{0}, false)).ok());
    ASSERT_TRUE(Run(MakeWinMutex(*runtime_, "cpp.b", std::vector<int>{0}, true)).ok());
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(600));
  }
  ASSERT_TRUE(Barrier().ok());
  ASSERT_TRUE(WinFree(*runtime_, std::nullopt).ok());
}

}  // namespace
}  // namespace flock::testing
