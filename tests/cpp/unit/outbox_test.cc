// Outbox: one message per peer, split only past the inline byte limit; lane
// tags cycle per peer; entries the exchange no longer wants are dropped; due
// a cycle after the last entry, ten after the first, or at once when urgent.
#include "flock/neighbor/outbox.h"

#include <gtest/gtest.h>

namespace flock {
namespace {

using Clock = Outbox::Clock;

Outbound Data(int64_t bytes, bool lane, int index = 0) {
  Outbound ob;
  ob.entry.type = NeighborEntryType::kData;
  ob.entry.payload_bytes = bytes;
  ob.entry.lane_tag = lane ? 0 : -1;
  ob.step_key = "step";
  ob.out_index = index;
  return ob;
}

const auto kKeepAll = [](int, const Outbound&) { return true; };

TEST(Outbox, EveryEntryForAPeerLeavesInOneMessageInQueueOrder) {
  Outbox outbox(1000, 5);
  const auto now = Clock::now();
  outbox.Queue(3, Data(10, false, 0), now);
  outbox.Queue(1, Data(10, false, 1), now);
  outbox.Queue(3, Data(10, false, 2), now);
  auto messages = outbox.Take(kKeepAll);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].peer, 1);
  EXPECT_EQ(messages[1].peer, 3);
  ASSERT_EQ(messages[1].entries.size(), 2u);
  EXPECT_EQ(messages[1].sources[0].out_index, 0);
  EXPECT_EQ(messages[1].sources[1].out_index, 2);
  EXPECT_TRUE(outbox.empty());
}

TEST(Outbox, InlineBytesPastTheLimitStartANewMessageLanesDoNot) {
  Outbox outbox(100, 5);
  const auto now = Clock::now();
  for (int64_t bytes : {60, 30, 5000, 5, 500, 1}) outbox.Queue(0, Data(bytes, bytes == 5000), now);
  auto messages = outbox.Take(kKeepAll);
  // [60 30 lane 5]: 95 inline bytes; 500 alone (past the limit, never dropped); [1].
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].entries.size(), 4u);
  EXPECT_EQ(messages[1].entries.size(), 1u);
  EXPECT_EQ(messages[1].entries[0].payload_bytes, 500);
  EXPECT_EQ(messages[2].entries.size(), 1u);
}

TEST(Outbox, LaneTagsCycleThroughTheirRangePerPeer) {
  Outbox outbox(1 << 20, 5);
  const auto now = Clock::now();
  std::vector<int> tags_of_peer_2;
  for (int round = 0; round < Outbox::kLaneTagRange + 2; ++round) {
    outbox.Queue(2, Data(8, true), now);
    if (round == 0) outbox.Queue(5, Data(8, true), now);
    for (const OutboxMessage& m : outbox.Take(kKeepAll)) {
      if (m.peer == 5) EXPECT_EQ(m.entries[0].lane_tag, Outbox::kLaneTagBase);
      if (m.peer == 2) tags_of_peer_2.push_back(m.entries[0].lane_tag);
    }
  }
  EXPECT_EQ(tags_of_peer_2[0], Outbox::kLaneTagBase);
  EXPECT_EQ(tags_of_peer_2[1], Outbox::kLaneTagBase + 1);
  EXPECT_EQ(tags_of_peer_2[Outbox::kLaneTagRange - 1],
            Outbox::kLaneTagBase + Outbox::kLaneTagRange - 1);
  EXPECT_EQ(tags_of_peer_2[Outbox::kLaneTagRange], Outbox::kLaneTagBase);  // wrapped
  EXPECT_LT(Outbox::kLaneTagBase + Outbox::kLaneTagRange, 32767);
}

TEST(Outbox, DroppedEntriesTakeNoLaneTagAndNoMessage) {
  Outbox outbox(1 << 20, 5);
  const auto now = Clock::now();
  outbox.Queue(0, Data(8, true, 0), now);
  outbox.Queue(0, Data(8, true, 1), now);
  outbox.Queue(4, Data(8, false, 2), now);
  auto messages = outbox.Take([](int peer, const Outbound& ob) {
    return peer != 4 && ob.out_index != 0;  // peer 4 left; send 0's step ended
  });
  ASSERT_EQ(messages.size(), 1u);
  ASSERT_EQ(messages[0].entries.size(), 1u);
  EXPECT_EQ(messages[0].entries[0].lane_tag, Outbox::kLaneTagBase);
}

TEST(Outbox, DueACycleAfterTheLastEntryTenAfterTheFirstOrWhenUrgent) {
  using std::chrono::milliseconds;
  Outbox outbox(1 << 20, 5);
  const auto t0 = Clock::now();
  EXPECT_FALSE(outbox.Due(true, t0));  // nothing queued
  outbox.Queue(0, Data(8, false), t0);
  EXPECT_FALSE(outbox.Due(false, t0 + milliseconds(4)));
  EXPECT_TRUE(outbox.Due(false, t0 + milliseconds(5)));
  EXPECT_TRUE(outbox.Due(true, t0));
  for (int ms = 4; ms <= 48; ms += 4) outbox.Queue(0, Data(8, false), t0 + milliseconds(ms));
  EXPECT_EQ(outbox.deadline(), t0 + milliseconds(50));  // ten cycles after the first
  outbox.Take(kKeepAll);
  outbox.Queue(0, Data(8, false), t0);
  outbox.MarkUrgent();
  EXPECT_TRUE(outbox.Due(false, t0));
}

}  // namespace
}  // namespace flock
