// Runs one Engine per rank, each on its own thread over a shared in-process
// ThreadWorld: the N-threads-as-N-ranks harness of the engine and neighbor tests.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "thread_transport.h"

namespace flock::testing {

// body(rank, engine) on `size` threads; every engine is started first and shut down after.
inline void OnRanks(int size, const Config& config,
                    const std::function<void(int, Engine&)>& body) {
  ThreadWorld world(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      ThreadTransport transport(world, r);
      Engine engine(transport, config);
      ASSERT_TRUE(engine.Start().ok());
      body(r, engine);
      engine.Shutdown();
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace flock::testing
