#include "flock/neighbor/op_steps.h"

namespace flock {

std::vector<std::string> StepSuffixes(OpKind kind) {
  if (kind == OpKind::kHierarchicalNeighborAllreduce)
    return {"/local-reduce", "/machines", "/local-gather"};
  return {""};
}

int64_t SliceBegin(int64_t count, int parts, int j) {
  return count * j / parts;
}

ExchangeStep NeighborAllreduceStep(const NeighborPlan& plan, int64_t count,
                                   const std::vector<int64_t>& shape) {
  ExchangeStep step;
  step.mode = ExchangeStep::Mode::kReduce;
  step.self_from = StepBuffer::kInput;
  step.self_count = count;
  step.self_weight = plan.self_weight;
  step.target = StepBuffer::kOutput;
  step.target_count = count;
  step.check = plan.check;
  step.sends.reserve(plan.sends.size());
  step.recvs.reserve(plan.recvs.size());
  for (const NeighborSend& s : plan.sends)
    step.sends.push_back({s.peer, s.scale, StepBuffer::kInput, 0, count, shape});
  for (const NeighborRecv& r : plan.recvs)
    step.recvs.push_back({r.peer, r.weight, 0, count, shape});
  return step;
}

ExchangeStep NeighborAllgatherStep(const NeighborPlan& plan, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  ExchangeStep step;
  step.mode = ExchangeStep::Mode::kGather;
  step.check = plan.check;
  step.sends.reserve(plan.sends.size());
  step.recvs.reserve(plan.recvs.size());
  for (const NeighborSend& s : plan.sends)
    step.sends.push_back({s.peer, 1.0, StepBuffer::kInput, 0, count, shape});
  for (const NeighborRecv& r : plan.recvs) step.recvs.push_back({r.peer, 1.0, 0, 0, shape});
  return step;
}

std::vector<ExchangeStep> HierarchicalSteps(const NeighborPlan& machine_plan, int64_t count,
                                            int local_size, int local_rank, int machine_rank,
                                            bool check_between_machines) {
  const int L = local_size;
  const int first_local = machine_rank * L;
  auto begin = [&](int j) { return SliceBegin(count, L, j); };
  auto size = [&](int j) { return begin(j + 1) - begin(j); };
  const int64_t mine = size(local_rank);
  const double local_weight = 1.0 / static_cast<double>(L);

  ExchangeStep scatter;  // 1. machine mean of my slice
  scatter.mode = ExchangeStep::Mode::kReduce;
  scatter.suffix = "/local-reduce";
  scatter.self_from = StepBuffer::kInput;
  scatter.self_offset = begin(local_rank);
  scatter.self_count = mine;
  scatter.self_weight = local_weight;
  scatter.target = StepBuffer::kMean;
  scatter.target_count = mine;
  scatter.check = true;  // same machine: cheap, and catches shape mismatches on both sides

  ExchangeStep gather;  // 3. everyone's finished slice into the output
  gather.mode = ExchangeStep::Mode::kPlace;
  gather.suffix = "/local-gather";
  gather.self_from = StepBuffer::kResult;
  gather.self_count = mine;
  gather.self_target_offset = begin(local_rank);
  gather.target = StepBuffer::kOutput;
  gather.target_count = count;
  gather.check = true;

  for (int j = 0; j < L; ++j) {
    if (j == local_rank) continue;
    const int peer = first_local + j;
    scatter.sends.push_back({peer, 1.0, StepBuffer::kInput, begin(j), size(j), {size(j)}});
    scatter.recvs.push_back({peer, local_weight, 0, mine, {mine}});
    gather.sends.push_back({peer, 1.0, StepBuffer::kResult, 0, mine, {mine}});
    gather.recvs.push_back({peer, 1.0, begin(j), size(j), {size(j)}});
  }

  ExchangeStep exchange;  // 2. machine-level weighted sum of my slice
  exchange.mode = ExchangeStep::Mode::kReduce;
  exchange.suffix = "/machines";
  exchange.self_from = StepBuffer::kMean;
  exchange.self_count = mine;
  exchange.self_weight = machine_plan.self_weight;
  exchange.target = StepBuffer::kResult;
  exchange.target_count = mine;
  exchange.check = check_between_machines;
  for (const NeighborSend& s : machine_plan.sends) {
    exchange.sends.push_back(
        {s.peer * L + local_rank, s.scale, StepBuffer::kMean, 0, mine, {mine}});
  }
  for (const NeighborRecv& r : machine_plan.recvs)
    exchange.recvs.push_back({r.peer * L + local_rank, r.weight, 0, mine, {mine}});

  return {scatter, exchange, gather};
}

}  // namespace flock
