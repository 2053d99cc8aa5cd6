// `tessera bench-comm`: collective bandwidth and latency across processes,
// in the spirit of nccl-tests.
//
//   tessera bench-comm [--tp-size N] [--ops all_reduce,all_gather,
//     reduce_scatter] [--min-bytes 1024] [--max-bytes 268435456]
//     [--step-factor 4] [--cpu-threads N] [--json] [--smoke]
//     [--platform NAME | --device-plugin PATH]
//
// Rank 0 (this process) gets a communicator id from the plugin and starts
// ranks 1..N-1 as `tessera bench-comm ... --rank r --comm-id HEX` (hidden
// flags); every rank joins with comm_init_rank and runs the same sequence.
// Per op and size (f32 elements, out of place) it times `iters` back-to-back
// collectives on one stream after a warm-up and prints, like nccl-tests:
// time per op, algorithm bandwidth (size / time) and bus bandwidth
// (algbw x 2(n-1)/n for all_reduce, x (n-1)/n for all_gather and
// reduce_scatter: what each rank's link carries). Sizes follow nccl-tests:
// all_reduce the buffer, all_gather the gathered output, reduce_scatter
// the input. The reference in the same run: the bytes per second of a
// 2-thread memcpy of 64 MiB (`memcpy_gbps`), and the ratio of the 64 MiB
// all_reduce's bus bandwidth to it (`busbw_vs_memcpy`; the largest size at
// most 64 MiB that ran); the 4 KiB all_reduce time is printed as the
// small-message latency.
//
// --smoke: 1 KiB .. 1 MiB, few iterations (seconds). --cpu-threads: the cpu
// plugin's threads per rank (default 1: one core per rank). Exit codes: 0
// done; 2 bad flags or a plugin without cross-process collectives; 1 a rank
// or a collective failed (its message names the rank).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/env.h"
#include "base/logging.h"
#include "cli/cli_io.h"
#include "cli/command.h"
#include "cli/rank_processes.h"
#include "cli/runtime_start.h"
#include "runtime/communicator.h"
#include "runtime/runtime.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct BenchCommOptions {
  int tp_size = 2;
  std::string ops = "all_reduce,all_gather,reduce_scatter";
  int64_t min_bytes = 1024;
  int64_t max_bytes = int64_t{256} << 20;
  int step_factor = 4;
  int cpu_threads = 1;
  // > 1: rank r plays node r % nnodes, so the ranks meet through the
  // plugin's network transport (between nodes) instead of shared memory.
  int nnodes = 1;
  bool json = false;
  bool smoke = false;
  runtime::RuntimeFlags flags;
  // Hidden: set by rank 0 for the ranks it starts.
  int rank = 0;
  std::string comm_id;
  CLI::Option* min_bytes_opt = nullptr;
  CLI::Option* max_bytes_opt = nullptr;
};

