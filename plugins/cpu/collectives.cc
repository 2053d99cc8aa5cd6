#include "collectives.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <type_traits>

#include "kit_names.h"

namespace tessera::cpu {
namespace {

constexpr auto kCancelPoll = std::chrono::milliseconds(5);


}  // namespace

plugin_kit::CommExec CommExecOf(ExecContext& ctx) {
  plugin_kit::CommExec exec;
  exec.cancel = ctx.cancel;
  ThreadPool* pool = ctx.pool;
  if (pool != nullptr) {
    exec.parallel = [pool](int64_t n, int64_t grain,
                           const std::function<void(int64_t, int64_t)>& fn) {
      pool->ParallelFor(n, grain, fn);
    };
  }
  return exec;
}

CommGroup::CommGroup(std::vector<int> devices)
    : devices_(std::move(devices)),
      live_ranks_(static_cast<int>(devices_.size())),
      next_seq_(devices_.size(), 0),
      exec_seq_(devices_.size(), 0),
      last_stream_(devices_.size(), nullptr) {}

void CommGroup::ReleaseRank() {
  if (live_ranks_.fetch_sub(1) == 1) Abort();
}

Status CommGroup::CountEnqueued(int rank, const void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t mine = next_seq_[rank];
  for (int q = 0; q < size(); ++q) {
    if (q != rank && next_seq_[q] == mine + 1 && last_stream_[q] == stream) {
      return InvalidArgument("rank ", q, " already queued this collective on the same stream; "
                             "each rank must enqueue on its own stream or the stream would "
                             "wait for itself");
    }
  }
  next_seq_[rank] = mine + 1;
  last_stream_[rank] = stream;
  return OkStatus();
}

void CommGroup::Abort() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
  }
  cv_.notify_all();
}

template <typename Pred>
bool CommGroup::WaitLocked(std::unique_lock<std::mutex>& lock, ExecContext& ctx, Pred pred) {
  while (!pred()) {
    if (aborted_ || ctx.cancelled()) return false;
    cv_.wait_for(lock, kCancelPoll);
  }
  return true;
}

Status CommGroup::CheckMatch(const Round& round) const {
  const CollectiveArgs& a = round.args[0];
  for (int r = 1; r < size(); ++r) {
    const CollectiveArgs& b = round.args[r];
    if (b.kind != a.kind) {
      return InvalidArgument("rank ", r, " called ", plugin_kit::CollectiveKindName(b.kind), " where rank 0 called ",
                             plugin_kit::CollectiveKindName(a.kind),
                             "; every rank must issue the same collectives in the same order");
    }
    if (b.dtype != a.dtype || b.count != a.count) {
      return InvalidArgument(plugin_kit::CollectiveKindName(a.kind), ": rank ", r, " passed ", b.count, " ",
                             DTypeName(b.dtype), " elements where rank 0 passed ", a.count, " ",
                             DTypeName(a.dtype), "; tensors must match on every rank");
    }
    if (b.op != a.op || b.root != a.root) {
      return InvalidArgument(plugin_kit::CollectiveKindName(a.kind), ": rank ", r,
                             " passed a different reduce op or root than rank 0");
    }
  }
  return OkStatus();
}

void CommGroup::WriteShare(int rank, const Round& round, ExecContext& ctx) {
  const CollectiveArgs& args = round.args[rank];
  const int64_t n = size();
  const size_t esize = DTypeSize(args.dtype);
  const size_t bytes = static_cast<size_t>(args.count) * esize;
  switch (args.kind) {
    case CollectiveKind::kAllReduce: {
      // Rank r reduces the r-th slice of the elements for everyone.
      const int64_t lo = args.count * rank / n;
      const int64_t hi = args.count * (rank + 1) / n;
      std::vector<const char*> sends(n);
      for (int q = 0; q < n; ++q) sends[q] = round.args[q].send + lo * esize;
      plugin_kit::ReduceInto(args.dtype, args.op, sends, round.staging.get() + lo * esize,
                             hi - lo, CommExecOf(ctx).parallel);
      break;
    }
    case CollectiveKind::kReduceScatter: {
      // Rank r reduces slice r of every rank's send: its own result.
      std::vector<const char*> sends(n);
      for (int q = 0; q < n; ++q) sends[q] = round.args[q].send + rank * bytes;
      plugin_kit::ReduceInto(args.dtype, args.op, sends, round.staging.get() + rank * bytes,
                             args.count, CommExecOf(ctx).parallel);
      break;
    }
    case CollectiveKind::kAllGather:
      if (bytes) std::memcpy(round.staging.get() + rank * bytes, args.send, bytes);
      break;
    case CollectiveKind::kBroadcast:
      if (rank == args.root && bytes) std::memcpy(round.staging.get(), args.send, bytes);
      break;
  }
}

