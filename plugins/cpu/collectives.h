// Collective communication among the virtual devices of this process
// (tsr_comm_api): all_reduce, all_gather, broadcast, reduce_scatter, send
// and recv. Ranks in different processes use rank_comm.h instead.
//
// comm_init_all creates one CommGroup and a Comm per rank. Each rank's call
// is enqueued on that rank's stream; the stream workers meet in the group:
//  - Collectives are numbered per rank in the order they run (the host must
//    call the same collectives in the same order on every rank; a graph
//    replay runs its captured ones again). The ranks of collective #s
//    rendezvous in Round s: once all arrived, each checks that
//    the calls match, writes its share into a shared staging buffer, waits
//    for all shares, then copies the result into its own output. Send
//    buffers may alias receive buffers (in-place all_reduce/all_gather).
//  - send is eager: it copies the data into the (rank -> peer) channel and
//    completes; recv waits for the next message on (peer -> rank), checks
//    its size and dtype and copies it out.
// Waits give up when the rank's stream is destroyed or the group aborted
// (comm_destroy or shutdown); the failure becomes the stream's sticky error.
// Reductions run in f32 (bf16/f16 rounded once at the end) or int64 (i32),
// in rank order, so every rank gets bit-identical results.
// Thread-safe: all state is guarded by the group's mutex.
#ifndef TESSERA_PLUGINS_CPU_COLLECTIVES_H_
#define TESSERA_PLUGINS_CPU_COLLECTIVES_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kit/comm_reduce.h"
#include "kit/rank_comm.h"
#include "kit/shm_comm.h"
#include "kit_names.h"
#include "stream.h"

namespace tessera::cpu {

using plugin_kit::CollectiveArgs;
using plugin_kit::CollectiveKind;
using plugin_kit::RankComm;
using plugin_kit::ShmComm;

// The kit's view of a stream worker's context (its cancel flag and pool).
plugin_kit::CommExec CommExecOf(ExecContext& ctx);

class CommGroup {
 public:
  explicit CommGroup(std::vector<int> devices);

  int size() const { return static_cast<int>(devices_.size()); }
  int device(int rank) const { return devices_[rank]; }

  // Counts `rank`'s collectives as they are enqueued. Fails when another
  // rank queued the same collective on the same stream (`stream` identifies
  // it): that stream could never run both halves.
  Status CountEnqueued(int rank, const void* stream);
  // Runs `rank`'s part of its next collective (on its stream worker); the
  // ranks' k-th runs meet, so a graph replay pairs up like eager calls.
  Status RunCollective(int rank, const CollectiveArgs& args, ExecContext& ctx);
  Status Send(int rank, int peer, const void* data, tsr_dtype dtype, int64_t count);
  Status Recv(int rank, int peer, void* data, tsr_dtype dtype, int64_t count, ExecContext& ctx);

  // Wakes every waiter with an error; later calls fail.
  void Abort();
  // comm_destroy of one rank; the last one aborts the group.
  void ReleaseRank();

 private:
  struct Round {
    std::vector<CollectiveArgs> args;
    int arrived = 0;
    int shared = 0;    // ranks that wrote their share into staging
    int departed = 0;
    bool failed = false;
    Status error;
    std::unique_ptr<char[]> staging;
    bool staging_ready = false;
  };
  struct Message {
    std::vector<char> data;
    tsr_dtype dtype;
    int64_t count;
  };

  // Waits on cv_ until pred() or a cancel/abort; false on cancel/abort.
  template <typename Pred>
  bool WaitLocked(std::unique_lock<std::mutex>& lock, ExecContext& ctx, Pred pred);
  Status CheckMatch(const Round& round) const;
  void WriteShare(int rank, const Round& round, ExecContext& ctx);
  void Depart(uint64_t seq, Round& round);

  const std::vector<int> devices_;
  std::atomic<int> live_ranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool aborted_ = false;                 // guarded by mu_
  std::vector<uint64_t> next_seq_;       // guarded by mu_: per rank, enqueued
  std::vector<uint64_t> exec_seq_;       // guarded by mu_: per rank, started
  std::vector<const void*> last_stream_; // guarded by mu_: per rank
  std::map<uint64_t, Round> rounds_;     // guarded by mu_
  std::map<std::pair<int, int>, std::deque<Message>> channels_;  // (from, to)
};

// One rank of a communicator (what a tsr_comm handle names): of an
// in-process group (comm_init_all) or of a cross-process one
// (comm_init_rank: shared memory on one node, Gloo across nodes); exactly
// one of the two is set.
struct Comm {
  std::shared_ptr<CommGroup> group;
  std::shared_ptr<RankComm> remote;
  int rank = 0;
  int size = 1;
  int device = 0;
};

// The plugin's tsr_comm_api table.
const tsr_comm_api* CommApi();

// decoder_layer v2 (ABI 1.4): at the launch, checks that `comm` is a live
// communicator whose rank lives on `device`; on the stream worker, runs an
// in-place all_reduce SUM of `x` as that rank.
Status CheckLayerComm(tsr_comm comm, int device);
Status RunLayerAllReduce(tsr_comm comm, const TensorView& x, ExecContext& ctx);

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_COLLECTIVES_H_
