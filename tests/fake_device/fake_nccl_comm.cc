// The fake NCCL's communicators: unique ids, the full mesh of abstract Unix
// sockets that ncclCommInitRank connects, errors, abort and teardown. Sockets
// make ranks that are threads of one process and ranks that are processes of
// an MPI job look the same; nothing is left on disk when a rank dies.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "fake_nccl_internal.h"

namespace flock::fake::nccl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kMagic[8] = {'F', 'K', 'N', 'C', 'C', 'L', '0', '1'};

// The fields of a fake ncclUniqueId, at the start of its 128 bytes.
struct IdFields {
  char magic[8];
  uint64_t nonce;
  int32_t pid;  // the creator's, to tell ids apart in a debugger
};
static_assert(sizeof(IdFields) <= sizeof(ncclUniqueId), "the id fields fit the id");

// What each end of a new connection tells the other.
struct Hello {
  uint64_t nonce;
  int32_t rank, device;
};

double TimeoutSeconds() {
  const char* text = std::getenv("FAKE_NCCL_TIMEOUT_S");  // fractions allowed, for tests
  const double seconds = text == nullptr ? 0 : std::strtod(text, nullptr);
  return seconds > 0 ? seconds : 60;
}

bool SharedDeviceAllowed() {
  const char* text = std::getenv("FAKE_NCCL_ALLOW_SHARED_DEVICE");
  return text != nullptr && std::string(text) == "1";
}

sockaddr_un AddressOf(uint64_t nonce, int rank, socklen_t* length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, not NUL-terminated.
  const int n =
      std::snprintf(address.sun_path + 1, sizeof(address.sun_path) - 1,
                    "flock-fake-nccl-%016llx-%d", static_cast<unsigned long long>(nonce), rank);
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return address;
}

// Waits for `events` on fd until the deadline; false when it passed.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return false;
    pollfd p{fd, events, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 100)));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

// Whole-buffer transfers on a non-blocking socket, for the handshake.
bool Transfer(int fd, void* data, size_t bytes, bool write, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < bytes) {
    if (!WaitFor(fd, write ? POLLOUT : POLLIN, deadline)) return false;
    const ssize_t n = write ? send(fd, p + done, bytes - done, MSG_NOSIGNAL)
                            : recv(fd, p + done, bytes - done, 0);
    if (n == 0) return false;
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (n > 0) done += static_cast<size_t>(n);
  }
  return true;
}

// Connects to a lower rank's listening socket, retrying until it exists.
int ConnectTo(uint64_t nonce, int peer, Clock::time_point deadline) {
  socklen_t length;
  const sockaddr_un address = AddressOf(nonce, peer, &length);
  while (Clock::now() < deadline) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0) return fd;
    const int error = errno;
    close(fd);
    if (error != ECONNREFUSED && error != ENOENT && error != EAGAIN && error != EINTR) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // not listening yet
  }
  return -1;
}

class MeshBuilder {
 public:
  MeshBuilder(CommState& comm, uint64_t nonce)
      : comm_(comm),
        nonce_(nonce),
        devices_(comm.nranks, -1),
        deadline_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(comm.timeout_s))) {}
  ~MeshBuilder() {
    if (listener_ >= 0) close(listener_);
  }

  // Listens, connects to lower ranks, accepts higher ones, checks devices.
  ncclResult_t Build() {
    if (comm_.nranks > 1) {
      if (ncclResult_t r = Listen(); r != ncclSuccess) return r;
    }
    for (int peer = 0; peer < comm_.rank; ++peer) {
      if (ncclResult_t r = Connect(peer); r != ncclSuccess) return r;
    }
    for (int accepted = comm_.rank + 1; accepted < comm_.nranks; ++accepted) {
      if (ncclResult_t r = AcceptOne(); r != ncclSuccess) return r;
    }
    return CheckDevices();
  }

 private:
  ncclResult_t Listen() {
    listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    socklen_t length;
    const sockaddr_un address = AddressOf(nonce_, comm_.rank, &length);
    if (listener_ < 0 ||
        bind(listener_, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
      const int error = errno;
      return CallFailed(error == EADDRINUSE ? ncclInvalidUsage : ncclSystemError,
                        Where() + "cannot listen (" + std::strerror(error) +
                            "); is this rank of this id already in use?");
    }
    if (listen(listener_, comm_.nranks) != 0)
      return CallFailed(ncclSystemError, Where() + "listen: " + std::strerror(errno));
    return ncclSuccess;
  }

  ncclResult_t Connect(int peer) {
    const int fd = ConnectTo(nonce_, peer, deadline_);
    if (fd < 0) return TimedOut("rank " + std::to_string(peer) + " to listen");
    comm_.fds[peer] = fd;
    Hello mine = Mine(), theirs{};
    if (!Transfer(fd, &mine, sizeof(mine), true, deadline_) ||
        !Transfer(fd, &theirs, sizeof(theirs), false, deadline_) || theirs.nonce != nonce_ ||
        theirs.rank != peer)
      return TimedOut("rank " + std::to_string(peer) + " to answer");
    devices_[peer] = theirs.device;
    return ncclSuccess;
  }

  ncclResult_t AcceptOne() {
    if (!WaitFor(listener_, POLLIN, deadline_)) return TimedOut("the higher ranks to connect");
    const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return CallFailed(ncclSystemError, Where() + "accept: " + std::strerror(errno));
    Hello theirs{}, mine = Mine();
    const bool heard = Transfer(fd, &theirs, sizeof(theirs), false, deadline_);
    if (!heard || theirs.nonce != nonce_ || theirs.rank <= comm_.rank ||
        theirs.rank >= comm_.nranks || comm_.fds[theirs.rank] >= 0) {
      close(fd);
      return CallFailed(ncclSystemError, Where() + "a bad handshake on its socket");
    }
    comm_.fds[theirs.rank] = fd;
    devices_[theirs.rank] = theirs.device;
    if (!Transfer(fd, &mine, sizeof(mine), true, deadline_))
      return TimedOut("rank " + std::to_string(theirs.rank) + " to read the handshake");
    return ncclSuccess;
  }

  // Real NCCL refuses two ranks of one comm on one GPU ("duplicate GPU").
  ncclResult_t CheckDevices() {
    if (SharedDeviceAllowed()) return ncclSuccess;
    for (int peer = 0; peer < comm_.nranks; ++peer) {
      if (peer != comm_.rank && devices_[peer] == comm_.device)
        return CallFailed(ncclInvalidUsage,
                          Where() + "rank " + std::to_string(peer) + " uses the same fake device " +
                              std::to_string(comm_.device) +
                              " (duplicate GPU; FAKE_NCCL_ALLOW_SHARED_DEVICE=1 allows it)");
    }
    return ncclSuccess;
  }

  Hello Mine() const { return Hello{nonce_, comm_.rank, comm_.device}; }
  std::string Where() const {
    return "ncclCommInitRank: rank " + std::to_string(comm_.rank) + " of " +
           std::to_string(comm_.nranks) + ": ";
  }
  ncclResult_t TimedOut(const std::string& what) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", comm_.timeout_s);
    return CallFailed(ncclSystemError,
                      Where() + "waited " + seconds + " s for " + what + " (FAKE_NCCL_TIMEOUT_S)");
  }

  CommState& comm_;
  const uint64_t nonce_;
  std::vector<int> devices_;
  const Clock::time_point deadline_;
  int listener_ = -1;
};

