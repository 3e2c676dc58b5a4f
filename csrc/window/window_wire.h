// Wire format of the window ops' messages (pure; no transport here). One
// message goes to one peer on the neighbor communicator (its own tag); a
// payload above the inline limit follows as a separate data message on a
// window lane tag, straight from and into tensor-sized buffers.
//   kPut / kAccumulate  the sender's tensor, already scaled by its weight,
//                       for the receiver's slot of the sender (and its p);
//   kAck                the receiver applied op `op` (or why it could not);
//   kGetRequest         the sender wants the receiver's own tensor;
//   kGetReply           ... here it is (or why not);
//   kLock / kGrant      the sender asks for the receiver's slot for it
//                       (win_mutex); the receiver grants it when free;
//   kUnlock             the sender lets go of it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flock/common/data_type.h"
#include "flock/common/status.h"

namespace flock {

enum class WindowMessageType : uint8_t {
  kPut = 1,
  kAccumulate,
  kAck,
  kGetRequest,
  kGetReply,
  kLock,
  kGrant,
  kUnlock,
};

struct WindowMessage {
  WindowMessageType type = WindowMessageType::kPut;
  std::string window;
  int64_t op = 0;  // the asking rank's op id, echoed in the answer
  DataType dtype = DataType::kFloat32;
  int64_t payload_bytes = 0;  // kPut, kAccumulate, kGetReply
  int32_t lane_tag = -1;      // >= 0: the payload follows on this tag; else inline
  bool require_mutex = false;
  bool with_p = false;  // kPut / kAccumulate: `p` is the push-sum weight sent along
  double p = 0.0;
  StatusCode code = StatusCode::kOk;  // answers: why the op failed on the receiver
  std::string error;
  const char* payload = nullptr;  // inline payload (Encode: copied from; Decode: points into)
};

std::vector<char> EncodeWindowMessage(const WindowMessage& message);

// The decoded message points into `*bytes` for an inline payload. Checks a
// known type and dtype, payload_bytes >= 0 and present when inline, a failed
// answer's code not OK; else an Internal error naming the field and the byte.
Result<WindowMessage> DecodeWindowMessage(const std::shared_ptr<const std::vector<char>>& bytes);

const char* WindowMessageTypeName(WindowMessageType type);

}  // namespace flock
