// The engine's pure parts without threads or MPI: wire format, fusion plan,
// response cache, coordinator decisions, timeline file names.
#include <gtest/gtest.h>

#include <limits>

#include "flock/common/byte_io.h"
#include "flock/common/timeline.h"
#include "flock/engine/coordinator.h"
#include "flock/engine/fusion_planner.h"
#include "flock/engine/response_cache.h"
#include "flock/engine/wire.h"

namespace flock {
namespace {

OpSignature Sig(OpKind kind, DataType dtype, std::vector<int64_t> shape, const std::string& name,
                ReduceOp op = ReduceOp::kSum) {
  OpRequest r = MakeRequest(kind, name, TensorView{nullptr, dtype, std::move(shape)});
  r.reduce_op = op;
  return MakeSignature(r);
}

TEST(Wire, ReadyAndResponsesRoundTrip) {
  std::vector<ReadyEntry> entries = {
      {"a", -1, Sig(OpKind::kAllreduce, DataType::kFloat32, {3}, "a")}, {"bb", 7, {}}};
  auto decoded = DecodeReady(EncodeReady(entries));
  ASSERT_TRUE(decoded.ok());
  ASSERT_EQ(decoded.value().size(), 2u);
  EXPECT_EQ(decoded.value()[0].name, "a");
  EXPECT_TRUE(SameSignature(decoded.value()[0].signature, entries[0].signature));
  EXPECT_EQ(decoded.value()[1].cache_id, 7);

  Response r = MakeResponse(ResponseType::kError, OpKind::kAllgather, {"x", "y"});
  r.cache_ids = {1, -1};
  r.first_dims = {2, 0, 5};
  r.error = "boom";
  r.code = StatusCode::kMismatch;
  auto responses = DecodeResponses(EncodeResponses({r, MakeResponse(ResponseType::kFinal)}));
  ASSERT_TRUE(responses.ok());
  ASSERT_EQ(responses.value().size(), 2u);
  const Response& got = responses.value()[0];
  EXPECT_EQ(got.names, r.names);
  EXPECT_EQ(got.cache_ids, r.cache_ids);
  EXPECT_EQ(got.first_dims, r.first_dims);
  EXPECT_EQ(got.error, "boom");
  EXPECT_EQ(got.code, StatusCode::kMismatch);
  EXPECT_EQ(responses.value()[1].type, ResponseType::kFinal);
}

TEST(Wire, TruncatedMessagesAreRejected) {
  std::vector<char> bytes = EncodeReady({{"name", -1, {}}});
  bytes.pop_back();
  EXPECT_FALSE(DecodeReady(bytes).ok());
  std::vector<char> extra = EncodeResponses({});
  extra.push_back(0);
  EXPECT_FALSE(DecodeResponses(extra).ok());
}

// Malformed messages (fuzzing found each; tests/fuzz/engine_*/regressions
// holds the inputs): refused with a message naming what is wrong.
void ExpectRefused(const Result<std::vector<ReadyEntry>>& decoded, const std::string& what) {
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find(what), std::string::npos) << decoded.status().message();
}

TEST(Wire, ACountTheMessageCannotHoldIsRefusedBeforeAllocating) {
  Writer w;
  w.Put(uint32_t{0x7fffffff});  // once: 2^31 entries allocated from 4 bytes
  const std::vector<char> bytes = w.Take();
  ExpectRefused(DecodeReady(bytes), "entry count");
  auto responses = DecodeResponses(bytes);
  ASSERT_FALSE(responses.ok());
  EXPECT_NE(responses.status().message().find("response count"), std::string::npos);
}

TEST(Wire, AnnouncedSignaturesAreChecked) {
  auto announce = [](OpSignature s) { return DecodeReady(EncodeReady({{"x", kNotCached, s}})); };
  OpSignature s = Sig(OpKind::kAllreduce, DataType::kFloat32, {4}, "x");
  s.ndim = -3;  // once: an array index far before dims
  ExpectRefused(announce(s), "ndim -3");
  s = Sig(OpKind::kAllreduce, DataType::kFloat32, {1 << 30, 1 << 30, 1 << 30}, "x");
  ExpectRefused(announce(s), "2^63 bytes");  // once: signed overflow planning fusion
  s = Sig(OpKind::kAllgather, DataType::kFloat32, {}, "x");
  s.dims[0] = -5;  // a 0-d allgather: dims[0] still becomes this rank's row count
  ExpectRefused(announce(s), "unused dim -5");
  s = Sig(OpKind::kAllreduce, DataType::kFloat32, {4}, "x");
  s.dtype = 77;
  ExpectRefused(announce(s), "dtype 77");
  EXPECT_TRUE(announce(Sig(OpKind::kAllreduce, DataType::kFloat32, {4}, "x")).ok());
}

TEST(Wire, ResponsesTheEngineCannotRunAreRefused) {
  auto refused = [](Response r, const std::string& what) {
    auto decoded = DecodeResponses(EncodeResponses({r}));
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.status().message().find(what), std::string::npos)
        << decoded.status().message();
  };
  refused(MakeResponse(ResponseType::kExecute), "needs names");  // once: front() of nothing
  Response error = MakeResponse(ResponseType::kError, OpKind::kAllreduce, {"x"});
  refused(error, "status OK");  // once: the request completed as if it had run
  Response gather = MakeResponse(ResponseType::kExecute, OpKind::kAllgather, {"x"});
  gather.first_dims = {2, -1};
  refused(gather, "first dim -1");  // once: a negative output size
  gather.first_dims = {2, 1};
  gather.cache_ids = {0, 1};
  refused(gather, "2 cache ids for 1 names");
  gather.cache_ids = {-1};
  EXPECT_TRUE(DecodeResponses(EncodeResponses({gather})).ok());
}

