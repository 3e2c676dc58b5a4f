// Ranks that disagree on the device of a neighbor op's call: the withdrawal
// message and rank 0's answer on the wire, the coordinator dropping the call's
// announcements (pending or still on their way) and no other, a rank's
// DeviceCalls noting a host-path entry for a device call once, and calls owed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flock/engine/coordinator.h"
#include "flock/engine/negotiator.h"
#include "flock/engine/wire.h"
#include "flock/neighbor/device_calls.h"

namespace flock {
namespace {

double one_value = 1.0;

OpRequest NeighborOp(const std::string& name) {
  return MakeRequest(OpKind::kNeighborAllreduce, name,
                     TensorView{&one_value, DataType::kFloat64, {1}});
}

ReadyEntry Entry(const std::string& name, int64_t call) {
  return {name, kNotCached, MakeSignature(NeighborOp(name)), call};
}

Withdrawal Withdraw(const std::string& name, int64_t call) {
  return {name, name, call, OpKind::kNeighborAllreduce, "ranks disagree on the device"};
}

TEST(DeviceConflictWire, AWithdrawalRoundTripsAndBadOnesAreRefused) {
  const Withdrawal w{"x", "x", 3, OpKind::kHierarchicalNeighborAllreduce, "why"};
  auto decoded = DecodeWithdrawal(EncodeWithdrawal(w));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded.value().call, 3);
  EXPECT_EQ(decoded.value().kind, OpKind::kHierarchicalNeighborAllreduce);
  EXPECT_EQ(decoded.value().reason, "why");

  for (Withdrawal bad : {Withdrawal{"x", "x", -1, OpKind::kNeighborAllreduce, "why"},
                         Withdrawal{"x", "x", 0, OpKind::kAllreduce, "why"},
                         Withdrawal{"", "x", 0, OpKind::kNeighborAllreduce, "why"},
                         Withdrawal{"x", "x", 0, OpKind::kNeighborAllreduce, ""}}) {
    auto refused = DecodeWithdrawal(EncodeWithdrawal(bad));
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("withdrawal"), std::string::npos);
  }
  std::vector<char> cut = EncodeWithdrawal(w);
  cut.pop_back();
  EXPECT_FALSE(DecodeWithdrawal(cut).ok());
  std::vector<char> extra = EncodeWithdrawal(w);
  extra.push_back(0);
  EXPECT_FALSE(DecodeWithdrawal(extra).ok());
}

TEST(DeviceConflictWire, CallNumbersTravelInEntriesAndAnswers) {
  auto entries = DecodeReady(EncodeReady({Entry("x", 7), {"y", 2, {}, -1}}));
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(entries.value()[0].call, 7);
  EXPECT_EQ(entries.value()[1].call, -1);

  Response withdrawn = MakeResponse(ResponseType::kWithdrawn, OpKind::kNeighborAllgather, {"x"});
  withdrawn.call = 4;
  withdrawn.error = "why";
  withdrawn.code = StatusCode::kMismatch;
  auto responses = DecodeResponses(EncodeResponses({withdrawn}));
  ASSERT_TRUE(responses.ok());
  EXPECT_EQ(responses.value()[0].type, ResponseType::kWithdrawn);
  EXPECT_EQ(responses.value()[0].call, 4);

  Response two_names = withdrawn;
  two_names.names.push_back("y");
  Response global = withdrawn;
  global.kind = OpKind::kAllreduce;
  Response no_call = withdrawn;
  no_call.call = -1;
  for (const Response& bad : {two_names, global, no_call})
    EXPECT_FALSE(DecodeResponses(EncodeResponses({bad})).ok());
}