struct Row {
  std::string op;
  int64_t bytes = 0;
  int64_t iters = 0;
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

enum class Op { kAllReduce, kAllGather, kReduceScatter };

StatusOr<Op> ParseOp(const std::string& name) {
  if (name == "all_reduce") return Op::kAllReduce;
  if (name == "all_gather") return Op::kAllGather;
  if (name == "reduce_scatter") return Op::kReduceScatter;
  return InvalidArgumentError(fmt::format(
      "--ops: unknown op '{}'; choose from all_reduce, all_gather, reduce_scatter", name));
}

// Iterations for one size: about 256 MiB moved (at least 5, at most 1000);
// the same on every rank.
int64_t ItersFor(int64_t bytes, bool smoke) {
  if (smoke) return 3;
  return std::clamp<int64_t>((int64_t{256} << 20) / std::max<int64_t>(bytes, 1), 5, 1000);
}

// Bytes per second of a 2-thread memcpy of 64 MiB (best of 5).
double MemcpyBytesPerSecond() {
  const size_t bytes = size_t{64} << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = Clock::now();
    std::thread helper([&] { std::memcpy(dst.data(), src.data(), bytes / 2); });
    std::memcpy(dst.data() + bytes / 2, src.data() + bytes / 2, bytes - bytes / 2);
    helper.join();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return static_cast<double>(bytes) / best;
}

int RunBenchComm(BenchCommOptions& o) {
  if (o.tp_size < 1 || o.tp_size > 64) {
    return ReportError(InvalidArgumentError("--tp-size must be 1..64"), kExitBadInput);
  }
  if (o.nnodes < 1 || o.nnodes > o.tp_size) {
    return ReportError(InvalidArgumentError("--nnodes must be 1..--tp-size"), kExitBadInput);
  }
  if (o.smoke) {
    if (o.min_bytes_opt->count() == 0) o.min_bytes = 1024;
    if (o.max_bytes_opt->count() == 0) o.max_bytes = int64_t{1} << 20;
  }
  if (o.min_bytes < 4 || o.max_bytes < o.min_bytes || o.step_factor < 2) {
    return ReportError(InvalidArgumentError("need 4 <= --min-bytes <= --max-bytes and "
                                            "--step-factor >= 2"),
                       kExitBadInput);
  }
  std::vector<Op> ops;
  for (const std::string& name : SplitList(o.ops, ',')) {
    auto op = ParseOp(name);
    if (!op.ok()) return ReportError(op.status(), kExitBadInput);
    ops.push_back(*op);
  }
  const std::vector<std::string> op_names = SplitList(o.ops, ',');
  if (o.cpu_threads > 0) {
    o.flags.cpu_plugin_options.push_back(
        {"threads", std::to_string(o.cpu_threads), "--cpu-threads"});
  }
  auto rt = StartUsableRuntime(o.flags);
  if (!rt.ok()) return ReportError(rt.status(), kExitBadInput);
  runtime::Plugin& plugin = (*rt)->plugin();
  if (!plugin.HasCrossProcessCollectives()) {
    auto id = runtime::Communicator::UniqueId(plugin);  // the plugin's own refusal
    return ReportError(id.status(), kExitBadInput);
  }
  const int n = o.tp_size;
  const int rank = o.rank;
  tsr_comm_unique_id id{};
  RankProcesses workers;
  if (rank == 0) {
    auto made = runtime::Communicator::UniqueId(plugin);
    if (!made.ok()) return ReportError(made.status(), kExitRuntimeFailure);
    id = *made;
    std::vector<std::string> args = {"bench-comm",
                                     "--tp-size", std::to_string(n),
                                     "--ops", o.ops,
                                     "--min-bytes", std::to_string(o.min_bytes),
                                     "--max-bytes", std::to_string(o.max_bytes),
                                     "--step-factor", std::to_string(o.step_factor),
                                     "--cpu-threads", std::to_string(o.cpu_threads),
                                     "--nnodes", std::to_string(o.nnodes),
                                     "--comm-id", runtime::UniqueIdToHex(id)};
    if (o.smoke) args.push_back("--smoke");
    if (!o.flags.device_plugin.empty()) {
      args.insert(args.end(), {"--device-plugin", o.flags.device_plugin});
    }
    if (!o.flags.platform.empty()) args.insert(args.end(), {"--platform", o.flags.platform});
    auto spawned = RankProcesses::Spawn(n, args);
    if (!spawned.ok()) return ReportError(spawned.status(), kExitRuntimeFailure);
    workers = std::move(*spawned);
  } else {
    auto parsed = runtime::UniqueIdFromHex(o.comm_id);
    if (!parsed.ok()) return ReportError(parsed.status(), kExitBadInput);
    id = *parsed;
  }
  runtime::Device& device = (*rt)->device(rank % static_cast<int>((*rt)->devices().size()));
  auto comm = runtime::Communicator::CreateRank(plugin, id, n, rank, device.ordinal(),
                                                rank % o.nnodes, o.nnodes);
  if (!comm.ok()) return ReportError(comm.status(), kExitRuntimeFailure);
  auto stream = device.CreateStream();
  if (!stream.ok()) return ReportError(stream.status(), kExitRuntimeFailure);

  const double memcpy_bps = rank == 0 ? MemcpyBytesPerSecond() : 0;
  // Buffers for the largest size of any op: send and recv.
  const int64_t max_elems = o.max_bytes / 4;
  auto send = device.Allocate(static_cast<uint64_t>(max_elems) * 4);
  auto recv = device.Allocate(static_cast<uint64_t>(max_elems) * 4);
  if (!send.ok()) return ReportError(send.status(), kExitRuntimeFailure);
  if (!recv.ok()) return ReportError(recv.status(), kExitRuntimeFailure);
  Status filled = (*send)->Fill(0);
  if (filled.ok()) filled = (*recv)->Fill(0);
  if (!filled.ok()) return ReportError(filled, kExitRuntimeFailure);

  std::vector<Row> rows;
  const bool progress = rank == 0 && !o.json && isatty(STDERR_FILENO);
  for (size_t k = 0; k < ops.size(); ++k) {
    for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step_factor) {
      // Elements: a multiple of n so every op's slices are whole.
      const int64_t elems = std::max<int64_t>(n, bytes / 4 / n * n);
      const int64_t part = elems / n;
      tsr_tensor big_send = (*send)->View(TSR_DTYPE_F32, {elems});
      tsr_tensor big_recv = (*recv)->View(TSR_DTYPE_F32, {elems});
      tsr_tensor part_send = (*send)->View(TSR_DTYPE_F32, {part});
      tsr_tensor part_recv = (*recv)->View(TSR_DTYPE_F32, {part});
      auto once = [&]() -> Status {
        switch (ops[k]) {
          case Op::kAllReduce: return (*comm)->AllReduce(**stream, big_send, big_recv);
          case Op::kAllGather: return (*comm)->AllGather(**stream, part_send, big_recv);
          case Op::kReduceScatter:
            return (*comm)->ReduceScatter(**stream, big_send, part_recv);
        }
        return OkStatus();
      };
      const int64_t iters = ItersFor(elems * 4, o.smoke);
      Status s = OkStatus();
      for (int w = 0; w < 5 && s.ok(); ++w) s = once();
      if (s.ok()) s = (*stream)->Synchronize();
      const auto start = Clock::now();
      for (int64_t i = 0; i < iters && s.ok(); ++i) s = once();
      if (s.ok()) s = (*stream)->Synchronize();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (!s.ok()) {
        return ReportError(s.WithContext(fmt::format("rank {}: {} of {} bytes", rank,
                                                     op_names[k], elems * 4)),
                           kExitRuntimeFailure);
      }
      Row row;
      row.op = op_names[k];
      row.bytes = elems * 4;
      row.iters = iters;
      row.time_us = seconds / static_cast<double>(iters) * 1e6;
      row.algbw_gbps = static_cast<double>(row.bytes) / (row.time_us * 1e-6) / 1e9;
      const double factor = ops[k] == Op::kAllReduce ? 2.0 * (n - 1) / n
                                                     : static_cast<double>(n - 1) / n;
      row.busbw_gbps = row.algbw_gbps * factor;
      rows.push_back(row);
      if (progress) {
        fmt::print(stderr, "\r{} {} bytes: {:.1f} us   ", row.op, row.bytes, row.time_us);
      }
    }
  }
  if (progress) fmt::print(stderr, "\r{:60}\r", "");
  if (rank != 0) return kExitOk;
  Status workers_done = workers.WaitAll(60);
  if (!workers_done.ok()) return ReportError(workers_done, kExitRuntimeFailure);

