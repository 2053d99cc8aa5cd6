// The tsr_comm_api entries: validate on the calling thread, then enqueue
// the rank's part on its stream (collectives.h runs the in-process
// rendezvous, rank_comm.h the cross-process one: shared memory or Gloo).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "collectives.h"
#include "kit_names.h"
#include "plugin_state.h"

namespace tessera::cpu {
namespace {

Status FindCommAndStream(tsr_comm comm_handle, tsr_stream stream_handle,
                         std::shared_ptr<Comm>* comm, std::shared_ptr<Stream>* stream) {
  TSR_CPU_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
  *comm = State()->comms.Find(comm_handle);
  if (*comm == nullptr) {
    return InvalidHandle("comm ", static_cast<const void*>(comm_handle),
                         " is not a live communicator of this plugin (NULL, destroyed, or "
                         "never created by comm_init_all or comm_init_rank)");
  }
  *stream = State()->streams.Find(stream_handle);
  if (*stream == nullptr) {
    return InvalidHandle("stream ", static_cast<const void*>(stream_handle),
                         " is not a live stream of this plugin");
  }
  if ((*stream)->device() != (*comm)->device) {
    return InvalidArgument("rank ", (*comm)->rank, " lives on device ", (*comm)->device,
                           " but the stream is on device ", (*stream)->device(),
                           "; enqueue each rank's call on a stream of its own device");
  }
  return OkStatus();
}

// A contiguous tensor of a dtype the collective accepts.
Status CommTensor(const tsr_tensor* t, const char* name, bool reducible, TensorView* view,
                  std::shared_ptr<Buffer>* keep) {
  if (t == nullptr) return InvalidArgument(name, " is NULL");
  std::vector<std::shared_ptr<Buffer>> held;
  TSR_CPU_RETURN_IF_ERROR(plugin_kit::ResolveTensor(
      t, name,
      [&held](tsr_buffer handle, const std::string& label, ResolvedBuffer* out) {
        return ResolveTensorBuffer(handle, label, out, &held);
      },
      view));
  *keep = std::move(held.front());
  if (!view->IsContiguous()) {
    return InvalidArgument(name, " must be contiguous (row-major strides), but has shape ",
                           ShapeString(*view), " and non-contiguous strides");
  }
  if (reducible && !plugin_kit::ReducibleDType(view->dtype)) {
    return Unsupported(name, " is ", DTypeName(view->dtype),
                       "; reductions support f32, bf16, f16 and i32");
  }
  return OkStatus();
}

// This rank's part of a collective, on its stream worker: through its
// cross-process transport, or its in-process group.
Status RunAsRank(const Comm& comm, const CollectiveArgs& args, ExecContext& ctx) {
  if (comm.remote != nullptr) return comm.remote->RunCollective(args, CommExecOf(ctx));
  return comm.group->RunCollective(comm.rank, args, ctx);
}

Status EnqueueCollective(const std::shared_ptr<Comm>& comm, Stream& stream, const char* what,
                         CollectiveArgs args, std::vector<std::shared_ptr<Buffer>> keep) {
  if (comm->group != nullptr) {
    TSR_CPU_RETURN_IF_ERROR(comm->group->CountEnqueued(comm->rank, stream.core().get()));
  }
  return stream.Enqueue(what, [comm, args, keep = std::move(keep)](ExecContext& ctx) {
    return RunAsRank(*comm, args, ctx);
  });
}

tsr_status CommInitAll(const int32_t* devices, int32_t num_devices, tsr_comm* comms_out) {
  return Guard("comm_init_all", [&]() -> Status {
    TSR_CPU_RETURN_IF_ERROR(RequireState());
    if (num_devices < 1) return InvalidArgument("num_devices ", num_devices, " must be >= 1");
    if (devices == nullptr || comms_out == nullptr) {
      return InvalidArgument("devices and comms_out must not be NULL");
    }
    std::vector<int> list(devices, devices + num_devices);
    for (int d : list) TSR_CPU_RETURN_IF_ERROR(CheckDevice(d));
    auto group = std::make_shared<CommGroup>(list);
    std::vector<uintptr_t> handles;
    for (int r = 0; r < num_devices; ++r) {
      auto comm = std::make_shared<Comm>();
      comm->group = group;
      comm->rank = r;
      comm->size = num_devices;
      comm->device = list[r];
      handles.push_back(State()->comms.Add(std::move(comm)));
    }
    for (int r = 0; r < num_devices; ++r) comms_out[r] = ToHandle<tsr_comm>(handles[r]);
    return OkStatus();
  });
}

tsr_status CommDestroy(tsr_comm handle) {
  return Guard("comm_destroy", [&]() -> Status {
    TSR_CPU_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
    std::shared_ptr<Comm> comm = State()->comms.Remove(handle);
    if (comm == nullptr) {
      return InvalidHandle("comm ", static_cast<const void*>(handle),
                           " is not a live communicator of this plugin");
    }
    // The last rank to go wakes anything still stuck in the group. A
    // shared-memory rank marks itself gone when its last reference (a
    // queued collective may hold one) drops.
    if (comm->group != nullptr) comm->group->ReleaseRank();
    return OkStatus();
  });
}

tsr_status AllReduce(tsr_comm comm_handle, tsr_stream stream_handle, const tsr_tensor* send,
                     const tsr_tensor* recv, tsr_reduce_op op) {
  return Guard("all_reduce", [&]() -> Status {
    std::shared_ptr<Comm> comm;
    std::shared_ptr<Stream> stream;
    TSR_CPU_RETURN_IF_ERROR(FindCommAndStream(comm_handle, stream_handle, &comm, &stream));
    if (op != TSR_REDUCE_SUM && op != TSR_REDUCE_MAX && op != TSR_REDUCE_MIN) {
      return InvalidArgument("reduce op ", op, " is not SUM (0), MAX (1) or MIN (2)");
    }
    std::vector<std::shared_ptr<Buffer>> keep(2);
    TensorView s, r;
    TSR_CPU_RETURN_IF_ERROR(CommTensor(send, "send", true, &s, &keep[0]));
    TSR_CPU_RETURN_IF_ERROR(CommTensor(recv, "recv", true, &r, &keep[1]));
    if (s.dtype != r.dtype || s.numel() != r.numel()) {
      return InvalidArgument("recv (", DTypeName(r.dtype), " ", ShapeString(r),
                             ") must hold as many elements of the same dtype as send (",
                             DTypeName(s.dtype), " ", ShapeString(s), ")");
    }
    CollectiveArgs args;
    args.kind = CollectiveKind::kAllReduce;
    args.dtype = s.dtype;
    args.count = s.numel();
    args.send = s.data;
    args.recv = r.data;
    args.op = op;
    return EnqueueCollective(comm, *stream, "all_reduce", args, std::move(keep));
  });
}

tsr_status AllGather(tsr_comm comm_handle, tsr_stream stream_handle, const tsr_tensor* send,
                     const tsr_tensor* recv) {
  return Guard("all_gather", [&]() -> Status {
    std::shared_ptr<Comm> comm;
    std::shared_ptr<Stream> stream;
    TSR_CPU_RETURN_IF_ERROR(FindCommAndStream(comm_handle, stream_handle, &comm, &stream));
    std::vector<std::shared_ptr<Buffer>> keep(2);
    TensorView s, r;
    TSR_CPU_RETURN_IF_ERROR(CommTensor(send, "send", false, &s, &keep[0]));
    TSR_CPU_RETURN_IF_ERROR(CommTensor(recv, "recv", false, &r, &keep[1]));
    const int64_t ranks = comm->size;
    if (s.dtype != r.dtype || r.numel() != ranks * s.numel()) {
      return InvalidArgument("recv (", DTypeName(r.dtype), " ", ShapeString(r), ") must hold ",
                             ranks, " x send's ", s.numel(), " ", DTypeName(s.dtype),
                             " elements (rank-major)");
    }
    CollectiveArgs args;
    args.kind = CollectiveKind::kAllGather;
    args.dtype = s.dtype;
    args.count = s.numel();
    args.send = s.data;
    args.recv = r.data;
    return EnqueueCollective(comm, *stream, "all_gather", args, std::move(keep));
  });
}

tsr_status Broadcast(tsr_comm comm_handle, tsr_stream stream_handle, const tsr_tensor* buffer,
                     int32_t root) {
  return Guard("broadcast", [&]() -> Status {
    std::shared_ptr<Comm> comm;
    std::shared_ptr<Stream> stream;
    TSR_CPU_RETURN_IF_ERROR(FindCommAndStream(comm_handle, stream_handle, &comm, &stream));
    if (root < 0 || root >= comm->size) {
      return InvalidArgument("root ", root, " is not a rank of this communicator (0..",
                             comm->size - 1, ")");
    }
    std::vector<std::shared_ptr<Buffer>> keep(1);
    TensorView b;
    TSR_CPU_RETURN_IF_ERROR(CommTensor(buffer, "buffer", false, &b, &keep[0]));
    CollectiveArgs args;
    args.kind = CollectiveKind::kBroadcast;
    args.dtype = b.dtype;
    args.count = b.numel();
    args.send = b.data;
    args.recv = b.data;
    args.root = root;
    return EnqueueCollective(comm, *stream, "broadcast", args, std::move(keep));
  });
}

Status PeerCheck(const Comm& comm, int32_t peer) {
  if (peer < 0 || peer >= comm.size) {
    return InvalidArgument("peer ", peer, " is not a rank of this communicator (0..",
                           comm.size - 1, ")");
  }
  if (peer == comm.rank) {
    return InvalidArgument("peer ", peer, " is this rank itself; send/recv pair two ranks");
  }
  return OkStatus();
}

tsr_status Send(tsr_comm comm_handle, tsr_stream stream_handle, const tsr_tensor* t,
                int32_t peer) {
  return Guard("send", [&]() -> Status {
    std::shared_ptr<Comm> comm;
    std::shared_ptr<Stream> stream;
    TSR_CPU_RETURN_IF_ERROR(FindCommAndStream(comm_handle, stream_handle, &comm, &stream));
    TSR_CPU_RETURN_IF_ERROR(PeerCheck(*comm, peer));
    std::shared_ptr<Buffer> keep;
    TensorView v;
    TSR_CPU_RETURN_IF_ERROR(CommTensor(t, "t", false, &v, &keep));
    if (comm->remote != nullptr) {
      std::shared_ptr<RankComm> remote = comm->remote;
      return stream->Enqueue("send", [remote, peer, v, keep](ExecContext& ctx) {
        return remote->Send(peer, v.data, v.dtype, v.numel(), CommExecOf(ctx));
      });
    }
    std::shared_ptr<CommGroup> group = comm->group;
    const int rank = comm->rank;
    return stream->Enqueue("send", [group, rank, peer, v, keep](ExecContext&) {
      return group->Send(rank, peer, v.data, v.dtype, v.numel());
    });
  });
}

tsr_status Recv(tsr_comm comm_handle, tsr_stream stream_handle, const tsr_tensor* t,
                int32_t peer) {
  return Guard("recv", [&]() -> Status {
    std::shared_ptr<Comm> comm;
    std::shared_ptr<Stream> stream;
    TSR_CPU_RETURN_IF_ERROR(FindCommAndStream(comm_handle, stream_handle, &comm, &stream));
    TSR_CPU_RETURN_IF_ERROR(PeerCheck(*comm, peer));
    std::shared_ptr<Buffer> keep;
    TensorView v;
    TSR_CPU_RETURN_IF_ERROR(CommTensor(t, "t", false, &v, &keep));
    if (comm->remote != nullptr) {
      std::shared_ptr<RankComm> remote = comm->remote;
      return stream->Enqueue("recv", [remote, peer, v, keep](ExecContext& ctx) {
        return remote->Recv(peer, v.data, v.dtype, v.numel(), CommExecOf(ctx));
      });
    }
    std::shared_ptr<CommGroup> group = comm->group;
    const int rank = comm->rank;
    return stream->Enqueue("recv", [group, rank, peer, v, keep](ExecContext& ctx) {
      return group->Recv(rank, peer, v.data, v.dtype, v.numel(), ctx);
    });
  });
}

tsr_status ReduceScatter(tsr_comm comm_handle, tsr_stream stream_handle, const tsr_tensor* send,
                         const tsr_tensor* recv, tsr_reduce_op op) {
  return Guard("reduce_scatter", [&]() -> Status {
    std::shared_ptr<Comm> comm;
    std::shared_ptr<Stream> stream;
    TSR_CPU_RETURN_IF_ERROR(FindCommAndStream(comm_handle, stream_handle, &comm, &stream));
    if (op != TSR_REDUCE_SUM && op != TSR_REDUCE_MAX && op != TSR_REDUCE_MIN) {
      return InvalidArgument("reduce op ", op, " is not SUM (0), MAX (1) or MIN (2)");
    }
    std::vector<std::shared_ptr<Buffer>> keep(2);
    TensorView s, r;
    TSR_CPU_RETURN_IF_ERROR(CommTensor(send, "send", true, &s, &keep[0]));
    TSR_CPU_RETURN_IF_ERROR(CommTensor(recv, "recv", true, &r, &keep[1]));
    const int64_t ranks = comm->size;
    if (s.dtype != r.dtype || s.numel() != ranks * r.numel()) {
      return InvalidArgument("send (", DTypeName(s.dtype), " ", ShapeString(s), ") must hold ",
                             ranks, " x recv's ", r.numel(), " ", DTypeName(r.dtype),
                             " elements (rank r receives slice r)");
    }
    CollectiveArgs args;
    args.kind = CollectiveKind::kReduceScatter;
    args.dtype = s.dtype;
    args.count = r.numel();
    args.send = s.data;
    args.recv = r.data;
    args.op = op;
    return EnqueueCollective(comm, *stream, "reduce_scatter", args, std::move(keep));
  });
}

// The fabric_rings option (a synthetic interconnect): every rank learns
// every rank's physical device (an all_gather) and all refuse a
// communicator whose devices are not in one ring.
Status CheckFabric(RankComm& comm, int physical_device) {
  const auto& rings = State()->fabric_rings;
  if (rings.empty()) return OkStatus();
  const int n = comm.size();
  std::vector<int32_t> devices(n);
  const int32_t mine = physical_device;
  CollectiveArgs args;
  args.kind = CollectiveKind::kAllGather;
  args.dtype = TSR_DTYPE_I32;
  args.count = 1;
  args.send = reinterpret_cast<const char*>(&mine);
  args.recv = reinterpret_cast<char*>(devices.data());
  TSR_CPU_RETURN_IF_ERROR(comm.RunCollective(args, plugin_kit::CommExec{}));
  auto ring_of = [&rings](int device) {
    for (size_t i = 0; i < rings.size(); ++i) {
      for (int d : rings[i]) {
        if (d == device) return static_cast<int>(i);
      }
    }
    return -1;
  };
  const int ring0 = ring_of(devices[0]);
  for (int r = 0; r < n; ++r) {
    if (ring_of(devices[r]) != ring0 || ring0 < 0) {
      return Status(TSR_ERR_DEVICE,
                    StrCat("the fabric cannot route collectives between these devices: rank 0 "
                           "is on device ", devices[0], " (ring ", ring0, ") and rank ", r,
                           " on device ", devices[r], " (ring ", ring_of(devices[r]),
                           "); place each communicator's ranks on one ring (--rank-order)"));
    }
  }
  return OkStatus();
}

tsr_status CommGetUniqueId(tsr_comm_unique_id* out) {
  return Guard("comm_get_unique_id", [&]() -> Status {
    TSR_CPU_RETURN_IF_ERROR(RequireState());
    return plugin_kit::NewUniqueId(out);
  });
}

tsr_status CommInitRank(const tsr_comm_init_rank_args* args, tsr_comm* out) {
  return Guard("comm_init_rank", [&]() -> Status {
    TSR_CPU_RETURN_IF_ERROR(RequireState());
    tsr_comm_init_rank_args a{};
    TSR_CPU_RETURN_IF_ERROR(plugin_kit::ReadCommInitRankArgs(args, out, &a));
    TSR_CPU_RETURN_IF_ERROR(CheckDevice(a.device));
    std::shared_ptr<RankComm> remote;
    TSR_CPU_RETURN_IF_ERROR(plugin_kit::JoinRankComm(a, State()->comm_timeout_ms, &remote));
    TSR_CPU_RETURN_IF_ERROR(CheckFabric(*remote, State()->physical[a.device]));
    auto comm = std::make_shared<Comm>();
    comm->remote = std::move(remote);
    comm->rank = a.rank;
    comm->size = a.num_ranks;
    comm->device = a.device;
    *out = ToHandle<tsr_comm>(State()->comms.Add(std::move(comm)));
    return OkStatus();
  });
}

}  // namespace

Status CheckLayerComm(tsr_comm handle, int device) {
  std::shared_ptr<Comm> comm = State()->comms.Find(handle);
  if (comm == nullptr) {
    return InvalidHandle("decoder_layer v2: params.comm ", static_cast<const void*>(handle),
                         " is not a live communicator of this plugin (NULL means no tensor "
                         "parallelism)");
  }
  if (comm->device != device) {
    return InvalidArgument("decoder_layer v2: params.comm's rank ", comm->rank,
                           " lives on device ", comm->device, " but the launch is on device ",
                           device);
  }
  return OkStatus();
}

Status RunLayerAllReduce(tsr_comm handle, const TensorView& x, ExecContext& ctx) {
  std::shared_ptr<Comm> comm = State()->comms.Find(handle);
  if (comm == nullptr) {
    return InvalidHandle("decoder_layer v2: its communicator was destroyed before the layer ran");
  }
  CollectiveArgs args;
  args.kind = CollectiveKind::kAllReduce;
  args.dtype = x.dtype;
  args.count = x.numel();
  args.send = x.data;
  args.recv = x.data;
  args.op = TSR_REDUCE_SUM;
  return RunAsRank(*comm, args, ctx);
}

const tsr_comm_api* CommApi() {
  static const tsr_comm_api api = {
      sizeof(tsr_comm_api), CommInitAll, CommDestroy,     AllReduce,    AllGather,
      Broadcast,            Send,        Recv,            CommGetUniqueId,
      CommInitRank,         ReduceScatter,
  };
  return &api;
}

}  // namespace tessera::cpu
