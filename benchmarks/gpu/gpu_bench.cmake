# flock_add_gpu_bench(<target> <flock library> [FAKE]): the GPU benchmark (flock vs raw NCCL,
# benchmarks/gpu) linked with `library` — flock (the real CUDA runtime and NCCL, for GPU
# machines) or flock_fake (the fake device of tests/fake_device; FAKE makes the program say
# that its timings are not GPU timings). Included by benchmarks/CMakeLists.txt and
# tests/gpu/CMakeLists.txt.
function(flock_add_gpu_bench target library)
  set(dir ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  add_executable(${target} ${dir}/gpu_bench.cc ${dir}/gpu_bench_setup.cc ${dir}/gpu_bench_ops.cc
                           ${dir}/gpu_bench_report.cc)
  # "gpu/gpu_bench.h" and the CPU benchmarks' timing protocol, "raw_mpi_protocol.h".
  target_include_directories(${target} PRIVATE ${dir}/..)
  target_link_libraries(${target} PRIVATE ${library})
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if("${ARGN}" STREQUAL "FAKE")
    target_compile_definitions(${target} PRIVATE FLOCK_GPU_BENCH_FAKE=1)
  endif()
endfunction()
