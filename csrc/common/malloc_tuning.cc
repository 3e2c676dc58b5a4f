#include "flock/common/malloc_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace flock {

std::string TuneMallocForLargeBuffers(const std::string& user_setting) {
#if defined(__GLIBC__)
  if (!user_setting.empty()) return "left as configured (" + user_setting + ")";
  constexpr int kOneGiB = 1 << 30;
  // Up to 1 GiB from the heap (reused after free), 1 GiB of free heap kept,
  // and the engine thread's allocations in that same heap.
  const bool ok = mallopt(M_MMAP_THRESHOLD, kOneGiB) == 1 &&
                  mallopt(M_TRIM_THRESHOLD, kOneGiB) == 1 && mallopt(M_ARENA_MAX, 1) == 1;
  return ok ? "large buffers stay in the process (mmap and trim thresholds 1 GiB, one arena)"
            : "glibc refused the settings";
#else
  (void)user_setting;
  return "not glibc: left as it is";
#endif
}

}  // namespace flock
