#include "flock/engine/engine.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "flock/common/logging.h"
#include "flock/engine/wire.h"

namespace flock {
namespace {

NeighborExchange::Options NeighborOptions(const Config& config, const Transport& transport) {
  NeighborExchange::Options options;
  options.inline_limit_bytes = config.neighbor_inline_bytes;
  options.lane_budget_bytes = config.neighbor_lane_budget_bytes;
  options.message_limit_bytes = config.fusion_threshold_bytes;
  // The neighbor group is the world's ranks in the world's order.
  for (int r = 0; r < transport.size(CommGroup::kControl); ++r)
    options.peer_on_this_host.push_back(transport.on_this_host(r));
  options.cycle_time_ms = config.cycle_time_ms;
  return options;
}

}  // namespace

Engine::Engine(Transport& transport, const Config& config, std::vector<std::string> hosts)
    : transport_(transport),
      config_(config),
      rank_(transport.rank(CommGroup::kControl)),
      size_(transport.size(CommGroup::kControl)),
      shares_cores_(transport.shares_cores()),
      hosts_(std::move(hosts)),
      negotiator_(config.cycle_time_ms) {
  if (rank_ == 0) {
    coordinator_ = std::make_unique<Coordinator>(size_, config.fusion_threshold_bytes,
                                                 static_cast<size_t>(config.cache_capacity));
  }
  control_ = std::make_unique<ControlLink>(
      transport, coordinator_.get(), counters_,
      [this](const Status& status, const std::string& doing) { FailTransport(status, doing); });
  neighbor_ = std::make_unique<NeighborExchange>(
      transport, NeighborOptions(config, transport), counters_, timeline_,
      [this](PendingRequest& request, Status status, std::shared_ptr<GatheredTensor> gathered) {
        finisher_.Finish(request, std::move(status), std::move(gathered));
      });
  windows_ = std::make_unique<WindowService>(
      transport, window_table_, config.neighbor_inline_bytes, counters_, timeline_,
      [this](PendingRequest& request, Status status) {
        finisher_.Finish(request, std::move(status), nullptr);
      });
  // A CUDA neighbor op's call, however it ended, is no longer one the host
  // path can meet (NeighborExchange::AddDeviceCall).
  finisher_.SetDeviceCallEnd([this](const PendingRequest& r) { neighbor_->EndDeviceCall(r); });
  handles_.SetWaitListener([this] {
    RequestFlush();
    wake_.Unpark();
  });
}

void Engine::RequestFlush() {
  requests_.RequestFlush();
}

std::function<void()> Engine::WindowNotifier() {
  return [this] {
    windows_->NoteGrants();
    wake_.Unpark();
  };
}

Engine::~Engine() {
  Shutdown();
}

Result<HandleId> Engine::Submit(OpRequest op, TensorView output, std::shared_ptr<void> keep_alive,
                                bool wait_follows) {
  HandleId handle = 0;
  // An op may join a fusion window the engine sleeps through: a global op does
  // nothing before its announcement, and a neighbor op's entries wait in the
  // outbox for the same window (or a wait) anyway. Waking the engine for each
  // of a burst of 161 neighbor calls (ResNet-50's gradients) cost it 20-40
  // wake-ups per burst. A rejected neighbor call wakes it: its peers are told
  // at once (an urgent flush), not at the window's end.
  const bool may_join_window = !IsNeighborOp(op.kind) || op.local_status.ok();
  // Push reads the name only before it calls the lambda, which moves `op`.
  Status queued = requests_.Push(op.name, OpKindName(op.kind), [&](PendingRequest& request) {
    request.handle = handle = handles_.Create(std::move(keep_alive));
    request.op = std::move(op);
    request.output = output;
    request.submitted = Clock::now();
  });
  if (!queued.ok()) return queued;
  ++counters_.requests;
  // The caller's Wait drives the engine or wakes it (see TryDrive).
  if (wait_follows) return handle;
  // After the queue's lock is let go: a woken engine would otherwise block on it at once,
  // and its wake-up would cost a second futex call.
  if (!(may_join_window && requests_.gathering()) && wake_.Unpark()) ++counters_.submit_wakeups;
  return handle;
}

bool Engine::Step() {
  const PollingPass pass(transport_);  // the loop yields between passes, not inside (Idle)
  bool did_work = DrainQueue();
  const bool flush = flush_now_;  // read with the queue swap; SendReady clears it
  // Sends before receives: a lane receive posted in Poll may copy the whole
  // tensor at once (the single-copy shared-memory path pulls it inside
  // MPI_Irecv), and a peer waiting meanwhile for this rank's own entries would
  // start its copy only after ours (measured: docs/performance/neighbor-history.md).
  did_work |= neighbor_->Flush(flush);
  did_work |= neighbor_->Poll();
  ReportDeviceConflicts();
  did_work |= windows_->Poll();
  did_work |= SendReady();
  did_work |= PollControl();
  CheckStalls();
  CheckNeighborStalls();
  CheckGpuWork();
  auto progressed = transport_.ProgressSends();
  if (!progressed.ok()) FailTransport(progressed.status(), "sending control messages");
  Status neighbor_transport = neighbor_->TakeTransportFailure();
  if (!neighbor_transport.ok()) FailTransport(neighbor_transport, "neighbour messages");
  Status window_transport = windows_->TakeTransportFailure();
  if (!window_transport.ok()) FailTransport(window_transport, "window messages");
  return did_work;
}

bool Engine::DrainQueue() {
  // Nothing new from user threads: skip the lock they take to submit.
  if (!requests_.signaled()) return false;  // see RequestQueue's gathering
  RequestQueue::Intake intake = requests_.Drain();
  std::vector<PendingRequest>& arrived = intake.requests;
  const bool stop = intake.stop;
  flush_now_ = flush_now_ || intake.flush;
  for (PendingRequest& request : arrived) {
    const std::string& name = request.op.name;
    timeline_.Begin(name, OpKindName(request.op.kind), request.submitted);
    timeline_.Begin(name, "QUEUED", request.submitted);
    timeline_.End(name);
    if (IsWindowOp(request.op.kind)) {  // one-sided: served by the peers' engine threads
      windows_->Add(std::move(request));
      continue;
    }
    // CUDA tensors' neighbor ops are negotiated like global ops: NCCL matches
    // sends and receives by the order of the calls, so every rank runs them in
    // the coordinator's order (transport/gpu_backend.h).
    if (IsNeighborOp(request.op.kind) && request.op.tensor.device.type != DeviceType::kCUDA) {
      // Talks to its peers only: no negotiation, and another rank's shutdown
      // fails it only if that rank is one of its peers (its goodbye says so).
      neighbor_->Add(std::move(request));
      continue;
    }
    if (!shutting_down_reason_.empty()) {
      finisher_.Finish(request, Status::Aborted(shutting_down_reason_), nullptr);
      continue;
    }
    if (IsNeighborOp(request.op.kind)) {
      Status withdrawn = neighbor_->AddDeviceCall(request);
      if (!withdrawn.ok()) {  // rank 0 withdrew this call before this rank got to it
        finisher_.Finish(request, std::move(withdrawn), nullptr);
        continue;
      }
    }
    timeline_.Begin(name, "NEGOTIATING");
    negotiator_.Add(std::move(request));
  }
  const bool got_requests = !arrived.empty();
  arrived.clear();  // moved-from requests; the capacity stays for the next drain
  if (stop && !shutdown_announced_) {
    AnnounceShutdown();
    return true;
  }
  return got_requests;
}

bool Engine::SendReady() {
  if (!negotiator_.has_unsent()) {
    flush_now_ = false;
    return false;
  }
  // Window puts applied everywhere first: "win_put, barrier(), win_update" sees them.
  if (!windows_->fenced()) return false;
  // flush_now_ was read together with the queue swap, so everything submitted
  // before a thread started waiting goes out in this one message.
  if (!negotiator_.AnnounceDue(flush_now_, Clock::now())) return false;  // gather more for fusion
  flush_now_ = false;
  const std::vector<ReadyEntry> entries = negotiator_.TakeAnnouncement();
  ++counters_.ready_messages;
  counters_.ready_entries += static_cast<int64_t>(entries.size());
  for (const ReadyEntry& e : entries) counters_.cache_hits += e.cache_id >= 0 ? 1 : 0;
  control_->Announce(entries);
  return true;
}

bool Engine::PollControl() {
  Result<bool> polled = control_->Poll(&answers_);
  if (!polled.ok()) {
    EndJob(polled.status());
    return true;
  }
  if (!answers_.empty()) Handle(answers_);
  return polled.value();
}

void Engine::FailAllPending(const std::string& reason) {
  FailAllPending(Status::Aborted(reason));
}

void Engine::FailAllPending(const Status& status) {
  negotiator_.TakeAll([&](PendingRequest& request) { finisher_.Finish(request, status, nullptr); });
}

}  // namespace flock