  // The reference figures: the 4 KiB all_reduce time and the 64 MiB
  // all_reduce's bus bandwidth against memcpy (the largest size run when
  // --max-bytes is smaller).
  double latency_4k_us = -1, largest_busbw = -1;
  int64_t largest_bytes = 0;
  for (const Row& r : rows) {
    if (r.op != "all_reduce") continue;
    if (r.bytes == 4096) latency_4k_us = r.time_us;
    if (r.bytes <= (int64_t{64} << 20) && r.bytes >= largest_bytes) {
      largest_bytes = r.bytes, largest_busbw = r.busbw_gbps;
    }
  }
  const double memcpy_gbps = memcpy_bps / 1e9;
  const double ratio = largest_busbw > 0 ? largest_busbw / memcpy_gbps : -1;
  if (o.json) {
    Json out;
    out["plugin"] = plugin.name();
    out["tp_size"] = n;
    out["nnodes"] = o.nnodes;
    out["dtype"] = "f32";
    out["memcpy_gbps"] = memcpy_gbps;
    out["all_reduce_4k_us"] = latency_4k_us >= 0 ? Json(latency_4k_us) : Json(nullptr);
    out["busbw_all_reduce_bytes"] = largest_bytes;
    out["busbw_vs_memcpy"] = ratio >= 0 ? Json(ratio) : Json(nullptr);
    Json list = Json::array();
    for (const Row& r : rows) {
      list.push_back({{"op", r.op},
                      {"bytes", r.bytes},
                      {"iters", r.iters},
                      {"time_us", r.time_us},
                      {"algbw_gbps", r.algbw_gbps},
                      {"busbw_gbps", r.busbw_gbps}});
    }
    out["results"] = std::move(list);
    fmt::print("{}\n", DumpJson(out));
    return kExitOk;
  }
  fmt::print("# bench-comm: {} ranks ({} plugin, {}), f32, out of place\n", n, plugin.name(),
             o.nnodes > 1 ? fmt::format("as {} nodes: the network transport", o.nnodes)
                          : std::string("one node"));
  fmt::print("{:>16} {:>12} {:>7} {:>12} {:>12} {:>12}\n", "op", "bytes", "iters", "time_us",
             "algbw_GB/s", "busbw_GB/s");
  for (const Row& r : rows) {
    fmt::print("{:>16} {:>12} {:>7} {:>12.2f} {:>12.3f} {:>12.3f}\n", r.op, r.bytes, r.iters,
               r.time_us, r.algbw_gbps, r.busbw_gbps);
  }
  fmt::print("# memcpy (2 threads, 64 MiB): {:.2f} GB/s\n", memcpy_gbps);
  if (latency_4k_us >= 0) fmt::print("# all_reduce 4 KiB: {:.2f} us\n", latency_4k_us);
  if (ratio >= 0) {
    fmt::print("# all_reduce {} bytes bus bandwidth / memcpy: {:.2f}\n", largest_bytes, ratio);
  }
  return kExitOk;
}

}  // namespace

