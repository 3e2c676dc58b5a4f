#include "flock/transport/mpi/mpi_types.h"

#include "flock/transport/mpi/mpi_check.h"

namespace flock {
namespace {

int HalfOpIndex(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return 0;
    case ReduceOp::kMin: return 1;
    case ReduceOp::kMax: return 2;
    case ReduceOp::kProduct: return 3;
  }
  return 0;
}

// MPI user op: inout = inout (op) in, computed by flock's kernel for DTYPE.
template <DataType DTYPE, ReduceOp OP>
void HalfReduce(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  (void)ReduceInto(inout, in, *len, DTYPE, OP);  // cannot fail for these types and ops
}

template <DataType DTYPE>
MPI_User_function* HalfFunction(int index) {
  switch (index) {
    case 0: return &HalfReduce<DTYPE, ReduceOp::kSum>;
    case 1: return &HalfReduce<DTYPE, ReduceOp::kMin>;
    case 2: return &HalfReduce<DTYPE, ReduceOp::kMax>;
    default: return &HalfReduce<DTYPE, ReduceOp::kProduct>;
  }
}

}  // namespace

MpiTypes::~MpiTypes() {
  Free();
}

Status MpiTypes::Create() {
  if (created_) return Status::OK();
  FLOCK_MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &half_type_));
  FLOCK_MPI_CHECK(MPI_Type_commit(&half_type_));
  for (int i = 0; i < 4; ++i) {
    FLOCK_MPI_CHECK(
        MPI_Op_create(HalfFunction<DataType::kFloat16>(i), /*commute=*/1, &half_ops_[0][i]));
    FLOCK_MPI_CHECK(
        MPI_Op_create(HalfFunction<DataType::kBFloat16>(i), /*commute=*/1, &half_ops_[1][i]));
  }
  created_ = true;
  return Status::OK();
}

void MpiTypes::Free() {
  if (!created_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    for (auto& row : half_ops_) {
      for (auto& op : row) MPI_Op_free(&op);
    }
    MPI_Type_free(&half_type_);
  }
  created_ = false;
}

MPI_Datatype MpiTypes::Datatype(DataType dtype) const {
  switch (dtype) {
    case DataType::kBool:
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kInt16: return MPI_INT16_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kFloat16:
    case DataType::kBFloat16: return half_type_;
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op MpiTypes::Op(DataType dtype, ReduceOp op) const {
  if (dtype == DataType::kFloat16) return half_ops_[0][HalfOpIndex(op)];
  if (dtype == DataType::kBFloat16) return half_ops_[1][HalfOpIndex(op)];
  if (dtype == DataType::kBool) {
    return (op == ReduceOp::kSum || op == ReduceOp::kMax) ? MPI_BOR : MPI_BAND;
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
  }
  return MPI_OP_NULL;
}

}  // namespace flock
