// Tensor parallelism across nodes (SGLang's --nnodes / --node-rank /
// --dist-init-addr). Every node runs the same command; the ranks split
// evenly, node R holding ranks R*k .. R*k+k-1 (k = tp_size / nnodes) on
// its local devices 0..k-1 (as --base-gpu-id / --gpu-id-step / --rank-order
// place them). Node 0's process is rank 0 (HTTP server, scheduler) and
// listens on --dist-init-addr; every worker on another node connects
// there, says which rank it is (kJoin) and gets the communicator id and
// the KV pool size (kJoined), then runs the protocol a local worker runs
// over its socketpair. A node R > 0 runs no server: its process starts
// its ranks as `tessera tp-worker --control-addr` processes and lives
// until they exit (rank 0's shutdown ends them).
//
// Locality comes from --nnodes / --node-rank, never from hostnames: ranks
// on different nodes meet through the plugin's network transport
// (num_nodes > 1 in comm_init_rank), also when the nodes share a kernel.
#ifndef TESSERA_CLI_TP_NODES_H_
#define TESSERA_CLI_TP_NODES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/rank_processes.h"

namespace tessera::cli {

struct TpFlags;
struct TpRunnerSpec;

struct HostPort {
  std::string host;
  uint16_t port = 0;
};
// "HOST:PORT" or "[IPv6]:PORT".
StatusOr<HostPort> ParseDistInitAddr(const std::string& text);

// Node 0: a socket listening on `addr` (SO_REUSEADDR, never SO_REUSEPORT:
// a port in use is an error naming it).
StatusOr<int> ListenForNodes(const HostPort& addr);
// A worker on node R > 0: connects to rank 0, retrying until `timeout_s`
// passes (node 0 may start later). TCP_NODELAY is set.
StatusOr<int> ConnectToRankZero(const HostPort& addr, double timeout_s);

// Node 0: accepts one connection per rank in `ranks` (its kJoin names the
// rank), answers each with `joined_text` and returns the descriptors by
// rank. Fails when a local worker in `local` exits, a rank joins twice or
// is not expected, or `timeout_s` passes (naming the ranks still missing).
// Connections that do not speak the protocol are dropped with a warning.
Status AcceptRemoteRanks(int listen_fd, const std::vector<int>& ranks,
                         const std::string& joined_text, RankProcesses& local, double timeout_s,
                         std::map<int, int>* fds);

// Node R > 0 of `serve`: starts this node's ranks and waits for them; the
// exit code is 0 when all exit cleanly, 1 (naming the rank) otherwise.
int RunFollowerNode(const TpFlags& flags, const TpRunnerSpec& spec);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_TP_NODES_H_
