// The neighbor-op wire format (round trips, corruption) and the weighted
// kernels neighbor ops reduce with (float16/bfloat16 accumulate in float32).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "flock/common/half.h"
#include "flock/common/weighted_kernels.h"
#include "flock/neighbor/neighbor_wire.h"

namespace flock {
namespace {

TEST(NeighborWire, RoundTripKeepsEveryFieldAndInlineBytes) {
  const float values[3] = {1.5f, -2.0f, 4.25f};
  std::vector<NeighborEntry> entries(4);
  entries[0].type = NeighborEntryType::kData;
  entries[0].name = "layer.weight";
  entries[0].seq = 7;
  entries[0].kind = 5;
  entries[0].dtype = DataType::kFloat32;
  entries[0].shape = {3};
  entries[0].scale = 0.25;
  entries[0].check = true;
  entries[0].payload_bytes = sizeof(values);
  entries[0].payload = reinterpret_cast<const char*>(values);
  entries[1].type = NeighborEntryType::kData;
  entries[1].name = "big";
  entries[1].shape = {1 << 18};
  entries[1].lane_tag = 123;
  entries[1].payload_bytes = 1 << 20;  // travels in a lane: no bytes here
  entries[2].type = NeighborEntryType::kReject;
  entries[2].name = "x";
  entries[2].code = StatusCode::kMismatch;
  entries[2].message = "shape differs";
  entries[3].type = NeighborEntryType::kGoodbye;

  auto bytes = std::make_shared<const std::vector<char>>(EncodeNeighborMessage(entries));
  EXPECT_LT(bytes->size(), 300u);
  auto decoded = DecodeNeighborMessage(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded.value().size(), 4u);
  const NeighborEntry& d = decoded.value()[0];
  EXPECT_EQ(d.name, "layer.weight");
  EXPECT_EQ(d.seq, 7);
  EXPECT_EQ(d.kind, 5);
  EXPECT_EQ(d.shape, std::vector<int64_t>{3});
  EXPECT_DOUBLE_EQ(d.scale, 0.25);
  EXPECT_TRUE(d.check);
  EXPECT_EQ(d.lane_tag, -1);
  ASSERT_EQ(d.payload_bytes, static_cast<int64_t>(sizeof(values)));
  EXPECT_EQ(reinterpret_cast<const float*>(d.payload)[2], 4.25f);
  // Readable in place as any element type: 8-byte aligned in the message.
  EXPECT_EQ((d.payload - bytes->data()) % 8, 0);
  EXPECT_EQ(decoded.value()[1].lane_tag, 123);
  EXPECT_EQ(decoded.value()[2].code, StatusCode::kMismatch);
  EXPECT_EQ(decoded.value()[2].message, "shape differs");
  EXPECT_EQ(decoded.value()[3].type, NeighborEntryType::kGoodbye);
}

TEST(NeighborWire, TruncatedOrForeignMessagesAreRejected) {
  std::vector<NeighborEntry> entries(1);
  entries[0].name = "t";
  entries[0].shape = {0};
  std::vector<char> good = EncodeNeighborMessage(entries);
  ASSERT_TRUE(DecodeNeighborMessage(std::make_shared<const std::vector<char>>(good)).ok());
  for (size_t cut : {size_t{0}, size_t{3}, good.size() - 1}) {
    auto bytes = std::make_shared<const std::vector<char>>(good.begin(), good.begin() + cut);
    EXPECT_FALSE(DecodeNeighborMessage(bytes).ok()) << cut;
  }
  std::vector<char> foreign = good;
  foreign[0] ^= 0x5a;
  EXPECT_FALSE(DecodeNeighborMessage(std::make_shared<const std::vector<char>>(foreign)).ok());
}

// Malformed messages (fuzzing found each; tests/fuzz/neighbor_message/regressions
// holds the inputs): refused with a message naming the entry and what is wrong.
void ExpectRefused(const std::vector<NeighborEntry>& entries, const std::string& what) {
  auto decoded = DecodeNeighborMessage(
      std::make_shared<const std::vector<char>>(EncodeNeighborMessage(entries)));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find(what), std::string::npos) << decoded.status().message();
}

TEST(NeighborWire, PayloadSizesMustMatchTheShape) {
  // Delivery reduces shape-many elements from the payload, or copies
  // payload_bytes into a buffer of the shape's size: once, a short payload was
  // read past the message and a long one written past the call's output.
  const float values[4] = {1, 2, 3, 4};
  NeighborEntry e;
  e.name = "w";
  e.shape = {4};
  e.payload = reinterpret_cast<const char*>(values);
  e.payload_bytes = 12;
  ExpectRefused({e}, "entry 0 of 1: 12 payload bytes for a float32 tensor of shape [4]");
  e.shape = {2};
  e.payload_bytes = 16;
  ExpectRefused({e}, "16 payload bytes for a float32 tensor of shape [2]");
  e.shape = {1 << 18};  // a lane: the receiver posts payload_bytes into a buffer of the shape
  e.lane_tag = 5;
  e.payload_bytes = 1 << 30;
  ExpectRefused({e}, "payload bytes");
  e.shape = {-1, -4};
  e.payload_bytes = 16;
  ExpectRefused({e}, "negative dim");
}

TEST(NeighborWire, UnknownValuesAndImpossibleCountsAreRefused) {
  NeighborEntry reject;
  reject.type = NeighborEntryType::kReject;
  reject.name = "w";
  reject.code = StatusCode::kOk;  // once: the pair counted as answered, without data
  ExpectRefused({reject}, "rejection with status code 0");
  NeighborEntry expect;
  expect.type = NeighborEntryType::kExpect;
  expect.dtype = static_cast<DataType>(200);
  ExpectRefused({expect}, "dtype 200");
  std::vector<char> bytes = EncodeNeighborMessage({});
  bytes[4] = bytes[5] = bytes[6] = static_cast<char>(0xff);  // ~2^24 entries in 8 bytes
  auto decoded = DecodeNeighborMessage(std::make_shared<const std::vector<char>>(bytes));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("entry count"), std::string::npos);
}