Command AddBenchCommCommand(CLI::App& root) {
  auto o = std::make_shared<BenchCommOptions>();
  Command command;
  CLI::App* app = root.add_subcommand(
      "bench-comm",
      "collective bandwidth and latency across rank processes (like nccl-tests)");
  command.app = app;
  app->add_option("--tp-size", o->tp_size, "ranks (processes)")->capture_default_str();
  app->add_option("--nnodes", o->nnodes,
                  "> 1: rank r acts as node r % N on this host, so the ranks use the plugin's "
                  "transport between nodes (Gloo/TCP for cpu) instead of shared memory")
      ->capture_default_str();
  app->add_option("--ops", o->ops, "comma-separated: all_reduce, all_gather, reduce_scatter")
      ->capture_default_str();
  o->min_bytes_opt =
      app->add_option("--min-bytes", o->min_bytes, "smallest size")->capture_default_str();
  o->max_bytes_opt =
      app->add_option("--max-bytes", o->max_bytes, "largest size")->capture_default_str();
  app->add_option("--step-factor", o->step_factor, "size multiplier between rows")
      ->capture_default_str();
  app->add_option("--cpu-threads", o->cpu_threads,
                  "the cpu plugin's threads per rank (0: all cores)")
      ->capture_default_str();
  app->add_flag("--json", o->json, "one JSON object on stdout");
  app->add_flag("--smoke", o->smoke, "1 KiB .. 1 MiB, 3 iterations (seconds)");
  app->add_option("--device-plugin", o->flags.device_plugin,
                  "use this plugin .so (beats TESSERA_DEVICE_PLUGIN)");
  app->add_option("--platform", o->flags.platform,
                  "use the plugin with this name, e.g. cpu (beats TESSERA_PLATFORM)");
  app->add_option("--rank", o->rank)->group("");      // set for the ranks rank 0 starts
  app->add_option("--comm-id", o->comm_id)->group("");
  command.run = [o] { return RunBenchComm(*o); };
  return command;
}

}  // namespace tessera::cli
