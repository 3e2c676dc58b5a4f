// Maps flock's DataType and ReduceOp onto MPI datatypes and reduction ops.
// float16 and bfloat16 have no MPI type: they travel as 2-byte opaque
// elements reduced by user-defined ops that call flock's kernels.
#pragma once

#include <mpi.h>

#include "flock/common/data_type.h"
#include "flock/common/reduce_kernels.h"
#include "flock/common/status.h"

namespace flock {

class MpiTypes {
 public:
  MpiTypes() = default;
  ~MpiTypes();
  MpiTypes(const MpiTypes&) = delete;
  MpiTypes& operator=(const MpiTypes&) = delete;

  // Creates the derived types and user ops; call once after MPI is initialized.
  Status Create();
  // Frees them; safe to call twice; must run before MPI_Finalize.
  void Free();

  MPI_Datatype Datatype(DataType dtype) const;
  MPI_Op Op(DataType dtype, ReduceOp op) const;

 private:
  MPI_Datatype half_type_ = MPI_DATATYPE_NULL;
  MPI_Op half_ops_[2][4] = {};  // [float16, bfloat16][sum, min, max, product]
  bool created_ = false;
};

}  // namespace flock
