#include "thread_transport.h"

#include <cstdlib>
#include <cstring>

namespace flock::testing {

ThreadWorld::ThreadWorld(int size)
    : size_(size), mailboxes_(static_cast<size_t>(size)), deposits_(static_cast<size_t>(size)) {}

void ThreadWorld::Barrier() {
  std::unique_lock<std::mutex> lock(mutex_);
  const long generation = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != generation; });
}

void ThreadWorld::Post(int dest, Message message) {
  std::lock_guard<std::mutex> lock(mutex_);
  mailboxes_[static_cast<size_t>(dest)].push_back(std::move(message));
}

bool ThreadWorld::Take(int rank, int source, int tag, Message* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& box = mailboxes_[static_cast<size_t>(rank)];
  for (auto it = box.begin(); it != box.end(); ++it) {
    if (it->tag == tag && (source < 0 || it->from == source)) {
      *out = std::move(*it);
      box.erase(it);
      return true;
    }
  }
  return false;
}

void ThreadTransport::Deposit(const void* data, int64_t bytes) {
  auto& mine = world_.deposits()[static_cast<size_t>(rank_)];
  mine.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  world_.Barrier();  // every deposit is in place
}

Status ThreadTransport::Allreduce(const void* send, void* recv, int64_t count, DataType dtype,
                                  ReduceOp op, CommGroup) {
  const int64_t bytes = count * static_cast<int64_t>(DataTypeSize(dtype));
  Deposit(send, bytes);
  std::vector<char> result = world_.deposits()[0];
  for (int r = 1; r < world_.size(); ++r) {
    FLOCK_RETURN_IF_ERROR(ReduceInto(
        result.data(), world_.deposits()[static_cast<size_t>(r)].data(), count, dtype, op));
  }
  if (bytes > 0) std::memcpy(recv, result.data(), static_cast<size_t>(bytes));
  world_.Barrier();  // nobody reuses the deposits before all have read them
  return Status::OK();
}

Status ThreadTransport::Broadcast(void* buffer, int64_t bytes, int root, CommGroup) {
  Deposit(buffer, bytes);
  if (bytes > 0)
    std::memcpy(buffer, world_.deposits()[static_cast<size_t>(root)].data(),
                static_cast<size_t>(bytes));
  world_.Barrier();
  return Status::OK();
}

Status ThreadTransport::Allgather(const void* send, int64_t bytes, void* recv, CommGroup group) {
  return Allgatherv(send, std::vector<int64_t>(static_cast<size_t>(world_.size()), bytes), recv,
                    group);
}

Status ThreadTransport::Allgatherv(const void* send, const std::vector<int64_t>& recv_bytes,
                                   void* recv, CommGroup) {
  Deposit(send, recv_bytes[static_cast<size_t>(rank_)]);
  char* out = static_cast<char*>(recv);
  for (int r = 0; r < world_.size(); ++r) {
    const auto& part = world_.deposits()[static_cast<size_t>(r)];
    if (!part.empty()) std::memcpy(out, part.data(), part.size());
    out += recv_bytes[static_cast<size_t>(r)];
  }
  world_.Barrier();
  return Status::OK();
}

// Reduces the whole buffer like Allreduce and keeps this rank's block: test
// code, so clarity over bandwidth.
Status ThreadTransport::ReduceScatter(const void* send, void* recv, int64_t count_per_rank,
                                      DataType dtype, ReduceOp op, CommGroup group) {
  const int64_t count = count_per_rank * size(group);
  const auto elem = static_cast<int64_t>(DataTypeSize(dtype));
  std::vector<char> reduced(static_cast<size_t>(count * elem));
  FLOCK_RETURN_IF_ERROR(Allreduce(send, reduced.data(), count, dtype, op, group));
  if (count_per_rank > 0) {
    std::memcpy(recv, reduced.data() + rank(group) * count_per_rank * elem,
                static_cast<size_t>(count_per_rank * elem));
  }
  return Status::OK();
}

