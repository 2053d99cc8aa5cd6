// RankComm: one rank of a communicator built by comm_init_rank (ABI 1.3),
// whose peers may live in other processes — on this node through shared
// memory (ShmComm, shm_comm.h), on other nodes through Gloo over TCP
// (NetComm, net_comm.h). The plugins' comm entries see only this
// interface; JoinRankComm picks the transport from the init arguments:
// num_nodes > 1 means every rank talks over the network, even two nodes
// that share a kernel (locality comes from the host's --nnodes and
// --node-rank, never from hostnames).
//
// The unique id (128 bytes) carries both transports' rendezvous: bytes
// 0..79 name the shared-memory segment (shm_comm.cc), bytes 80..127 the
// rendezvous store's address (net_comm.cc).
//
// Thread-safety: one rank is driven by one thread at a time (the ABI's
// ordering rule); different RankComm objects may run concurrently.
#ifndef TESSERA_PLUGINS_KIT_RANK_COMM_H_
#define TESSERA_PLUGINS_KIT_RANK_COMM_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "kit/comm_reduce.h"
#include "kit/status.h"

namespace tessera::plugin_kit {

// What a running collective may use: a flag that cancels its waits (a
// destroyed stream; may be NULL) and the plugin's parallel-for for copies
// and reductions (may be empty: serial).
struct CommExec {
  const std::atomic<bool>* cancel = nullptr;
  ParallelForFn parallel;
  bool cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
};

class RankComm {
 public:
  virtual ~RankComm() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // This rank's part of a collective (args as comm_reduce.h's).
  virtual Status RunCollective(const CollectiveArgs& args, const CommExec& ctx) = 0;
  virtual Status Send(int peer, const void* data, tsr_dtype dtype, int64_t count,
                      const CommExec& ctx) = 0;
  virtual Status Recv(int peer, void* data, tsr_dtype dtype, int64_t count,
                      const CommExec& ctx) = 0;
};

// comm_get_unique_id: a fresh segment name plus this process's rendezvous
// store address (the store starts here on first use; when it cannot, the
// id still works for ranks on one node).
Status NewUniqueId(tsr_comm_unique_id* out);

// Checks comm_init_rank's arguments (args and out non-NULL, a struct_size
// that holds id..device, a non-NULL id, 1 <= num_ranks <= 64, rank in
// range, 0 <= node < num_nodes <= num_ranks) and copies them into `a` as
// this header knows them; node is 0 and num_nodes 1 when the caller's
// struct predates them (num_nodes 0 also means 1). The device is the plugin's to check.
Status ReadCommInitRankArgs(const tsr_comm_init_rank_args* args, const tsr_comm* out,
                            tsr_comm_init_rank_args* a);

// Joins rank a.rank of a.num_ranks over shared memory (num_nodes 1) or the
// network (num_nodes > 1); fails with TSR_ERR_DEVICE naming what is
// missing when the peers do not all join within `timeout_ms`.
Status JoinRankComm(const tsr_comm_init_rank_args& a, int timeout_ms,
                    std::shared_ptr<RankComm>* out);

// Stops what NewUniqueId started (the plugin's shutdown calls it).
void StopCommRendezvous();

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_RANK_COMM_H_
