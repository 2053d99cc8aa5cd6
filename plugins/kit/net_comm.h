// NetComm: one rank of a communicator whose ranks span nodes, over Gloo's
// TCP transport (Debian's libgloo; linked into the plugin, never into the
// host). Every rank binds Gloo's device to this node's comm address
// (CommHostAddress) and meets the others through the rendezvous store of
// the process that made the unique id (tcp_store.h), whose address the id
// carries in bytes 80..127; then each pair of ranks holds a TCP
// connection (Gloo's full mesh).
//
// Collectives map onto Gloo's: all_reduce is Gloo's ring allreduce with
// the kit's reductions (ReduceInto: every rank ends with the same bits),
// all_gather and broadcast move bytes, reduce_scatter is an all_reduce
// of a copy of `send` from which each rank keeps its slice, send/recv are
// unbound-buffer transfers numbered per peer so that the n-th send to a
// peer meets its n-th recv. A dead peer (its connection closes) or a
// silent one (comm_timeout_ms) fails the call with TSR_ERR_DEVICE, and
// every later call on the communicator fails the same way. A queued call
// is not cancelled by its stream's destruction: it ends within the
// timeout. Joining ignores SIGPIPE when the process left it at its default
// (Gloo's writes to a dead peer would otherwise kill the process).
#ifndef TESSERA_PLUGINS_KIT_NET_COMM_H_
#define TESSERA_PLUGINS_KIT_NET_COMM_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kit/rank_comm.h"

namespace gloo {
class Context;
}

namespace tessera::plugin_kit {

// This node's address for the collectives: the IPv4 address of the
// interface named by TESSERA_COMM_SOCKET_IFNAME (or GLOO_SOCKET_IFNAME),
// else of the first interface that is up and not loopback, else 127.0.0.1.
Status CommHostAddress(std::string* host);

// Writes the rendezvous part (bytes 80..127) of a unique id: starts this
// process's store server on CommHostAddress() when it is not running.
Status AddNetRendezvous(tsr_comm_unique_id* id);

class NetComm : public RankComm {
 public:
  static Status Join(const tsr_comm_unique_id& id, int num_ranks, int rank, int timeout_ms,
                     std::shared_ptr<NetComm>* out);
  ~NetComm() override;

  int size() const override { return num_ranks_; }
  int rank() const override { return rank_; }
  Status RunCollective(const CollectiveArgs& args, const CommExec& ctx) override;
  Status Send(int peer, const void* data, tsr_dtype dtype, int64_t count,
              const CommExec& ctx) override;
  Status Recv(int peer, void* data, tsr_dtype dtype, int64_t count,
              const CommExec& ctx) override;

 private:
  NetComm(int num_ranks, int rank, int timeout_ms)
      : num_ranks_(num_ranks), rank_(rank), timeout_ms_(timeout_ms) {}
  void AllReduceInPlace(char* data, tsr_dtype dtype, int64_t count, tsr_reduce_op op);
  // send (sending) or recv of `bytes` at `data` with `peer`, the n-th with
  // that peer in this direction.
  Status Transfer(bool sending, int peer, void* data, size_t bytes);
  // Records the first failure; every later call returns it.
  Status Fail(const std::string& what, const std::string& why);

  const int num_ranks_;
  const int rank_;
  const int timeout_ms_;
  std::shared_ptr<gloo::Context> context_;
  uint32_t next_tag_ = 0;
  std::map<int, uint64_t> sent_, received_;  // per peer
  std::vector<char> scratch_;                // reduce_scatter's copy of send
  std::string broken_;
};

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_NET_COMM_H_
