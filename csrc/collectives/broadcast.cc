// Broadcast: every rank's tensor becomes a copy of the root's.
#include "flock/collectives/collectives.h"
#include "flock/requests/op_signature.h"

namespace flock {

Status Broadcast(Transport& transport, const TensorView& tensor, const BroadcastOptions& options,
                 Status local_status) {
  const int size = transport.size(options.group);
  if (local_status.ok() && (options.root < 0 || options.root >= size)) {
    local_status =
        Status::InvalidArgument("root_rank " + std::to_string(options.root) +
                                " is out of range for " + std::to_string(size) + " ranks");
  }
  OpRequest request = MakeRequest(OpKind::kBroadcast, options.name, tensor);
  request.root = options.root;
  request.group = options.group;
  request.local_status = local_status;
  // Held to the root's view of the tensor (rank 0 when the root itself is invalid).
  const int reference = local_status.ok() ? options.root : 0;
  FLOCK_RETURN_IF_ERROR(AgreeOnRequest(transport, options.group, request, reference, nullptr));
  return transport.Broadcast(tensor.data, tensor.size_bytes(), options.root, options.group);
}

}  // namespace flock
