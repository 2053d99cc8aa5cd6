#include "kit/rank_comm.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kit/host_log.h"
#include "kit/net_comm.h"
#include "kit/shm_comm.h"
#include "kit/tcp_store.h"

namespace tessera::plugin_kit {

Status NewUniqueId(tsr_comm_unique_id* out) {
  Status s = NewShmUniqueId(out);
  if (!s.ok()) return s;
  // Without a store the id still serves ranks on one node; a multi-node
  // join then names the missing rendezvous.
  s = AddNetRendezvous(out);
  if (!s.ok()) {
    LogToHost("comm", TSR_LOG_WARN,
              StrCat("collectives across nodes unavailable: ", s.message()));
  }
  return OkStatus();
}

Status ReadCommInitRankArgs(const tsr_comm_init_rank_args* args, const tsr_comm* out,
                            tsr_comm_init_rank_args* a) {
  if (args == nullptr || out == nullptr) return InvalidArgument("args and out must not be NULL");
  if (args->struct_size < offsetof(tsr_comm_init_rank_args, device) + sizeof(int32_t)) {
    return InvalidArgument("args->struct_size ", args->struct_size,
                           " is too small to hold id, num_ranks, rank and device");
  }
  *a = tsr_comm_init_rank_args{};
  a->num_nodes = 1;
  std::memcpy(a, args, std::min<size_t>(sizeof(*a), args->struct_size));
  if (a->id == nullptr) return InvalidArgument("args->id must not be NULL");
  if (a->num_ranks < 1 || a->num_ranks > 64) {
    return InvalidArgument("num_ranks ", a->num_ranks, " must be 1..64");
  }
  if (a->rank < 0 || a->rank >= a->num_ranks) {
    return InvalidArgument("rank ", a->rank, " must be 0..", a->num_ranks - 1);
  }
  if (a->num_nodes == 0) a->num_nodes = 1;  // a zeroed struct: one node
  if (a->num_nodes < 1 || a->num_nodes > a->num_ranks) {
    return InvalidArgument("num_nodes ", a->num_nodes, " must be 1..num_ranks (", a->num_ranks,
                           ")");
  }
  if (a->node < 0 || a->node >= a->num_nodes) {
    return InvalidArgument("node ", a->node, " must be 0..", a->num_nodes - 1);
  }
  return OkStatus();
}

Status JoinRankComm(const tsr_comm_init_rank_args& a, int timeout_ms,
                    std::shared_ptr<RankComm>* out) {
  if (a.num_nodes > 1) {
    std::shared_ptr<NetComm> net;
    Status s = NetComm::Join(*a.id, a.num_ranks, a.rank, timeout_ms, &net);
    if (s.ok()) *out = std::move(net);
    return s;
  }
  std::shared_ptr<ShmComm> shm;
  Status s = ShmComm::Join(*a.id, a.num_ranks, a.rank, timeout_ms, &shm);
  if (s.ok()) *out = std::move(shm);
  return s;
}

void StopCommRendezvous() { StopStoreServer(); }

}  // namespace tessera::plugin_kit
