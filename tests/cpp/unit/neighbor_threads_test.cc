// Neighbor ops through the engine with ranks played by threads (ThreadTransport):
// results against a dense reference, inline and lane transfers, any order,
// and mismatches failing both ranks of a pair. Runs under ThreadSanitizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "../support/engine_requests.h"
#include "../support/engines_on_threads.h"
#include "flock/engine/engine.h"
#include "flock/neighbor/op_steps.h"

namespace flock {
namespace {

using testing::Plan;
using testing::SubmitNeighbor;
using testing::WaitFor;

void OnRanks(int size, const std::function<void(int, Engine&)>& body, int64_t inline_bytes) {
  Config config;
  config.cycle_time_ms = 1.0;
  config.neighbor_inline_bytes = inline_bytes;
  testing::OnRanks(size, config, body);
}

// Ring i -> i+1 and i -> i-1 with uniform weights 1/3; input of rank r: r + k/1000.
struct RingCase {
  int size;
  int64_t count;
  int64_t inline_bytes;
};

class NeighborRing : public ::testing::TestWithParam<RingCase> {};

TEST_P(NeighborRing, MatchesTheDenseMixing) {
  const RingCase c = GetParam();
  OnRanks(
      c.size,
      [&](int rank, Engine& engine) {
        const int n = c.size;
        const int left = (rank + n - 1) % n, right = (rank + 1) % n;
        std::vector<NeighborRecv> src;
        std::vector<int> dst;
        if (n > 1) {
          src = {{left, 1.0 / 3}, {right, 1.0 / 3}};
          dst = {left, right};
          if (left == right) src = {{left, 2.0 / 3}}, dst = {left};  // n == 2
        }
        const double self = n > 1 ? 1.0 / 3 : 1.0;
        std::vector<double> in(static_cast<size_t>(c.count)), out(in.size(), -1);
        for (int64_t k = 0; k < c.count; ++k) in[static_cast<size_t>(k)] = rank + k / 1000.0;
        const std::vector<double> original = in;
        HandleId h = SubmitNeighbor(engine, "ring", in, out, Plan(self, src, dst));
        const Status status = WaitFor(engine, h);
        ASSERT_TRUE(status.ok()) << "rank " << rank << ": " << status.ToString();
        EXPECT_EQ(in, original);  // never modified
        // Reference: out = Σ_j W[j][rank] x_j, W from the ring definition.
        for (int64_t k = 0; k < c.count; k += std::max<int64_t>(1, c.count / 7)) {
          double expected = 0;
          for (int j = 0; j < n; ++j) {
            double w = 0;
            if (j == rank)
              w = self;
            else if (n > 1 && (j == left || j == right))
              w = n == 2 ? 2.0 / 3 : 1.0 / 3;
            expected += w * (j + k / 1000.0);
          }
          ASSERT_NEAR(out[static_cast<size_t>(k)], expected, 1e-12)
              << "rank " << rank << " k " << k;
        }
      },
      c.inline_bytes);
}

INSTANTIATE_TEST_SUITE_P(SizesAndLanes, NeighborRing,
                         ::testing::Values(RingCase{1, 10, 1 << 16}, RingCase{2, 10, 1 << 16},
                                           RingCase{3, 1000, 1 << 16}, RingCase{5, 1000, 64},
                                           RingCase{4, 0, 1 << 16}, RingCase{4, 100000, 1024}));

// Rank 0 sends inline, ranks 1 and 2 in lanes: every rank of the ring of 3
// mixes the two, and the first lane it hears of lands in the output itself
// (see Step::acc_lane) while others use the scratch buffer or arrive inline
// meanwhile. Many calls, so arrivals come in every order.
TEST(NeighborThreads, InlineAndLaneContributionsAddUpInAnyOrder) {
  constexpr int kSize = 3;
  constexpr int64_t kCount = 2000;  // 16 KB of float64
  auto config_of = [](int rank) {
    Config config;
    config.cycle_time_ms = 1.0;
    config.neighbor_inline_bytes = rank == 0 ? 1 << 20 : 64;
    return config;
  };
  testing::OnRanks(kSize, config_of, [&](int rank, Engine& engine) {
    const int left = (rank + kSize - 1) % kSize, right = (rank + 1) % kSize;
    const NeighborPlan plan = Plan(0.5, {{left, 0.25}, {right, 0.25}}, {left, right});
    for (int call = 0; call < 30; ++call) {
      std::vector<double> in(kCount), out(kCount, -1);
      for (int64_t k = 0; k < kCount; ++k) in[static_cast<size_t>(k)] = rank * 1000 + k + call;
      HandleId h = SubmitNeighbor(engine, "mixed", in, out, plan);
      const Status status = WaitFor(engine, h);
      ASSERT_TRUE(status.ok()) << "rank " << rank << ": " << status.ToString();
      for (int64_t k = 0; k < kCount; ++k) {
        const double expected = 0.5 * (rank * 1000 + k + call) + 0.25 * (left * 1000 + k + call) +
                                0.25 * (right * 1000 + k + call);
        ASSERT_DOUBLE_EQ(out[static_cast<size_t>(k)], expected)
            << "rank " << rank << " call " << call << " k " << k;
      }
    }
  });
}

TEST(NeighborThreads, AnyOrderManyNamesFusedPerPeer) {
  OnRanks(
      3,
      [&](int rank, Engine& engine) {
        const int n = 3, next = (rank + 1) % n, prev = (rank + 2) % n;
        std::vector<int> order(40);
        for (int i = 0; i < 40; ++i) order[static_cast<size_t>(i)] = i;
        std::shuffle(order.begin(), order.end(), std::mt19937(rank + 11));
        std::vector<std::vector<double>> in(40), out(40);
        std::vector<HandleId> handles(40);
        const int64_t messages_before = engine.counters().neighbor_messages;
        for (int i : order) {
          in[static_cast<size_t>(i)].assign(4, rank * 100.0 + i);
          out[static_cast<size_t>(i)].assign(4, 0);
          handles[static_cast<size_t>(i)] =
              SubmitNeighbor(engine, "t" + std::to_string(i), in[static_cast<size_t>(i)],
                             out[static_cast<size_t>(i)], Plan(0.5, {{prev, 0.5}}, {next}));
        }
        for (int i = 0; i < 40; ++i) {
          ASSERT_TRUE(WaitFor(engine, handles[static_cast<size_t>(i)]).ok());
          EXPECT_DOUBLE_EQ(out[static_cast<size_t>(i)][0],
                           0.5 * (rank * 100.0 + i) + 0.5 * (prev * 100.0 + i));
        }
        // Data and notices to the one peer travel together: far fewer messages than tensors.
        EXPECT_LE(engine.counters().neighbor_messages - messages_before, 20);
      },
      1 << 16);
}

TEST(NeighborThreads, UnexpectedSenderFailsBothRanksAndTheNextCallWorks) {
  OnRanks(
      2,
      [&](int rank, Engine& engine) {
        std::vector<double> in(3, rank), out(3);
        // Rank 1 sends to 0, but rank 0 does not receive from 1.
        NeighborPlan plan = rank == 0 ? Plan(1.0, {}, {}) : Plan(1.0, {}, {0});
        Status status = WaitFor(engine, SubmitNeighbor(engine, "bad", in, out, plan));
        // Rank 0's call needs no one and may end first; the sender, waiting for
        // rank 0's confirmation, is told its data was not expected.
        if (rank == 1) {
          EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.ToString();
          EXPECT_NE(status.message().find("does not receive from it"), std::string::npos);
        }
        NeighborPlan ok = Plan(0.5, {{1 - rank, 0.5}}, {1 - rank});
        EXPECT_TRUE(WaitFor(engine, SubmitNeighbor(engine, "good", in, out, ok)).ok());
        EXPECT_DOUBLE_EQ(out[0], 0.5);
      },
      1 << 16);
}

TEST(NeighborThreads, MissingSenderFailsTheReceiverInsteadOfHanging) {
  OnRanks(
      2,
      [&](int rank, Engine& engine) {
        std::vector<double> in(3, rank), out(3);
        // Rank 0 expects rank 1's tensor; rank 1 sends nothing.
        NeighborPlan plan = rank == 0 ? Plan(0.5, {{1, 0.5}}, {}) : Plan(1.0, {}, {});
        Status status = WaitFor(engine, SubmitNeighbor(engine, "lonely", in, out, plan));
        if (rank == 0) {
          EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.ToString();
          // Rank 1 read the notice after its call ended, or during it: either way it says so.
          EXPECT_NE(status.message().find("rank 0 expects a tensor from rank 1"), std::string::npos)
              << status.message();
        }
        // Keeps rank 1 from shutting down before it has read rank 0's notice.
        NeighborPlan ok = Plan(0.5, {{1 - rank, 0.5}}, {1 - rank});
        EXPECT_TRUE(WaitFor(engine, SubmitNeighbor(engine, "after", in, out, ok)).ok());
      },
      1 << 16);
}

TEST(NeighborThreads, ARankThatShutsDownLeavesNoPeerWaiting) {
  OnRanks(
      3,
      [&](int rank, Engine& engine) {
        std::vector<double> in(3, rank), out(3);
        if (rank == 0) {  // expects ranks 1 and 2; rank 2 shuts down without calling
          Status status = WaitFor(
              engine, SubmitNeighbor(engine, "x", in, out, Plan(0.5, {{1, 0.25}, {2, 0.25}}, {})));
          EXPECT_EQ(status.code(), StatusCode::kAborted) << status.ToString();
          EXPECT_NE(status.message().find("rank 2 shut down"), std::string::npos)
              << status.message();
        } else if (rank == 1) {
          EXPECT_TRUE(
              WaitFor(engine, SubmitNeighbor(engine, "x", in, out, Plan(1.0, {}, {0}))).ok());
        }
      },
      1 << 16);
}

TEST(NeighborThreads, DataSentBeforeShutdownStillCompletesTheReceiver) {
  // Rank 1 sends (inline and in a lane) without the topology check and shuts
  // down at once; rank 0 calls only afterwards and still gets both tensors.
  OnRanks(
      2,
      [&](int rank, Engine& engine) {
        std::vector<double> small(4, rank + 1.0), big(5000, rank + 1.0), out_small(4),
            out_big(5000);
        const NeighborPlan plan =
            rank == 0 ? Plan(0.5, {{1, 0.5}}, {}, false) : Plan(1.0, {}, {0}, false);
        if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        HandleId a = SubmitNeighbor(engine, "small", small, out_small, plan);
        HandleId b = SubmitNeighbor(engine, "big", big, out_big, plan);
        ASSERT_TRUE(WaitFor(engine, a).ok());
        ASSERT_TRUE(WaitFor(engine, b).ok());
        if (rank == 0) {
          EXPECT_DOUBLE_EQ(out_small[3], 1.5);
          EXPECT_DOUBLE_EQ(out_big[4999], 1.5);
        }
      },
      1024);
}

TEST(NeighborThreads, DtypeMismatchFailsBothRanks) {
  OnRanks(
      2,
      [&](int rank, Engine& engine) {
        std::vector<double> in(4, 1.0), out(4);
        // Rank 1 describes its buffer as 8 float32s of the same bytes: a different dtype and shape.
        const DataType dtype = rank == 0 ? DataType::kFloat64 : DataType::kFloat32;
        const int64_t count = rank == 0 ? 4 : 8;
        OpRequest op =
            MakeRequest(OpKind::kNeighborAllreduce, "m", TensorView{in.data(), dtype, {count}});
        op.steps = std::make_shared<const std::vector<ExchangeStep>>(std::vector<ExchangeStep>{
            NeighborAllreduceStep(Plan(0.5, {{1 - rank, 0.5}}, {1 - rank}), count, {count})});
        auto h = engine.Submit(std::move(op), TensorView{out.data(), dtype, {count}}, nullptr);
        ASSERT_TRUE(h.ok());
        Status status = WaitFor(engine, h.value());
        EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.ToString();
        EXPECT_NE(status.message().find("dtype differs"), std::string::npos) << status.message();
      },
      1 << 16);
}

}  // namespace
}  // namespace flock

