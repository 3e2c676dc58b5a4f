// Mailbox: early arrivals wait for their step, and "done" is kept per call,
// so a call that overtook an earlier one does not make the earlier one's
// arrivals stale.
#include "flock/neighbor/mailbox.h"

#include <gtest/gtest.h>

namespace flock {
namespace {

Arrival From(int rank) {
  Arrival a;
  a.from = rank;
  a.entry.type = NeighborEntryType::kData;
  return a;
}

TEST(Mailbox, ACallThatOvertookAnEarlierOneLeavesTheEarlierOneOpen) {
  Mailbox mailbox;
  mailbox.MarkDone("h/local-gather", 7);  // call 7 finished the step first
  EXPECT_TRUE(mailbox.Done("h/local-gather", 7));
  EXPECT_FALSE(mailbox.Done("h/local-gather", 6));  // call 6 is still coming
  EXPECT_FALSE(mailbox.Done("h/local-gather", 0));
  EXPECT_FALSE(mailbox.Done("h/machines", 7));  // another step of the same calls
}

TEST(Mailbox, TheWatermarkFollowsCallsDoneInAnyOrder) {
  Mailbox mailbox;
  for (int64_t seq : {2, 0, 3, 1, 5}) mailbox.MarkDone("x", seq);
  for (int64_t seq = 0; seq < 4; ++seq) EXPECT_TRUE(mailbox.Done("x", seq)) << seq;
  EXPECT_FALSE(mailbox.Done("x", 4));
  EXPECT_TRUE(mailbox.Done("x", 5));
  EXPECT_EQ(mailbox.done_above_watermark("x"), 1u);  // only 5 waits for 4
  mailbox.MarkDone("x", 4);
  mailbox.MarkDone("x", 1);  // again: no effect
  EXPECT_EQ(mailbox.done_above_watermark("x"), 0u);
  EXPECT_TRUE(mailbox.Done("x", 5));
  EXPECT_FALSE(mailbox.Done("x", 6));
}

TEST(Mailbox, KeptArrivalsComeBackForTheirStepOnlyInOrder) {
  Mailbox mailbox;
  mailbox.Keep("a", 1, From(3));
  mailbox.Keep("a", 1, From(2));
  mailbox.Keep("a", 2, From(4));
  mailbox.Keep("b", 1, From(5));
  EXPECT_TRUE(mailbox.Take("a", 0).empty());
  auto taken = mailbox.Take("a", 1);
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].from, 3);
  EXPECT_EQ(taken[1].from, 2);
  EXPECT_TRUE(mailbox.Take("a", 1).empty());  // taken once
  EXPECT_EQ(mailbox.kept_steps(), 2u);
  EXPECT_EQ(mailbox.TakeAll().size(), 2u);
  EXPECT_EQ(mailbox.kept_steps(), 0u);
}

TEST(Mailbox, StepKeysOfDifferentNamesAndCallsDiffer) {
  EXPECT_NE(StepKey("a1", 1), StepKey("a", 11));
  EXPECT_EQ(StepKey("h/machines", 3), StepKey("h/machines", 3));
}

}  // namespace
}  // namespace flock
