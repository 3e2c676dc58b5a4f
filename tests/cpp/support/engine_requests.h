// Test helpers: submit an in-place allreduce, or a neighbor_allreduce with a
// given plan, of a std::vector to an engine and wait for it, the way the
// bindings do for Python.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "flock/engine/engine.h"
#include "flock/neighbor/op_steps.h"

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

// A dynamic plan: receive from `src` with `weights`, send to `dst`.
inline NeighborPlan Plan(double self_weight, std::vector<NeighborRecv> src, std::vector<int> dst,
                         bool check = true) {
  NeighborPlan plan;
  plan.self_weight = self_weight;
  plan.recvs = std::move(src);
  for (int peer : dst) plan.sends.push_back({peer, 1.0});
  plan.check = check;
  return plan;
}

inline HandleId SubmitNeighbor(Engine& engine, const std::string& name, std::vector<double>& in,
                               std::vector<double>& out, const NeighborPlan& plan,
                               DataType dtype = DataType::kFloat64) {
  const int64_t count = static_cast<int64_t>(in.size());
  OpRequest op =
      MakeRequest(OpKind::kNeighborAllreduce, name, TensorView{in.data(), dtype, {count}});
  op.steps = std::make_shared<const std::vector<ExchangeStep>>(
      std::vector<ExchangeStep>{NeighborAllreduceStep(plan, count, {count})});
  auto handle = engine.Submit(std::move(op), TensorView{out.data(), dtype, {count}}, nullptr);
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  return handle.ok() ? handle.value() : -1;
}

inline Status WaitFor(Engine& engine, HandleId handle) {
  auto done = engine.Wait(handle, std::chrono::milliseconds(50), nullptr);
  return done.ok() ? done.value().status : done.status();
}

}  // namespace flock::testing
