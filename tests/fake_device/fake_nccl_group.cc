// Groups of the fake NCCL. On the host: ncclGroupStart/End nest per thread;
// an op outside a group is a group of one; at the outermost ncclGroupEnd the
// group becomes ONE task on its stream (the fake runs a group on one stream).
// On the stream: the task waits for its comms' turns (launch order), posts
// every message of the group at once, progresses them until all are through,
// then writes the results. After an error it stays blocked, as a hung kernel
// would, until ncclCommAbort releases it; then it finishes without writing.
#include <algorithm>
#include <chrono>
#include <utility>

#include "fake_nccl_internal.h"

namespace flock::fake::nccl {
namespace {

struct Pending {
  int depth = 0;
  std::vector<Op> ops;
  ncclResult_t error = ncclSuccess;  // the first failed call of the open group
  std::string why;
};
thread_local Pending pending;

// A launched group: its ops in call order, its comms and their turns.
struct Group {
  std::vector<Op> ops;
  std::vector<std::shared_ptr<CommState>> comms;
  std::vector<uint64_t> tickets;
};

// On the host, in call order: sequence numbers, op indices and turns.
void Number(Group& g) {
  for (Op& op : g.ops) {
    CommState& c = *op.comm;
    std::lock_guard<std::mutex> lock(c.mutex);
    op.index = c.ops_launched++;
    if (op.kind == OpKind::kSend)
      op.seq = c.sends_to[op.peer]++;
    else if (op.kind == OpKind::kRecv)
      op.seq = c.receives_from[op.peer]++;
    else
      op.seq = c.collectives++;
    if (std::find(g.comms.begin(), g.comms.end(), op.comm) == g.comms.end())
      g.comms.push_back(op.comm);
  }
  for (const auto& c : g.comms) {
    std::lock_guard<std::mutex> lock(c->mutex);
    g.tickets.push_back(c->tickets_issued++);
  }
}

// Waits for each comm's turn; false when one was aborted. `held` turns taken.
bool TakeTurns(Group& g, size_t* held) {
  for (*held = 0; *held < g.comms.size(); ++*held) {
    CommState& c = *g.comms[*held];
    std::unique_lock<std::mutex> lock(c.mutex);
    c.changed.wait(lock, [&] { return c.aborted || c.tickets_done == g.tickets[*held]; });
    if (c.aborted) return false;
    c.holding = true;
  }
  return true;
}

void GiveTurns(Group& g, size_t held) {
  for (size_t i = 0; i < held; ++i) {
    CommState& c = *g.comms[i];
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      c.holding = false;
      ++c.tickets_done;
    }
    c.changed.notify_all();
  }
}

// An error of one comm of a multi-comm group is every one's: none ran.
void SpreadError(Group& g, size_t held) {
  ncclResult_t code = ncclInternalError;
  std::string why = "a comm of the group was aborted, so the group did not run";
  for (const auto& c : g.comms) {
    std::lock_guard<std::mutex> lock(c->mutex);
    if (c->error != ncclSuccess) {
      code = c->error;
      why = c->message;
      break;
    }
  }
  for (size_t i = 0; i < held; ++i) SetAsyncError(*g.comms[i], code, "in a group: " + why);
}

// False when a comm already failed, or an injected failure hits an op here.
bool ReadyToRun(Group& g) {
  for (const Op& op : g.ops) {
    CommState& c = *op.comm;
    ncclResult_t code;
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      if (c.error != ncclSuccess) return false;
      if (op.index < c.fail_at_op) continue;
      code = c.fail_code;
    }
    SetAsyncError(c, code,
                  "rank " + std::to_string(c.rank) + ": " + Describe(HeaderOf(op)) +
                      " failed on purpose (op " + std::to_string(op.index) +
                      " of the comm; FAKE_NCCL_FAIL_AFTER or fake_nccl_inject_error)");
    return false;
  }
  return true;
}

// Moves the group's data; true once the results are written.
bool Execute(Group& g) {
  if (!ReadyToRun(g)) return false;
  std::vector<OpRun> runs(g.ops.size());
  Exchange exchange;
  double timeout_s = 0;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    runs[i].op = &g.ops[i];
    PlanOp(runs[i], exchange);
    timeout_s = std::max(timeout_s, g.ops[i].comm->timeout_s);
  }
  if (exchange.Run(timeout_s) != Exchange::Outcome::kDone) return false;
  for (const OpRun& run : runs) FinishOp(run);
  return true;
}

// Until one of the group's comms is aborted: the caller may abort them in any
// order, and Abort waits for this task to let go. The others keep their error,
// so their next tasks block in turn.
void BlockUntilAborted(Group& g, size_t held) {
  if (held == 0) return;
  auto any_aborted = [&] {
    return std::any_of(g.comms.begin(), g.comms.begin() + held,
                       [](const auto& c) { return bool{c->aborted}; });
  };
  CommState& first = *g.comms[0];
  std::unique_lock<std::mutex> lock(first.mutex);
  while (!any_aborted()) {
    if (held == 1)
      first.changed.wait(lock);
    else
      first.changed.wait_for(lock, std::chrono::milliseconds(10));  // others notify theirs
  }
}

void RunGroup(Group& g) {
  size_t held = 0;
  if (TakeTurns(g, &held) && Execute(g)) {
    GiveTurns(g, held);
    return;
  }
  if (g.comms.size() > 1) SpreadError(g, held);
  BlockUntilAborted(g, held);
  GiveTurns(g, held);
}

ncclResult_t Launch(std::vector<Op> ops) {
  if (ops.empty()) return ncclSuccess;
  Stream* stream = ops.front().stream;
  for (const Op& op : ops) {
    if (op.stream != stream)
      return CallFailed(ncclInvalidUsage,
                        "ncclGroupEnd: the fake NCCL runs a group on one stream, this group's "
                        "ops use several (nothing of the group was launched)");
  }
  auto g = std::make_shared<Group>();
  g->ops = std::move(ops);
  Number(*g);
  stream->Enqueue([g] { RunGroup(*g); });
  return ncclSuccess;
}

}  // namespace

ncclResult_t FailCall(ncclResult_t code, const std::string& why) {
  if (pending.depth > 0 && pending.error == ncclSuccess) {
    pending.error = code;
    pending.why = why;
  }
  return CallFailed(code, why);
}

ncclResult_t GroupStart() {
  ++pending.depth;
  return ncclSuccess;
}

ncclResult_t GroupEnd() {
  if (pending.depth == 0) return CallFailed(ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart");
  if (--pending.depth > 0) return ncclSuccess;
  std::vector<Op> ops = std::move(pending.ops);
  pending.ops.clear();
  const ncclResult_t error = std::exchange(pending.error, ncclSuccess);
  if (error != ncclSuccess)  // as NCCL, the group's first error; nothing of it runs
    return CallFailed(error, "ncclGroupEnd: the group was dropped after: " + pending.why);
  return Launch(std::move(ops));
}

ncclResult_t Enqueue(Op op, const char* name) {
  if (ncclResult_t r = Validate(op, name); r != ncclSuccess) return FailCall(r, ThreadLastError());
  {
    CommState& c = *op.comm;
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.error != ncclSuccess)  // as NCCL: a failed comm takes no more work
      return FailCall(c.error, std::string(name) + ": the comm failed before: " + c.message);
  }
  if (pending.depth > 0) {
    pending.ops.push_back(std::move(op));
    return ncclSuccess;
  }
  std::vector<Op> one;
  one.push_back(std::move(op));
  return Launch(std::move(one));
}

}  // namespace flock::fake::nccl
