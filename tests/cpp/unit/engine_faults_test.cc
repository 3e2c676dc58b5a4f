// No error swallowed on the engine thread: ranks played by threads over a
// FaultyTransport that drops, corrupts, delays or fails one message. Every
// case ends in an error on the ranks concerned, naming the rank and the cause,
// or in the job's end (Abort) where another rank could otherwise wait forever;
// nothing hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "../support/engine_requests.h"
#include "../support/faulty_transport.h"
#include "flock/engine/engine.h"

namespace flock {
namespace {

using testing::Fault;
using testing::FaultRule;
using testing::FaultyTransport;
using testing::Plan;
using testing::SubmitAllreduce;
using testing::SubmitNeighbor;
using testing::WaitFor;

constexpr int kReadyTag = 1, kResponseTag = 2;  // engine.h's control tags
constexpr int kNeighborTag = 1;                 // the neighbour control tag

Config FaultConfig() {
  Config config;
  config.cycle_time_ms = 1.0;
  config.stall_shutdown_s = 1.0;  // a lost message becomes an error in a second
  return config;
}

// body(rank, engine, transport) on `size` threads; rank r's transport applies rules_of(r).
void OnFaultyRanks(int size, const std::function<std::vector<FaultRule>(int)>& rules_of,
                   const std::function<void(int, Engine&, FaultyTransport&)>& body) {
  testing::ThreadWorld world(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      FaultyTransport transport(world, r, rules_of(r));
      Engine engine(transport, FaultConfig());
      ASSERT_TRUE(engine.Start().ok());
      body(r, engine, transport);
      engine.Shutdown();
    });
  }
  for (auto& t : threads) t.join();
}

