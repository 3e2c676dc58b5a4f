// Window: one rank's copy of a named window (win_create). It holds the
// caller's tensor — the window's own value, which neighbours' win_get read —
// and one slot per in-neighbour of the topology in force at creation, which
// those neighbours' win_put replace, win_accumulate add to, and this rank's
// win_get fill. Each slot also keeps a version (puts and gets since the last
// update) and, for push-sum, the weight p that came with its data.
//
// Shared by the engine thread (which applies arrivals) and callers
// (win_update, versions), under one mutex held only to swap buffers and
// counters: an arrival lands in a buffer of its own and then replaces the
// slot's, so a reader never sees half a tensor; a reader keeps the buffers it
// took, so an arrival never waits for a reader's arithmetic. Buffers come from
// the engine's pool (fresh pages cost more than the copy).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "flock/common/buffer_pool.h"
#include "flock/common/status.h"
#include "flock/common/tensor_view.h"
#include "flock/window/edge_locks.h"

namespace flock {

using WindowBuffer = std::shared_ptr<PooledBuffer>;

struct WindowSpec {
  std::string name;
  int rank = 0;
  TensorView self;                   // the caller's tensor (contiguous, on the host)
  std::shared_ptr<void> keep_alive;  // keeps it valid while the window exists
  std::vector<int> in_neighbors;     // ascending, at creation
  std::vector<int> out_neighbors;
  bool zero_init = false;  // slots start at 0, else as a copy of this rank's tensor
};

class Window {
 public:
  // `pool` must outlive the window and every buffer taken from it.
  Window(WindowSpec spec, BufferPool& pool, std::function<void()> notify_engine);

  const std::string& name() const { return spec_.name; }
  int rank() const { return spec_.rank; }
  const TensorView& self() const { return spec_.self; }
  DataType dtype() const { return spec_.self.dtype; }
  int64_t count() const { return count_; }
  int64_t bytes() const { return bytes_; }
  const std::vector<int>& in_neighbors() const { return spec_.in_neighbors; }
  const std::vector<int>& out_neighbors() const { return spec_.out_neighbors; }
  bool is_in_neighbor(int rank) const { return SlotIndex(rank) >= 0; }
  bool is_out_neighbor(int rank) const;
  EdgeLocks& locks() { return locks_; }
  // A tensor-sized buffer (uninitialized) for an arrival to land in.
  WindowBuffer NewBuffer();

  // Engine thread: what in-neighbour `from` sent. A put (or this rank's get)
  // replaces the slot and counts a version; an accumulation adds to it.
  void Replace(int from, WindowBuffer data, bool count_version, std::optional<double> p);
  Status Accumulate(int from, const void* data, std::optional<double> p);

  // A reader's view of the slots of `from` (in-neighbours), with their p.
  struct Snapshot {
    std::vector<WindowBuffer> data;
    std::vector<double> p;
  };
  // `reset`: those slots start again from 0 (what arrives from now on is
  // not in the snapshot, and nothing in it is counted twice). Every version
  // is cleared, as win_update does.
  Snapshot Read(const std::vector<int>& from, bool reset);
  std::map<int, int64_t> Versions() const;
  double p_self() const;
  void set_p_self(double p);
  // A destination refused a put or accumulate that had completed already: the
  // next one of this rank on the window fails with it (TakeLateError).
  void NoteLateError(const Status& error);
  Status TakeLateError();

 private:
  int SlotIndex(int rank) const;
  WindowBuffer ZeroBuffer();

  const WindowSpec spec_;
  const int64_t count_;
  const int64_t bytes_;
  BufferPool& pool_;
  EdgeLocks locks_;
  mutable std::mutex mutex_;
  std::vector<WindowBuffer> data_;  // by slot (in-neighbour index)
  std::vector<int64_t> versions_;
  std::vector<double> p_;
  double p_self_ = 1.0;
  Status late_error_;
};

}  // namespace flock
