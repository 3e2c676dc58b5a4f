// Submission: a request being assembled from Python arguments by an
// enqueue_* binding — its tensors (kept alive by the handle until it is
// waited for) and any reason this rank rejects it, which is still submitted so
// the other ranks fail the op instead of waiting.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flock/bindings/dlpack_tensor.h"
#include "flock/engine/handle_table.h"
#include "flock/requests/op_signature.h"

namespace flock {

using KeepAlive = std::vector<DlpackTensor>;

struct Submission {
  OpRequest op;
  TensorView output;
  StreamHandle stream = 0;  // the caller's CUDA stream (CUDA tensors; 0: the default stream)
  std::shared_ptr<KeepAlive> keep_alive = std::make_shared<KeepAlive>();
};

// Adds the capsule's tensor to the submission; returns its view (or records
// why it cannot be used in the request's local status).
TensorView Take(Submission& s, const pybind11::object& capsule,
                const std::optional<std::string>& dtype_override);

// A submission of `kind` named `name` (or auto-named), rejected from the start
// when Python already found `local_error`. `stream`: see Submission.
Submission Begin(OpKind kind, const std::optional<std::string>& name,
                 const std::optional<std::string>& local_error, StreamHandle stream = 0);

// `wait_follows`: the caller waits for it at once (see Engine::Submit).
HandleId Submit(Submission s, bool wait_follows = false);

}  // namespace flock
