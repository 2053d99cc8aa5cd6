// Communicator: one rank of a plugin's collective-communication group.
//
// CreateAll() builds one communicator over several devices of one plugin in
// this process (like ncclCommInitAll); rank i lives on devices[i]. Every
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
#include <vector>

#include "base/status.h"
#include "runtime/plugin.h"
#include "runtime/stream.h"

namespace tessera::runtime {

class Communicator {
 public:
  static StatusOr<std::vector<std::unique_ptr<Communicator>>> CreateAll(
      Plugin& plugin, std::span<const int32_t> devices);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int32_t rank() const { return rank_; }
  int32_t size() const { return size_; }
  int32_t device() const { return device_; }

  // Collectives over contiguous tensors of identical shape and dtype on
  // every rank, enqueued on `stream` (a stream of this rank's device).
  Status AllReduce(Stream& stream, const tsr_tensor& send,
                   const tsr_tensor& recv, tsr_reduce_op op = TSR_REDUCE_SUM);
  // recv holds size() * send elements, rank-major.
  Status AllGather(Stream& stream, const tsr_tensor& send,
                   const tsr_tensor& recv);
  Status Broadcast(Stream& stream, const tsr_tensor& buffer, int32_t root);
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

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_COMMUNICATOR_H_
