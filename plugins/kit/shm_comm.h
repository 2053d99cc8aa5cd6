// ShmComm: one rank of a communicator whose ranks may live in different
// processes of one host (comm_get_unique_id / comm_init_rank, ABI 1.3). The
// ranks exchange through one POSIX shared-memory segment named by the
// unique id; rank 0 creates it, the others open it, and rank 0 unlinks the
// name once every rank joined (so a crash later leaks nothing in /dev/shm).
//
// Segment layout (all parts 64-byte aligned):
//   header     layout, joined count, the "broken" flag and its reason
//   rank state per rank: pid, left flag, the descriptor of its current
//              step, and the two barrier counters `arrived` and `reduced`
//   slots      per rank two staging slots of slot_bytes (step parity)
//   channels   per ordered pair (from, to) a byte ring for send/recv
//
// A collective runs as steps of at most one slot of data each; step s uses
// the slots of parity s % 2 and two barriers:
//   write own slot -> arrived = s+1, wait all -> middle (check the calls
//   match; reduce own slice) -> reduced = s+1, wait all -> read the result.
// A rank writes parity p again only at step s+2, after every rank passed
// step s+1's first barrier, i.e. finished reading step s: two slots per
// rank are enough. all_reduce is a reduce-scatter into the slots (rank r
// reduces slice r of every slot, in rank order, so all ranks get
// bit-identical sums) followed by an all-gather out of them.
//
// Waits spin briefly, then yield and sleep; each checks the broken flag,
// the stream's cancel flag, every awaited peer's liveness (its `left` flag
// and kill(pid, 0)) and the deadline (comm_timeout_ms). Any failure marks
// the segment broken with a reason, so every other rank fails at once with
// the same story instead of waiting out its own timeout.
//
// Thread-safety: one rank is driven by one thread at a time (the ABI's
// ordering rule); different ShmComm objects may run concurrently, also in
// one process. Shared by the cpu plugin (on its stream workers) and the
// OpenCL plugin (on the host, staging device buffers through host memory).
#ifndef TESSERA_PLUGINS_KIT_SHM_COMM_H_
#define TESSERA_PLUGINS_KIT_SHM_COMM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "kit/comm_reduce.h"
#include "kit/rank_comm.h"
#include "kit/status.h"

namespace tessera::plugin_kit {


// Fills bytes 0..79 of `out` (and zeroes the rest) with a fresh id
// naming a segment that does not exist yet.
Status NewShmUniqueId(tsr_comm_unique_id* out);


class ShmComm : public RankComm {
 public:
  // Joins `rank` of `num_ranks` (rank 0 creates the segment). Fails with
  // TSR_ERR_DEVICE naming the missing ranks when not all joined within
  // `timeout_ms`.
  static Status Join(const tsr_comm_unique_id& id, int num_ranks, int rank, int timeout_ms,
                     std::shared_ptr<ShmComm>* out);
  ~ShmComm() override;
  ShmComm(const ShmComm&) = delete;
  ShmComm& operator=(const ShmComm&) = delete;

  int size() const override { return num_ranks_; }
  int rank() const override { return rank_; }

  // This rank's part of a collective (args as collectives.h's).
  Status RunCollective(const CollectiveArgs& args, const CommExec& ctx) override;
  Status Send(int peer, const void* data, tsr_dtype dtype, int64_t count,
              const CommExec& ctx) override;
  Status Recv(int peer, void* data, tsr_dtype dtype, int64_t count,
              const CommExec& ctx) override;

 private:
  struct Header;
  struct RankState;
  struct Channel;

  ShmComm(int num_ranks, int rank, int timeout_ms) noexcept
      : num_ranks_(num_ranks), rank_(rank), timeout_ms_(timeout_ms) {}
  Status Map(int fd, size_t bytes);
  // Sets the part pointers from the mapping and the layout's sizes.
  void Locate(size_t slot_bytes, size_t channel_bytes);

  RankState& rank_state(int r) const;
  char* slot(int r, uint64_t step) const;
  Channel& channel(int from, int to) const;
  char* channel_data(int from, int to) const;

  // Publishes this rank's barrier counter for `step` (the first or the
  // second barrier) and waits for every rank's.
  Status Barrier(bool second, uint64_t step, const char* what, const CommExec& ctx);
  Status CheckCallsMatch(uint64_t step) const;
  // Waits until done() holds; lagging() lists the ranks awaited (checked
  // for liveness, named on timeout). ctx may be NULL (comm_init_rank).
  template <typename Done, typename Lagging>
  Status WaitUntil(Done done, Lagging lagging, const char* what, const CommExec* ctx);
  // Marks the segment broken (first reason wins) and returns the error.
  Status Break(const std::string& reason);
  Status BrokenError() const;

  const int num_ranks_;
  const int rank_;
  const int timeout_ms_;
  char* base_ = nullptr;
  size_t bytes_ = 0;
  Header* header_ = nullptr;
  char* ranks_ = nullptr;
  char* slots_ = nullptr;
  char* channels_ = nullptr;
  size_t slot_bytes_ = 0;
  size_t channel_bytes_ = 0;
  uint64_t next_step_ = 0;  // steps this rank started; same on every rank
  bool broken_ = false;
};

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_SHM_COMM_H_
