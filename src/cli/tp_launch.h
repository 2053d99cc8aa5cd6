// Tensor parallelism for a command that runs a model (serve, generate):
// `--tp-size N` (SGLang's spelling; --tensor-parallel-size is an alias)
// makes this process rank 0 — the HTTP server, the scheduler, the sampler —
// and starts ranks 1..N-1 itself as `tessera tp-worker` processes, each
// loading its shard of the same checkpoint on its own device:
// rank r uses device --base-gpu-id + r * --gpu-id-step (a local ordinal of
// the selected plugin; for the cpu plugin TESSERA_CPU_DEVICES defaults to
// enough virtual devices). A worker gets the flags that make its runner
// identical to rank 0's (TpRunnerSpec) plus its rank, the communicator id
// (hex) and the descriptor of its control channel, a socketpair to rank 0.
//
// TpGroup owns the workers: its destructor tells them to exit, waits a
// little, then kills what is left — no worker outlives rank 0 (they also
// get PR_SET_PDEATHSIG).
#ifndef TESSERA_CLI_TP_LAUNCH_H_
#define TESSERA_CLI_TP_LAUNCH_H_

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/rank_processes.h"
#include "engine/tp_ranks.h"
#include "model/model_runner.h"
#include "runtime/communicator.h"
#include "runtime/runtime.h"
#include "runtime/runtime_config.h"

namespace tessera::cli {

struct TpFlags {
  int tp_size = 1;
  int base_gpu_id = 0;
  int gpu_id_step = 1;
  // --rank-order FILE|s0,s1,...: rank r takes device slot s_r instead of r
  // (device = base + s_r * step), so a TP group lands on devices that can
  // route collectives among themselves (e.g. one row of a torus whose
  // chips are numbered by column). Parsed by PrepareTp into `slots`.
  std::string rank_order;
  std::vector<int> slots;
  // Across hosts (tp_nodes.h): node_rank of nnodes, rank 0 at
  // dist_init_addr ("HOST:PORT").
  int nnodes = 1;
  int node_rank = 0;
  std::string dist_init_addr;
};
// Adds --tp-size (--tensor-parallel-size), --base-gpu-id, --gpu-id-step,
// --rank-order; with `nodes`, --nnodes, --node-rank, --dist-init-addr.
std::vector<CLI::Option*> AddTpFlags(CLI::App* app, TpFlags* flags, bool nodes = false);
// Checks the flags and parses --rank-order (a file of slots, or a comma
// list: tp_size distinct slots >= 0); before the runtime starts, gives the
// cpu plugin enough virtual devices for every rank when
// TESSERA_CPU_DEVICES is unset.
Status PrepareTp(TpFlags& flags);
// The ranks each node runs (tp_size / nnodes).
int TpLocalRanks(const TpFlags& flags);
// The local device ordinal of `rank` (on its own node).
int TpDevice(const TpFlags& flags, int rank);
// The cpu plugin's threads per rank when the user gave none: the ranks
// share this host's cores, one share each (at least 1).
int TpRankThreads(const TpFlags& flags);

// What a worker needs to build the runner rank 0 builds (as flags).
struct TpRunnerSpec {
  std::string model_path;
  std::string dtype = "auto";           // --dtype
  std::string kv_cache_dtype = "auto";  // --kv-cache-dtype
  std::string quantization = "auto";    // --quantization
  int32_t page_size = 16;
  int64_t kv_tokens = 0;  // the KV pool's token capacity (explicit)
  int64_t max_batch_tokens = 256;
  int cpu_threads = 0;
  runtime::RuntimeFlags flags;  // --device-plugin / --platform

  std::vector<std::string> ToArgs() const;
  // The runner options the spec describes (device and comm left unset).
  model::ModelRunnerOptions RunnerOptions(const model::Checkpoint& checkpoint) const;
};

class TpGroup {
 public:
  // Rank 0: makes the communicator id, starts the workers and joins as
  // rank 0 on `device` (blocks until every rank joined, or fails within the
  // plugin's comm timeout naming the missing ranks; a worker that exits
  // first is named with its exit status).
  static StatusOr<std::unique_ptr<TpGroup>> Start(runtime::Runtime& runtime,
                                                  const TpFlags& flags,
                                                  const TpRunnerSpec& spec);
  ~TpGroup();

  // After rank 0's runner is built: waits until every worker built its
  // own and checks that each describes the same model, dtypes, KV pool,
  // plugin and ABI (a difference is refused, naming both sides).
  Status AwaitReady(model::ModelRunner& runner, const std::string& model_path);

  runtime::Communicator& comm() { return *comm_; }
  engine::TpLeader& leader() { return *leader_; }
  // A worker that exited since the last call (reaped), or one on another
  // node whose connection closed (wait_status kRemoteClosed); nullopt when
  // all run. Call only once every rank is ready.
  std::optional<RankProcesses::Exit> PollExited();

 private:
  TpGroup() = default;
  RankProcesses workers_;
  std::vector<int> fds_;  // rank 0's ends of the control channels (rank r at r - 1)
  int first_remote_ = 0;  // ranks >= this live on other nodes (0: none)
  std::vector<bool> remote_gone_;
  runtime::CommunicatorPtr comm_;
  std::unique_ptr<engine::TpLeader> leader_;
};

// `tessera tp-worker` (hidden; command.h's AddTpWorkerCommand) is one
// worker rank: it starts its runtime, says hello, joins the communicator,
// builds its runner, says ready (with DescribeRunner's line) and runs
// engine::RunTpWorker until rank 0 sends kShutdown or closes the channel.

}  // namespace tessera::cli

#endif  // TESSERA_CLI_TP_LAUNCH_H_
