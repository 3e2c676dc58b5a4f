// Where the rows of a reducescatter and of an alltoall go. Both split a
// tensor along dim 0 between the ranks of a group: a reducescatter as evenly
// as it can (Horovod's split: the first rows % size ranks get one row more),
// an alltoall as each rank chooses (its splits). Pure functions, the same on
// every rank for the same input, so every rank plans the same exchange.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flock/common/data_type.h"
#include "flock/common/reduce_kernels.h"
#include "flock/common/status.h"
#include "flock/common/tensor_view.h"

namespace flock {

// rows[r] rows of dim 0, starting at first_row[r], belong to rank r.
struct RowSplit {
  std::vector<int64_t> rows;
  std::vector<int64_t> first_row;
  int64_t most_rows = 0;  // the largest rows[r]
};
RowSplit EvenRowSplit(int64_t total_rows, int size);

// Rank `rank`'s output shape of a reducescatter of `shape` over `size` ranks.
std::vector<int64_t> ReducescatterShape(const std::vector<int64_t>& shape, int size, int rank);

// This rank's reason to reject a reducescatter (OK if none): a 0-d input, a
// reduction its dtype lacks, an output of the wrong dtype, device or shape.
Status CheckReducescatter(const TensorView& input, const TensorView& output, ReduceOp op, int size,
                          int rank);

// An alltoall's splits as this rank gave them: one count per rank, none
// negative, summing to the tensor's dim 0. Empty splits mean an even split,
// which needs dim 0 divisible by the group size. Returns the splits to use,
// or an InvalidArgument error naming what is wrong.
Result<std::vector<int64_t>> ResolveSplits(const std::vector<int64_t>& splits, int64_t rows,
                                           int size);

// Bytes of one row of dim 0 (the product of the other dims), or -1 past 2^63.
int64_t RowBytes(DataType dtype, const std::vector<int64_t>& shape);

// An alltoall's exchange in bytes: what this rank sends to and receives from
// each rank, its output shape (dim 0 = the rows received) and the rows from
// each rank. `matrix` holds every rank's splits (row k: the rows rank k sends
// to each rank), the same on every rank; so are the checks: a negative count,
// or a rank sending or receiving more than `max_bytes` (or 2^63) in all, is
// the same error on every rank of the exchange.
struct AlltoallLayout {
  std::vector<int64_t> send_bytes;
  std::vector<int64_t> recv_bytes;
  std::vector<int64_t> recv_rows;
  std::vector<int64_t> output_shape;
  int64_t total_recv_bytes = 0;
};
Result<AlltoallLayout> PlanAlltoall(DataType dtype, const std::vector<int64_t>& shape,
                                    const std::vector<int64_t>& matrix, int size, int rank,
                                    int64_t max_bytes);

}  // namespace flock
