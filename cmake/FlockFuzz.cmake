# FLOCK_FUZZ=ON builds the libFuzzer targets of tests/fuzz (fuzz_*), one per
# decoder of bytes that come from another process or a file. libFuzzer ships
# with clang, so this needs clang (Debian: clang-14 and libclang-rt-14-dev).
# Every target of the project is instrumented for coverage (fuzzer-no-link)
# and built with ASan + UBSan, so the fuzzers are guided through the decoders'
# callees as well; only the fuzz_* executables link libFuzzer's main.
if(NOT FLOCK_FUZZ)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR
    "FLOCK_FUZZ=ON needs clang, whose runtime has libFuzzer; this build directory uses "
    "${CMAKE_CXX_COMPILER_ID} (${CMAKE_CXX_COMPILER}). Configure a fresh build directory with "
    "CC=clang-14 CXX=clang++-14 (or run scripts/fuzz.sh).")
endif()
string(TOLOWER "${FLOCK_SANITIZE}" _flock_fuzz_sanitize)
if(NOT _flock_fuzz_sanitize STREQUAL "off" AND NOT _flock_fuzz_sanitize STREQUAL "")
  message(FATAL_ERROR "FLOCK_FUZZ=ON already builds with ASan + UBSan: leave FLOCK_SANITIZE OFF")
endif()

# Any UB report stops the run, so libFuzzer records it as a crash with its input.
set(FLOCK_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=all
    -fno-omit-frame-pointer)

include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }
]] FLOCK_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
if(NOT FLOCK_HAVE_LIBFUZZER)
  message(FATAL_ERROR "FLOCK_FUZZ=ON: ${CMAKE_CXX_COMPILER} cannot link -fsanitize=fuzzer; "
                      "install clang's runtime (Debian: libclang-rt-14-dev)")
endif()

message(STATUS "flock: building the libFuzzer targets (coverage + ASan + UBSan everywhere)")
add_compile_options(-fsanitize=fuzzer-no-link ${FLOCK_FUZZ_SANITIZERS})
add_link_options(${FLOCK_FUZZ_SANITIZERS})
