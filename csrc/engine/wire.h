// Wire format of the engine's control messages (pure; no transport here).
//
// Vocabulary:
//   entry      one rank's announcement that a named request is ready: either
//              the full signature or, when the response cache already holds
//              that exact signature under this name, only its cache id.
//   response   the coordinator's decision about one or more names, the same
//              for every rank: execute them (several names = one fused
//              call), or fail them with a message.
// Messages are flat byte vectors in host byte order: every rank of a job runs
// the same build on the same architecture.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flock/common/status.h"
#include "flock/requests/op_signature.h"

namespace flock {

// Tags of the control messages (CommGroup::kControl).
constexpr int kReadyTag = 1;     // announcements, to rank 0
constexpr int kResponseTag = 2;  // rank 0's answers
constexpr int kShutdownTag = 3;  // a rank's shutdown, to rank 0
constexpr int kWithdrawTag = 4;  // a call that cannot run (Withdrawal), to rank 0

// ReadyEntry::cache_id when it names no cached signature: not (yet) cached,
// or an auto-named request the coordinator must not cache.
constexpr int32_t kNotCached = -1;
constexpr int32_t kDoNotCache = -2;

struct ReadyEntry {
  std::string name;
  int32_t cache_id = kNotCached;  // >= 0: the cached signature, `signature` unused
  OpSignature signature;
  // A negotiated neighbor op (CUDA tensors): which call of its match name it is,
  // numbered as NeighborExchange numbers every rank's calls; else -1.
  int64_t call = -1;
};

enum class ResponseType : uint8_t {
  kExecute = 0,
  kError = 1,
  kShuttingDown = 2,  // a rank shut down: fail pending and later requests
  kFinal = 3,         // every rank shut down: the engine threads may exit
  kWithdrawn = 4,     // a neighbor op's call fails on every rank (Coordinator::Withdraw)
};

struct Response {
  ResponseType type = ResponseType::kExecute;
  OpKind kind = OpKind::kAllreduce;
  std::vector<std::string> names;
  std::vector<int32_t> cache_ids;     // per name: its id for later rounds
  std::vector<int64_t> first_dims;    // allgather: each rank's dim 0, per name, rank-major
  std::string error;                  // kError / kShuttingDown
  StatusCode code = StatusCode::kOk;  // kError: Mismatch, Aborted, ...
  int64_t call = -1;                  // kWithdrawn: which call of names[0] (a match name)
};

// A rank's report that call `call` of a negotiated neighbor op cannot run:
// a peer runs that call on the host path (its tensor is on another device).
struct Withdrawal {
  std::string name;        // as announced to rank 0
  std::string match_name;  // NeighborExchange's name for the op's calls
  int64_t call = 0;
  OpKind kind = OpKind::kNeighborAllreduce;
  std::string reason;  // the error every rank gets
};

inline Response MakeResponse(ResponseType type, OpKind kind = OpKind::kAllreduce,
                             std::vector<std::string> names = {}) {
  Response response;
  response.type = type;
  response.kind = kind;
  response.names = std::move(names);
  return response;
}

// Decoding also checks what the engine relies on: known types, op kinds and
// status codes, valid signatures (CheckSignature), names in every execute
// response, a non-OK code in every error, no negative dim. A malformed message
// is an Internal error naming the field and the byte; the caller names the sender.
std::vector<char> EncodeReady(const std::vector<ReadyEntry>& entries);
Result<std::vector<ReadyEntry>> DecodeReady(const std::vector<char>& bytes);

std::vector<char> EncodeResponses(const std::vector<Response>& responses);
Result<std::vector<Response>> DecodeResponses(const std::vector<char>& bytes);
// A rank's shutdown names the ranks it saw stall (Coordinator::AddShutdown);
// empty bytes: none. Each rank must be in [0, size).
std::vector<char> EncodeShutdown(const std::vector<int>& stalled_ranks);
Result<std::vector<int>> DecodeShutdown(const std::vector<char>& bytes, int size);
// A withdrawal names a neighbor op kind, a call >= 0, both names and a reason.
std::vector<char> EncodeWithdrawal(const Withdrawal& withdrawal);
Result<Withdrawal> DecodeWithdrawal(const std::vector<char>& bytes);

}  // namespace flock
