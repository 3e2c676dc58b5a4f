// EdgeLocks: Bluefog's window mutexes as flock keeps them — one per directed
// edge s→r, kept by rank r as its slot s. A slot is free or held by one
// holder: a thread of this rank (win_mutex with for_self, win_update with
// require_mutex) or another rank (win_mutex on this rank, or a put, an
// accumulate or a get made with require_mutex, which the engine thread
// carries out while holding the slot for that rank). Whoever asks while the
// slot is held waits in line, first come first served. Threads of this rank
// block on a condition variable; another rank's turn is handed to the engine
// thread (TakeGrants), woken by `notify`. Nothing spins.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

namespace flock {

class EdgeLocks {
 public:
  // What a queued request of another rank is for, once it holds the slot.
  enum class Purpose : uint8_t { kMutex, kServeGet, kApplyArrival };
  struct Grant {
    int slot = 0;
    int rank = 0;
    int64_t op = 0;
    Purpose purpose = Purpose::kMutex;
  };

  // `notify` (any thread): a grant is due; the engine thread should look.
  explicit EdgeLocks(std::function<void()> notify) : notify_(std::move(notify)) {}

  // This rank's threads: blocks until it holds every slot of `slots`, taken
  // in ascending order (so two lockers never wait for each other). False when
  // the window was freed meanwhile (nothing is held then).
  bool LockLocal(const std::vector<int>& slots);
  void UnlockLocal(const std::vector<int>& slots);

  // Engine thread: rank `rank` asks for slot `slot` (op `op`, for `purpose`):
  // true when it holds it now, else it is queued and comes out of TakeGrants.
  bool LockRemote(int slot, int rank, int64_t op, Purpose purpose);
  // Releases slot `slot` if rank `rank` holds it (else nothing happens).
  void UnlockRemote(int slot, int rank);
  std::vector<Grant> TakeGrants();

  // The window is freed: holders and waiters are let go.
  void ReleaseAll();

 private:
  struct Waiter {
    int rank = -1;  // -1: a thread of this rank, known by its ticket
    uint64_t ticket = 0;
    int64_t op = 0;
    Purpose purpose = Purpose::kMutex;
  };
  struct Slot {
    bool held = false;
    Waiter holder;
    std::deque<Waiter> queue;
  };

  // The next in line gets the slot (mutex_ held).
  void HandOver(int slot_index, Slot& slot);
  bool LocalHolds(const Slot& slot, uint64_t ticket) const {
    return slot.held && slot.holder.rank == -1 && slot.holder.ticket == ticket;
  }

  std::function<void()> notify_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, Slot> slots_;
  std::vector<Grant> grants_;
  uint64_t next_ticket_ = 1;
  bool freed_ = false;
};

}  // namespace flock
