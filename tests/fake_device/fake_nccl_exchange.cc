// The messages of one group task, all posted at once and progressed with
// poll() until every one went through, so that sends and receives inside a
// group match whatever order they were called in. Per peer they go in call
// order over the pair's one socket, which the kernel keeps in order.
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "fake_nccl_internal.h"

namespace flock::fake::nccl {
namespace {

constexpr size_t kHeaderBytes = sizeof(WireHeader);
constexpr int kPollMillis = 20;  // how soon an abort is seen

std::string Rank(int rank) {
  return "rank " + std::to_string(rank);
}

}  // namespace

Exchange::Link& Exchange::LinkTo(CommState* comm, int peer) {
  for (Link& link : links_) {
    if (link.comm == comm && link.peer == peer) return link;
  }
  // The task holds the comm's turn: fds stay open meanwhile.
  links_.push_back(Link{comm, peer, comm->fds[peer], {}, {}});
  return links_.back();
}

void Exchange::Send(CommState* comm, int peer, const WireHeader& h, const void* data) {
  LinkTo(comm, peer).out.push_back(Outgoing{h, static_cast<const char*>(data)});
}

void Exchange::Receive(CommState* comm, int peer, const WireHeader& expected, void* into) {
  LinkTo(comm, peer).in.push_back(Incoming{expected, {}, static_cast<char*>(into)});
}

void Exchange::Fail(Link& link, ncclResult_t code, const std::string& why) {
  SetAsyncError(*link.comm, code, Rank(link.comm->rank) + ": " + why);
  failed_ = true;
}

// Sends and receives of a rank to itself pair up in call order.
bool Exchange::MatchSelf(Link& link) {
  while (!link.out.empty() && !link.in.empty()) {
    const Outgoing& o = link.out.front();
    const Incoming& i = link.in.front();
    if (!(o.header == i.expected)) {
      Fail(link, ncclInvalidUsage,
           "expected " + Describe(i.expected) + " from itself but sent " + Describe(o.header));
      return false;
    }
    if (o.header.bytes > 0) std::memcpy(i.into, o.data, o.header.bytes);
    link.out.pop_front();
    link.in.pop_front();
  }
  if (link.out.empty() && link.in.empty()) return true;
  Fail(link, ncclInvalidUsage,
       "a send to itself without a receive from itself in its group, or "
       "the reverse (it would hang)");
  return false;
}

bool Exchange::Write(Link& link) {
  while (!link.out.empty()) {
    Outgoing& o = link.out.front();
    const size_t total = kHeaderBytes + o.header.bytes;
    iovec parts[2];
    int n_parts = 0;
    if (o.done < kHeaderBytes) {
      parts[n_parts++] = {reinterpret_cast<char*>(&o.header) + o.done, kHeaderBytes - o.done};
      parts[n_parts++] = {const_cast<char*>(o.data), o.header.bytes};
    } else {
      const size_t at = o.done - kHeaderBytes;
      parts[n_parts++] = {const_cast<char*>(o.data) + at, o.header.bytes - at};
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = n_parts;
    const ssize_t n = sendmsg(link.fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      const int error = errno;
      if (error == EAGAIN || error == EINTR) return true;
      Fail(link, ncclRemoteError,
           "cannot send " + Describe(o.header) + " to " + Rank(link.peer) + " (" +
               std::strerror(error) + "; it exited or aborted)");
      return false;
    }
    o.done += static_cast<size_t>(n);
    if (o.done == total) link.out.pop_front();
  }
  return true;
}

bool Exchange::Read(Link& link) {
  while (!link.in.empty()) {
    Incoming& m = link.in.front();
    char* at = m.done < kHeaderBytes ? reinterpret_cast<char*>(&m.got) + m.done
                                     : m.into + (m.done - kHeaderBytes);
    const size_t want =
        m.done < kHeaderBytes ? kHeaderBytes - m.done : kHeaderBytes + m.expected.bytes - m.done;
    const ssize_t n = recv(link.fd, at, want, MSG_DONTWAIT);  // want > 0: done ones are popped
    const int error = errno;
    if (n < 0 && (error == EAGAIN || error == EINTR)) return true;
    if (n <= 0) {
      Fail(link, ncclRemoteError,
           Rank(link.peer) + " closed its connection (" +
               (n == 0 ? std::string("end of file") : std::strerror(error)) +
               "; it exited or aborted) while this rank waited for " + Describe(m.expected));
      return false;
    }
    const bool had_header = m.done >= kHeaderBytes;
    m.done += static_cast<size_t>(n);
    if (!had_header && m.done == kHeaderBytes && !(m.got == m.expected)) {
      Fail(link, ncclInvalidUsage,
           "expected " + Describe(m.expected) + " from " + Rank(link.peer) + ", but " +
               Rank(link.peer) + " sent " + Describe(m.got) +
               " (ranks called ops in different orders or with different sizes)");
      return false;
    }
    if (m.done == kHeaderBytes + m.expected.bytes) link.in.pop_front();
  }
  return true;
}

bool Exchange::PollOnce(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<Link*> polled;
  for (Link& link : links_) {
    if (link.out.empty() && link.in.empty()) continue;
    const short events = (link.out.empty() ? 0 : POLLOUT) | (link.in.empty() ? 0 : POLLIN);
    fds.push_back(pollfd{link.fd, events, 0});
    polled.push_back(&link);
  }
  const int ready = poll(fds.data(), fds.size(), timeout_ms);
  if (ready <= 0) return true;  // nothing yet (or EINTR): look again
  for (size_t i = 0; i < fds.size(); ++i) {
    const short got = fds[i].revents;
    if ((got & (POLLOUT | POLLERR | POLLHUP)) && !Write(*polled[i])) return false;
    if ((got & (POLLIN | POLLERR | POLLHUP)) && !Read(*polled[i])) return false;
  }
  return true;
}

void Exchange::TimedOut(double timeout_s) {
  for (Link& link : links_) {
    if (link.out.empty() && link.in.empty()) continue;
    char text[64];
    std::snprintf(text, sizeof(text), " not done after %g s (FAKE_NCCL_TIMEOUT_S): ", timeout_s);
    if (!link.in.empty()) {
      const Incoming& m = link.in.front();
      Fail(link, ncclSystemError,
           Describe(m.expected) + text + "waiting for " + Rank(link.peer) + " (received " +
               std::to_string(m.done) + " of " + std::to_string(kHeaderBytes + m.expected.bytes) +
               " bytes)");
    } else {
      const Outgoing& o = link.out.front();
      Fail(link, ncclSystemError,
           Describe(o.header) + text + "sending to " + Rank(link.peer) + " (sent " +
               std::to_string(o.done) + " of " + std::to_string(kHeaderBytes + o.header.bytes) +
               " bytes; does it receive?)");
    }
    return;
  }
}

Exchange::Outcome Exchange::Run(double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  for (Link& link : links_) {
    if (link.peer == link.comm->rank && !MatchSelf(link)) return Outcome::kFailed;
  }
  while (true) {
    for (const Link& link : links_) {
      if (link.comm->aborted) return Outcome::kAborted;
    }
    if (failed_) return Outcome::kFailed;
    const bool pending = std::any_of(links_.begin(), links_.end(), [](const Link& link) {
      return !link.out.empty() || !link.in.empty();
    });
    if (!pending) return Outcome::kDone;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left < 0) {
      TimedOut(timeout_s);
      return Outcome::kFailed;
    }
    PollOnce(static_cast<int>(std::min<int64_t>(left + 1, kPollMillis)));
  }
}

}  // namespace flock::fake::nccl
