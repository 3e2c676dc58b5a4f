// The window ops' pure parts: the wire format, a window's slots (replace,
// accumulate, read with and without reset, versions, p) and the edge locks
// (first come first served, local threads and other ranks, freeing).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "flock/window/edge_locks.h"
#include "flock/window/window.h"
#include "flock/window/window_wire.h"

namespace flock {
namespace {

std::shared_ptr<const std::vector<char>> Bytes(std::vector<char> v) {
  return std::make_shared<const std::vector<char>>(std::move(v));
}

TEST(WindowWire, MessagesRoundTripWithInlinePayloads) {
  const double values[3] = {1.5, -2, 4};
  WindowMessage m;
  m.type = WindowMessageType::kAccumulate;
  m.window = "w";
  m.op = 42;
  m.dtype = DataType::kFloat64;
  m.payload_bytes = sizeof(values);
  m.payload = reinterpret_cast<const char*>(values);
  m.with_p = true;
  m.p = 0.25;
  m.require_mutex = true;
  auto bytes = Bytes(EncodeWindowMessage(m));  // the inline payload points into it
  auto decoded = DecodeWindowMessage(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  const WindowMessage& d = decoded.value();
  EXPECT_EQ(d.type, WindowMessageType::kAccumulate);
  EXPECT_EQ(d.op, 42);
  EXPECT_TRUE(d.with_p && d.require_mutex);
  EXPECT_EQ(d.p, 0.25);
  ASSERT_EQ(d.payload_bytes, static_cast<int64_t>(sizeof(values)));
  EXPECT_EQ(std::memcmp(d.payload, values, sizeof(values)), 0);

  WindowMessage lane = m;
  lane.lane_tag = 30201;
  auto laned = DecodeWindowMessage(Bytes(EncodeWindowMessage(lane)));
  ASSERT_TRUE(laned.ok());
  EXPECT_EQ(laned.value().payload, nullptr);
  EXPECT_EQ(laned.value().lane_tag, 30201);
}

TEST(WindowWire, MalformedMessagesAreRefusedWithTheReason) {
  WindowMessage m;
  m.type = WindowMessageType::kAck;
  m.window = "w";
  std::vector<char> good = EncodeWindowMessage(m);
  std::vector<char> cut(good.begin(), good.end() - 1);
  EXPECT_NE(DecodeWindowMessage(Bytes(cut)).status().message().find("cut off"), std::string::npos);
  std::vector<char> bad_type = good;
  bad_type[0] = 99;
  EXPECT_FALSE(DecodeWindowMessage(Bytes(bad_type)).ok());
  WindowMessage error_on_request;
  error_on_request.type = WindowMessageType::kGetRequest;
  error_on_request.code = StatusCode::kInternal;
  error_on_request.error = "x";
  EXPECT_FALSE(DecodeWindowMessage(Bytes(EncodeWindowMessage(error_on_request))).ok());
  WindowMessage short_payload;  // claims 8 inline bytes, carries 7
  short_payload.type = WindowMessageType::kPut;
  short_payload.payload_bytes = 8;
  const double one = 1;
  short_payload.payload = reinterpret_cast<const char*>(&one);
  std::vector<char> bytes = EncodeWindowMessage(short_payload);
  bytes.pop_back();
  EXPECT_FALSE(DecodeWindowMessage(Bytes(bytes)).ok());
}

struct WindowFixture : ::testing::Test {
  std::vector<double> own{1, 2, 3};
  BufferPool pool;
  std::unique_ptr<Window> Make(bool zero_init) {
    WindowSpec spec{"w", 1,        TensorView{own.data(), DataType::kFloat64, {3}}, nullptr, {0, 2},
                    {2}, zero_init};
    return std::make_unique<Window>(spec, pool, nullptr);
  }
  WindowBuffer Filled(Window& w, double v) {
    WindowBuffer b = w.NewBuffer();
    for (int i = 0; i < 3; ++i) reinterpret_cast<double*>(b->data())[i] = v;
    return b;
  }
  static double At(const WindowBuffer& b, int i) { return reinterpret_cast<double*>(b->data())[i]; }
};

TEST_F(WindowFixture, SlotsStartAsACopyOrZero) {
  auto copy = Make(false);
  auto zero = Make(true);
  auto a = copy->Read({0, 2}, false);
  auto b = zero->Read({0, 2}, false);
  EXPECT_EQ(At(a.data[0], 2), 3);
  EXPECT_EQ(At(b.data[1], 0), 0);
  EXPECT_TRUE(copy->is_in_neighbor(2) && !copy->is_in_neighbor(1) && copy->is_out_neighbor(2));
}

TEST_F(WindowFixture, PutsReplaceAndCountAccumulatesAddAndDoNot) {
  auto made = Make(true);
  Window& w = *made;
  w.Replace(0, Filled(w, 5), true, 0.5);
  const double two[3] = {2, 2, 2};
  ASSERT_TRUE(w.Accumulate(2, two, 0.25).ok());
  ASSERT_TRUE(w.Accumulate(2, two, 0.25).ok());
  EXPECT_EQ(w.Versions(), (std::map<int, int64_t>{{0, 1}, {2, 0}}));
  auto snap = w.Read({0, 2}, false);
  EXPECT_EQ(At(snap.data[0], 1), 5);
  EXPECT_EQ(At(snap.data[1], 1), 4);
  EXPECT_EQ(snap.p, (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(w.Versions(), (std::map<int, int64_t>{{0, 0}, {2, 0}}));  // a read clears them
}

TEST_F(WindowFixture, AReaderKeepsWhatItReadAndResetCountsNothingTwice) {
  auto made = Make(true);
  Window& w = *made;
  const double one[3] = {1, 1, 1};
  ASSERT_TRUE(w.Accumulate(0, one, std::nullopt).ok());
  auto held = w.Read({0}, false);
  ASSERT_TRUE(w.Accumulate(0, one, std::nullopt).ok());  // not into the buffer held
  EXPECT_EQ(At(held.data[0], 0), 1);
  auto taken = w.Read({0}, true);
  EXPECT_EQ(At(taken.data[0], 0), 2);
  ASSERT_TRUE(w.Accumulate(0, one, std::nullopt).ok());  // after the reset: counted once
  EXPECT_EQ(At(w.Read({0}, true).data[0], 0), 1);
  EXPECT_EQ(At(taken.data[0], 0), 2);
}

TEST(EdgeLocks, FirstComeFirstServedAcrossThreadsAndRanks) {
  std::atomic<int> notified{0};
  EdgeLocks locks([&] { ++notified; });
  ASSERT_TRUE(locks.LockLocal({3}));
  EXPECT_FALSE(locks.LockRemote(3, 3, 7, EdgeLocks::Purpose::kMutex));  // queued
  std::atomic<bool> second_holds{false};
  std::thread second([&] {
    ASSERT_TRUE(locks.LockLocal({3}));
    second_holds = true;
    locks.UnlockLocal({3});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  locks.UnlockLocal({3});  // rank 3 asked first: it gets the slot
  auto grants = locks.TakeGrants();
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].rank, 3);
  EXPECT_EQ(grants[0].op, 7);
  EXPECT_GE(notified.load(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(second_holds.load());
  locks.UnlockRemote(3, 3);
  second.join();
  EXPECT_TRUE(second_holds.load());
  EXPECT_TRUE(locks.LockRemote(3, 3, 8, EdgeLocks::Purpose::kMutex));  // free again
}

TEST(EdgeLocks, FreeingLetsWaitersGo) {
  EdgeLocks locks(nullptr);
  ASSERT_TRUE(locks.LockLocal({1}));
  std::atomic<bool> gave_up{false};
  std::thread waiter([&] { gave_up = !locks.LockLocal({1}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  locks.ReleaseAll();
  waiter.join();
  EXPECT_TRUE(gave_up.load());
}

}  // namespace
}  // namespace flock