void CloseAll(std::vector<int>& fds) {
  for (int& fd : fds) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

thread_local std::string last_error;

}  // namespace

ncclResult_t CallFailed(ncclResult_t code, const std::string& why) {
  last_error = why;
  return code;
}

const std::string& ThreadLastError() {
  return last_error;
}

void SetAsyncError(CommState& comm, ncclResult_t code, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(comm.mutex);
    if (comm.error != ncclSuccess) return;  // the first error is the cause
    comm.error = code;
    comm.message = why;
  }
  std::fprintf(stderr, "fake NCCL: %s\n", why.c_str());
  comm.changed.notify_all();
}

ncclUniqueId NewUniqueId() {
  IdFields fields{};
  std::memcpy(fields.magic, kMagic, sizeof(kMagic));
  std::random_device entropy;
  const uint64_t time = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  fields.nonce = (uint64_t{entropy()} << 32 | entropy()) ^ time;
  fields.pid = static_cast<int32_t>(getpid());
  ncclUniqueId id{};
  std::memcpy(id.internal, &fields, sizeof(fields));
  return id;
}

ncclResult_t InitRank(std::shared_ptr<CommState>* out, int nranks, const ncclUniqueId& id, int rank,
                      int device) {
  IdFields fields;
  std::memcpy(&fields, id.internal, sizeof(fields));
  if (std::memcmp(fields.magic, kMagic, sizeof(kMagic)) != 0)
    return CallFailed(ncclInvalidArgument, "ncclCommInitRank: not an id of ncclGetUniqueId");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return CallFailed(ncclInvalidArgument, "ncclCommInitRank: rank " + std::to_string(rank) +
                                               " of " + std::to_string(nranks) + " ranks");
  auto comm = std::make_shared<CommState>();
  comm->nranks = nranks;
  comm->rank = rank;
  comm->device = device;
  comm->timeout_s = TimeoutSeconds();
  comm->fds.assign(nranks, -1);
  comm->sends_to.assign(nranks, 0);
  comm->receives_from.assign(nranks, 0);
  if (const char* after = std::getenv("FAKE_NCCL_FAIL_AFTER"))
    comm->fail_at_op = std::strtoull(after, nullptr, 10);
  if (ncclResult_t r = MeshBuilder(*comm, fields.nonce).Build(); r != ncclSuccess) {
    CloseAll(comm->fds);
    return r;
  }
  *out = std::move(comm);
  return ncclSuccess;
}

void Abort(CommState& comm) {
  std::unique_lock<std::mutex> lock(comm.mutex);
  comm.aborted = true;
  comm.changed.notify_all();
  // A task that holds the turn leaves within one poll round once it sees the flag.
  comm.changed.wait(lock, [&] { return !comm.holding; });
  CloseAll(comm.fds);
}

void WaitForWork(CommState& comm) {
  std::unique_lock<std::mutex> lock(comm.mutex);
  comm.changed.wait(lock, [&] {
    return comm.tickets_done == comm.tickets_issued || comm.error != ncclSuccess || comm.aborted;
  });
}

}  // namespace flock::fake::nccl
