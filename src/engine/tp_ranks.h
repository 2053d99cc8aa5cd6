// Tensor parallelism in the engine: rank 0 runs the scheduler and the
// sampler and drives N-1 worker ranks, each a ModelRunner over its shard
// (tensor_parallel.h) in its own process.
//
// Per step, in this order on every rank (the collectives pair up by order):
//   rank 0: TpLeader::SendStep (the batch to every worker) -> forward
//           (the runner's all-reduces and logits all-gather) -> sample ->
//           TpLeader::BroadcastIds (the sampled ids, root 0)
//   worker: receive the step -> forward -> broadcast (receives the ids)
// so a worker's next step finds its input tokens on its own device, as
// rank 0's does (overlap scheduling keeps working). Workers never sample.
//
// Thread-safety: a TpLeader is driven by the scheduler thread; RunTpWorker
// owns its thread.
#ifndef TESSERA_ENGINE_TP_RANKS_H_
#define TESSERA_ENGINE_TP_RANKS_H_

#include <vector>

#include "base/status.h"
#include "model/model_runner.h"
#include "model/sampler.h"
#include "runtime/communicator.h"

namespace tessera::engine {

class TpLeader {
 public:
  // `worker_fds[i]`: the control channel to rank i + 1 (not owned).
  TpLeader(runtime::Communicator& comm, std::vector<int> worker_fds)
      : comm_(comm), worker_fds_(std::move(worker_fds)) {}

  int size() const { return comm_.size(); }
  // Sends the step to every worker (before rank 0's own forward).
  Status SendStep(const model::Batch& batch, int64_t sampled_rows);
  // Broadcasts the step's sampled ids from rank 0 (after the sampler).
  Status BroadcastIds(runtime::Stream& stream, const model::DeviceIds& ids);
  // Tells every worker to exit (best effort; errors are logged).
  void Shutdown();

 private:
  runtime::Communicator& comm_;
  std::vector<int> worker_fds_;
};

// A worker rank's loop: runs every step rank 0 sends until kShutdown (OK)
// or a failure (the error; the caller exits non-zero). `fd` is the control
// channel from rank 0.
Status RunTpWorker(model::ModelRunner& runner, runtime::Communicator& comm, int fd);

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_TP_RANKS_H_
