// The mismatch check as a pure function: signatures of several "ranks" built
// in-process, compared the way every rank compares them.
#include "flock/requests/op_signature.h"
#include "flock/collectives/collectives.h"

#include <gtest/gtest.h>

#include <limits>

namespace flock {
namespace {

OpRequest Request(DataType dtype, std::vector<int64_t> shape, std::string name = "w") {
  OpRequest r = MakeRequest(OpKind::kAllreduce, std::move(name),
                            TensorView{nullptr, dtype, std::move(shape)});
  r.reduce_op = ReduceOp::kSum;
  return r;
}

TEST(OpSignature, IdenticalRequestsAgree) {
  OpRequest r = Request(DataType::kFloat32, {4, 5});
  std::vector<OpSignature> all(5, MakeSignature(r));
  EXPECT_TRUE(CompareSignatures(r, all, 0).ok());
}

TEST(OpSignature, EachFieldIsNamedWithTheRanksThatDiffer) {
  OpRequest base = Request(DataType::kFloat32, {4, 5});
  struct Case {
    OpRequest other;
    const char* field;
  };
  OpRequest op = base;
  op.reduce_op = ReduceOp::kMax;
  OpRequest root = base;
  root.root = 2;
  OpRequest kind = base;
  kind.kind = OpKind::kBroadcast;
  OpRequest device = base;
  device.tensor.device = Device{DeviceType::kCUDA, 0};
  const Case cases[] = {{Request(DataType::kFloat64, {4, 5}), "dtype"},
                        {Request(DataType::kFloat32, {4, 6}), "shape"},
                        {Request(DataType::kFloat32, {20}), "shape"},
                        {Request(DataType::kFloat32, {4, 5}, "v"), "tensor name"},
                        {op, "reduction op"},
                        {root, "root rank"},
                        {kind, "op"},
                        {device, "device"}};
  for (const Case& c : cases) {
    std::vector<OpSignature> all = {MakeSignature(base), MakeSignature(base),
                                    MakeSignature(c.other), MakeSignature(c.other)};
    Status s = CompareSignatures(base, all, 0);
    ASSERT_EQ(s.code(), StatusCode::kMismatch) << c.field;
    EXPECT_NE(s.message().find(std::string("disagree on the ") + c.field), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("ranks 2, 3"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("'w'"), std::string::npos) << s.message();
  }
}

TEST(OpSignature, AllgatherIgnoresOnlyDimZero) {
  OpRequest a = Request(DataType::kInt32, {3, 2});
  a.kind = OpKind::kAllgather;
  OpRequest b = a;
  b.tensor.shape = {7, 2};
  EXPECT_TRUE(CompareSignatures(a, {MakeSignature(a), MakeSignature(b)}, 0).ok());
  OpRequest c = a;
  c.tensor.shape = {3, 3};
  Status s = CompareSignatures(a, {MakeSignature(a), MakeSignature(c)}, 0);
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_NE(s.message().find("only dim 0 may differ"), std::string::npos);
}

TEST(OpSignature, LongShapesAreComparedPastTheInlineDims) {
  std::vector<int64_t> shape(kSignatureMaxDims + 2, 1);
  OpRequest a = Request(DataType::kFloat32, shape);
  shape.back() = 2;
  OpRequest b = Request(DataType::kFloat32, shape);
  EXPECT_EQ(CompareSignatures(a, {MakeSignature(a), MakeSignature(b)}, 0).code(),
            StatusCode::kMismatch);
}

TEST(OpSignature, ALocalRejectionCancelsEveryRank) {
  OpRequest ok = Request(DataType::kFloat32, {1});
  OpRequest bad = ok;
  bad.local_status = Status::Unsupported("dtype int16 is not supported");
  std::vector<OpSignature> all = {MakeSignature(ok), MakeSignature(bad), MakeSignature(ok)};
  Status on_ok = CompareSignatures(ok, all, 0);
  EXPECT_EQ(on_ok.code(), StatusCode::kAborted);
  EXPECT_NE(on_ok.message().find("rank 1"), std::string::npos) << on_ok.message();
  Status on_bad = CompareSignatures(bad, all, 0);
  EXPECT_EQ(on_bad.code(), StatusCode::kUnsupported);
  EXPECT_NE(on_bad.message().find("int16"), std::string::npos);
}

}  // namespace
}  // namespace flock

namespace flock {
namespace {

TEST(PlanGather, RowsFromEveryRankIncludingNone) {
  // int32 rows of 3: ranks send 2, 0 and 5 rows.
  Result<GatherLayout> planned = PlanGather(DataType::kInt32, {2, 3}, {2, 0, 5});
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  const GatherLayout& layout = planned.value();
  EXPECT_EQ(layout.output_shape, (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(layout.recv_bytes, (std::vector<int64_t>{24, 0, 60}));
  EXPECT_EQ(layout.total_bytes, 84);
}

// Row counts come from other ranks (fuzzing found each; tests/fuzz/op_signatures
// and engine_responses/regressions hold the inputs).
TEST(PlanGather, RowCountsThatMakeNoOutputAreRefused) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(PlanGather(DataType::kFloat32, {2, 3}, {2, -1}).ok());       // once: a negative size
  EXPECT_FALSE(PlanGather(DataType::kFloat32, {2, 3}, {max / 8, 1}).ok());  // once: overflow
  EXPECT_FALSE(PlanGather(DataType::kUInt8, {2, 0}, {max, max}).ok());      // rows alone overflow
  EXPECT_TRUE(PlanGather(DataType::kUInt8, {2, 0}, {max, 0}).ok());
}

TEST(OpSignature, SignaturesFromOtherRanksAreChecked) {
  OpSignature s = MakeSignature(Request(DataType::kFloat32, {4, 5}));
  EXPECT_TRUE(CheckSignature(s).ok());
  struct Case {
    int64_t OpSignature::*field;
    int64_t value;
    const char* named;
  };
  const Case cases[] = {{&OpSignature::kind, 0, "op kind 0"},
                        {&OpSignature::dtype, 10, "dtype 10"},
                        {&OpSignature::reduce_op, -1, "reduction op -1"},
                        {&OpSignature::group, 9, "group 9"},
                        {&OpSignature::local_error, 8, "status code 8"},
                        {&OpSignature::ndim, -1, "ndim -1"}};
  for (const Case& c : cases) {
    OpSignature bad = s;
    bad.*c.field = c.value;
    const Status status = CheckSignature(bad);
    EXPECT_NE(status.message().find(c.named), std::string::npos) << status.message();
  }
  OpSignature huge = s;
  huge.dims[0] = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_FALSE(CheckSignature(huge).ok());
}

TEST(OpSignature, ComparingAMalformedSignatureStaysInBounds) {
  OpRequest r = Request(DataType::kFloat32, {4, 5});
  std::vector<OpSignature> all(2, MakeSignature(r));
  all[1].ndim = -1000;  // once: the shape was read from dims[-1000]
  const Status status = CompareSignatures(r, all, 0);
  EXPECT_NE(status.message().find("shape: rank 0 has [4, 5], rank 1 has []"), std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace flock
