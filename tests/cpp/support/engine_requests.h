// Test helpers: submit an in-place allreduce of a std::vector to an engine and
// wait for it, the way the bindings do for Python.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "flock/engine/engine.h"

namespace flock::testing {

template <typename T>
HandleId SubmitAllreduce(Engine& engine, const std::string& name, std::vector<T>& data,
                         DataType dtype, ReduceOp op = ReduceOp::kSum) {
  OpRequest request =
      MakeRequest(OpKind::kAllreduce, name,
                  TensorView{data.data(), dtype, {static_cast<int64_t>(data.size())}});
  request.reduce_op = op;
  TensorView output = request.tensor;
  auto handle = engine.Submit(std::move(request), output, nullptr);
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  return handle.ok() ? handle.value() : -1;
}

inline Status WaitFor(Engine& engine, HandleId handle) {
  auto done = engine.Wait(handle, std::chrono::milliseconds(50), nullptr);
  return done.ok() ? done.value().status : done.status();
}

}  // namespace flock::testing
