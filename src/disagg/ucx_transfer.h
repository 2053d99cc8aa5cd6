// UcxTransfer: the KV transfer engine of PD disaggregation — one UCX (UCP)
// context and worker per server, moving bytes into a peer's registered
// memory, with small tagged messages after them.
//
//   decode side: Register(kv slab)  -> packed remote key (rkey) + address,
//                published to the prefill side through the bootstrap
//                service with WorkerAddress();
//                SetMessageHandler  -> called for every tagged message;
//                SetExpecting(true) while a transfer may arrive;
//   prefill side: Write(peer, puts, tag, message): every put, then the
//                message once every put is complete at the peer — so a
//                message's arrival means its puts' bytes are in place (a
//                job may carry puts alone, or a message alone).
//
// Two ways to carry a job's puts (WriteJob::method):
//   kRma         one-sided ucp_put per PutOp, then a flush. What RDMA
//                hardware does without the peer's CPU. Between processes of
//                one host, UCX 1.13 (no xpmem/knem in Debian) has no put
//                transport and emulates puts in software through a
//                shared-memory FIFO: two copies, driven by the peer's
//                progress thread (measured 2.4 GB/s, see BENCHMARKS).
//   kRendezvous  each PutOp as a tagged message whose tag names the peer's
//                region and offset (kChunkTag below); the peer's progress
//                thread checks the range against what it registered and
//                receives straight into it, and UCX's rendezvous protocol
//                reads the bytes with CMA (process_vm_readv): one copy
//                (measured 5.2-5.7 GB/s). The sender's side of it
//                completes when the peer has the bytes; then the message.
// The KV sender picks kRendezvous for a peer on this host and kRma
// otherwise.
//
// Transports are UCX's choice (UCX_TLS): shared memory / CMA between
// processes of one host, TCP across hosts (and where UCX_TLS=tcp), RDMA
// where the hardware has it. Registered memory must be host-addressable
// (the cpu plugin's device memory is; see docs/PLUGIN_ABI.md).
//
// Threads: one progress thread owns the UCP worker (UCS_THREAD_MODE_SINGLE);
// it polls the worker every 50 us while transfers are in flight, were in
// the last 2 s or are expected (SetExpecting), else every 5 ms, sleeping in
// between (no spinning while another process has work; UCX's event fd would
// restrict it to transports with events, i.e. drop shared memory and CMA).
// Public methods may be called from any thread; Write's completion callback
// and the message handler run on the progress thread and must be cheap
// (queue and return). Messages are handed to the handler in arrival order,
// each after every chunk that arrived before it is in place.
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
  uint32_t id = 0;   // the owner's registration index (named by kRendezvous)
};

// Tags of kRendezvous chunks: bit 63 set, the peer's region id in bits
// 47..62, the byte offset in that region in bits 0..46. Message tags (the
// bootstrap room) must leave bit 63 clear.
inline constexpr uint64_t kChunkTag = uint64_t{1} << 63;
inline constexpr int kChunkIdShift = 47;
inline constexpr uint64_t kMaxChunkRegionId = (uint64_t{1} << 16) - 1;
inline constexpr uint64_t kMaxChunkOffset = (uint64_t{1} << kChunkIdShift) - 1;

// One contiguous put: `length` bytes from local `src` to
// regions[region].address + offset on the peer.
struct PutOp {
  const void* src = nullptr;
  uint32_t region = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

enum class WriteMethod { kRma, kRendezvous };  // see the file comment

struct WriteJob {
  std::string peer_address;  // the peer's WorkerAddress()
  WriteMethod method = WriteMethod::kRma;
  // The peer runs on this machine in this network namespace (its HostId()
  // equals ours): its endpoint may use shared memory and CMA, which UCX
  // 1.13 offers only without peer-failure handling; a dead local peer is
  // then noticed by the job's deadline. Otherwise (TCP, RDMA) the endpoint
  // asks for peer-failure handling and a dead peer fails the job at once.
  bool same_host = false;
  std::vector<RemoteRegion> regions;
  std::vector<PutOp> puts;
  uint64_t tag = 0;
  std::string message;  // sent after every put is complete at the peer;
                        // its tag must have bit 63 clear; empty: none (a
                        // job of writes alone, e.g. one layer's)
  std::chrono::steady_clock::time_point deadline;
  // Called once on the progress thread: OK, DeadlineExceeded, or the UCX
  // error (the peer is gone, a put was refused). OK means the sources may
  // be reused and the message is on its way; the bytes are in place at the
  // peer when the peer handles the message (kRma: already at done).
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

  // While true, the progress thread polls at the active rate (a peer's
  // rendezvous chunks need this side's progress to land).
  void SetExpecting(bool expecting);

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
