# Enables CUDA for flock's kernels (included by FlockNccl.cmake once CUDA and NCCL are found).
#
# Architectures: a user's -DCMAKE_CUDA_ARCHITECTURES=... wins (developers may pass 75 for quick
# builds). Otherwise: what `nvcc --list-gpu-code` lists from sm_75 on (CUDA 13 no longer builds
# sm_70), as real code each, plus PTX of the newest so that later GPUs JIT it. Never `all` or
# `all-major`: CMake 3.25's table stops at CUDA 11.8 and names architectures nvcc 13 rejects;
# `native` needs a GPU.
set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE} CACHE FILEPATH "nvcc")
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  execute_process(COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} --list-gpu-code
                  OUTPUT_VARIABLE _flock_gpu_codes RESULT_VARIABLE _flock_list_failed)
  if(_flock_list_failed)
    message(FATAL_ERROR "flock: `nvcc --list-gpu-code` failed; pass -DCMAKE_CUDA_ARCHITECTURES")
  endif()
  string(REGEX MATCHALL "sm_[0-9]+" _flock_codes "${_flock_gpu_codes}")
  set(_flock_numbers "")
  foreach(_code IN LISTS _flock_codes)
    string(REPLACE "sm_" "" _number "${_code}")
    if(_number GREATER_EQUAL 75)
      list(APPEND _flock_numbers ${_number})
    endif()
  endforeach()
  list(SORT _flock_numbers COMPARE NATURAL)  # nvcc's list is not sorted
  list(REMOVE_DUPLICATES _flock_numbers)
  if(NOT _flock_numbers)
    message(FATAL_ERROR "flock: nvcc lists no GPU code from sm_75 on; pass -DCMAKE_CUDA_ARCHITECTURES")
  endif()
  list(GET _flock_numbers -1 _flock_newest)
  set(_flock_archs "")
  foreach(_number IN LISTS _flock_numbers)
    list(APPEND _flock_archs ${_number}-real)
  endforeach()
  list(APPEND _flock_archs ${_flock_newest}-virtual)
  set(CMAKE_CUDA_ARCHITECTURES "${_flock_archs}" CACHE STRING "GPU architectures of flock's kernels")
endif()
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
# One CUDA runtime in the process: the shared libcudart the core links, not a second, static
# copy with its own current device and errors (nvcc's default).
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
enable_language(CUDA)
message(STATUS "flock: CUDA kernels for ${CMAKE_CUDA_ARCHITECTURES}")
