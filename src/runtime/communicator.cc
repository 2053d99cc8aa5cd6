#include "runtime/communicator.h"

#include "base/logging.h"

namespace tessera::runtime {

StatusOr<std::vector<CommunicatorPtr>> Communicator::CreateAll(
    Plugin& plugin, std::span<const int32_t> devices) {
  TSR_ASSIGN_OR_RETURN(std::vector<tsr_comm> comms,
                       plugin.CommInitAll(devices));
  std::vector<CommunicatorPtr> out;
  const auto size = static_cast<int32_t>(devices.size());
  for (int32_t i = 0; i < size; ++i) {
    out.push_back(CommunicatorPtr(
        new Communicator(&plugin, comms[i], i, size, devices[i])));
  }
  return out;
}

Communicator::~Communicator() {
  Status s = plugin_->CommDestroy(comm_);
  if (!s.ok()) TSR_LOG_ERROR("destroying a communicator: {}", s.message());
}

Status Communicator::AllReduce(Stream& stream, const tsr_tensor& send,
                               const tsr_tensor& recv, tsr_reduce_op op) {
  return plugin_->AllReduce(comm_, stream.handle(), send, recv, op);
}

Status Communicator::AllGather(Stream& stream, const tsr_tensor& send,
                               const tsr_tensor& recv) {
  return plugin_->AllGather(comm_, stream.handle(), send, recv);
}

Status Communicator::Broadcast(Stream& stream, const tsr_tensor& buffer,
                               int32_t root) {
  return plugin_->Broadcast(comm_, stream.handle(), buffer, root);
}

Status Communicator::Send(Stream& stream, const tsr_tensor& tensor,
                          int32_t peer) {
  return plugin_->Send(comm_, stream.handle(), tensor, peer);
}

Status Communicator::Recv(Stream& stream, const tsr_tensor& tensor,
                          int32_t peer) {
  return plugin_->Recv(comm_, stream.handle(), tensor, peer);
}

}  // namespace tessera::runtime
