// collectives_mp (only when the plugin has ABI 1.3 comm_get_unique_id and
// comm_init_rank): communicators whose ranks are separate processes, the
// way `--tp-size` runs them. Each check forks its ranks from the group's
// (single-threaded, not yet initialised) process; every rank initialises
// the plugin itself, rank 0 makes the unique id and pipes it to the others,
// and each rank pipes back "" (pass) or what went wrong. Checked: every
// reduce op and dtype of all_reduce at odd sizes (1, 1001, and more than
// 4 MiB), all_gather, reduce_scatter, broadcast, send/recv, in-place use,
// three ranks, a collective captured in a graph and replayed (or refused
// while capturing, which a plugin that completes collectives at the call
// may do), and a peer that exits mid-collective (an error within the comm
// timeout, never a hang). The whole set runs again as ranks of two nodes
// (collectives_mp.nodes2.*: the plugin's network transport), skipped with
// the plugin's reason when it refuses num_nodes > 1.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/dtype.h"
#include "conformance/checks.h"

namespace tessera::conformance {
namespace {

constexpr double kRankTimeoutS = 120;
// Short enough that the peer-exit check fails fast with plugins that only
// notice a dead peer by timeout.
constexpr const char* kPeerExitTimeoutMs = "5000";
// How a rank reports that the plugin refused a communicator across nodes.
constexpr const char* kUnsupportedMark = "UNSUPPORTED: ";

struct RankEnv {
  PluginEnv* env;
  int rank;
  int num_ranks;
  tsr_comm comm;
  tsr_stream stream;
};

// What a rank runs once joined: "" on success, else what went wrong.
using RankBody = std::function<std::string(RankEnv&)>;

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// In a forked rank: init, join, run `body`, tear down. Never returns.
[[noreturn]] void RankMain(PluginEnv env, int rank, int num_ranks, int num_nodes,
                           const InitOptions& extra,
                           int id_read_fd, const std::vector<int>& id_write_fds, int result_fd,
                           const RankBody& body) {
  auto finish = [&](const std::string& message) {
    WriteAll(result_fd, message);
    close(result_fd);
    _exit(0);
  };
  const tsr_plugin_api& api = env.api();
  if (api.init == nullptr) finish("no init entry");
  Status init = env.Check(env.RawInit(extra), "init");
  if (init.ok()) init = env.LoadDevices();
  if (!init.ok()) finish(std::string(init.message()));
  tsr_comm_unique_id id{};
  if (rank == 0) {
    Status s = env.Check(api.comm->comm_get_unique_id(&id), "comm_get_unique_id");
    if (!s.ok()) finish(std::string(s.message()));
    for (int fd : id_write_fds) {
      WriteAll(fd, std::string(reinterpret_cast<const char*>(id.bytes), sizeof(id.bytes)));
      close(fd);
    }
  } else {
    std::string bytes = ReadAll(id_read_fd);
    if (bytes.size() != sizeof(id.bytes)) finish("rank 0 sent no unique id (it failed first)");
    std::memcpy(id.bytes, bytes.data(), sizeof(id.bytes));
  }
  const int device = rank % env.device_count();
  tsr_stream stream = nullptr;
  Status s = env.Check(api.stream_create(device, &stream), "stream_create");
  if (!s.ok()) finish(std::string(s.message()));
  tsr_comm_init_rank_args args{};
  args.struct_size = sizeof(args);
  args.id = &id;
  args.num_ranks = num_ranks;
  args.rank = rank;
  args.device = device;
  args.node = rank % num_nodes;
  args.num_nodes = num_nodes;
  tsr_comm comm = nullptr;
  const tsr_status joined = api.comm->comm_init_rank(&args, &comm);
  if (joined == TSR_ERR_UNSUPPORTED && num_nodes > 1) {
    finish(std::string(kUnsupportedMark) + env.LastError());
  }
  s = env.Check(joined, fmt::format("comm_init_rank (rank {} of {} on node {} of {})", rank,
                                    num_ranks, args.node, num_nodes));
  if (!s.ok()) finish(std::string(s.message()));
  RankEnv renv{&env, rank, num_ranks, comm, stream};
  std::string message = body(renv);
  api.stream_synchronize(stream);
  api.stream_destroy(stream);
  api.comm->comm_destroy(comm);
  api.shutdown();
  finish(message);
}

// Forks `n` ranks running `body`; returns "" when every rank passed, else
// each failing rank's story.
std::string RunRanks(PluginEnv& env, int n, int num_nodes, const InitOptions& extra,
                     const RankBody& body) {
  std::vector<int> id_read(n, -1), id_write(n, -1), result_read(n, -1), result_write(n, -1);
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (pipe(p) != 0) return "pipe() failed";
    result_read[r] = p[0];
    result_write[r] = p[1];
    if (r > 0) {
      if (pipe(p) != 0) return "pipe() failed";
      id_read[r] = p[0];
      id_write[r] = p[1];
    }
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid < 0) return fmt::format("fork() failed: {}", std::strerror(errno));
    if (pid == 0) {
      std::vector<int> writes;
      for (int q = 0; q < n; ++q) {
        if (q != r) close(result_read[q]), close(result_write[q]);
        if (q > 0 && q != r) close(id_read[q]);
        if (q > 0 && r != 0) close(id_write[q]);
        if (q > 0 && r == 0) writes.push_back(id_write[q]);
      }
      close(result_read[r]);
      RankMain(env, r, n, num_nodes, extra, r > 0 ? id_read[r] : -1, writes, result_write[r],
               body);
    }
    pids.push_back(pid);
  }
  for (int r = 0; r < n; ++r) {
    close(result_write[r]);
    if (r > 0) close(id_read[r]), close(id_write[r]);
  }
  // Wait for every rank, killing all of them past the deadline.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kRankTimeoutS);
  std::vector<int> status(n, -1);
  std::vector<bool> done(n, false);
  int remaining = n;
  bool timed_out = false;
  while (remaining > 0) {
    for (int r = 0; r < n; ++r) {
      if (done[r]) continue;
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        done[r] = true;
        status[r] = st;
        --remaining;
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      for (int r = 0; r < n; ++r) {
        if (!done[r]) kill(pids[r], SIGKILL);
      }
      for (int r = 0; r < n; ++r) {
        if (!done[r]) waitpid(pids[r], &status[r], 0);
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string problems;
  for (int r = 0; r < n; ++r) {
    std::string message = ReadAll(result_read[r]);
    close(result_read[r]);
    if (timed_out && !done[r]) {
      message = fmt::format("did not finish within {:.0f} s (a hang)", kRankTimeoutS);
    } else if (WIFSIGNALED(status[r])) {
      message = fmt::format("died of signal {}", WTERMSIG(status[r]));
    }
    if (!message.empty()) {
      problems += fmt::format("{}rank {}: {}", problems.empty() ? "" : "; ", r, message);
    }
  }
  return problems;
}

// Host-side encoding of doubles as `dtype` elements.
std::vector<char> Encode(tsr_dtype dtype, const std::vector<double>& values) {
  const size_t es = DTypeSize(dtype);
  std::vector<char> out(values.size() * es);
  for (size_t i = 0; i < values.size(); ++i) {
    char* p = out.data() + i * es;
    const auto f = static_cast<float>(values[i]);
    switch (dtype) {
      case TSR_DTYPE_F32: std::memcpy(p, &f, 4); break;
      case TSR_DTYPE_BF16: {
        uint16_t b = FloatToBf16(f);
        std::memcpy(p, &b, 2);
        break;
      }
      case TSR_DTYPE_F16: {
        uint16_t h = FloatToF16(f);
        std::memcpy(p, &h, 2);
        break;
      }
      default: {
        auto v = static_cast<int32_t>(values[i]);
        std::memcpy(p, &v, 4);
        break;
      }
    }
  }
  return out;
}

std::vector<double> Decode(tsr_dtype dtype, const std::vector<char>& bytes) {
  const size_t es = DTypeSize(dtype);
  std::vector<double> out(bytes.size() / es);
  for (size_t i = 0; i < out.size(); ++i) {
    const char* p = bytes.data() + i * es;
    switch (dtype) {
      case TSR_DTYPE_F32: {
        float f;
        std::memcpy(&f, p, 4);
        out[i] = f;
        break;
      }
      case TSR_DTYPE_BF16: {
        uint16_t b;
        std::memcpy(&b, p, 2);
        out[i] = Bf16ToFloat(b);
        break;
      }
      case TSR_DTYPE_F16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        out[i] = F16ToFloat(h);
        break;
      }
      default: {
        int32_t v;
        std::memcpy(&v, p, 4);
        out[i] = v;
        break;
      }
    }
  }
  return out;
}

tsr_tensor Vector(tsr_dtype dtype, tsr_buffer buffer, int64_t count, uint64_t offset = 0) {
  tsr_tensor t{};
  t.struct_size = sizeof(t);
  t.dtype = dtype;
  t.buffer = buffer;
  t.offset = offset;
  t.ndim = 1;
  t.shape[0] = count;
  t.strides[0] = 1;
  return t;
}

// Small integers: exact in every dtype, so sums compare exactly.
double Value(int rank, int64_t i) { return static_cast<double>((i * 7 + rank * 13) % 23 - 11); }

double Reduce(tsr_reduce_op op, int n, int64_t i, int64_t base = 0) {
  double w = Value(0, base + i);
  for (int q = 1; q < n; ++q) {
    const double v = Value(q, base + i);
    w = op == TSR_REDUCE_SUM ? w + v : op == TSR_REDUCE_MAX ? std::max(w, v) : std::min(w, v);
  }
  return w;
}

// A buffer on the rank's device holding `values` as `dtype`.
StatusOr<Buffer> Upload(const RankEnv& r, tsr_dtype dtype, const std::vector<double>& values,
                        int64_t extra_elements = 0) {
  const size_t bytes = (values.size() + extra_elements) * DTypeSize(dtype);
  const int device = r.rank % r.env->device_count();
  TSR_ASSIGN_OR_RETURN(Buffer b, r.env->Alloc(device, bytes > 0 ? bytes : 1));
  std::vector<char> enc = Encode(dtype, values);
  if (!enc.empty()) TSR_RETURN_IF_ERROR(r.env->Upload(b.get(), 0, enc.data(), enc.size()));
  return b;
}

StatusOr<std::vector<double>> Download(const RankEnv& r, tsr_dtype dtype, const Buffer& b,
                                       int64_t count, uint64_t offset = 0) {
  std::vector<char> bytes(count * DTypeSize(dtype));
  if (!bytes.empty()) {
    TSR_RETURN_IF_ERROR(r.env->Download(b.get(), offset, bytes.data(), bytes.size()));
  }
  return Decode(dtype, bytes);
}

std::string Sync(const RankEnv& r, const char* what) {
  Status s = r.env->Check(r.env->api().stream_synchronize(r.stream),
                          fmt::format("stream_synchronize after {}", what));
  return s.ok() ? "" : std::string(s.message());
}

#define MP_RETURN_IF_ERROR(expr)                             \
  do {                                                       \
    ::tessera::Status mp_s_ = (expr);                        \
    if (!mp_s_.ok()) return std::string(mp_s_.message());    \
  } while (0)
#define MP_ASSIGN_OR_RETURN(lhs, expr) \
  MP_ASSIGN_OR_RETURN_IMPL(TSR_STATUS_CONCAT(mp_sor_, __LINE__), lhs, expr)
#define MP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                     \
  auto tmp = (expr);                                                 \
  if (!tmp.ok()) return std::string(tmp.status().message());         \
  lhs = std::move(tmp).value()

// all_reduce of `count` elements; in place when `in_place`.
std::string AllReduceCase(RankEnv& r, tsr_dtype dtype, tsr_reduce_op op, int64_t count,
                          bool in_place) {
  std::vector<double> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = Value(r.rank, i);
  MP_ASSIGN_OR_RETURN(Buffer send, Upload(r, dtype, v));
  Buffer recv_owned;
  if (!in_place) {
    MP_ASSIGN_OR_RETURN(recv_owned, Upload(r, dtype, std::vector<double>(count, 0.0)));
  }
  const Buffer& recv = in_place ? send : recv_owned;
  tsr_tensor s = Vector(dtype, send.get(), count), d = Vector(dtype, recv.get(), count);
  MP_RETURN_IF_ERROR(r.env->Check(r.env->api().comm->all_reduce(r.comm, r.stream, &s, &d, op),
                                  "all_reduce"));
  std::string sync = Sync(r, "all_reduce");
  if (!sync.empty()) return sync;
  MP_ASSIGN_OR_RETURN(std::vector<double> got, Download(r, dtype, recv, count));
  for (int64_t i = 0; i < count; ++i) {
    const double want = Reduce(op, r.num_ranks, i);
    if (got[i] != want) {
      return fmt::format("all_reduce {} of {} {} elements{}: element {} is {}, want {}",
                         op == TSR_REDUCE_SUM ? "sum" : op == TSR_REDUCE_MAX ? "max" : "min",
                         count, DTypeName(dtype), in_place ? " in place" : "", i, got[i], want);
    }
  }
  return "";
}

}  // namespace

void CollectiveMpChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();
  const tsr_comm_api* comm = api.comm;
  const bool has_mp = comm != nullptr &&
                      comm->struct_size >= offsetof(tsr_comm_api, reduce_scatter) +
                                               sizeof(comm->reduce_scatter) &&
                      comm->comm_get_unique_id != nullptr && comm->comm_init_rank != nullptr &&
                      comm->reduce_scatter != nullptr;
  if (!has_mp) {
    ctx.Report("collectives_mp.absent",
               Skip("the plugin has no cross-process collectives (ABI 1.3 comm_get_unique_id, "
                    "comm_init_rank, reduce_scatter); --tp-size > 1 will refuse it"));
    return;
  }
  // Every check runs twice: the ranks on one node (num_nodes 1), then as
  // nodes of their own (num_nodes 2, rank r on node r % 2: the plugin's
  // transport between hosts, here over this host's own address).
  int nodes = 1;
  std::string group = "collectives_mp";
  auto run = [&](const std::string& name, int n, const InitOptions& extra, const RankBody& body) {
    const std::string full = group + name.substr(name.find('.'));
    ctx.Run(full, [&]() -> Outcome {
      std::string problems = RunRanks(env, n, nodes, extra, body);
      if (problems.empty()) {
        return Pass(nodes == 1 ? fmt::format("{} processes", n)
                               : fmt::format("{} processes on {} nodes", n, nodes));
      }
      return Fail(problems);
    });
  };
  for (int pass = 0; pass < 2; ++pass) {
  if (pass == 1) {
    nodes = 2;
    group = "collectives_mp.nodes2";
    std::string refused;
    ctx.Run(group + ".init", [&]() -> Outcome {
      std::string problems = RunRanks(env, 2, nodes, {}, [](RankEnv&) { return std::string(); });
      const size_t mark = problems.find(kUnsupportedMark);
      if (mark != std::string::npos) {
        refused = problems.substr(mark + std::strlen(kUnsupportedMark));
        return Skip(fmt::format("the plugin refuses communicators across nodes "
                                "(--nnodes > 1 will fail): {}",
                                refused));
      }
      return problems.empty() ? Pass("2 processes on 2 nodes") : Fail(problems);
    });
    if (!refused.empty()) break;
  } else {
    run("collectives_mp.init", 2, {}, [](RankEnv&) { return std::string(); });
  }

  for (auto [op, op_name] : {std::pair{TSR_REDUCE_SUM, "sum"}, std::pair{TSR_REDUCE_MAX, "max"},
                             std::pair{TSR_REDUCE_MIN, "min"}}) {
    run(fmt::format("collectives_mp.all_reduce.{}", op_name), 2, {}, [op = op](RankEnv& r) {
      for (tsr_dtype dt : {TSR_DTYPE_F32, TSR_DTYPE_BF16, TSR_DTYPE_F16, TSR_DTYPE_I32}) {
        for (int64_t count : {int64_t{1}, int64_t{1001}}) {
          std::string e = AllReduceCase(r, dt, op, count, false);
          if (!e.empty()) return e;
        }
      }
      return std::string();
    });
  }

  run("collectives_mp.all_reduce.large_in_place", 2, {}, [](RankEnv& r) {
    // More than two 4 MiB staging slots: implementations that chunk must
    // get every chunk right.
    return AllReduceCase(r, TSR_DTYPE_F32, TSR_REDUCE_SUM, (int64_t{9} << 20) / 4 + 3, true);
  });

  run("collectives_mp.three_ranks", 3, {}, [](RankEnv& r) {
    std::string e = AllReduceCase(r, TSR_DTYPE_BF16, TSR_REDUCE_SUM, 4099, true);
    return e.empty() ? AllReduceCase(r, TSR_DTYPE_I32, TSR_REDUCE_MAX, 7, false) : e;
  });

  run("collectives_mp.all_gather", 2, {}, [](RankEnv& r) -> std::string {
    const int64_t part = 1001;
    const int n = r.num_ranks;
    // In place: rank r's send is its slice of recv.
    std::vector<double> all(n * part, 0.0);
    for (int64_t i = 0; i < part; ++i) all[r.rank * part + i] = Value(r.rank, i);
    MP_ASSIGN_OR_RETURN(Buffer buf, Upload(r, TSR_DTYPE_F16, all));
    tsr_tensor s = Vector(TSR_DTYPE_F16, buf.get(), part, r.rank * part * 2);
    tsr_tensor d = Vector(TSR_DTYPE_F16, buf.get(), n * part);
    MP_RETURN_IF_ERROR(
        r.env->Check(r.env->api().comm->all_gather(r.comm, r.stream, &s, &d), "all_gather"));
    std::string sync = Sync(r, "all_gather");
    if (!sync.empty()) return sync;
    MP_ASSIGN_OR_RETURN(std::vector<double> got, Download(r, TSR_DTYPE_F16, buf, n * part));
    for (int64_t i = 0; i < n * part; ++i) {
      if (got[i] != Value(static_cast<int>(i / part), i % part)) {
        return fmt::format("all_gather (in place, f16): element {} is {}, want rank {}'s {}", i,
                           got[i], i / part, Value(static_cast<int>(i / part), i % part));
      }
    }
    return "";
  });

  run("collectives_mp.reduce_scatter", 2, {}, [](RankEnv& r) -> std::string {
    const int n = r.num_ranks;
    for (bool in_place : {false, true}) {
      const int64_t part = in_place ? 333 : 70001;
      std::vector<double> v(n * part);
      for (int64_t i = 0; i < n * part; ++i) v[i] = Value(r.rank, i);
      MP_ASSIGN_OR_RETURN(Buffer send, Upload(r, TSR_DTYPE_F32, v));
      Buffer out;
      if (!in_place) {
        MP_ASSIGN_OR_RETURN(out, Upload(r, TSR_DTYPE_F32, std::vector<double>(part, 0.0)));
      }
      const uint64_t offset = in_place ? r.rank * part * 4 : 0;
      tsr_tensor s = Vector(TSR_DTYPE_F32, send.get(), n * part);
      tsr_tensor d = Vector(TSR_DTYPE_F32, in_place ? send.get() : out.get(), part, offset);
      MP_RETURN_IF_ERROR(r.env->Check(
          r.env->api().comm->reduce_scatter(r.comm, r.stream, &s, &d, TSR_REDUCE_SUM),
          "reduce_scatter"));
      std::string sync = Sync(r, "reduce_scatter");
      if (!sync.empty()) return sync;
      MP_ASSIGN_OR_RETURN(std::vector<double> got,
                          Download(r, TSR_DTYPE_F32, in_place ? send : out, part, offset));
      for (int64_t i = 0; i < part; ++i) {
        const double want = Reduce(TSR_REDUCE_SUM, n, i, r.rank * part);
        if (got[i] != want) {
          return fmt::format("reduce_scatter{}: rank {} element {} is {}, want {}",
                             in_place ? " in place" : "", r.rank, i, got[i], want);
        }
      }
    }
    return "";
  });

  run("collectives_mp.broadcast", 2, {}, [](RankEnv& r) -> std::string {
    const int64_t count = 3001;
    const int root = r.num_ranks - 1;
    MP_ASSIGN_OR_RETURN(Buffer b,
                        Upload(r, TSR_DTYPE_I32, std::vector<double>(count, 10.0 + r.rank)));
    tsr_tensor t = Vector(TSR_DTYPE_I32, b.get(), count);
    MP_RETURN_IF_ERROR(
        r.env->Check(r.env->api().comm->broadcast(r.comm, r.stream, &t, root), "broadcast"));
    std::string sync = Sync(r, "broadcast");
    if (!sync.empty()) return sync;
    MP_ASSIGN_OR_RETURN(std::vector<double> got, Download(r, TSR_DTYPE_I32, b, count));
    for (int64_t i = 0; i < count; ++i) {
      if (got[i] != 10.0 + root) {
        return fmt::format("broadcast: element {} is {}, want root {}'s {}", i, got[i], root,
                           10 + root);
      }
    }
    return "";
  });

  run("collectives_mp.send_recv", 2, {}, [](RankEnv& r) -> std::string {
    const int64_t count = (int64_t{3} << 20) / 4 + 1;  // larger than a typical eager buffer
    const int peer = r.rank ^ 1;
    MP_ASSIGN_OR_RETURN(Buffer out,
                        Upload(r, TSR_DTYPE_F32, std::vector<double>(count, 100.0 + r.rank)));
    MP_ASSIGN_OR_RETURN(Buffer in, Upload(r, TSR_DTYPE_F32, std::vector<double>(count, 0.0)));
    tsr_tensor o = Vector(TSR_DTYPE_F32, out.get(), count), i = Vector(TSR_DTYPE_F32, in.get(), count);
    const tsr_comm_api& c = *r.env->api().comm;
    if (r.rank == 0) {
      MP_RETURN_IF_ERROR(r.env->Check(c.send(r.comm, r.stream, &o, peer), "send"));
      MP_RETURN_IF_ERROR(r.env->Check(c.recv(r.comm, r.stream, &i, peer), "recv"));
    } else {
      MP_RETURN_IF_ERROR(r.env->Check(c.recv(r.comm, r.stream, &i, peer), "recv"));
      MP_RETURN_IF_ERROR(r.env->Check(c.send(r.comm, r.stream, &o, peer), "send"));
    }
    std::string sync = Sync(r, "send/recv");
    if (!sync.empty()) return sync;
    MP_ASSIGN_OR_RETURN(std::vector<double> got, Download(r, TSR_DTYPE_F32, in, count));
    if (got.front() != 100.0 + peer || got.back() != 100.0 + peer) {
      return fmt::format("received {} .. {}, want {} from rank {}", got.front(), got.back(),
                         100 + peer, peer);
    }
    return "";
  });

  if (api.graph != nullptr && env.HasCap(TSR_CAP_GRAPHS)) {
    run("collectives_mp.in_graph", 2, {}, [](RankEnv& r) -> std::string {
      // An all_reduce captured once and replayed three times, the input
      // rewritten between replays: each replay sums the current contents.
      const tsr_plugin_api& api = r.env->api();
      const int64_t count = 4099;
      MP_ASSIGN_OR_RETURN(Buffer buf, Upload(r, TSR_DTYPE_F32, std::vector<double>(count, 0.0)));
      tsr_tensor t = Vector(TSR_DTYPE_F32, buf.get(), count);
      MP_RETURN_IF_ERROR(r.env->Check(api.graph->begin_capture(r.stream), "begin_capture"));
      tsr_status st = api.comm->all_reduce(r.comm, r.stream, &t, &t, TSR_REDUCE_SUM);
      const std::string refusal = st == TSR_OK ? "" : r.env->LastError();
      tsr_graph graph = nullptr;
      MP_RETURN_IF_ERROR(r.env->Check(api.graph->end_capture(r.stream, &graph), "end_capture"));
      if (st == TSR_ERR_INVALID_ARGUMENT && !refusal.empty()) {
        // Allowed: a plugin that completes collectives at the call refuses
        // them while capturing (the host then runs such steps eagerly).
        if (graph != nullptr) api.graph->destroy(graph);
        return std::string();
      }
      MP_RETURN_IF_ERROR(r.env->Check(st, "all_reduce while capturing"));
      std::string problem;
      for (int replay = 0; replay < 3 && problem.empty(); ++replay) {
        std::vector<double> v(count);
        for (int64_t i = 0; i < count; ++i) v[i] = Value(r.rank, i + replay);
        std::vector<char> enc = Encode(TSR_DTYPE_F32, v);
        Status s = r.env->Upload(buf.get(), 0, enc.data(), enc.size());
        if (s.ok()) s = r.env->Check(api.graph->launch(graph, r.stream), "graph launch");
        if (!s.ok()) {
          problem = std::string(s.message());
          break;
        }
        problem = Sync(r, "a graph replay");
        if (!problem.empty()) break;
        auto got = Download(r, TSR_DTYPE_F32, buf, count);
        if (!got.ok()) {
          problem = std::string(got.status().message());
          break;
        }
        for (int64_t i = 0; i < count; ++i) {
          const double want = Reduce(TSR_REDUCE_SUM, r.num_ranks, i + replay);
          if ((*got)[i] != want) {
            problem = fmt::format("replay {}: element {} is {}, want {} (the replay must "
                                  "reduce the buffers' current contents)",
                                  replay, i, (*got)[i], want);
            break;
          }
        }
      }
      api.graph->destroy(graph);
      return problem;
    });
  }

  run("collectives_mp.peer_exits", 2, {{"comm_timeout_ms", kPeerExitTimeoutMs}},
      [](RankEnv& r) -> std::string {
        // One collective both ranks finish (so every transport is fully up),
        // then rank 1 exits without calling the second: rank 0 must get an
        // error, not hang.
        MP_ASSIGN_OR_RETURN(Buffer b, Upload(r, TSR_DTYPE_F32, std::vector<double>(1024, 1.0)));
        tsr_tensor t = Vector(TSR_DTYPE_F32, b.get(), 1024);
        const tsr_comm_api& c = *r.env->api().comm;
        MP_RETURN_IF_ERROR(
            r.env->Check(c.all_reduce(r.comm, r.stream, &t, &t, TSR_REDUCE_SUM), "all_reduce"));
        std::string sync = Sync(r, "the first all_reduce");
        if (!sync.empty()) return sync;
        if (r.rank == 1) _exit(0);  // gone without calling: rank 0 must not hang
        const auto start = std::chrono::steady_clock::now();
        tsr_status st = c.all_reduce(r.comm, r.stream, &t, &t, TSR_REDUCE_SUM);
        if (st == TSR_OK) st = r.env->api().stream_synchronize(r.stream);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (st == TSR_OK) return std::string("all_reduce with an exited peer succeeded");
        const std::string why = r.env->LastError();
        if (why.empty()) return std::string("the failure set no last_error message");
        if (s > 30) return fmt::format("the error came after {:.1f} s (comm_timeout_ms=5000)", s);
        return std::string();
      });
  }  // pass
}

}  // namespace tessera::conformance