bool Mentions(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

TEST(EngineFaults, AnUnreadableAnnouncementFailsTheOpOnEveryRank) {
  OnFaultyRanks(
      3,
      [](int r) {
        return r == 1 ? std::vector<FaultRule>{{Fault::kCorrupt, CommGroup::kControl, 0, kReadyTag}}
                      : std::vector<FaultRule>{};
      },
      [](int rank, Engine& engine, FaultyTransport&) {
        std::vector<float> data(4, 1.0f);
        Status a = WaitFor(engine, SubmitAllreduce(engine, "a", data, DataType::kFloat32));
        EXPECT_EQ(a.code(), StatusCode::kAborted) << a.ToString();
        EXPECT_TRUE(Mentions(a, "could not take rank 1's announcement")) << a.message();
        // Global ops are off from now on, on every rank, at once; neighbor ops go on.
        Status b = WaitFor(engine, SubmitAllreduce(engine, "b", data, DataType::kFloat32));
        EXPECT_TRUE(Mentions(b, "rank 1's announcement")) << b.message();
        std::vector<double> in(2, rank), out(2);
        const int peer = (rank + 1) % 3, from = (rank + 2) % 3;
        EXPECT_TRUE(
            WaitFor(engine, SubmitNeighbor(engine, "n", in, out, Plan(0.5, {{from, 0.5}}, {peer})))
                .ok());
        EXPECT_DOUBLE_EQ(out[0], 0.5 * rank + 0.5 * from);
      });
}

TEST(EngineFaults, AnUnreadableAnswerEndsTheJobFromTheRankThatGotIt) {
  OnFaultyRanks(
      3,
      [](int r) {
        return r == 0
                   ? std::vector<FaultRule>{{Fault::kCorrupt, CommGroup::kControl, 1, kResponseTag}}
                   : std::vector<FaultRule>{};
      },
      [](int rank, Engine& engine, FaultyTransport& transport) {
        // Shapes differ: rank 0 answers with an error (no collective to wait in).
        std::vector<float> data(rank == 2 ? 3 : 4, 1.0f);
        Status s = WaitFor(engine, SubmitAllreduce(engine, "mismatch", data, DataType::kFloat32));
        EXPECT_FALSE(s.ok());
        if (rank == 1) {
          EXPECT_TRUE(Mentions(s, "rank 1 could not read an answer of rank 0")) << s.message();
          EXPECT_TRUE(transport.aborted()) << "the rank that cannot trust rank 0 ends the job";
        } else {
          EXPECT_EQ(s.code(), StatusCode::kMismatch) << s.ToString();
          EXPECT_FALSE(transport.aborted());
        }
      });
}

TEST(EngineFaults, AnUnreadableNeighbourMessageFailsCallsWithThatRank) {
  OnFaultyRanks(
      3,
      [](int r) {
        return r == 1 ? std::vector<FaultRule>{{Fault::kCorrupt, CommGroup::kNeighbor, 0,
                                                kNeighborTag}}
                      : std::vector<FaultRule>{};
      },
      [](int rank, Engine& engine, FaultyTransport&) {
        std::vector<double> in(2, rank), out(2);
        const int peer = 1 - (rank % 2);  // ranks 0 and 1 exchange; rank 2 alone
        NeighborPlan plan = rank == 2 ? Plan(1.0, {}, {}) : Plan(0.5, {{peer, 0.5}}, {peer});
        Status first = WaitFor(engine, SubmitNeighbor(engine, "n1", in, out, plan));
        if (rank == 0) {
          EXPECT_TRUE(Mentions(first, "rank 0 could not read a message of rank 1"))
              << first.ToString();
        }
        // The pair stays failed on both sides; rank 2 and global ops are untouched.
        Status second = WaitFor(engine, SubmitNeighbor(engine, "n2", in, out, plan));
        if (rank == 2) {
          EXPECT_TRUE(second.ok()) << second.ToString();
        } else {
          EXPECT_TRUE(Mentions(second, "could not read a message of rank 1")) << second.message();
        }
        std::vector<float> data(2, 1.0f);
        EXPECT_TRUE(WaitFor(engine, SubmitAllreduce(engine, "g", data, DataType::kFloat32)).ok());
        EXPECT_EQ(data[0], 3.0f);
      });
}

TEST(EngineFaults, AFailedSendEndsTheJobAndTheOthersFailOnTime) {
  OnFaultyRanks(
      3,
      [](int r) {
        return r == 1
                   ? std::vector<FaultRule>{{Fault::kFailSend, CommGroup::kControl, 0, kReadyTag}}
                   : std::vector<FaultRule>{};
      },
      [](int rank, Engine& engine, FaultyTransport& transport) {
        std::vector<float> data(4, 1.0f);
        Status s = WaitFor(engine, SubmitAllreduce(engine, "a", data, DataType::kFloat32));
        if (rank == 1) {
          EXPECT_EQ(s.code(), StatusCode::kTransportError) << s.ToString();
          EXPECT_TRUE(Mentions(s, "the transport failed on rank 1 while announcing"));
          EXPECT_TRUE(transport.aborted());
        } else {  // under MPI the abort ends them; here rank 1's shutdown, or the stall limit
          EXPECT_TRUE(Mentions(s, "shut down on rank 1") || Mentions(s, "ranks 1 never submitted"))
              << s.ToString();
        }
      });
}

TEST(EngineFaults, ALostAnnouncementBecomesAStallErrorOnEveryRank) {
  OnFaultyRanks(
      3,
      [](int r) {
        return r == 2 ? std::vector<FaultRule>{{Fault::kDrop, CommGroup::kControl, 0, kReadyTag}}
                      : std::vector<FaultRule>{};
      },
      [](int, Engine& engine, FaultyTransport&) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<float> data(4, 1.0f);
        Status s = WaitFor(engine, SubmitAllreduce(engine, "lost", data, DataType::kFloat32));
        EXPECT_TRUE(Mentions(s, "ranks 2 never submitted it")) << s.ToString();
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                  3.0);
      });
}

TEST(EngineFaults, DelayedMessagesStillGiveTheRightResults) {
  OnFaultyRanks(
      3,
      [](int r) {
        if (r != 1) return std::vector<FaultRule>{};
        std::vector<FaultRule> rules;
        for (int nth = 0; nth < 3; ++nth) {
          rules.push_back({Fault::kDelay, CommGroup::kControl, -1, -1, nth});
          rules.push_back({Fault::kDelay, CommGroup::kNeighbor, -1, -1, nth});
        }
        return rules;
      },
      [](int rank, Engine& engine, FaultyTransport&) {
        for (int i = 0; i < 3; ++i) {
          std::vector<float> data(4, static_cast<float>(rank));
          const std::string name = "d" + std::to_string(i);
          ASSERT_TRUE(
              WaitFor(engine, SubmitAllreduce(engine, name, data, DataType::kFloat32)).ok());
          EXPECT_EQ(data[0], 3.0f);
          std::vector<double> in(2, rank), out(2);
          const int peer = (rank + 1) % 3, from = (rank + 2) % 3;
          ASSERT_TRUE(WaitFor(engine, SubmitNeighbor(engine, "n" + name, in, out,
                                                     Plan(0.5, {{from, 0.5}}, {peer})))
                          .ok());
          EXPECT_DOUBLE_EQ(out[1], 0.5 * rank + 0.5 * from);
        }
      });
}

}  // namespace
}  // namespace flock