TEST(ResponseCache, AWorkerStoresOnlyTheNextIdOrAKnownOne) {
  ResponseCache worker;
  const OpSignature s = Sig(OpKind::kAllreduce, DataType::kFloat32, {4}, "w");
  EXPECT_FALSE(worker.Store(0x7fffffff, "w", s));  // once: the cache grew to 2^31 entries
  EXPECT_EQ(worker.size(), 0u);
  EXPECT_TRUE(worker.Store(0, "w", s));
  EXPECT_TRUE(worker.Store(0, "w", s));
  EXPECT_TRUE(worker.Store(1, "v", s));
  EXPECT_FALSE(worker.Store(3, "u", s));
  EXPECT_EQ(worker.size(), 2u);
}

FusionCandidate Candidate(int64_t bytes, int64_t dtype = 0, OpKind kind = OpKind::kAllreduce) {
  FusionCandidate c;
  c.kind = kind;
  c.dtype = dtype;
  c.bytes = bytes;
  return c;
}

TEST(FusionPlanner, PacksCompatibleTensorsUpToTheThreshold) {
  // 100 tensors of 4 KB under a 64 MiB threshold: one batch.
  std::vector<FusionCandidate> small(100, Candidate(4096));
  auto plan = PlanFusion(small, 64 << 20);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].size(), 100u);
  // Threshold 10 KB: batches of two 4 KB tensors.
  plan = PlanFusion(std::vector<FusionCandidate>(5, Candidate(4096)), 10 * 1024);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0], (std::vector<size_t>{0, 1}));
  EXPECT_EQ(plan[2], (std::vector<size_t>{4}));
}

TEST(FusionPlanner, KeepsDtypesApartAndBigOrOtherOpsAlone) {
  std::vector<FusionCandidate> mixed = {Candidate(8, 1),
                                        Candidate(8, 2),
                                        Candidate(8, 1),
                                        Candidate(100, 1),
                                        Candidate(8, 1, OpKind::kBroadcast),
                                        Candidate(8, 2)};
  auto plan = PlanFusion(mixed, 64);
  // float batch {0, 2}, other dtype {1, 5}, the 100-byte tensor alone, the broadcast alone.
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0], (std::vector<size_t>{0, 2}));
  EXPECT_EQ(plan[1], (std::vector<size_t>{1, 5}));
  EXPECT_EQ(plan[2], (std::vector<size_t>{3}));
  EXPECT_EQ(plan[3], (std::vector<size_t>{4}));
  // Every candidate is planned exactly once.
  std::vector<int> seen(mixed.size());
  for (auto& batch : plan)
    for (size_t i : batch) ++seen[i];
  for (int s : seen) EXPECT_EQ(s, 1);
}

