// The one check for MPI calls: turns an MPI error code into a Status that
// names the call and carries MPI's own description of the error.
#pragma once

#include <mpi.h>

#include <string>

#include "flock/common/status.h"

namespace flock {

inline Status MpiStatus(int code, const char* call) {
  if (code == MPI_SUCCESS) return Status::OK();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::TransportError(std::string(call) + " failed: " + std::string(text, length));
}

}  // namespace flock

#define FLOCK_MPI_CHECK(call) FLOCK_RETURN_IF_ERROR(::flock::MpiStatus((call), #call))
