# Compiles through ccache when it is installed (FLOCK_CCACHE=AUTO, the default;
# ON requires it, OFF never uses it). The test command builds the code several
# times (release, ASan, TSan, the fuzzers), and CI builds it again in every fresh
# clone: ccache gives back an unchanged file's object instead of compiling it.
# Paths are hashed relative to the checkout (CCACHE_BASEDIR) and without the
# build directory (CCACHE_NOHASHDIR), so another clone, or another build
# directory with the same flags, hits the same entries. Must come before any
# target is defined.
set(FLOCK_CCACHE "AUTO" CACHE STRING "Compile through ccache: AUTO (when installed), ON or OFF")
set_property(CACHE FLOCK_CCACHE PROPERTY STRINGS AUTO ON OFF)

if(NOT FLOCK_CCACHE STREQUAL "OFF" AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(FLOCK_CCACHE_PROGRAM ccache)
  if(FLOCK_CCACHE_PROGRAM)
    set(_flock_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}
                        CCACHE_NOHASHDIR=1 ${FLOCK_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${_flock_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_flock_launcher})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${_flock_launcher})  # nvcc too, in NCCL builds
    message(STATUS "flock: compiling through ${FLOCK_CCACHE_PROGRAM}")
  elseif(FLOCK_CCACHE STREQUAL "ON")
    message(FATAL_ERROR "FLOCK_CCACHE=ON but ccache is not installed (apt-get install ccache)")
  endif()
endif()