// A host tensor and a CUDA tensor never share a fusion buffer: it lives on one of them.
TEST(FusionPlanner, KeepsHostAndCudaTensorsApart) {
  std::vector<FusionCandidate> mixed(4, Candidate(8));
  mixed[1].device = mixed[3].device = static_cast<int64_t>(DeviceType::kCUDA);
  auto plan = PlanFusion(mixed, 64);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0], (std::vector<size_t>{0, 2}));
  EXPECT_EQ(plan[1], (std::vector<size_t>{1, 3}));
  OpSignature cuda = Sig(OpKind::kAllreduce, DataType::kFloat32, {2}, "c");
  cuda.device = static_cast<int64_t>(DeviceType::kCUDA);
  EXPECT_EQ(CandidateFrom(cuda, 2).device, static_cast<int64_t>(DeviceType::kCUDA));
}

TEST(FusionPlanner, AThresholdNearTheLimitDoesNotOverflow) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  auto plan = PlanFusion({Candidate(max - 1), Candidate(max - 1)}, max);
  EXPECT_EQ(plan.size(), 2u);  // their sum would overflow: two batches
}

TEST(ResponseCache, AssignLookupAndReplace) {
  ResponseCache cache;
  OpSignature a = Sig(OpKind::kAllreduce, DataType::kFloat32, {4}, "w");
  OpSignature b = Sig(OpKind::kAllreduce, DataType::kFloat32, {5}, "w");
  EXPECT_EQ(cache.Lookup("w", a), -1);
  const int32_t id = cache.Assign("w", a);
  EXPECT_EQ(cache.Lookup("w", a), id);
  EXPECT_EQ(cache.Lookup("w", b), -1);  // a new shape is sent in full
  EXPECT_EQ(cache.Assign("w", b), id);  // and replaces the entry under the same id
  EXPECT_TRUE(SameSignature(*cache.Find(id), b));
  ResponseCache worker;
  worker.Store(id, "w", b);
  EXPECT_EQ(worker.Lookup("w", b), id);
  EXPECT_EQ(cache.Find(99), nullptr);
}

TEST(Coordinator, ExecutesOnlyWhenEveryRankIsReadyAndFuses) {
  Coordinator c(3, 64 << 20);
  const auto now = Clock::now();
  std::vector<ReadyEntry> ab = {{"a", -1, Sig(OpKind::kAllreduce, DataType::kFloat32, {4}, "a")},
                                {"b", -1, Sig(OpKind::kAllreduce, DataType::kFloat32, {2}, "b")}};
  ASSERT_TRUE(c.AddReady(0, ab, now).ok());
  ASSERT_TRUE(c.AddReady(2, {ab[1], ab[0]}, now).ok());  // another order
  EXPECT_TRUE(c.TakeResponses().empty());
  ASSERT_TRUE(c.AddReady(1, ab, now).ok());
  auto responses = c.TakeResponses();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].type, ResponseType::kExecute);
  EXPECT_EQ(responses[0].names.size(), 2u);  // fused
  // The next round names them by cache id only.
  std::vector<ReadyEntry> cached = {{"a", responses[0].cache_ids[0], {}},
                                    {"b", responses[0].cache_ids[1], {}}};
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(c.AddReady(r, cached, now).ok());
  EXPECT_EQ(c.TakeResponses().at(0).names.size(), 2u);
  EXPECT_FALSE(c.AddReady(0, {{"zzz", 42, {}}}, now).ok());  // unknown id
}

TEST(ResponseCache, AFullCacheLeavesNewNamesUncachedAndKeepsOldOnes) {
  ResponseCache cache(2);
  OpSignature s = Sig(OpKind::kAllreduce, DataType::kFloat32, {4}, "w");
  const int32_t a = cache.Assign("a", s);
  const int32_t b = cache.Assign("b", s);
  EXPECT_GE(a, 0);
  EXPECT_GE(b, 0);
  EXPECT_EQ(cache.Assign("c", s), -1);
  EXPECT_EQ(cache.Lookup("c", s), -1);
  EXPECT_EQ(cache.Assign("a", s), a);  // a known name still gets its id
  EXPECT_EQ(cache.size(), 2u);
}