namespace flock {
namespace {

// Six ranks on three pretend hosts, each receiving lanes from four peers (three
// of them on other hosts) in many calls at once, with a lane budget of about
// one lane: most receives wait in the queue and start newest first, some into
// the sum, some into the scratch buffer. Every result must match the dense
// mixing, waited for in submission order or reversed.
TEST(NeighborThreads, LanesFromOtherHostsBeyondTheBudgetAllLand) {
  constexpr int kSize = 6;
  constexpr size_t kCalls = 24;
  constexpr int64_t kCount = 3000;  // 24 KB of float64: a lane (inline limit 1 KB)
  Config config;
  config.cycle_time_ms = 1.0;
  config.neighbor_inline_bytes = 1024;
  config.neighbor_lane_budget_bytes = 30000;
  for (bool reversed : {false, true}) {
    testing::OnRanks(
        kSize, [&](int) { return config; },
        [&](int rank, Engine& engine) {
          std::vector<NeighborRecv> src;
          std::vector<int> dst;
          for (int d : {1, 2, 3, 4}) {
            src.push_back({(rank + kSize - d) % kSize, 0.15});
            dst.push_back((rank + d) % kSize);
          }
          const NeighborPlan plan = Plan(0.4, src, dst);
          std::vector<std::vector<double>> in(kCalls), out(kCalls);
          std::vector<HandleId> handles(kCalls);
          for (size_t c = 0; c < kCalls; ++c) {
            in[c].assign(kCount, rank * 10.0 + static_cast<double>(c));
            out[c].assign(kCount, -1);
            handles[c] = SubmitNeighbor(engine, "burst" + std::to_string(c), in[c], out[c], plan);
          }
          for (size_t i = 0; i < kCalls; ++i) {
            const size_t c = reversed ? kCalls - 1 - i : i;
            const Status status = WaitFor(engine, handles[c]);
            ASSERT_TRUE(status.ok()) << "rank " << rank << ": " << status.ToString();
            double expected = 0.4 * (rank * 10.0 + static_cast<double>(c));
            for (const NeighborRecv& s : src)
              expected += 0.15 * (s.peer * 10.0 + static_cast<double>(c));
            ASSERT_NEAR(out[c].front(), expected, 1e-12) << "rank " << rank << " call " << c;
            ASSERT_NEAR(out[c].back(), expected, 1e-12) << "rank " << rank << " call " << c;
          }
          // Most of the 72 receives from other hosts waited for the budget.
          EXPECT_GT(engine.counters().neighbor_lanes_queued, 24) << rank;
        },
        /*ranks_per_host=*/2);
  }
}

}  // namespace
}  // namespace flock
