// IdleYieldSwitch: OpenMPI's yield-when-idle, off while the engine's loop
// polls and on again for the blocking calls it makes.
//
// With `mpi_yield_when_idle` set (flockrun sets it when ranks outnumber cores)
// every OpenMPI call that progresses nothing calls sched_yield(): MPI_Iprobe,
// MPI_Test, MPI_Testall. One pass of the engine's loop makes several such calls
// (a probe per control tag, a test per transfer and per posted send), so an
// idle pass gave its core away four or five times where MPI_Waitall gives it
// away once per poll; on 4 ranks sharing 2 cores that made a 1 MiB
// neighbor_allreduce 10-15 % slower than the Isend/Irecv floor. The loop
// decides itself when to yield (Engine::PlanIdle), once per pass. Blocking
// calls made inside a pass (the collectives of global ops) keep the configured
// behaviour: waiting inside MPI, yielding is what lets the rank that holds the
// core finish.
//
// The switch is OpenMPI's opal_progress_set_yield_when_idle, looked up at run
// time (declared in OpenMPI's installed opal headers, exported by
// libopen-pal): under another MPI, or with yielding off, nothing is switched.
// Passes and blocking calls may come from several threads: a mutex orders them.
// The setting is process-wide: MPI calls a user makes beside flock (mpi4py) do
// not yield while a pass runs (a pass lasts microseconds).
#pragma once

#include <mutex>

namespace flock {

class IdleYieldSwitch {
 public:
  // Sets yield-when-idle and returns the previous value (OpenMPI's signature).
  using SetFn = bool (*)(bool);

  // OpenMPI's switch if this process has one (call once MPI is initialized).
  static SetFn FindOpenMpiSwitch();

  // `set` may be null (nothing to switch). Reads the configured value through it.
  explicit IdleYieldSwitch(SetFn set = nullptr);

  // Whether there is anything to switch: yielding is configured and switchable.
  bool active() const { return set_ != nullptr; }

  // Polling passes may nest; yielding is off from the first Begin to the last End.
  void BeginPolling();
  void EndPolling();

  // A blocking call inside a pass yields as configured while it lasts.
  class Blocking {
   public:
    explicit Blocking(IdleYieldSwitch& owner);
    ~Blocking();
    Blocking(const Blocking&) = delete;
    Blocking& operator=(const Blocking&) = delete;

   private:
    IdleYieldSwitch& owner_;
  };

 private:
  // The setter when yielding is configured, else null: the configured value,
  // read once through it.
  static SetFn IfConfigured(SetFn set);

  const SetFn set_;
  std::mutex mutex_;
  int polling_depth_ = 0;   // under mutex_
  int blocking_calls_ = 0;  // under mutex_: blocking calls under way
};

}  // namespace flock
