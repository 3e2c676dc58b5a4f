// Negotiator: the fusion window (a cycle after the latest request, ten after
// the first, at once on a flush), what an announcement says about the cache,
// and requests staying pending until answered.
#include "flock/engine/negotiator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace flock {
namespace {

using Clock = Negotiator::Clock;
using std::chrono::milliseconds;

const Clock::time_point kT0 = Clock::time_point() + std::chrono::hours(1);
double one_value = 1.0;

PendingRequest Request(const std::string& name, Clock::time_point at,
                       OpKind kind = OpKind::kAllreduce, bool auto_named = false) {
  PendingRequest r;
  r.op = MakeRequest(kind, name, TensorView{&one_value, DataType::kFloat64, {1}});
  r.op.auto_named = auto_named;
  r.submitted = at;
  return r;
}

TEST(Negotiator, TheWindowClosesACycleAfterTheLatestAndTenAfterTheFirst) {
  Negotiator n(5.0);
  EXPECT_FALSE(n.AnnounceDue(true, kT0));  // nothing to announce
  n.Add(Request("a", kT0));
  EXPECT_FALSE(n.AnnounceDue(false, kT0 + milliseconds(4)));
  EXPECT_TRUE(n.AnnounceDue(true, kT0));  // a thread waits
  for (int ms = 4; ms <= 60; ms += 4)
    n.Add(Request("b" + std::to_string(ms), kT0 + milliseconds(ms)));
  EXPECT_EQ(n.announce_deadline(), kT0 + milliseconds(50));
  EXPECT_TRUE(n.AnnounceDue(false, kT0 + milliseconds(50)));
}

TEST(Negotiator, AnnouncedRequestsStayPendingUntilAnswered) {
  Negotiator n(5.0);
  n.Add(Request("a", kT0));
  n.Add(Request("b", kT0 + milliseconds(1)));
  EXPECT_FALSE(n.awaiting_response());  // still in the window
  std::vector<ReadyEntry> entries = n.TakeAnnouncement();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "a");
  EXPECT_FALSE(n.has_unsent());
  EXPECT_TRUE(n.awaiting_response());
  EXPECT_EQ(n.oldest_submission(kT0 + milliseconds(9)), kT0);
  ASSERT_NE(n.Find("b"), nullptr);
  n.Erase("a");
  EXPECT_EQ(n.Find("a"), nullptr);
  std::vector<std::string> failed;
  n.Add(Request("c", kT0));
  n.TakeAll([&](PendingRequest& r) { failed.push_back(r.op.name); });
  EXPECT_EQ(failed.size(), 2u);  // b (announced) and c (in the window)
  EXPECT_TRUE(n.empty());
  EXPECT_FALSE(n.has_unsent());
}

TEST(Negotiator, AKnownNameAndSignatureIsAnnouncedByItsCacheId) {
  Negotiator n(5.0);
  n.Add(Request("grad", kT0));
  n.Add(Request("allreduce.7", kT0, OpKind::kAllreduce, /*auto_named=*/true));
  n.Add(Request("rows", kT0, OpKind::kAllgather));
  std::vector<ReadyEntry> first = n.TakeAnnouncement();
  EXPECT_EQ(first[0].cache_id, -1);                             // not cached yet
  EXPECT_EQ(first[1].cache_id, kDoNotCache);                    // auto-named: never cached
  EXPECT_EQ(first[2].cache_id, -1);                             // allgather: never looked up
  ASSERT_TRUE(n.cache().Store(0, "grad", first[0].signature));  // rank 0 assigned id 0
  n.Erase("grad");
  n.Add(Request("grad", kT0 + milliseconds(1)));
  EXPECT_EQ(n.TakeAnnouncement()[0].cache_id, 0);
}

}  // namespace
}  // namespace flock
