// What every fuzz target shares: a check that stops the run (libFuzzer then
// keeps the input as a crash) when a decoder breaks its contract without any
// sanitizer noticing, e.g. a refusal without a message or a round trip that
// changes the bytes.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FLOCK_FUZZ_CHECK(condition, what)                         \
  do {                                                            \
    if (!(condition)) {                                           \
      std::fprintf(stderr, "fuzz contract broken: %s\n", (what)); \
      std::abort();                                               \
    }                                                             \
  } while (0)
