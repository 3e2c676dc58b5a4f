# Detects CUDA + NCCL for the optional GPU backend.
#   FLOCK_WITH_NCCL=AUTO  use them when both are found (the toolkit at /usr/local/cuda is searched)
#   FLOCK_WITH_NCCL=ON    fail the configure step when either is missing
#   FLOCK_WITH_NCCL=OFF   never look
# Result: FLOCK_HAVE_NCCL (ON/OFF) and, when ON, the imported target flock_nccl_deps and the
# CUDA language enabled for flock's kernels (csrc/transport/cuda/device_kernels.cu), compiled
# for CMAKE_CUDA_ARCHITECTURES — by default every GPU code the toolkit's nvcc lists from
# Turing (sm_75) on, plus PTX of the newest for GPUs that come later.
set(FLOCK_HAVE_NCCL OFF)
string(TOUPPER "${FLOCK_WITH_NCCL}" _flock_nccl_mode)
if(NOT _flock_nccl_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "FLOCK_WITH_NCCL must be AUTO, ON or OFF (got '${FLOCK_WITH_NCCL}')")
endif()

if(NOT _flock_nccl_mode STREQUAL "OFF")
  if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  find_path(FLOCK_NCCL_INCLUDE_DIR nccl.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
  find_library(FLOCK_NCCL_LIBRARY nccl
    HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib lib64)
  if(CUDAToolkit_FOUND AND FLOCK_NCCL_INCLUDE_DIR AND FLOCK_NCCL_LIBRARY)
    set(FLOCK_HAVE_NCCL ON)
    add_library(flock_nccl_deps INTERFACE IMPORTED)
    target_include_directories(flock_nccl_deps INTERFACE ${FLOCK_NCCL_INCLUDE_DIR})
    target_link_libraries(flock_nccl_deps INTERFACE CUDA::cudart ${FLOCK_NCCL_LIBRARY})
    message(STATUS "flock: CUDA ${CUDAToolkit_VERSION} and NCCL found (${FLOCK_NCCL_LIBRARY})")
    include(FlockCudaLanguage)
  elseif(_flock_nccl_mode STREQUAL "ON")
    message(FATAL_ERROR "FLOCK_WITH_NCCL=ON but CUDA (found: ${CUDAToolkit_FOUND}) or NCCL "
                        "(header: ${FLOCK_NCCL_INCLUDE_DIR}, library: ${FLOCK_NCCL_LIBRARY}) is missing")
  else()
    message(STATUS "flock: CUDA/NCCL not found; building the CPU-only (MPI) backend")
  endif()
endif()
