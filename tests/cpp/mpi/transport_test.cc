// Transport tests under MPI: every primitive, every group, every size the job
// was started with. Each rank's data is a function of (rank, index), so every
// rank can compute the expected result of all ranks by itself.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <thread>
#include <vector>

#include "../support/eventually.h"
#include "tests_runtime.h"

namespace flock::testing {
namespace {

TEST(Transport, RanksAndGroupsAreConsistent) {
  Transport& t = World();
  EXPECT_GE(t.size(CommGroup::kWorld), 1);
  EXPECT_LT(t.rank(CommGroup::kWorld), t.size(CommGroup::kWorld));
  EXPECT_LE(t.size(CommGroup::kLocal), t.size(CommGroup::kWorld));
  // Cross groups have one member per machine.
  if (SharedRuntime()->machine().homogeneous) {
    EXPECT_EQ(t.size(CommGroup::kCross) * t.size(CommGroup::kLocal), t.size(CommGroup::kWorld));
  }
  EXPECT_TRUE(t.threads_supported());
}

TEST(Transport, HostPeersAreTheRanksOpenMpiStartedOnThisHost) {
  Transport& t = World();
  const int n = t.size(CommGroup::kWorld), r = t.rank(CommGroup::kWorld);
  std::vector<char> mine(static_cast<size_t>(n)), all(static_cast<size_t>(n) * n);
  for (int peer = 0; peer < n; ++peer) mine[static_cast<size_t>(peer)] = t.on_this_host(peer);
  ASSERT_TRUE(t.Allgather(mine.data(), n, all.data(), CommGroup::kWorld).ok());
  for (int a = 0; a < n; ++a) {
    EXPECT_TRUE(all[static_cast<size_t>(a) * n + a]) << "rank " << a << " is not on its own host";
    for (int b = 0; b < n; ++b)
      EXPECT_EQ(all[static_cast<size_t>(a) * n + b], all[static_cast<size_t>(b) * n + a])
          << "ranks " << a << " and " << b << " disagree on sharing a host";
  }
  // The launcher's own count of ranks on this host is the independent reference.
  if (const char* launcher_count = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) {
    EXPECT_EQ(std::count(mine.begin(), mine.end(), 1), std::atoi(launcher_count)) << "rank " << r;
  }
  // Every member of this rank's local group shares its host (a faked group may
  // span hosts, so only with the real shared-memory groups).
  if (std::getenv("FLOCK_LOCAL_SIZE") != nullptr) return;
  std::vector<int> local_members(static_cast<size_t>(t.size(CommGroup::kLocal)));
  ASSERT_TRUE(t.Allgather(&r, sizeof(int), local_members.data(), CommGroup::kLocal).ok());
  for (int member : local_members) EXPECT_TRUE(t.on_this_host(member)) << "local rank " << member;
}

TEST(Transport, AllreduceSumInt64InPlaceAndOutOfPlace) {
  Transport& t = World();
  const int n = t.size(CommGroup::kWorld), r = t.rank(CommGroup::kWorld);
  std::vector<int64_t> in(1000), out(1000, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int64_t>(i) * (r + 1);
  ASSERT_TRUE(
      t.Allreduce(in.data(), out.data(), 1000, DataType::kInt64, ReduceOp::kSum, CommGroup::kWorld)
          .ok());
  const int64_t ranks_sum = n * (n + 1) / 2;
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], static_cast<int64_t>(i) * ranks_sum);
  ASSERT_TRUE(
      t.Allreduce(in.data(), in.data(), 1000, DataType::kInt64, ReduceOp::kSum, CommGroup::kWorld)
          .ok());
  EXPECT_EQ(in, out);
}

TEST(Transport, BroadcastFromEveryRoot) {
  Transport& t = World();
  const int n = t.size(CommGroup::kWorld), r = t.rank(CommGroup::kWorld);
  for (int root = 0; root < n; ++root) {
    std::vector<int32_t> buf(77, r);
    ASSERT_TRUE(t.Broadcast(buf.data(), 77 * 4, root, CommGroup::kWorld).ok());
    EXPECT_EQ(buf, std::vector<int32_t>(77, root));
  }
}

TEST(Transport, AllgathervWithUnequalAndEmptyParts) {
  Transport& t = World();
  const int n = t.size(CommGroup::kWorld), r = t.rank(CommGroup::kWorld);
  std::vector<int64_t> bytes(n);
  for (int i = 0; i < n; ++i) bytes[i] = i % 2 == 0 ? 0 : i;  // even ranks send nothing
  std::vector<char> mine(static_cast<size_t>(bytes[r]) + 1, static_cast<char>('a' + r));
  std::vector<char> all(static_cast<size_t>(std::accumulate(bytes.begin(), bytes.end(), 0LL)) + 1,
                        0);
  ASSERT_TRUE(t.Allgatherv(mine.data(), bytes, all.data(), CommGroup::kWorld).ok());
  size_t pos = 0;
  for (int i = 0; i < n; ++i) {
    for (int64_t b = 0; b < bytes[i]; ++b) ASSERT_EQ(all[pos++], static_cast<char>('a' + i));
  }
}

TEST(Transport, LocalAndCrossAllreduceCoverTheWorld) {
  Transport& t = World();
  const int world_rank = t.rank(CommGroup::kWorld);
  int64_t local_sum = world_rank, total = 0;
  ASSERT_TRUE(
      t.Allreduce(&local_sum, &local_sum, 1, DataType::kInt64, ReduceOp::kSum, CommGroup::kLocal)
          .ok());
  // Summing the machine sums across machines (local rank 0 of each) gives the world sum.
  int64_t contribution = t.rank(CommGroup::kLocal) == 0 ? local_sum : 0;
  ASSERT_TRUE(
      t.Allreduce(&contribution, &total, 1, DataType::kInt64, ReduceOp::kSum, CommGroup::kWorld)
          .ok());
  const int64_t n = t.size(CommGroup::kWorld);
  EXPECT_EQ(total, n * (n - 1) / 2);
}

TEST(Transport, PointToPointRing) {
  Transport& t = World();
  const int n = t.size(CommGroup::kWorld), r = t.rank(CommGroup::kWorld);
  if (n == 1) GTEST_SKIP() << "needs two ranks";
  int64_t sent = 100 + r, got = -1;
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  // Even ranks send first, odd ranks receive first: no deadlock with blocking calls.
  if (r % 2 == 0) {
    ASSERT_TRUE(t.Send(&sent, 8, next, 7, CommGroup::kWorld).ok());
    ASSERT_TRUE(t.Recv(&got, 8, prev, 7, CommGroup::kWorld).ok());
  } else {
    ASSERT_TRUE(t.Recv(&got, 8, prev, 7, CommGroup::kWorld).ok());
    ASSERT_TRUE(t.Send(&sent, 8, next, 7, CommGroup::kWorld).ok());
  }
  EXPECT_EQ(got, 100 + prev);
}

// A failed transfer (here a receive shorter than the message) reports the
// error once and releases its id; the transport keeps working afterwards.
TEST(Transport, AFailedTransferIsReleasedAndTheNextOneWorks) {
  Transport& t = World();
  const int n = t.size(CommGroup::kWorld), r = t.rank(CommGroup::kWorld);
  if (n == 1) GTEST_SKIP() << "needs two ranks";
  constexpr int kTag = 31;
  auto wait = [&](TransferId id) {
    while (true) {
      Result<bool> done = t.TestTransfer(id);
      if (!done.ok() || done.value()) return done.status();
    }
  };
  int64_t payload[2] = {1, 2}, half = 0;
  if (r == 0) {
    Result<TransferId> id = t.StartSend(payload, sizeof(payload), 1, kTag, CommGroup::kWorld);
    ASSERT_TRUE(id.ok());
    EXPECT_TRUE(wait(id.value()).ok());
  } else if (r == 1) {
    Result<TransferId> id = t.StartRecv(&half, sizeof(half), 0, kTag, CommGroup::kWorld);
    ASSERT_TRUE(id.ok());
    Status failed = wait(id.value());
    EXPECT_EQ(failed.code(), StatusCode::kTransportError) << failed.ToString();
    EXPECT_NE(failed.message().find("MPI_Testall"), std::string::npos) << failed.ToString();
    EXPECT_FALSE(t.TestTransfer(id.value()).ok());  // released: unknown now
  }
  if (r <= 1) {  // the pair still exchanges correctly
    int64_t mine = 40 + r, theirs = -1;
    Result<TransferId> out = t.StartSend(&mine, 8, 1 - r, kTag + 1, CommGroup::kWorld);
    Result<TransferId> in = t.StartRecv(&theirs, 8, 1 - r, kTag + 1, CommGroup::kWorld);
    ASSERT_TRUE(out.ok() && in.ok());
    EXPECT_TRUE(wait(in.value()).ok());
    EXPECT_TRUE(wait(out.value()).ok());
    EXPECT_EQ(theirs, 41 - r);
  }
}

TEST(Transport, OpenMpiYieldsWhenIdleOnlyOutsideTheLoopsPollingPasses) {
  // As ctest runs it: --mca mpi_yield_when_idle 1 (tests/cpp/CMakeLists.txt).
  const auto* yield_when_idle =
      static_cast<const volatile bool*>(dlsym(RTLD_DEFAULT, "opal_progress_yield_when_idle"));
  if (yield_when_idle == nullptr) GTEST_SKIP() << "not OpenMPI";
  const char* configured = std::getenv("OMPI_MCA_mpi_yield_when_idle");
  if (configured == nullptr || std::atoi(configured) == 0)
    GTEST_SKIP() << "the job runs without --mca mpi_yield_when_idle 1";
  Transport& t = World();
  EXPECT_TRUE(t.shares_cores());
  // The engine thread's own passes come and go meanwhile: outside ours, the
  // setting holds once they end.
  ASSERT_TRUE(Eventually([&] { return *yield_when_idle; }));
  const int n = t.size(CommGroup::kWorld), r = t.rank(CommGroup::kWorld);
  {
    const PollingPass pass(t);
    EXPECT_FALSE(*yield_when_idle);
    // A blocking call inside the pass yields as configured: rank 0 waits in
    // the barrier for a late rank 1 while a watcher reads the setting.
    std::atomic<bool> in_barrier{true}, saw_yielding{false};
    std::thread watcher([&] {
      while (in_barrier.load()) saw_yielding = saw_yielding || *yield_when_idle;
    });
    // 200 ms: under TSan at np 4 on two cores, 50 ms once passed without the
    // watcher being scheduled while the flag was up (a fresh-clone run).
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_TRUE(t.Barrier(CommGroup::kWorld).ok());
    in_barrier = false;
    watcher.join();
    if (r == 0 && n > 1) EXPECT_TRUE(saw_yielding) << "the barrier did not yield while it waited";
    EXPECT_FALSE(*yield_when_idle) << "the blocking call must hand polling back";
  }
  EXPECT_TRUE(Eventually([&] { return *yield_when_idle; }));
}

}  // namespace
}  // namespace flock::testing
