#include "runtime/communicator.h"

#include <fmt/format.h>

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

StatusOr<tsr_comm_unique_id> Communicator::UniqueId(Plugin& plugin) {
  return plugin.CommGetUniqueId();
}

StatusOr<CommunicatorPtr> Communicator::CreateRank(
    Plugin& plugin, const tsr_comm_unique_id& id, int32_t size, int32_t rank,
    int32_t device, int32_t node, int32_t num_nodes) {
  TSR_ASSIGN_OR_RETURN(tsr_comm comm, plugin.CommInitRank(id, size, rank,
                                                          device, node,
                                                          num_nodes));
  return CommunicatorPtr(new Communicator(&plugin, comm, rank, size, device));
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

Status Communicator::ReduceScatter(Stream& stream, const tsr_tensor& send,
                                   const tsr_tensor& recv, tsr_reduce_op op) {
  return plugin_->ReduceScatter(comm_, stream.handle(), send, recv, op);
}

Status Communicator::Send(Stream& stream, const tsr_tensor& tensor,
                          int32_t peer) {
  return plugin_->Send(comm_, stream.handle(), tensor, peer);
}

Status Communicator::Recv(Stream& stream, const tsr_tensor& tensor,
                          int32_t peer) {
  return plugin_->Recv(comm_, stream.handle(), tensor, peer);
}

std::string UniqueIdToHex(const tsr_comm_unique_id& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof(id.bytes));
  for (uint8_t b : id.bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

StatusOr<tsr_comm_unique_id> UniqueIdFromHex(std::string_view hex) {
  tsr_comm_unique_id id{};
  if (hex.size() != 2 * sizeof(id.bytes)) {
    return InvalidArgumentError(fmt::format(
        "a communicator id is {} hex digits, got {}", 2 * sizeof(id.bytes),
        hex.size()));
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < sizeof(id.bytes); ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return InvalidArgumentError(fmt::format(
          "a communicator id holds only hex digits; position {} is not one",
          2 * i + (hi < 0 ? 0 : 1)));
    }
    id.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return id;
}

}  // namespace tessera::runtime
