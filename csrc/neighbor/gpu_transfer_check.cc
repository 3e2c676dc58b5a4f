#include "flock/neighbor/gpu_transfer_check.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace flock {
namespace {

// {kind, step, sender, receiver, elements, row elements}: a send, a receive,
// or a rank that is not ready (sender = receiver = that rank). A gather
// step's receiver does not know the elements (-1): the rows must match.
enum Kind : int64_t { kSend = 0, kRecv = 1, kNotReady = 2 };
using Entry = std::array<int64_t, 6>;
// {step, sender, receiver, elements (-1 for a gather step), row elements}
using Transfer = std::array<int64_t, 5>;

int64_t RowElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t d = 1; d < shape.size(); ++d) n *= shape[d];
  return n;
}

std::vector<Entry> MyEntries(const std::vector<ExchangeStep>& steps, int me, bool ready) {
  std::vector<Entry> out;
  if (!ready) out.push_back({kNotReady, 0, me, me, 0, 0});
  for (size_t k = 0; k < steps.size(); ++k) {
    const int64_t step = static_cast<int64_t>(k);
    const bool gather = steps[k].mode == ExchangeStep::Mode::kGather;
    for (const StepSend& s : steps[k].sends) {
      out.push_back({kSend, step, me, s.peer, s.count, gather ? RowElements(s.shape) : 0});
    }
    for (const StepRecv& r : steps[k].recvs) {
      out.push_back(
          {kRecv, step, r.peer, me, gather ? -1 : r.count, gather ? RowElements(r.shape) : 0});
    }
  }
  return out;
}

// Every rank's entries, concatenated (an allgather of the sizes, then of the entries).
Result<std::vector<Entry>> GatherAll(Transport& host, const std::vector<Entry>& mine) {
  const int size = host.size(CommGroup::kWorld);
  const int64_t my_bytes = static_cast<int64_t>(mine.size() * sizeof(Entry));
  std::vector<int64_t> bytes(static_cast<size_t>(size));
  FLOCK_RETURN_IF_ERROR(
      host.Allgather(&my_bytes, sizeof(my_bytes), bytes.data(), CommGroup::kWorld));
  int64_t total = 0;
  for (int64_t b : bytes) total += b;
  std::vector<Entry> all(static_cast<size_t>(total) / sizeof(Entry));
  FLOCK_RETURN_IF_ERROR(host.Allgatherv(mine.data(), bytes, all.data(), CommGroup::kWorld));
  return all;
}

std::string Describe(const std::string& name, const Transfer& t, bool missing_receive) {
  const std::string from = "rank " + std::to_string(t[1]), to = "rank " + std::to_string(t[2]);
  const std::string what = (t[3] < 0 ? std::string("rows") : std::to_string(t[3]) + " elements") +
                           (t[4] > 0 ? " (rows of " + std::to_string(t[4]) + " elements)" : "") +
                           " in step " + std::to_string(t[0] + 1);
  return "neighbor op '" + name + "' on CUDA tensors: " +
         (missing_receive ? from + " sends " + what + " to " + to + ", but " + to +
                                " does not receive them (check the weights and topology)"
                          : to + " expects " + what + " from " + from + ", but " + from +
                                " does not send them (check the weights and topology)");
}

Status CompareTransfers(const std::string& name, std::vector<Transfer> sends,
                        std::vector<Transfer> recvs) {
  std::sort(sends.begin(), sends.end());
  std::sort(recvs.begin(), recvs.end());
  if (sends == recvs) return Status::OK();
  std::vector<Transfer> unreceived, unsent;
  std::set_difference(sends.begin(), sends.end(), recvs.begin(), recvs.end(),
                      std::back_inserter(unreceived));
  std::set_difference(recvs.begin(), recvs.end(), sends.begin(), sends.end(),
                      std::back_inserter(unsent));
  const bool first_is_send = !unreceived.empty() && (unsent.empty() || unreceived[0] < unsent[0]);
  return Status::Mismatch(first_is_send ? Describe(name, unreceived[0], true)
                                        : Describe(name, unsent[0], false));
}

}  // namespace

Status CheckTransfersAgree(Transport& host, const std::string& name,
                           const std::vector<ExchangeStep>& steps, const Status& ready,
                           std::vector<int64_t>* gather_counts) {
  const int me = host.rank(CommGroup::kWorld);
  FLOCK_ASSIGN_OR_RETURN(std::vector<Entry> all, GatherAll(host, MyEntries(steps, me, ready.ok())));
  std::vector<Transfer> sends, recvs, to_me;
  for (const Entry& e : all) {
    if (e[0] == kNotReady) {
      if (e[2] == me) return ready;
      return Status::Aborted("neighbor op '" + name + "' on CUDA tensors: rank " +
                             std::to_string(e[2]) + " could not prepare it (see its error)");
    }
    const bool gather = steps[static_cast<size_t>(e[1])].mode == ExchangeStep::Mode::kGather;
    if (e[0] == kSend && gather && e[3] == me) to_me.push_back({e[1], e[2], e[3], e[4], e[5]});
    const int64_t count = gather ? -1 : e[4];
    (e[0] == kSend ? sends : recvs).push_back({e[1], e[2], e[3], count, e[5]});
  }
  FLOCK_RETURN_IF_ERROR(CompareTransfers(name, std::move(sends), std::move(recvs)));
  if (gather_counts != nullptr) {  // what each gather receive will bring, in recv order
    gather_counts->clear();
    for (size_t k = 0; k < steps.size(); ++k) {
      if (steps[k].mode != ExchangeStep::Mode::kGather) continue;
      for (const StepRecv& r : steps[k].recvs) {
        for (const Transfer& t : to_me) {
          if (t[0] == static_cast<int64_t>(k) && t[1] == r.peer) gather_counts->push_back(t[3]);
        }
      }
    }
  }
  return Status::OK();
}

}  // namespace flock
