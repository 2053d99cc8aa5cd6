// The OpenCL plugin's comm table (ABI 1.3): the kit's cross-process
// transports (kit/rank_comm.h: shared memory on one node, Gloo across
// nodes; the cpu plugin's too), fed through host memory. OpenCL 1.2 cannot run host code in a queue's order, so each
// collective runs at the call: it waits for the stream's earlier work,
// reads its inputs to host staging, meets its peers, and writes the result
// back before returning — the stream's later work sees it, as the contract
// asks, but the call blocks (the header allows a plugin to finish a
// collective before returning). Such a call is refused while the stream
// captures a graph (a host step cannot be recorded), which makes the host
// run tensor-parallel decode steps eagerly on this plugin.
// comm_init_all joins its ranks from one thread each.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kit_names.h"
#include "plugin_state.h"

namespace tessera::opencl {
namespace {

using plugin_kit::CollectiveArgs;
using plugin_kit::CollectiveKind;
using plugin_kit::ShmComm;

Status FindComm(tsr_comm handle, std::shared_ptr<Comm>* out) {
  TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
  *out = State()->comms.Find(handle);
  if (*out == nullptr) {
    return InvalidHandle("comm ", static_cast<const void*>(handle),
                         " is not a live communicator of this plugin (NULL, destroyed, or "
                         "never created by comm_init_all or comm_init_rank)");
  }
  return OkStatus();
}

// A contiguous tensor of this plugin on the rank's device.
struct HostStaged {
  std::shared_ptr<Buffer> buffer;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  int64_t count = 0;
  tsr_dtype dtype = TSR_DTYPE_INVALID;
};

Status Resolve(const tsr_tensor* t, const char* name, bool reducible, HostStaged* out) {
  if (t == nullptr) return InvalidArgument(name, " is NULL");
  std::vector<std::shared_ptr<Buffer>> held;
  TensorView view;
  TSR_CL_RETURN_IF_ERROR(plugin_kit::ResolveTensor(
      t, name,
      [&held](tsr_buffer handle, const std::string& label, ResolvedBuffer* r) {
        return ResolveTensorBuffer(handle, label, r, &held);
      },
      &view));
  if (!view.IsContiguous()) {
    return InvalidArgument(name, " must be contiguous (row-major strides), but has shape ",
                           ShapeString(view), " and non-contiguous strides");
  }
  if (reducible && !plugin_kit::ReducibleDType(view.dtype)) {
    return Unsupported(name, " is ", DTypeName(view.dtype),
                       "; reductions support f32, bf16, f16 and i32");
  }
  out->buffer = held.front();
  out->offset = t->offset;
  out->dtype = view.dtype;
  out->count = view.numel();
  out->bytes = static_cast<uint64_t>(out->count) * DTypeSize(view.dtype);
  return OkStatus();
}

// The rank's stream, idle (its earlier work done) and not capturing.
Status ReadyStream(const Comm& comm, tsr_stream handle, const char* what,
                   std::shared_ptr<Stream>* out) {
  *out = State()->streams.Find(handle);
  if (*out == nullptr) {
    return InvalidHandle("stream ", static_cast<const void*>(handle),
                         " is not a live stream of this plugin");
  }
  if ((*out)->device().ordinal != comm.device) {
    return InvalidArgument("rank ", comm.rank, " lives on device ", comm.device,
                           " but the stream is on device ", (*out)->device().ordinal);
  }
  if ((*out)->capturing()) {
    return InvalidArgument("the stream is capturing a graph, and the OpenCL plugin stages ",
                           what, " through host memory at the call, which a graph cannot "
                           "record; run it eagerly");
  }
  return (*out)->Synchronize();
}

Status Read(const Stream& stream, const HostStaged& t, void* dst) {
  if (t.bytes == 0) return OkStatus();
  return ClCheck(clEnqueueReadBuffer(stream.queue(), t.buffer->mem, CL_TRUE, t.offset, t.bytes,
                                     dst, 0, nullptr, nullptr),
                 "clEnqueueReadBuffer (collective input)");
}

Status Write(const Stream& stream, const HostStaged& t, const void* src) {
  if (t.bytes == 0) return OkStatus();
  return ClCheck(clEnqueueWriteBuffer(stream.queue(), t.buffer->mem, CL_TRUE, t.offset, t.bytes,
                                      src, 0, nullptr, nullptr),
                 "clEnqueueWriteBuffer (collective output)");
}

// Runs one collective through host staging.
Status RunStaged(tsr_comm comm_handle, tsr_stream stream_handle, const char* what,
                 CollectiveKind kind, const tsr_tensor* send_t, const tsr_tensor* recv_t,
                 tsr_reduce_op op, int32_t root) {
  std::shared_ptr<Comm> comm;
  TSR_CL_RETURN_IF_ERROR(FindComm(comm_handle, &comm));
  const bool reduce = kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter;
  if (reduce && op != TSR_REDUCE_SUM && op != TSR_REDUCE_MAX && op != TSR_REDUCE_MIN) {
    return InvalidArgument("reduce op ", op, " is not SUM (0), MAX (1) or MIN (2)");
  }
  HostStaged send, recv;
  TSR_CL_RETURN_IF_ERROR(Resolve(send_t, kind == CollectiveKind::kBroadcast ? "buffer" : "send",
                                 reduce, &send));
  TSR_CL_RETURN_IF_ERROR(Resolve(recv_t, "recv", reduce, &recv));
  const int64_t n = comm->size;
  int64_t count = send.count;
  bool shapes_ok = send.dtype == recv.dtype;
  switch (kind) {
    case CollectiveKind::kAllReduce: shapes_ok = shapes_ok && recv.count == send.count; break;
    case CollectiveKind::kAllGather: shapes_ok = shapes_ok && recv.count == n * send.count; break;
    case CollectiveKind::kReduceScatter:
      shapes_ok = shapes_ok && send.count == n * recv.count;
      count = recv.count;
      break;
    case CollectiveKind::kBroadcast:
      if (root < 0 || root >= n) {
        return InvalidArgument("root ", root, " is not a rank of this communicator (0..", n - 1,
                               ")");
      }
      break;
  }
  if (!shapes_ok) {
    return InvalidArgument(what, ": send (", send.count, " ", DTypeName(send.dtype),
                           ") and recv (", recv.count, " ", DTypeName(recv.dtype),
                           ") do not fit the collective over ", n, " ranks");
  }
  std::shared_ptr<Stream> stream;
  TSR_CL_RETURN_IF_ERROR(ReadyStream(*comm, stream_handle, what, &stream));
  std::vector<char> in(send.bytes), out(recv.bytes);
  TSR_CL_RETURN_IF_ERROR(Read(*stream, send, in.data()));
  CollectiveArgs args;
  args.kind = kind;
  args.dtype = send.dtype;
  args.count = count;
  args.send = in.data();
  args.recv = out.data();
  if (kind == CollectiveKind::kBroadcast) {  // in place on the staging copy
    out = in;
    args.send = args.recv = out.data();
  }
  args.op = op;
  args.root = root;
  TSR_CL_RETURN_IF_ERROR(comm->remote->RunCollective(args, plugin_kit::CommExec{}));
  return Write(*stream, recv, out.data());
}

tsr_status CommInitAll(const int32_t* devices, int32_t num_devices, tsr_comm* comms_out) {
  return Guard("comm_init_all", [&]() -> Status {
    TSR_CL_RETURN_IF_ERROR(RequireState());
    if (num_devices < 1 || num_devices > 64) {
      return InvalidArgument("num_devices ", num_devices, " must be 1..64");
    }
    if (devices == nullptr || comms_out == nullptr) {
      return InvalidArgument("devices and comms_out must not be NULL");
    }
    for (int r = 0; r < num_devices; ++r) TSR_CL_RETURN_IF_ERROR(CheckDevice(devices[r]));
    tsr_comm_unique_id id{};
    TSR_CL_RETURN_IF_ERROR(plugin_kit::NewShmUniqueId(&id));
    // Each rank joins from its own thread (a join waits for all).
    std::vector<std::shared_ptr<ShmComm>> shm(num_devices);
    std::vector<Status> status(num_devices);
    std::vector<std::thread> threads;
    const int timeout = State()->comm_timeout_ms;
    for (int r = 0; r < num_devices; ++r) {
      threads.emplace_back([&, r] { status[r] = ShmComm::Join(id, num_devices, r, timeout, &shm[r]); });
    }
    for (auto& t : threads) t.join();
    for (const Status& s : status) TSR_CL_RETURN_IF_ERROR(s);
    for (int r = 0; r < num_devices; ++r) {
      auto comm = std::make_shared<Comm>();
      comm->remote = shm[r];
      comm->rank = r;
      comm->size = num_devices;
      comm->device = devices[r];
      comms_out[r] = ToHandle<tsr_comm>(State()->comms.Add(std::move(comm)));
    }
    return OkStatus();
  });
}

tsr_status CommDestroy(tsr_comm handle) {
  return Guard("comm_destroy", [&]() -> Status {
    TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
    if (State()->comms.Remove(handle) == nullptr) {
      return InvalidHandle("comm ", static_cast<const void*>(handle),
                           " is not a live communicator of this plugin");
    }
    return OkStatus();
  });
}

tsr_status AllReduce(tsr_comm comm, tsr_stream stream, const tsr_tensor* send,
                     const tsr_tensor* recv, tsr_reduce_op op) {
  return Guard("all_reduce", [&] {
    return RunStaged(comm, stream, "all_reduce", CollectiveKind::kAllReduce, send, recv, op, 0);
  });
}

tsr_status AllGather(tsr_comm comm, tsr_stream stream, const tsr_tensor* send,
                     const tsr_tensor* recv) {
  return Guard("all_gather", [&] {
    return RunStaged(comm, stream, "all_gather", CollectiveKind::kAllGather, send, recv,
                     TSR_REDUCE_SUM, 0);
  });
}

tsr_status Broadcast(tsr_comm comm, tsr_stream stream, const tsr_tensor* buffer, int32_t root) {
  return Guard("broadcast", [&] {
    return RunStaged(comm, stream, "broadcast", CollectiveKind::kBroadcast, buffer, buffer,
                     TSR_REDUCE_SUM, root);
  });
}

tsr_status ReduceScatter(tsr_comm comm, tsr_stream stream, const tsr_tensor* send,
                         const tsr_tensor* recv, tsr_reduce_op op) {
  return Guard("reduce_scatter", [&] {
    return RunStaged(comm, stream, "reduce_scatter", CollectiveKind::kReduceScatter, send, recv,
                     op, 0);
  });
}

Status PointToPoint(tsr_comm comm_handle, tsr_stream stream_handle, const tsr_tensor* t,
                    int32_t peer, bool sending) {
  std::shared_ptr<Comm> comm;
  TSR_CL_RETURN_IF_ERROR(FindComm(comm_handle, &comm));
  if (peer < 0 || peer >= comm->size || peer == comm->rank) {
    return InvalidArgument("peer ", peer, " is not another rank of this communicator (0..",
                           comm->size - 1, ")");
  }
  HostStaged staged;
  TSR_CL_RETURN_IF_ERROR(Resolve(t, "t", false, &staged));
  std::shared_ptr<Stream> stream;
  TSR_CL_RETURN_IF_ERROR(ReadyStream(*comm, stream_handle, sending ? "send" : "recv", &stream));
  std::vector<char> host(staged.bytes);
  if (sending) {
    TSR_CL_RETURN_IF_ERROR(Read(*stream, staged, host.data()));
    return comm->remote->Send(peer, host.data(), staged.dtype, staged.count, plugin_kit::CommExec{});
  }
  TSR_CL_RETURN_IF_ERROR(
      comm->remote->Recv(peer, host.data(), staged.dtype, staged.count, plugin_kit::CommExec{}));
  return Write(*stream, staged, host.data());
}

tsr_status Send(tsr_comm comm, tsr_stream stream, const tsr_tensor* t, int32_t peer) {
  return Guard("send", [&] { return PointToPoint(comm, stream, t, peer, true); });
}

tsr_status Recv(tsr_comm comm, tsr_stream stream, const tsr_tensor* t, int32_t peer) {
  return Guard("recv", [&] { return PointToPoint(comm, stream, t, peer, false); });
}

tsr_status CommGetUniqueId(tsr_comm_unique_id* out) {
  return Guard("comm_get_unique_id", [&]() -> Status {
    TSR_CL_RETURN_IF_ERROR(RequireState());
    return plugin_kit::NewUniqueId(out);
  });
}

tsr_status CommInitRank(const tsr_comm_init_rank_args* args, tsr_comm* out) {
  return Guard("comm_init_rank", [&]() -> Status {
    TSR_CL_RETURN_IF_ERROR(RequireState());
    tsr_comm_init_rank_args a{};
    TSR_CL_RETURN_IF_ERROR(plugin_kit::ReadCommInitRankArgs(args, out, &a));
    TSR_CL_RETURN_IF_ERROR(CheckDevice(a.device));
    std::shared_ptr<plugin_kit::RankComm> remote;
    TSR_CL_RETURN_IF_ERROR(plugin_kit::JoinRankComm(a, State()->comm_timeout_ms, &remote));
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

const tsr_comm_api* CommApi() {
  static const tsr_comm_api api = {
      sizeof(tsr_comm_api), CommInitAll, CommDestroy,     AllReduce,    AllGather,
      Broadcast,            Send,        Recv,            CommGetUniqueId,
      CommInitRank,         ReduceScatter,
  };
  return &api;
}

}  // namespace tessera::opencl
