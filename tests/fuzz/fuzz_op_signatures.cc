// fuzz_op_signatures: the signatures a direct collective allgathers from the
// other ranks (requests/op_signature.h; collectives/allgather.cc), then what this rank
// does with them: check and compare them with its own request and, for an
// allgather they agree on, lay the output out from every rank's dim 0.
// The input is the other ranks' fixed-size records, one after the other.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "flock/collectives/collectives.h"
#include "flock/requests/op_signature.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flock;
  const size_t others = size / sizeof(OpSignature);
  if (others == 0 || others > 7) return 0;
  // This rank (0) gathers 2 rows of 3 floats.
  OpRequest request =
      MakeRequest(OpKind::kAllgather, "t", TensorView{nullptr, DataType::kFloat32, {2, 3}});
  std::vector<OpSignature> all(1 + others);
  all[0] = MakeSignature(request);
  std::memcpy(&all[1], data, others * sizeof(OpSignature));
  // AgreeOnRequest refuses a malformed signature before comparing; the
  // comparison itself must cope with any bytes too.
  const Status agreed = CompareSignatures(request, all, ReferenceRank(all));
  FLOCK_FUZZ_CHECK(agreed.ok() || !agreed.message().empty(), "refusal without a message");
  for (const OpSignature& s : all) {
    if (!agreed.ok() || !CheckSignature(s).ok()) return 0;
  }
  std::vector<int64_t> first_dims;
  for (const OpSignature& s : all) first_dims.push_back(s.dims[0]);
  const Result<GatherLayout> layout =
      PlanGather(DataType::kFloat32, request.tensor.shape, first_dims);
  if (!layout.ok()) {
    FLOCK_FUZZ_CHECK(!layout.status().message().empty(), "refusal without a message");
    return 0;
  }
  FLOCK_FUZZ_CHECK(layout.value().total_bytes >= 0, "a negative output size");
  // Allgather allocates the output (or scratch of the same size) before the transfer.
  if (layout.value().total_bytes <= (1 << 20)) {
    std::vector<char> output(static_cast<size_t>(layout.value().total_bytes) + 1);
  }
  return 0;
}
