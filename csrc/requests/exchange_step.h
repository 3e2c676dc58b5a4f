// ExchangeStep: one round of point-to-point exchange between a rank and some
// peers, described with buffer roles and element offsets (no pointers), so
// the plans of every neighbor op are pure values with their own tests.
//
// Modes:
//   kReduce  target[0..target_count) = self_weight·self + Σ weight_j·scale_j·recv_j
//   kPlace   target[recv.offset..] = recv_j (and the own part copied to self_target_offset)
//   kGather  the received tensors concatenated in recv order; their sizes are
//            learned from the messages (neighbor_allgather: dim 0 may differ)
// A neighbor_allreduce is one kReduce step; a hierarchical_neighbor_allreduce
// is three steps run one after the other (HierarchicalSteps in op_steps.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flock {

// Where a step reads or writes: the caller's input and output, or one of the
// two slice buffers a multi-step op keeps between steps.
enum class StepBuffer : uint8_t { kInput = 0, kOutput, kMean, kResult };

struct StepSend {
  int peer = 0;
  double scale = 1.0;  // the receiver multiplies this in (the sender's dst weight)
  StepBuffer from = StepBuffer::kInput;
  int64_t offset = 0;  // elements
  int64_t count = 0;
  std::vector<int64_t> shape;  // what the receiver is told (and checks)
};

struct StepRecv {
  int peer = 0;
  double weight = 1.0;
  int64_t offset = 0;  // kReduce, kPlace: where in the target, in elements
  int64_t count = 0;
  std::vector<int64_t> shape;  // expected; kGather: only dims after the first are checked
};

struct ExchangeStep {
  enum class Mode : uint8_t { kReduce, kPlace, kGather };
  Mode mode = Mode::kReduce;
  std::string suffix;  // appended to the call's match name (several steps per call)
  StepBuffer self_from = StepBuffer::kInput;
  int64_t self_offset = 0;
  int64_t self_count = 0;
  double self_weight = 1.0;        // kReduce
  int64_t self_target_offset = 0;  // kPlace
  StepBuffer target = StepBuffer::kOutput;
  int64_t target_count = 0;
  std::vector<StepSend> sends;
  std::vector<StepRecv> recvs;
  bool check = false;  // receivers confirm to senders (enable_topo_check)
};

}  // namespace flock
