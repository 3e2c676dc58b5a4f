// The row layouts of reducescatter and alltoall (collectives/scatter_layout.h),
// the fusion planner's treatment of them, and the wire's check that an
// unfusable op's execute response names one tensor.
#include "flock/collectives/scatter_layout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "flock/engine/fusion_planner.h"
#include "flock/engine/wire.h"

namespace flock {
namespace {

TEST(ScatterLayout, EvenRowSplitGivesTheFirstRanksTheExtraRows) {
  RowSplit split = EvenRowSplit(10, 4);
  EXPECT_EQ(split.rows, (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(split.first_row, (std::vector<int64_t>{0, 3, 6, 8}));
  EXPECT_EQ(split.most_rows, 3);
  split = EvenRowSplit(2, 3);  // fewer rows than ranks
  EXPECT_EQ(split.rows, (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(split.first_row, (std::vector<int64_t>{0, 1, 2}));
  split = EvenRowSplit(0, 2);
  EXPECT_EQ(split.rows, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(split.most_rows, 0);
  EXPECT_EQ(EvenRowSplit(12, 4).most_rows, 3);
}

TEST(ScatterLayout, ReducescatterShapeAndItsLocalChecks) {
  EXPECT_EQ(ReducescatterShape({7, 2}, 3, 0), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ReducescatterShape({7, 2}, 3, 2), (std::vector<int64_t>{2, 2}));
  float in[14] = {}, out[6] = {};
  TensorView input{in, DataType::kFloat32, {7, 2}};
  TensorView output{out, DataType::kFloat32, {3, 2}};
  EXPECT_TRUE(CheckReducescatter(input, output, ReduceOp::kSum, 3, 0).ok());
  EXPECT_EQ(CheckReducescatter(input, output, ReduceOp::kSum, 3, 2).code(),
            StatusCode::kInvalidArgument);  // rank 2's block has two rows
  TensorView scalar{in, DataType::kFloat32, {}};
  Status status = CheckReducescatter(scalar, scalar, ReduceOp::kSum, 3, 0);
  EXPECT_NE(status.message().find("at least one dimension"), std::string::npos);
  TensorView ints{in, DataType::kInt32, {7, 2}};
  TensorView int_out{out, DataType::kInt32, {3, 2}};
  EXPECT_EQ(CheckReducescatter(ints, int_out, ReduceOp::kAverage, 3, 0).code(),
            StatusCode::kUnsupported);
}

TEST(ScatterLayout, ResolveSplitsNamesWhatIsWrong) {
  EXPECT_EQ(ResolveSplits({}, 6, 3).value(), (std::vector<int64_t>{2, 2, 2}));
  auto message = [](Result<std::vector<int64_t>> r) { return r.status().message(); };
  EXPECT_NE(message(ResolveSplits({}, 7, 3)).find("does not divide evenly between 3 ranks"),
            std::string::npos);
  EXPECT_NE(message(ResolveSplits({1, 2}, 3, 3)).find("has 2 entries for 3 ranks"),
            std::string::npos);
  EXPECT_NE(message(ResolveSplits({4, -1, 0}, 3, 3)).find("negative"), std::string::npos);
  EXPECT_NE(message(ResolveSplits({2, 2, 0}, 3, 3)).find("more than dim 0 (3)"), std::string::npos);
  EXPECT_NE(message(ResolveSplits({1, 1, 0}, 3, 3)).find("adds up to 2, not dim 0 (3)"),
            std::string::npos);
  const int64_t huge = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(ResolveSplits({huge, huge}, 5, 2).ok());  // no overflow past the check
  EXPECT_EQ(ResolveSplits({0, 3, 0}, 3, 3).value(), (std::vector<int64_t>{0, 3, 0}));
}

TEST(ScatterLayout, PlanAlltoallCountsBytesFromEveryRanksSplits) {
  // Rank 0 sends 1 row to itself and 4 to rank 1; rank 1 sends 2 to rank 0, none to itself.
  const std::vector<int64_t> matrix = {1, 4, 2, 0};
  auto layout = PlanAlltoall(DataType::kFloat64, {5, 2, 3}, matrix, 2, 0, INT64_MAX);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout.value().send_bytes, (std::vector<int64_t>{48, 192}));
  EXPECT_EQ(layout.value().recv_bytes, (std::vector<int64_t>{48, 96}));
  EXPECT_EQ(layout.value().recv_rows, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(layout.value().output_shape, (std::vector<int64_t>{3, 2, 3}));
  EXPECT_EQ(layout.value().total_recv_bytes, 144);
  auto other = PlanAlltoall(DataType::kFloat64, {2, 2, 3}, matrix, 2, 1, INT64_MAX);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other.value().output_shape, (std::vector<int64_t>{4, 2, 3}));
}

// A limit one rank exceeds fails every rank alike: each checks every rank's totals.
TEST(ScatterLayout, PlanAlltoallRefusesWhatAnyRankCannotMove) {
  const std::vector<int64_t> matrix = {1, 1, 3, 0};  // rank 1 sends 3 rows, rank 0 receives 4
  for (int rank : {0, 1}) {
    auto layout = PlanAlltoall(DataType::kFloat32, {2}, matrix, 2, rank, 12);
    ASSERT_EQ(layout.status().code(), StatusCode::kUnsupported) << rank;
    EXPECT_NE(layout.status().message().find("rank 0 would receive 4 rows"), std::string::npos)
        << layout.status().message();
  }
  EXPECT_TRUE(PlanAlltoall(DataType::kFloat32, {2}, matrix, 2, 0, 16).ok());
  EXPECT_EQ(PlanAlltoall(DataType::kFloat32, {2}, {1, 1, 1, -1}, 2, 0, 16).status().code(),
            StatusCode::kInternal);
  EXPECT_EQ(PlanAlltoall(DataType::kFloat32, {2}, {1, 1, 1}, 2, 0, 16).status().code(),
            StatusCode::kInternal);
}

FusionCandidate Candidate(OpKind kind, int64_t bytes) {
  FusionCandidate c;
  c.kind = kind;
  c.bytes = bytes;
  return c;
}

TEST(ScatterLayout, ReducescattersFuseWithEachOtherOnlyAndAlltoallsNever) {
  std::vector<FusionCandidate> mixed = {
      Candidate(OpKind::kReducescatter, 8), Candidate(OpKind::kAllreduce, 8),
      Candidate(OpKind::kReducescatter, 8), Candidate(OpKind::kAlltoall, 8),
      Candidate(OpKind::kAlltoall, 8),      Candidate(OpKind::kAllreduce, 8)};
  auto plan = PlanFusion(mixed, 1024);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0], (std::vector<size_t>{0, 2}));
  EXPECT_EQ(plan[1], (std::vector<size_t>{1, 5}));
  EXPECT_EQ(plan[2], (std::vector<size_t>{3}));
  EXPECT_EQ(plan[3], (std::vector<size_t>{4}));
}

TEST(ScatterLayout, TheWireRefusesAFusedAlltoall) {
  Response fused = MakeResponse(ResponseType::kExecute, OpKind::kAlltoall, {"a", "b"});
  auto decoded = DecodeResponses(EncodeResponses({fused}));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("alltoall is never fused"), std::string::npos);
  fused.kind = OpKind::kReducescatter;
  EXPECT_TRUE(DecodeResponses(EncodeResponses({fused})).ok());
}

}  // namespace
}  // namespace flock
