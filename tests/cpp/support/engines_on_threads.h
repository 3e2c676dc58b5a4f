// Runs one Engine per rank, each on its own thread over a shared in-process
// ThreadWorld: the N-threads-as-N-ranks harness of the engine and neighbor tests.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "flock/engine/engine.h"
#include "thread_transport.h"

namespace flock::testing {

// body(rank, engine) on `size` threads; every engine is started first and shut down after.
// Each rank's engine gets config_of(rank); ranks_per_host > 0 places them on pretend hosts.
inline void OnRanks(int size, const std::function<Config(int)>& config_of,
                    const std::function<void(int, Engine&)>& body, int ranks_per_host = 0) {
  ThreadWorld world(size);
  world.set_ranks_per_host(ranks_per_host);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      ThreadTransport transport(world, r);
      Engine engine(transport, config_of(r));
      ASSERT_TRUE(engine.Start().ok());
      body(r, engine);
      engine.Shutdown();
    });
  }
  for (auto& t : threads) t.join();
}

inline void OnRanks(int size, const Config& config, const std::function<void(int, Engine&)>& body) {
  OnRanks(
      size, [&](int) { return config; }, body);
}

}  // namespace flock::testing
