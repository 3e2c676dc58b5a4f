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

Status ThreadTransport::PostSend(std::vector<char> bytes, int dest, int tag, CommGroup) {
  world_.Post(dest, {rank_, tag, std::move(bytes)});
  return Status::OK();
}

Result<bool> ThreadTransport::TryReceive(int source, int tag, CommGroup, int* from,
                                         std::vector<char>* bytes) {
  ThreadWorld::Message message;
  if (!world_.Take(rank_, source, tag, &message)) return false;
  *from = message.from;
  *bytes = std::move(message.bytes);
  return true;
}

void ThreadTransport::Abort(int) {
  std::abort();
}

}  // namespace flock::testing
