// Keeps large freed buffers in the process instead of handing them back to
// the kernel (FLOCK_MALLOC_TUNING, on by default).
//
// glibc serves large allocations with a fresh mmap and unmaps them on free,
// and threads other than the main one allocate from arenas whose heaps are
// released as they empty. OpenMPI allocates the temporary buffer of a large
// allreduce per call (32 MiB for 64 MiB at np 2), on the engine thread, so
// every call page-faults it in again. On this project's VM a page fault costs
// 12-40 us: 8193 faults made a 64 MiB allreduce take 200-350 ms instead of
// ~20 ms. Freshly allocated tensors pay the same on their first write.
#pragma once

#include <string>

namespace flock {

// Sets glibc's mmap and trim thresholds to 1 GiB and one arena for every
// thread, unless `user_setting` (Config::user_malloc_setting) names the
// user's own. Call before any thread of flock's starts. Returns what it did,
// or why it did nothing (for the log).
std::string TuneMallocForLargeBuffers(const std::string& user_setting);

}  // namespace flock
