#include "flock/collectives/scatter_layout.h"

#include <algorithm>
#include <limits>

namespace flock {
namespace {

constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max();

std::string Join(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

// Rows of dim 0 that rank `k` sends (sending) or receives, from the splits matrix.
int64_t RowsOf(const std::vector<int64_t>& matrix, int size, int k, bool sending) {
  int64_t rows = 0;
  for (int j = 0; j < size; ++j) {
    rows += sending ? matrix[static_cast<size_t>(k * size + j)]
                    : matrix[static_cast<size_t>(j * size + k)];
  }
  return rows;
}

// The same verdict on every rank: every count >= 0, and every rank's send and
// receive totals within `max_bytes` (a rank's counts sum to its dim 0, which
// fits in int64, so the sums cannot overflow before they are compared).
Status CheckExchange(const std::vector<int64_t>& matrix, int size, int64_t row_bytes,
                     int64_t max_bytes) {
  for (size_t i = 0; i < matrix.size(); ++i) {
    if (matrix[i] < 0) {
      return Status::Internal("alltoall: rank " + std::to_string(i / size) + " sends " +
                              std::to_string(matrix[i]) + " rows to rank " +
                              std::to_string(i % size));
    }
  }
  const int64_t most_rows = max_bytes / std::max<int64_t>(row_bytes, 1);
  for (int k = 0; k < size; ++k) {
    for (bool sending : {true, false}) {
      const int64_t rows = RowsOf(matrix, size, k, sending);
      if (rows < 0 || rows > most_rows) {
        return Status::Unsupported("alltoall: rank " + std::to_string(k) + " would " +
                                   (sending ? "send" : "receive") + " " + std::to_string(rows) +
                                   " rows of " + std::to_string(row_bytes) +
                                   " bytes, more than the transport's limit of " +
                                   std::to_string(max_bytes) + " bytes per rank");
      }
    }
  }
  return Status::OK();
}

}  // namespace

int64_t RowBytes(DataType dtype, const std::vector<int64_t>& shape) {
  int64_t bytes = static_cast<int64_t>(DataTypeSize(dtype));
  for (size_t d = 1; d < shape.size(); ++d) {
    if (shape[d] != 0 && bytes > kMaxBytes / shape[d]) return -1;
    bytes *= shape[d];
  }
  return bytes;
}

RowSplit EvenRowSplit(int64_t total_rows, int size) {
  RowSplit split;
  const int64_t base = total_rows / size;
  const int64_t extra = total_rows % size;
  int64_t next = 0;
  for (int r = 0; r < size; ++r) {
    const int64_t rows = base + (r < extra ? 1 : 0);
    split.rows.push_back(rows);
    split.first_row.push_back(next);
    next += rows;
  }
  split.most_rows = base + (extra > 0 ? 1 : 0);
  return split;
}

std::vector<int64_t> ReducescatterShape(const std::vector<int64_t>& shape, int size, int rank) {
  std::vector<int64_t> out = shape;
  if (!out.empty()) out[0] = EvenRowSplit(shape[0], size).rows[static_cast<size_t>(rank)];
  return out;
}

Status CheckReducescatter(const TensorView& input, const TensorView& output, ReduceOp op, int size,
                          int rank) {
  if (input.shape.empty()) {
    return Status::InvalidArgument("reducescatter needs a tensor with at least one dimension");
  }
  FLOCK_RETURN_IF_ERROR(CheckReduceSupported(input.dtype, op));
  if (output.dtype != input.dtype || !(output.device == input.device) ||
      output.shape != ReducescatterShape(input.shape, size, rank)) {
    return Status::InvalidArgument("the reducescatter output does not have this rank's shape");
  }
  return Status::OK();
}

Result<std::vector<int64_t>> ResolveSplits(const std::vector<int64_t>& splits, int64_t rows,
                                           int size) {
  if (splits.empty()) {
    if (rows % size != 0) {
      return Status::InvalidArgument("dim 0 (" + std::to_string(rows) +
                                     ") does not divide evenly between " + std::to_string(size) +
                                     " ranks; pass splits");
    }
    return std::vector<int64_t>(static_cast<size_t>(size), rows / size);
  }
  if (splits.size() != static_cast<size_t>(size)) {
    return Status::InvalidArgument("splits " + Join(splits) + " has " +
                                   std::to_string(splits.size()) + " entries for " +
                                   std::to_string(size) + " ranks");
  }
  for (int64_t n : splits) {
    if (n < 0) return Status::InvalidArgument("splits " + Join(splits) + " has a negative count");
  }
  int64_t sum = 0;
  for (int64_t n : splits) {
    if (n > rows - sum) {
      return Status::InvalidArgument("splits " + Join(splits) + " adds up to more than dim 0 (" +
                                     std::to_string(rows) + ")");
    }
    sum += n;
  }
  if (sum != rows) {
    return Status::InvalidArgument("splits " + Join(splits) + " adds up to " + std::to_string(sum) +
                                   ", not dim 0 (" + std::to_string(rows) + ")");
  }
  return splits;
}

Result<AlltoallLayout> PlanAlltoall(DataType dtype, const std::vector<int64_t>& shape,
                                    const std::vector<int64_t>& matrix, int size, int rank,
                                    int64_t max_bytes) {
  const int64_t row_bytes = RowBytes(dtype, shape);
  if (row_bytes < 0) return Status::InvalidArgument("alltoall: a row is larger than 2^63 bytes");
  if (matrix.size() != static_cast<size_t>(size) * static_cast<size_t>(size)) {
    return Status::Internal("alltoall: " + std::to_string(matrix.size()) + " splits for " +
                            std::to_string(size) + " ranks");
  }
  FLOCK_RETURN_IF_ERROR(CheckExchange(matrix, size, row_bytes, max_bytes));
  AlltoallLayout layout;
  for (int k = 0; k < size; ++k) {
    const int64_t sent = matrix[static_cast<size_t>(rank * size + k)];
    const int64_t received = matrix[static_cast<size_t>(k * size + rank)];
    layout.send_bytes.push_back(sent * row_bytes);
    layout.recv_bytes.push_back(received * row_bytes);
    layout.recv_rows.push_back(received);
    layout.total_recv_bytes += received * row_bytes;
  }
  layout.output_shape = shape;
  layout.output_shape[0] = RowsOf(matrix, size, rank, /*sending=*/false);
  return layout;
}

}  // namespace flock