// Every rank deposits its whole send buffer; each reads its part of every deposit.
Status ThreadTransport::Alltoallv(const void* send, const std::vector<int64_t>& send_bytes,
                                  void* recv, const std::vector<int64_t>& recv_bytes, CommGroup) {
  const int size = world_.size();
  int64_t total = 0;
  for (int64_t n : send_bytes) total += n;
  // Each deposit starts with the sender's byte counts, so readers find their part.
  std::vector<char> deposit(static_cast<size_t>(size) * sizeof(int64_t));
  std::memcpy(deposit.data(), send_bytes.data(), deposit.size());
  const auto* bytes = static_cast<const char*>(send);
  deposit.insert(deposit.end(), bytes, bytes + total);
  Deposit(deposit.data(), static_cast<int64_t>(deposit.size()));
  char* out = static_cast<char*>(recv);
  Status status;
  for (int r = 0; r < size; ++r) {
    const auto& part = world_.deposits()[static_cast<size_t>(r)];
    const auto* counts = reinterpret_cast<const int64_t*>(part.data());
    int64_t offset = 0;
    for (int k = 0; k < rank_; ++k) offset += counts[k];
    const int64_t n = counts[rank_];
    if (n != recv_bytes[static_cast<size_t>(r)] && status.ok())
      status = Status::Internal("alltoall: rank " + std::to_string(r) + " sends " +
                                std::to_string(n) + " bytes, " +
                                std::to_string(recv_bytes[static_cast<size_t>(r)]) + " expected");
    if (n > 0 && status.ok()) {
      std::memcpy(out, part.data() + size * sizeof(int64_t) + offset, static_cast<size_t>(n));
    }
    out += recv_bytes[static_cast<size_t>(r)];
  }
  world_.Barrier();
  return status;
}

Status ThreadTransport::Barrier(CommGroup) {
  world_.Barrier();
  return Status::OK();
}

Status ThreadTransport::Send(const void*, int64_t, int, int, CommGroup) {
  return Status::Unsupported("ThreadTransport has no blocking point-to-point");
}

Status ThreadTransport::Recv(void*, int64_t, int, int, CommGroup) {
  return Status::Unsupported("ThreadTransport has no blocking point-to-point");
}

namespace {
// One mailbox serves every group: the group goes into the tag.
int MailboxTag(int tag, CommGroup group) {
  return tag * kNumCommGroups + static_cast<int>(group);
}
}  // namespace

Status ThreadTransport::PostSend(std::vector<char> bytes, int dest, int tag, CommGroup group) {
  world_.Post(dest, {rank_, MailboxTag(tag, group), std::move(bytes)});
  return Status::OK();
}

Result<bool> ThreadTransport::TryReceive(int source, int tag, CommGroup group, int* from,
                                         std::vector<char>* bytes) {
  ThreadWorld::Message message;
  if (!world_.Take(rank_, source, MailboxTag(tag, group), &message)) return false;
  *from = message.from;
  *bytes = std::move(message.bytes);
  return true;
}

Result<TransferId> ThreadTransport::StartSend(const void* buffer, int64_t bytes, int dest, int tag,
                                              CommGroup group) {
  const char* data = static_cast<const char*>(buffer);
  world_.Post(dest, {rank_, MailboxTag(tag, group), std::vector<char>(data, data + bytes)});
  return next_transfer_++;  // never registered: TestTransfer reports it done
}

Result<TransferId> ThreadTransport::StartRecv(void* buffer, int64_t bytes, int source, int tag,
                                              CommGroup group) {
  const TransferId id = next_transfer_++;
  recvs_[id] = PendingRecv{buffer, bytes, source, MailboxTag(tag, group)};
  return id;
}

Result<bool> ThreadTransport::TestTransfer(TransferId id) {
  auto it = recvs_.find(id);
  if (it == recvs_.end()) return true;  // a send
  ThreadWorld::Message message;
  if (!world_.Take(rank_, it->second.source, it->second.tag, &message)) return false;
  if (static_cast<int64_t>(message.bytes.size()) != it->second.bytes)
    return Status::Internal("thread transport: message size differs from the receive");
  std::memcpy(it->second.buffer, message.bytes.data(), message.bytes.size());
  recvs_.erase(it);
  return true;
}

void ThreadTransport::Abort(int) {
  std::abort();
}

}  // namespace flock::testing