TEST(DeviceConflictCoordinator, AWithdrawnCallFailsOnceAndItsLateEntriesAreDropped) {
  Coordinator c(3, 64 << 20);
  const auto now = Clock::now();
  ASSERT_TRUE(c.AddReady(0, {Entry("x", 0)}, now).ok());
  c.Withdraw(Withdraw("x", 0));
  c.Withdraw(Withdraw("x", 0));  // a second rank saw it too: one answer
  auto answers = c.TakeResponses();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].type, ResponseType::kWithdrawn);
  EXPECT_EQ(answers[0].names, std::vector<std::string>{"x"});
  EXPECT_EQ(answers[0].call, 0);
  EXPECT_EQ(answers[0].code, StatusCode::kMismatch);
  EXPECT_EQ(c.pending_names(), 0u);

  // Rank 1's announcement of call 0 was on its way: dropped, not left pending.
  ASSERT_TRUE(c.AddReady(1, {Entry("x", 0)}, now).ok());
  EXPECT_EQ(c.pending_names(), 0u);
  EXPECT_TRUE(c.TakeResponses().empty());

  // Call 1 on every rank runs.
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(c.AddReady(r, {Entry("x", 1)}, now).ok());
  answers = c.TakeResponses();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].type, ResponseType::kExecute);
}

TEST(DeviceConflictCoordinator, ARankAlreadyAtItsNextCallKeepsItsAnnouncement) {
  Coordinator c(2, 64 << 20);
  const auto now = Clock::now();
  ASSERT_TRUE(c.AddReady(0, {Entry("x", 0)}, now).ok());
  // Rank 1 ran call 0 on the host path and announced call 1 before the report came.
  ASSERT_TRUE(c.AddReady(1, {Entry("x", 1)}, now).ok());
  c.Withdraw(Withdraw("x", 0));
  EXPECT_EQ(c.TakeResponses().size(), 1u);
  ASSERT_EQ(c.pending_names(), 1u);
  ASSERT_TRUE(c.AddReady(0, {Entry("x", 1)}, now).ok());
  auto answers = c.TakeResponses();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].type, ResponseType::kExecute);
}

TEST(DeviceConflictCoordinator, NothingIsWithdrawnAfterAShutdown) {
  Coordinator c(2, 64 << 20);
  c.AddShutdown(1);
  (void)c.TakeResponses();
  c.Withdraw(Withdraw("x", 0));
  EXPECT_TRUE(c.TakeResponses().empty());
}

TEST(DeviceCalls, AHostPathEntryForADeviceCallIsOneConflict) {
  DeviceCalls calls(/*rank=*/2);
  OpRequest op = NeighborOp("x");
  calls.Begin(op, 5, {"x#5"});
  EXPECT_FALSE(calls.Intercept("x#4", 1));  // another call: the host path's
  EXPECT_TRUE(calls.Intercept("x#5", 1));
  EXPECT_TRUE(calls.Intercept("x#5", 3));  // still the device call's, not reported twice
  auto conflicts = calls.TakeConflicts();
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].call, 5);
  EXPECT_EQ(conflicts[0].match_name, "x");
  EXPECT_NE(conflicts[0].reason.find("rank 2 passed a CUDA tensor, rank 1 a CPU tensor"),
            std::string::npos);
  calls.End("x", 5);
  EXPECT_TRUE(calls.empty());
  EXPECT_FALSE(calls.Intercept("x#5", 1));
}

TEST(DeviceCalls, AnOwedCallFailsOnceWithRankZerosReason) {
  DeviceCalls calls(0);
  calls.Owe("x", 2, Status::Mismatch("disagree"));
  EXPECT_TRUE(calls.TakeOwed("x", 1).ok());
  Status owed = calls.TakeOwed("x", 2);
  EXPECT_EQ(owed.code(), StatusCode::kMismatch);
  EXPECT_EQ(owed.message(), "disagree");
  EXPECT_TRUE(calls.TakeOwed("x", 2).ok());
  EXPECT_EQ(calls.owed(), 0u);
}

TEST(DeviceConflictNegotiator, AWithdrawnRequestIsFinishedAndNeverAnnounced) {
  Negotiator n(5.0);
  PendingRequest mine;
  mine.op = NeighborOp("x");
  mine.neighbor_call = 3;
  n.Add(std::move(mine));
  std::vector<std::string> finished;
  n.TakeWithdrawn("x", 2, [&](PendingRequest& r) { finished.push_back(r.op.name); });
  EXPECT_TRUE(finished.empty());  // another call
  n.TakeWithdrawn("x", 3, [&](PendingRequest& r) { finished.push_back(r.op.name); });
  EXPECT_EQ(finished, std::vector<std::string>{"x"});
  EXPECT_TRUE(n.empty());
  EXPECT_TRUE(n.TakeAnnouncement().empty());
}

}  // namespace
}  // namespace flock
