// Reducescatter and alltoall under MPI: the transport calls themselves, then
// the runtime's ops through the engine (fused reducescatters of uneven
// splits, alltoall with splits that include zeros), against a reference each
// rank computes from every rank's deterministic input.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <vector>

#include "flock/collectives/scatter_layout.h"
#include "flock/runtime/collectives.h"
#include "tests_runtime.h"

namespace flock::testing {
namespace {

double Value(int rank, int64_t i) {
  return static_cast<double>((rank * 7 + i * 3) % 11);
}

TEST(ScatterTransport, ReduceScatterBlockSums) {
  Transport& t = World();
  const int n = t.size(CommGroup::kWorld), r = t.rank(CommGroup::kWorld);
  const int64_t block = 5;
  std::vector<double> send(static_cast<size_t>(n * block)), recv(block, -1);
  for (int64_t i = 0; i < n * block; ++i) send[static_cast<size_t>(i)] = Value(r, i);
  ASSERT_TRUE(t.ReduceScatter(send.data(), recv.data(), block, DataType::kFloat64, ReduceOp::kSum,
                              CommGroup::kWorld)
                  .ok());
  for (int64_t i = 0; i < block; ++i) {
    double expected = 0;
    for (int k = 0; k < n; ++k) expected += Value(k, r * block + i);
    ASSERT_EQ(recv[static_cast<size_t>(i)], expected) << i;
  }
}

TEST(ScatterTransport, AlltoallvWithUnequalAndEmptyParts) {
  Transport& t = World();
  const int n = t.size(CommGroup::kWorld), r = t.rank(CommGroup::kWorld);
  auto bytes = [](int from, int to) { return static_cast<int64_t>((from + 2 * to) % 3); };
  std::vector<int64_t> send_bytes, recv_bytes;
  std::vector<char> send;
  for (int k = 0; k < n; ++k) {
    send_bytes.push_back(bytes(r, k));
    recv_bytes.push_back(bytes(k, r));
    send.insert(send.end(), static_cast<size_t>(bytes(r, k)), static_cast<char>('a' + r));
  }
  std::vector<char> recv(
      static_cast<size_t>(std::accumulate(recv_bytes.begin(), recv_bytes.end(), 0LL)) + 1, 0);
  send.push_back(0);
  ASSERT_TRUE(
      t.Alltoallv(send.data(), send_bytes, recv.data(), recv_bytes, CommGroup::kWorld).ok());
  size_t pos = 0;
  for (int k = 0; k < n; ++k) {
    for (int64_t b = 0; b < recv_bytes[static_cast<size_t>(k)]; ++b)
      ASSERT_EQ(recv[pos++], static_cast<char>('a' + k));
  }
}

// Several reducescatters submitted before any is waited for: the engine fuses them.
TEST(ScatterRuntime, UnevenReducescattersInFlightTogether) {
  Runtime& rt = *SharedRuntime();
  const int n = rt.size(), r = rt.rank();
  const std::vector<int64_t> rows = {1, 7, static_cast<int64_t>(3 * n + 1), 0, 2};
  std::vector<std::vector<float>> ins(rows.size()), outs(rows.size());
  std::vector<HandleId> handles;
  const int64_t fused_before = rt.engine().counters().Snapshot().at("fused_batches");
  for (size_t k = 0; k < rows.size(); ++k) {
    ins[k].resize(static_cast<size_t>(rows[k] * 2));
    for (size_t i = 0; i < ins[k].size(); ++i) ins[k][i] = static_cast<float>(Value(r, i));
    const std::vector<int64_t> out_shape = ReducescatterShape({rows[k], 2}, n, r);
    outs[k].assign(static_cast<size_t>(out_shape[0] * 2) + 1, -1.f);
    OpRequest op = MakeRequest(OpKind::kReducescatter, "rs." + std::to_string(k),
                               {ins[k].data(), DataType::kFloat32, {rows[k], 2}});
    op.reduce_op = ReduceOp::kSum;
    auto handle =
        rt.engine().Submit(std::move(op), {outs[k].data(), DataType::kFloat32, out_shape}, nullptr);
    ASSERT_TRUE(handle.ok()) << handle.status().ToString();
    handles.push_back(handle.value());
  }
  for (size_t k = 0; k < rows.size(); ++k) {
    auto done = rt.engine().Wait(handles[k], std::chrono::milliseconds(100), nullptr);
    ASSERT_TRUE(done.ok() && done.value().status.ok());
    const int64_t first = EvenRowSplit(rows[k], n).first_row[static_cast<size_t>(r)];
    for (size_t i = 0; i + 1 < outs[k].size(); ++i) {
      double expected = 0;
      for (int q = 0; q < n; ++q) expected += Value(q, first * 2 + static_cast<int64_t>(i));
      ASSERT_EQ(outs[k][i], expected) << "tensor " << k << " at " << i;
    }
    ASSERT_EQ(outs[k].back(), -1.f) << "wrote past the output";
  }
  EXPECT_GT(rt.engine().counters().Snapshot().at("fused_batches"), fused_before);
}

TEST(ScatterRuntime, AlltoallWithSplitsReturnsTheReceivedSplits) {
  Runtime& rt = *SharedRuntime();
  const int n = rt.size(), r = rt.rank();
  auto split = [n](int from) {
    std::vector<int64_t> s;
    for (int to = 0; to < n; ++to) s.push_back((from + 2 * to) % 3);
    return s;
  };
  const std::vector<int64_t> mine = split(r);
  const int64_t rows = std::accumulate(mine.begin(), mine.end(), int64_t{0});
  std::vector<int32_t> in(static_cast<size_t>(rows * 3) + 1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 1000 * r + static_cast<int32_t>(i);
  std::vector<int32_t> out;
  OutputAllocator allocate = [&](const std::vector<int64_t>& shape) -> Result<TensorView> {
    out.assign(static_cast<size_t>(shape[0] * 3), -1);
    return TensorView{out.data(), DataType::kInt32, shape};
  };
  std::vector<int64_t> received;
  AlltoallOptions options{mine, CommGroup::kWorld, "a2a"};
  ASSERT_TRUE(
      Alltoall(rt, {in.data(), DataType::kInt32, {rows, 3}}, allocate, options, &received).ok());
  size_t pos = 0;
  for (int from = 0; from < n; ++from) {
    const std::vector<int64_t> theirs = split(from);
    ASSERT_EQ(received[static_cast<size_t>(from)], theirs[static_cast<size_t>(r)]);
    const int64_t start = std::accumulate(theirs.begin(), theirs.begin() + r, int64_t{0});
    for (int64_t i = 0; i < theirs[static_cast<size_t>(r)] * 3; ++i)
      ASSERT_EQ(out[pos++], 1000 * from + static_cast<int32_t>(start * 3 + i));
  }
  ASSERT_EQ(pos, out.size());
}

TEST(ScatterRuntime, BadSplitsOnOneRankFailEveryRankThenTheNextWorks) {
  Runtime& rt = *SharedRuntime();
  const int n = rt.size(), r = rt.rank();
  std::vector<float> in(static_cast<size_t>(n), 1.f);
  std::vector<int64_t> splits(static_cast<size_t>(n), 1);
  if (r == n - 1) splits[0] = 2;  // sums to n + 1
  OutputAllocator allocate = [&](const std::vector<int64_t>&) -> Result<TensorView> {
    return Status::Internal("must not allocate after a rejection");
  };
  Status status = Alltoall(rt, {in.data(), DataType::kFloat32, {n}}, allocate,
                           {splits, CommGroup::kWorld, "a2a.bad"});
  EXPECT_EQ(status.code(), r == n - 1 ? StatusCode::kInvalidArgument : StatusCode::kAborted)
      << status.ToString();
  std::vector<float> out(1);
  ASSERT_TRUE(Reducescatter(rt, {in.data(), DataType::kFloat32, {n}},
                            {out.data(), DataType::kFloat32, {1}},
                            {ReduceOp::kSum, CommGroup::kWorld, "rs.after"})
                  .ok());
  EXPECT_EQ(out[0], static_cast<float>(n));
}

}  // namespace
}  // namespace flock::testing