TEST(Coordinator, NeverCachesAutoNamedRequestsAndStopsAtCapacity) {
  Coordinator c(2, 64 << 20, /*cache_capacity=*/1);
  const auto now = Clock::now();
  const OpSignature s = Sig(OpKind::kAllreduce, DataType::kFloat32, {4}, "x");
  // Auto-named on one rank is enough: the name will not come back.
  ASSERT_TRUE(c.AddReady(0, {{"allreduce.0", kDoNotCache, s}}, now).ok());
  ASSERT_TRUE(c.AddReady(1, {{"allreduce.0", kNotCached, s}}, now).ok());
  EXPECT_EQ(c.TakeResponses().at(0).cache_ids, (std::vector<int32_t>{-1}));
  for (const char* name : {"first", "second"}) {
    for (int r = 0; r < 2; ++r) ASSERT_TRUE(c.AddReady(r, {{name, kNotCached, s}}, now).ok());
  }
  auto responses = c.TakeResponses();
  ASSERT_EQ(responses.size(), 1u);
  ASSERT_EQ(responses[0].cache_ids.size(), 2u);
  EXPECT_GE(responses[0].cache_ids[0], 0);  // "first" fills the only slot
  EXPECT_EQ(responses[0].cache_ids[1], -1);
}

TEST(Coordinator, MismatchBecomesOneErrorForEveryRank) {
  Coordinator c(2, 1 << 20);
  const auto now = Clock::now();
  ASSERT_TRUE(
      c.AddReady(0, {{"w", -1, Sig(OpKind::kAllreduce, DataType::kFloat32, {4}, "w")}}, now).ok());
  ASSERT_TRUE(
      c.AddReady(1, {{"w", -1, Sig(OpKind::kAllreduce, DataType::kFloat64, {4}, "w")}}, now).ok());
  auto responses = c.TakeResponses();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].type, ResponseType::kError);
  EXPECT_EQ(responses[0].code, StatusCode::kMismatch);
  EXPECT_NE(responses[0].error.find("disagree on the dtype"), std::string::npos);
}

TEST(Coordinator, AllgatherCarriesEveryRanksFirstDim) {
  Coordinator c(3, 1 << 20);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(c.AddReady(r, {{"g", -1, Sig(OpKind::kAllgather, DataType::kInt32, {r, 2}, "g")}},
                           Clock::now())
                    .ok());
  }
  auto responses = c.TakeResponses();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].first_dims, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(responses[0].cache_ids, (std::vector<int32_t>{-1}));
}

TEST(Coordinator, StallsAreFoundAndCanBeFailed) {
  Coordinator c(3, 1 << 20);
  const auto then = Clock::now() - std::chrono::seconds(10);
  ASSERT_TRUE(
      c.AddReady(1, {{"late", -1, Sig(OpKind::kAllreduce, DataType::kFloat32, {1}, "late")}}, then)
          .ok());
  EXPECT_TRUE(c.FindStalls(Clock::now(), 60).empty());
  auto stalls = c.FindStalls(Clock::now(), 5);
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_EQ(stalls[0].ready_ranks, (std::vector<int>{1}));
  EXPECT_EQ(stalls[0].missing_ranks, (std::vector<int>{0, 2}));
  c.FailStalled(stalls, "stalled");
  auto responses = c.TakeResponses();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].code, StatusCode::kAborted);
  EXPECT_EQ(c.pending_names(), 0u);
}

TEST(Coordinator, ShutdownFailsPendingThenFinishesWhenAllRanksLeave) {
  Coordinator c(2, 1 << 20);
  ASSERT_TRUE(c.AddReady(1, {{"x", -1, Sig(OpKind::kAllreduce, DataType::kFloat32, {1}, "x")}},
                         Clock::now())
                  .ok());
  c.AddShutdown(0);
  auto responses = c.TakeResponses();
  ASSERT_EQ(responses.size(), 2u);
  EXPECT_EQ(responses[0].type, ResponseType::kShuttingDown);
  EXPECT_EQ(responses[1].type, ResponseType::kError);
  EXPECT_FALSE(c.finished());
  c.AddShutdown(1);
  responses = c.TakeResponses();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].type, ResponseType::kFinal);
  EXPECT_TRUE(c.finished());
}

TEST(Timeline, RankPaths) {
  EXPECT_EQ(Timeline::RankPath("/tmp/t.json", 3), "/tmp/t.rank3.json");
  EXPECT_EQ(Timeline::RankPath("/tmp/t-{rank}.trace", 1), "/tmp/t-1.trace");
  EXPECT_EQ(Timeline::RankPath("/tmp.d/timeline", 0), "/tmp.d/timeline.rank0");
}

}  // namespace
}  // namespace flock
