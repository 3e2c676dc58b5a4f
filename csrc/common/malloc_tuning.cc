#include "common/malloc_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

extern char** environ;

namespace flock {
namespace {

// The user's own malloc settings win.
const char* UserMallocSetting() {
  for (char** var = environ; var != nullptr && *var != nullptr; ++var) {
    if (std::strncmp(*var, "MALLOC_", 7) == 0) return *var;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return tunables;
  return nullptr;
}

}  // namespace

std::string TuneMallocForLargeBuffers() {
#if defined(__GLIBC__)
  if (const char* setting = UserMallocSetting())
    return std::string("left as configured (") + setting + ")";
  constexpr int kOneGiB = 1 << 30;
  // Up to 1 GiB from the heap (reused after free), 1 GiB of free heap kept,
  // and the engine thread's allocations in that same heap.
  const bool ok = mallopt(M_MMAP_THRESHOLD, kOneGiB) == 1 &&
                  mallopt(M_TRIM_THRESHOLD, kOneGiB) == 1 && mallopt(M_ARENA_MAX, 1) == 1;
  return ok ? "large buffers stay in the process (mmap and trim thresholds 1 GiB, one arena)"
            : "glibc refused the settings";
#else
  return "not glibc: left as it is";
#endif
}

}  // namespace flock