TEST(WeightedKernels, HalfTypesAccumulateInFloat32) {
  EXPECT_EQ(AccumulatorType(DataType::kFloat16), DataType::kFloat32);
  EXPECT_EQ(AccumulatorType(DataType::kBFloat16), DataType::kFloat32);
  EXPECT_EQ(AccumulatorType(DataType::kFloat64), DataType::kFloat64);
  // 1 + 1000 * 2^-11: each 2^-11 alone would vanish next to 1 in float16.
  const Float16 one = ToFloat16(1.0f), tiny = ToFloat16(1.0f / 2048);
  float acc = 0;
  ASSERT_TRUE(WeightedStore(&acc, &one, DataType::kFloat16, 1.0, 1).ok());
  for (int i = 0; i < 1000; ++i)
    ASSERT_TRUE(WeightedAccumulate(&acc, &tiny, DataType::kFloat16, 1.0, 1).ok());
  Float16 out;
  ASSERT_TRUE(StoreAccumulator(&out, &acc, DataType::kFloat16, 1).ok());
  EXPECT_NEAR(ToFloat(out), 1.0f + 1000.0f / 2048, 1e-3);
}

TEST(WeightedKernels, Float64IsExactForPowersOfTwo) {
  const double x[2] = {0x1p-256, 1.0};
  double acc[2];
  ASSERT_TRUE(WeightedStore(acc, x, DataType::kFloat64, 1.0, 2).ok());
  ASSERT_TRUE(WeightedAccumulate(acc, x, DataType::kFloat64, 1.0, 2).ok());
  EXPECT_EQ(acc[0], 0x1p-255);
  EXPECT_EQ(acc[1], 2.0);
  EXPECT_FALSE(WeightedStore(acc, x, DataType::kInt32, 1.0, 1).ok());
}

TEST(WeightedKernels, PairIsStoreThenAccumulateInOnePass) {
  const float x[3] = {1.0f, -2.0f, 0.5f}, y[3] = {4.0f, 8.0f, -16.0f};
  float pair[3], twice[3];
  ASSERT_TRUE(WeightedPair(pair, x, 0.5, y, 0.25, DataType::kFloat32, 3).ok());
  ASSERT_TRUE(WeightedStore(twice, x, DataType::kFloat32, 0.5, 3).ok());
  ASSERT_TRUE(WeightedAccumulate(twice, y, DataType::kFloat32, 0.25, 3).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pair[i], twice[i]) << i;
  const BFloat16 bx = ToBFloat16(3.0f), by = ToBFloat16(5.0f);
  float acc = 0;
  ASSERT_TRUE(WeightedPair(&acc, &bx, 1.0, &by, 2.0, DataType::kBFloat16, 1).ok());
  EXPECT_EQ(acc, 13.0f);  // accumulated in float32
  EXPECT_FALSE(WeightedPair(pair, x, 1.0, y, 1.0, DataType::kInt64, 1).ok());
}

}  // namespace
}  // namespace flock
