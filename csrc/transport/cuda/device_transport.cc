#include "flock/transport/cuda/device_transport.h"

#include <string>

namespace flock {
namespace {

Status HostOnly(const char* what) {
  return Status::Internal(std::string(what) +
                          " was called on a GPU transport, which carries device data only");
}

}  // namespace

Status DeviceTransport::PostSend(std::vector<char>, int, int, CommGroup) {
  return HostOnly("PostSend");
}

Result<bool> DeviceTransport::TryReceive(int, int, CommGroup, int*, std::vector<char>*) {
  return HostOnly("TryReceive");
}

Result<TransferId> DeviceTransport::StartSend(const void*, int64_t, int, int, CommGroup) {
  return HostOnly("StartSend");
}

Result<TransferId> DeviceTransport::StartRecv(void*, int64_t, int, int, CommGroup) {
  return HostOnly("StartRecv");
}

Result<bool> DeviceTransport::TestTransfer(TransferId) {
  return HostOnly("TestTransfer");
}

}  // namespace flock