void CommGroup::Depart(uint64_t seq, Round& round) {
  if (++round.departed == size()) rounds_.erase(seq);
}

Status CommGroup::RunCollective(int rank, const CollectiveArgs& args, ExecContext& ctx) {
  const int n = size();
  std::unique_lock<std::mutex> lock(mu_);
  // Numbered when it runs, not when it was enqueued: a graph replay runs
  // the captured collective again as the rank's next one.
  const uint64_t seq = exec_seq_[rank]++;
  if (aborted_) {
    return InvalidArgument("the communicator was destroyed; create a new one with comm_init_all");
  }
  Round& round = rounds_[seq];
  if (round.args.empty()) round.args.resize(n);
  round.args[rank] = args;
  ++round.arrived;
  cv_.notify_all();
  auto fail_waiting = [&](const char* phase) {
    round.failed = true;
    round.error = InvalidArgument(
        plugin_kit::CollectiveKindName(args.kind), " #", seq, " was abandoned by rank ", rank, " ", phase,
        " (its stream was destroyed or the communicator aborted); every rank must "
        "issue the same collectives and stay alive until they complete");
    cv_.notify_all();
    Status error = round.error;
    Depart(seq, round);
    return error;
  };
  if (!WaitLocked(lock, ctx, [&] { return round.arrived == n || round.failed; })) {
    return fail_waiting("while waiting for the other ranks to arrive");
  }
  if (round.failed) {
    Status error = round.error;
    Depart(seq, round);
    return error;
  }
  Status match = CheckMatch(round);
  if (!match.ok()) {
    Depart(seq, round);
    return match;
  }
  if (!round.staging_ready) {
    size_t bytes = static_cast<size_t>(args.count) * DTypeSize(args.dtype);
    if (args.kind == CollectiveKind::kAllGather || args.kind == CollectiveKind::kReduceScatter) {
      bytes *= n;
    }
    round.staging.reset(new char[bytes > 0 ? bytes : 1]);
    round.staging_ready = true;
  }
  lock.unlock();
  WriteShare(rank, round, ctx);
  lock.lock();
  ++round.shared;
  cv_.notify_all();
  if (!WaitLocked(lock, ctx, [&] { return round.shared == n || round.failed; })) {
    return fail_waiting("while waiting for the other ranks' data");
  }
  if (round.failed) {
    Status error = round.error;
    Depart(seq, round);
    return error;
  }
  lock.unlock();
  size_t bytes = static_cast<size_t>(args.count) * DTypeSize(args.dtype);
  switch (args.kind) {
    case CollectiveKind::kAllReduce:
      if (bytes) std::memmove(args.recv, round.staging.get(), bytes);
      break;
    case CollectiveKind::kAllGather:
      if (bytes) std::memmove(args.recv, round.staging.get(), bytes * n);
      break;
    case CollectiveKind::kBroadcast:
      if (rank != args.root && bytes) std::memcpy(args.recv, round.staging.get(), bytes);
      break;
    case CollectiveKind::kReduceScatter:
      if (bytes) std::memmove(args.recv, round.staging.get() + rank * bytes, bytes);
      break;
  }
  lock.lock();
  Depart(seq, round);
  return OkStatus();
}

Status CommGroup::Send(int rank, int peer, const void* data, tsr_dtype dtype, int64_t count) {
  Message message;
  size_t bytes = static_cast<size_t>(count) * DTypeSize(dtype);
  message.data.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  message.dtype = dtype;
  message.count = count;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) {
      return InvalidArgument("the communicator was destroyed; create a new one with comm_init_all");
    }
    channels_[{rank, peer}].push_back(std::move(message));
  }
  cv_.notify_all();
  return OkStatus();
}

Status CommGroup::Recv(int rank, int peer, void* data, tsr_dtype dtype, int64_t count,
                       ExecContext& ctx) {
  Message message;
  {
    std::unique_lock<std::mutex> lock(mu_);
    std::deque<Message>& channel = channels_[{peer, rank}];
    if (!WaitLocked(lock, ctx, [&] { return !channel.empty(); })) {
      return InvalidArgument("recv on rank ", rank, " from rank ", peer,
                             " was abandoned (its stream was destroyed or the "
                             "communicator aborted) before a matching send arrived");
    }
    message = std::move(channel.front());
    channel.pop_front();
  }
  if (message.dtype != dtype || message.count != count) {
    return InvalidArgument("recv on rank ", rank, " expected ", count, " ", DTypeName(dtype),
                           " elements from rank ", peer, ", but the matching send carried ",
                           message.count, " ", DTypeName(message.dtype),
                           "; sends and receives must pair up in order with equal tensors");
  }
  if (!message.data.empty()) std::memcpy(data, message.data.data(), message.data.size());
  return OkStatus();
}

}  // namespace tessera::cpu
