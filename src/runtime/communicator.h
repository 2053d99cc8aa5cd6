// Communicator: one rank of a plugin's collective-communication group.
//
// CreateAll() builds one communicator over several devices of one plugin in
// this process (like ncclCommInitAll); rank i lives on devices[i].
// CreateRank() joins one rank of a communicator whose ranks may live in
// other processes or on other nodes (like ncclCommInitRank): one process
// gets a UniqueId and hands its bytes to every rank (ABI 1.3). Every
// rank must issue the same collectives in the same order, each on a stream
// of its own device. A plugin without collectives (comm table NULL) makes
// CreateAll fail with Unavailable, the documented default.
//
// Ownership: CommunicatorPtr owns one rank; the destructor calls
// comm_destroy. Thread-safety: a rank is used by one thread at a time;
// different ranks may be driven from different threads.
#ifndef TESSERA_RUNTIME_COMMUNICATOR_H_
#define TESSERA_RUNTIME_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "runtime/plugin.h"
#include "runtime/stream.h"

namespace tessera::runtime {

class Communicator {
 public:
  static StatusOr<std::vector<std::unique_ptr<Communicator>>> CreateAll(
      Plugin& plugin, std::span<const int32_t> devices);
  // A fresh id for one communicator (the plugin's opaque bytes).
  static StatusOr<tsr_comm_unique_id> UniqueId(Plugin& plugin);
  // Blocks until all `size` ranks joined, or fails within the plugin's
  // comm timeout naming the ranks that did not. `node` / `num_nodes` say
  // which host this rank runs on (from --node-rank / --nnodes).
  static StatusOr<std::unique_ptr<Communicator>> CreateRank(
      Plugin& plugin, const tsr_comm_unique_id& id, int32_t size,
      int32_t rank, int32_t device, int32_t node = 0, int32_t num_nodes = 1);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int32_t rank() const { return rank_; }
  int32_t size() const { return size_; }
  int32_t device() const { return device_; }
  // The plugin's handle, for ops that take a communicator in their params
  // (decoder_layer v2); valid while this object lives.
  tsr_comm handle() const { return comm_; }

  // Collectives over contiguous tensors of identical shape and dtype on
  // every rank, enqueued on `stream` (a stream of this rank's device).
  Status AllReduce(Stream& stream, const tsr_tensor& send,
                   const tsr_tensor& recv, tsr_reduce_op op = TSR_REDUCE_SUM);
  // recv holds size() * send elements, rank-major.
  Status AllGather(Stream& stream, const tsr_tensor& send,
                   const tsr_tensor& recv);
  Status Broadcast(Stream& stream, const tsr_tensor& buffer, int32_t root);
  // send holds size() * recv elements; rank r gets the reduction of slice r.
  Status ReduceScatter(Stream& stream, const tsr_tensor& send,
                       const tsr_tensor& recv,
                       tsr_reduce_op op = TSR_REDUCE_SUM);
  Status Send(Stream& stream, const tsr_tensor& tensor, int32_t peer);
  Status Recv(Stream& stream, const tsr_tensor& tensor, int32_t peer);

 private:
  Communicator(Plugin* plugin, tsr_comm comm, int32_t rank, int32_t size,
               int32_t device)
      : plugin_(plugin),
        comm_(comm),
        rank_(rank),
        size_(size),
        device_(device) {}

  Plugin* const plugin_;
  const tsr_comm comm_;
  const int32_t rank_;
  const int32_t size_;
  const int32_t device_;
};

using CommunicatorPtr = std::unique_ptr<Communicator>;

// The id as 256 lowercase hex digits (for a command line), and back; the
// decoder names what is wrong with a malformed string.
std::string UniqueIdToHex(const tsr_comm_unique_id& id);
StatusOr<tsr_comm_unique_id> UniqueIdFromHex(std::string_view hex);

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_COMMUNICATOR_H_
