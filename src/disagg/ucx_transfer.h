// UcxTransfer: the KV transfer engine of PD disaggregation — one UCX (UCP)
// context and worker per server, with one-sided puts into a peer's
// registered memory and small tagged messages after them.
//
//   decode side: Register(kv slab)  -> packed remote key (rkey) + address,
//                published to the prefill side through the bootstrap
//                service with WorkerAddress();
//                SetMessageHandler  -> called for every tagged message;
//   prefill side: Write(peer, puts, tag, message): every put, then a flush
//                (remote completion of the puts), then the message — so a
//                message's arrival means its puts' bytes are in place.
//
// Transports are UCX's choice (UCX_TLS): shared memory / CMA between
// processes of one host, TCP across hosts (and where UCX_TLS=tcp), RDMA
// where the hardware has it. Registered memory must be host-addressable
// (the cpu plugin's device memory is; see docs/PLUGIN_ABI.md).
//
// Threads: one progress thread owns the UCP worker (UCS_THREAD_MODE_SINGLE);
// it polls the worker every 50 us while transfers are in flight or were
// in the last 2 s, else every 5 ms, sleeping in between (no spinning while
// another process has work; UCX's event fd would restrict it to transports
// with events, i.e. drop shared memory and CMA). Public methods may be called from any
// thread; Write's completion callback and the message handler run on the
// progress thread and must be cheap (queue and return).
#ifndef TESSERA_DISAGG_UCX_TRANSFER_H_
#define TESSERA_DISAGG_UCX_TRANSFER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::disagg {

// A region of a peer's memory: where it starts there and its packed rkey.
struct RemoteRegion {
  uint64_t address = 0;
  uint64_t length = 0;
  std::string rkey;  // ucp_rkey_pack bytes
};

// One contiguous put: `length` bytes from local `src` to
// regions[region].address + offset on the peer.
struct PutOp {
  const void* src = nullptr;
  uint32_t region = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct WriteJob {
  std::string peer_address;  // the peer's WorkerAddress()
  // The peer runs on this machine in this network namespace (its HostId()
  // equals ours): its endpoint may use shared memory and CMA, which UCX
  // 1.13 offers only without peer-failure handling; a dead local peer is
  // then noticed by the job's deadline. Otherwise (TCP, RDMA) the endpoint
  // asks for peer-failure handling and a dead peer fails the job at once.
  bool same_host = false;
  std::vector<RemoteRegion> regions;
  std::vector<PutOp> puts;
  uint64_t tag = 0;
  std::string message;  // sent after every put is complete at the peer
  std::chrono::steady_clock::time_point deadline;
  // Called once on the progress thread: OK, DeadlineExceeded, or the UCX
  // error (the peer is gone, a put was refused).
  std::function<void(Status)> done;
};

class UcxTransfer {
 public:
  using MessageHandler = std::function<void(uint64_t tag, std::string message)>;

  // Initialises UCX and starts the progress thread. Unavailable with UCX's
  // reason when no transport can start.
  static StatusOr<std::unique_ptr<UcxTransfer>> Create();
  ~UcxTransfer();  // fails what is in flight (Unavailable), joins
  UcxTransfer(const UcxTransfer&) = delete;
  UcxTransfer& operator=(const UcxTransfer&) = delete;

  // This worker's address (opaque bytes) for peers to connect to.
  const std::string& WorkerAddress() const;
  // This machine's boot id and this process's network namespace: equal
  // HostIds mean shared memory reaches the peer.
  static const std::string& HostId();

  // Registers [address, address + length) for remote writes and returns it
  // as a RemoteRegion for peers. Registration lives as long as this object.
  StatusOr<RemoteRegion> Register(void* address, uint64_t length);

  // Replaces the handler for incoming tagged messages.
  void SetMessageHandler(MessageHandler handler);

  // Queues a write job (see WriteJob); returns at once.
  void Write(WriteJob job);

  // The transports UCX chose for this worker's context, for logs.
  std::string TransportSummary() const;

  class Impl;

 private:
  explicit UcxTransfer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::disagg

#endif  // TESSERA_DISAGG_UCX_TRANSFER_H_
