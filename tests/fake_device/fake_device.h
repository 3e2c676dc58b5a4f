// Test-only extras of the fake device (libflock_fake_device.so), beyond the
// CUDA runtime and NCCL functions it defines with their real declarations.
// Never in a shipped build: tests include this header to steer the fake.
#pragma once

#include <nccl.h>

#ifdef __cplusplus
extern "C" {
#endif

// Makes the comm's op number `after_n_ops` from now (0: the next op launched,
// counting each send, recv and collective) fail asynchronously with `code`,
// as FAKE_NCCL_FAIL_AFTER=N does for op N of every new comm. The failed op
// and those after it block their streams until ncclCommAbort. ncclSuccess
// cancels a pending injection. ncclInvalidArgument for a NULL comm or a
// negative count.
ncclResult_t fake_nccl_inject_error(ncclComm_t comm, ncclResult_t code, int after_n_ops);

#ifdef __cplusplus
}  // extern "C"
#endif
