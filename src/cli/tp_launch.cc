#include "cli/tp_launch.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <cstring>
#include <functional>
#include <map>
#include <cstdlib>
#include <thread>

#include "base/logging.h"
#include "cli/cli_io.h"
#include "cli/command.h"
#include "cli/model_loading.h"
#include "cli/runtime_start.h"
#include "cli/tp_nodes.h"
#include "engine/tp_protocol.h"
#include "model/checkpoint.h"

namespace tessera::cli {
namespace {

// How long rank 0 waits for a worker's hello / ready before giving up (a
// worker that dies is noticed at once; this bounds one that hangs).
constexpr double kStartTimeoutS = 600;

// Waits for `type` from every worker, failing at once when one exits.
// `on_message(rank, message)` may reject a message.
Status AwaitWorkers(RankProcesses& workers, const std::vector<int>& fds,
                    engine::TpMessageType type, const char* what,
                    const std::function<Status(int, const engine::TpMessage&)>& on_message) {
  std::vector<bool> done(fds.size(), false);
  size_t remaining = fds.size();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kStartTimeoutS);
  while (remaining > 0) {
    if (auto exit = workers.PollExited()) {
      return UnavailableError(fmt::format(
          "tensor-parallel rank {} exited ({}) before it was {}; its own message is above",
          exit->rank, RankProcesses::DescribeWaitStatus(exit->wait_status), what));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return UnavailableError(fmt::format(
          "tensor-parallel workers were not {} within {:.0f} s", what, kStartTimeoutS));
    }
    std::vector<pollfd> pfds;
    std::vector<size_t> index;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (done[i]) continue;
      pfds.push_back({fds[i], POLLIN, 0});
      index.push_back(i);
    }
    if (poll(pfds.data(), pfds.size(), 50) <= 0) continue;
    for (size_t j = 0; j < pfds.size(); ++j) {
      if (pfds[j].revents == 0) continue;
      const size_t i = index[j];
      auto m = engine::ReceiveTpMessage(fds[i]);
      if (!m.ok()) {
        // Closed: the worker is exiting; PollExited names it next round.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (auto exit = workers.PollExited()) {
          return UnavailableError(fmt::format(
              "tensor-parallel rank {} exited ({}) before it was {}; its own message is above",
              exit->rank, RankProcesses::DescribeWaitStatus(exit->wait_status), what));
        }
        return m.status().WithContext(fmt::format("tensor-parallel rank {}", i + 1));
      }
      if (m->type != type) {
        return DataLossError(fmt::format("tensor-parallel rank {} sent an unexpected message "
                                         "while rank 0 waited for it to be {}",
                                         i + 1, what));
      }
      TSR_RETURN_IF_ERROR(on_message(static_cast<int>(i) + 1, *m));
      done[i] = true;
      --remaining;
    }
  }
  return OkStatus();
}

// What every rank's runner must agree on, as "key=value" items joined by
// "; " (rank 0 compares them item by item and names what differs).
std::string DescribeRunner(model::ModelRunner& runner, const std::string& model_path) {
  const model::ModelConfig& c = runner.config();
  runtime::Plugin& plugin = runner.runtime().plugin();
  return fmt::format(
      "model={}; architecture={}; layers={}; hidden={}; vocab={}; activations={}; "
      "kv_cache={}; kv_pool={} pages x {}; ranks={}; plugin={} {}; abi={}",
      model_path, model::ArchitectureClassName(c.architecture), c.num_hidden_layers,
      c.hidden_size, c.vocab_size, DTypeName(runner.activation_dtype()),
      DTypeName(runner.kv_cache_dtype()), runner.kv_pool().num_pages(),
      runner.kv_pool().page_size(), runner.tp().size, plugin.name(), plugin.Version(),
      plugin.AbiVersion());
}

std::vector<std::pair<std::string, std::string>> DescriptionItems(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find("; ", start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    out.emplace_back(item.substr(0, eq), eq == std::string::npos ? "" : item.substr(eq + 1));
    start = end + 2;
  }
  return out;
}

// OK when `theirs` equals `mine`; else an error naming each item that
// differs (or both lines when the shapes differ: another tessera version).
Status CompareWithRankZero(int rank, const std::string& mine, const std::string& theirs) {
  if (mine == theirs) return OkStatus();
  const auto a = DescriptionItems(mine), b = DescriptionItems(theirs);
  std::string diffs;
  for (size_t i = 0; i < a.size() && a.size() == b.size(); ++i) {
    if (a[i].first != b[i].first) {
      diffs.clear();
      break;
    }
    if (a[i].second != b[i].second) {
      diffs += fmt::format("\n  {}: rank 0 has {}, rank {} has {}", a[i].first, a[i].second,
                           rank, b[i].second);
    }
  }
  if (diffs.empty()) {
    diffs = fmt::format("\n  rank 0: {}\n  rank {}: {}", mine, rank, theirs);
  }
  return FailedPreconditionError(fmt::format(
      "tensor-parallel rank {} differs from rank 0, refusing to start (start every node with "
      "the same model, flags and tessera build):{}",
      rank, diffs));
}

}  // namespace

std::vector<CLI::Option*> AddTpFlags(CLI::App* app, TpFlags* flags, bool nodes) {
  std::vector<CLI::Option*> out = {app->add_option("--tp-size,--tensor-parallel-size", flags->tp_size,
                          "tensor-parallel ranks: this process is rank 0 and starts the others")
              ->capture_default_str(),
          app->add_option("--base-gpu-id", flags->base_gpu_id,
                          "the device of rank 0 (rank r: base + r * --gpu-id-step)")
              ->capture_default_str(),
          app->add_option("--gpu-id-step", flags->gpu_id_step,
                          "device step between ranks (0: every rank on the base device)")
              ->capture_default_str(),
          app->add_option("--rank-order", flags->rank_order,
                          "FILE or s0,s1,...: rank r uses device base + s_r * step (default "
                          "s_r = r), to keep a TP group on devices that route to each other")};
  if (nodes) {
    out.push_back(app->add_option("--nnodes", flags->nnodes,
                                  "nodes (hosts) the --tp-size ranks span, tp-size/nnodes each")
                      ->capture_default_str());
    out.push_back(app->add_option("--node-rank", flags->node_rank,
                                  "this node's index; node 0 serves HTTP and runs rank 0")
                      ->capture_default_str());
    out.push_back(app->add_option("--dist-init-addr", flags->dist_init_addr,
                                  "HOST:PORT where node 0 listens for the other nodes' ranks "
                                  "(required with --nnodes > 1)"));
  }
  return out;
}

Status PrepareTp(TpFlags& flags) {
  if (flags.tp_size < 1 || flags.tp_size > 64) {
    return InvalidArgumentError(fmt::format("--tp-size {} must be 1..64", flags.tp_size));
  }
  if (flags.base_gpu_id < 0 || flags.gpu_id_step < 0) {
    return InvalidArgumentError("--base-gpu-id and --gpu-id-step must be >= 0");
  }
  if (flags.nnodes < 1 || flags.tp_size % flags.nnodes != 0) {
    return InvalidArgumentError(fmt::format(
        "--nnodes {} must be >= 1 and divide --tp-size {} (every node runs as many ranks)",
        flags.nnodes, flags.tp_size));
  }
  if (flags.node_rank < 0 || flags.node_rank >= flags.nnodes) {
    return InvalidArgumentError(fmt::format("--node-rank {} must be 0..{} (--nnodes {})",
                                            flags.node_rank, flags.nnodes - 1, flags.nnodes));
  }
  if (flags.nnodes > 1) {
    if (flags.dist_init_addr.empty()) {
      return InvalidArgumentError(fmt::format(
          "--nnodes {} needs --dist-init-addr HOST:PORT: node 0's address, where the other "
          "nodes' ranks reach rank 0",
          flags.nnodes));
    }
    TSR_RETURN_IF_ERROR(ParseDistInitAddr(flags.dist_init_addr).status());
  }
  const int local = TpLocalRanks(flags);
  flags.slots.clear();
  if (flags.rank_order.empty()) {
    for (int r = 0; r < local; ++r) flags.slots.push_back(r);
  } else {
    std::string text = flags.rank_order;
    std::error_code ec;
    if (std::filesystem::is_regular_file(text, ec)) {
      std::ifstream in(text);
      std::ostringstream all;
      all << in.rdbuf();
      text = all.str();
    }
    for (char& c : text) {
      if (c == ',' || c == '\n' || c == '\t' || c == '\r') c = ' ';
    }
    std::istringstream in(text);
    std::string item;
    while (in >> item) {
      char* end = nullptr;
      const long v = std::strtol(item.c_str(), &end, 10);
      if (*end != '\0' || v < 0 || v > 4096) {
        return InvalidArgumentError(fmt::format(
            "--rank-order: '{}' is not a device slot (a number >= 0)", item));
      }
      for (int s : flags.slots) {
        if (s == v) {
          return InvalidArgumentError(
              fmt::format("--rank-order lists slot {} twice; each rank needs its own", v));
        }
      }
      flags.slots.push_back(static_cast<int>(v));
    }
    if (static_cast<int>(flags.slots.size()) != local) {
      return InvalidArgumentError(fmt::format(
          "--rank-order lists {} slot(s) for {} rank(s) per node; give one per rank",
          flags.slots.size(), local));
    }
  }
  if (flags.tp_size > 1 && std::getenv("TESSERA_CPU_DEVICES") == nullptr) {
    int needed = 1;
    for (int r = 0; r < local; ++r) needed = std::max(needed, TpDevice(flags, r) + 1);
    setenv("TESSERA_CPU_DEVICES", std::to_string(needed).c_str(), 1);
  }
  return OkStatus();
}

int TpLocalRanks(const TpFlags& flags) {
  return std::max(1, flags.tp_size / std::max(flags.nnodes, 1));
}

int TpDevice(const TpFlags& flags, int rank) {
  const int local = rank % TpLocalRanks(flags);
  const int slot = local < static_cast<int>(flags.slots.size()) ? flags.slots[local] : local;
  return flags.base_gpu_id + slot * flags.gpu_id_step;
}

int TpRankThreads(const TpFlags& flags) {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                         TpLocalRanks(flags));
}

std::vector<std::string> TpRunnerSpec::ToArgs() const {
  std::vector<std::string> out = {"--model-path", model_path,
                                  "--dtype", dtype,
                                  "--kv-cache-dtype", kv_cache_dtype,
                                  "--quantization", quantization,
                                  "--page-size", std::to_string(page_size),
                                  "--max-total-tokens", std::to_string(kv_tokens),
                                  "--max-batch-tokens", std::to_string(max_batch_tokens),
                                  "--cpu-threads", std::to_string(cpu_threads)};
  if (!flags.device_plugin.empty()) out.insert(out.end(), {"--device-plugin", flags.device_plugin});
  if (!flags.platform.empty()) out.insert(out.end(), {"--platform", flags.platform});
  return out;
}

model::ModelRunnerOptions TpRunnerSpec::RunnerOptions(
    const model::Checkpoint& checkpoint) const {
  model::ModelRunnerOptions ro;
  if (dtype == "float32") ro.activation_dtype = TSR_DTYPE_F32;
  if (dtype == "bfloat16") ro.activation_dtype = TSR_DTYPE_BF16;
  ApplyQuantizationFlag(quantization, checkpoint, &ro);
  ApplyKvCacheDtypeFlag(kv_cache_dtype, &ro);
  ro.page_size = page_size;
  ro.kv_capacity_tokens = kv_tokens;
  ro.kv_memory_budget_bytes = 0;
  ro.max_batch_tokens = max_batch_tokens;
  return ro;
}

StatusOr<std::unique_ptr<TpGroup>> TpGroup::Start(runtime::Runtime& runtime,
                                                  const TpFlags& flags,
                                                  const TpRunnerSpec& spec) {
  const int n = flags.tp_size;
  const int local = TpLocalRanks(flags);  // ranks 0..local-1 run on this node
  runtime::Plugin& plugin = runtime.plugin();
  // A plugin without cross-process collectives refuses here, by name.
  TSR_ASSIGN_OR_RETURN(tsr_comm_unique_id id, runtime::Communicator::UniqueId(plugin));
  std::unique_ptr<TpGroup> group(new TpGroup());
  int listen_fd = -1;
  if (flags.nnodes > 1) {
    TSR_ASSIGN_OR_RETURN(HostPort addr, ParseDistInitAddr(flags.dist_init_addr));
    TSR_ASSIGN_OR_RETURN(listen_fd, ListenForNodes(addr));
  }
  std::vector<int> child_fds(local, -1);
  group->fds_.assign(n - 1, -1);
  for (int r = 1; r < local; ++r) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      if (listen_fd >= 0) close(listen_fd);
      return InternalError(fmt::format("socketpair for rank {}: {}", r, std::strerror(errno)));
    }
    group->fds_[r - 1] = sv[0];
    child_fds[r] = sv[1];
  }
  const std::string hex = runtime::UniqueIdToHex(id);
  auto spawned = RankProcesses::Spawn(
      local,
      [&](int r) {
        std::vector<std::string> args = {"tp-worker"};
        std::vector<std::string> more = spec.ToArgs();
        args.insert(args.end(), more.begin(), more.end());
        args.insert(args.end(), {"--tp-size", std::to_string(n), "--rank", std::to_string(r),
                                 "--device", std::to_string(TpDevice(flags, r)), "--comm-id",
                                 hex, "--control-fd", std::to_string(child_fds[r]), "--nnodes",
                                 std::to_string(flags.nnodes), "--node-rank", "0"});
        return args;
      },
      [&](int r) { return child_fds[r]; });
  for (int r = 1; r < local; ++r) close(child_fds[r]);
  if (!spawned.ok()) {
    if (listen_fd >= 0) close(listen_fd);
    return spawned.status();
  }
  group->workers_ = std::move(*spawned);
  if (flags.nnodes > 1) {
    std::vector<int> remote;
    for (int r = local; r < n; ++r) remote.push_back(r);
    TSR_LOG_INFO("tensor parallel: started {} local worker rank(s); waiting for ranks {}..{} "
                 "of the other {} node(s) at {}",
                 local - 1, local, n - 1, flags.nnodes - 1, flags.dist_init_addr);
    std::map<int, int> fds;
    Status accepted =
        AcceptRemoteRanks(listen_fd, remote, fmt::format("{} {}", hex, spec.kv_tokens),
                          group->workers_, kStartTimeoutS, &fds);
    close(listen_fd);
    for (auto [r, fd] : fds) group->fds_[r - 1] = fd;
    TSR_RETURN_IF_ERROR(accepted);
    group->first_remote_ = local;
    group->remote_gone_.assign(n, false);
  } else {
    TSR_LOG_INFO("tensor parallel: started {} worker rank(s); joining the communicator", n - 1);
  }
  TSR_RETURN_IF_ERROR(AwaitWorkers(group->workers_, group->fds_, engine::TpMessageType::kHello,
                                   "up (runtime started)",
                                   [](int, const engine::TpMessage&) { return OkStatus(); }));
  TSR_ASSIGN_OR_RETURN(group->comm_,
                       runtime::Communicator::CreateRank(plugin, id, n, 0, TpDevice(flags, 0),
                                                         0, flags.nnodes));
  group->leader_ = std::make_unique<engine::TpLeader>(*group->comm_, group->fds_);
  return group;
}

std::optional<RankProcesses::Exit> TpGroup::PollExited() {
  if (auto exit = workers_.PollExited()) return exit;
  if (first_remote_ == 0) return std::nullopt;
  // A worker on another node sends nothing after kReady: anything readable
  // on its channel is the connection closing.
  for (int r = first_remote_; r <= static_cast<int>(fds_.size()); ++r) {
    if (remote_gone_[r]) continue;
    pollfd p{fds_[r - 1], POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 0) > 0 && p.revents != 0) {
      remote_gone_[r] = true;
      return RankProcesses::Exit{r, RankProcesses::kRemoteClosed};
    }
  }
  return std::nullopt;
}

Status TpGroup::AwaitReady(model::ModelRunner& runner, const std::string& model_path) {
  const std::string mine = DescribeRunner(runner, model_path);
  return AwaitWorkers(
      workers_, fds_, engine::TpMessageType::kReady, "ready (model loaded)",
      [&mine](int rank, const engine::TpMessage& m) {
        return CompareWithRankZero(rank, mine, m.text);
      });
}

TpGroup::~TpGroup() {
  if (leader_ != nullptr) leader_->Shutdown();
  for (int fd : fds_) {
    if (fd >= 0) shutdown(fd, SHUT_WR);
  }
  Status s = workers_.WaitAll(10);
  if (!s.ok()) TSR_LOG_WARN("tensor parallel: {}", s.message());
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

// --- tessera tp-worker ------------------------------------------------------

namespace {

struct TpWorkerOptions {
  TpRunnerSpec spec;
  int tp_size = 2;
  int rank = 1;
  int device = 0;
  std::string comm_id;
  int control_fd = -1;
  std::string control_addr;  // a worker on another node: rank 0's --dist-init-addr
  int nnodes = 1;
  int node_rank = 0;
};

// A worker on another node: connects to rank 0, says its rank, and learns
// the communicator id and the KV pool size.
StatusOr<int> JoinFromAnotherNode(TpWorkerOptions& o) {
  TSR_ASSIGN_OR_RETURN(HostPort addr, ParseDistInitAddr(o.control_addr));
  TSR_ASSIGN_OR_RETURN(int fd, ConnectToRankZero(addr, kStartTimeoutS));
  Status s = engine::SendTpText(fd, engine::TpMessageType::kJoin, std::to_string(o.rank));
  auto m = s.ok() ? engine::ReceiveTpMessage(fd) : StatusOr<engine::TpMessage>(s);
  if (!m.ok() || m->type != engine::TpMessageType::kJoined) {
    close(fd);
    return UnavailableError(fmt::format(
        "rank 0 at {} did not accept this rank ({}); its own log says why", o.control_addr,
        m.ok() ? "unexpected answer" : std::string(m.status().message())));
  }
  std::istringstream in(m->text);
  if (!(in >> o.comm_id >> o.spec.kv_tokens)) {
    close(fd);
    return DataLossError("rank 0's answer to kJoin is malformed");
  }
  return fd;
}

int RunTpWorkerCommand(TpWorkerOptions& o) {
  int fd = o.control_fd;
  auto fail = [&](const Status& s, int code) {
    return ReportError(s.WithContext(fmt::format("tensor-parallel rank {}", o.rank)), code);
  };
  if (fd < 0 && o.control_addr.empty()) {
    return fail(InvalidArgumentError("--control-fd or --control-addr is required"),
                kExitBadInput);
  }
  if (o.spec.cpu_threads > 0) {
    o.spec.flags.cpu_plugin_options.push_back(
        {"threads", std::to_string(o.spec.cpu_threads), "--cpu-threads"});
  }
  auto rt = StartUsableRuntime(o.spec.flags);
  if (!rt.ok()) return fail(rt.status(), kExitBadInput);
  if (!o.control_addr.empty()) {
    auto joined = JoinFromAnotherNode(o);
    if (!joined.ok()) return fail(joined.status(), kExitRuntimeFailure);
    fd = *joined;
  }
  auto id = runtime::UniqueIdFromHex(o.comm_id);
  if (!id.ok()) return fail(id.status(), kExitBadInput);
  if (o.device < 0 || o.device >= (*rt)->num_devices()) {
    return fail(InvalidArgumentError(fmt::format(
                    "device {} does not exist: plugin {} has {} device(s) here (rank r uses "
                    "--base-gpu-id + r * --gpu-id-step)",
                    o.device, (*rt)->plugin().name(), (*rt)->num_devices())),
                kExitBadInput);
  }
  if (Status s = engine::SendTpHello(fd); !s.ok()) return fail(s, kExitRuntimeFailure);
  auto comm = runtime::Communicator::CreateRank((*rt)->plugin(), *id, o.tp_size, o.rank,
                                                o.device, o.node_rank, o.nnodes);
  if (!comm.ok()) return fail(comm.status(), kExitRuntimeFailure);
  auto checkpoint = model::Checkpoint::Open(o.spec.model_path);
  if (!checkpoint.ok()) return fail(checkpoint.status(), kExitBadInput);
  model::ModelRunnerOptions ro = o.spec.RunnerOptions(**checkpoint);
  ro.device = o.device;
  ro.comm = comm->get();
  ro.pages_allocated_elsewhere = true;  // rank 0's scheduler owns them
  ro.show_progress = false;
  auto runner = model::ModelRunner::Create(**rt, **checkpoint, ro);
  if (!runner.ok()) return fail(runner.status(), ModelFailureCode(runner.status()));
  if (Status s = engine::SendTpReady(fd, DescribeRunner(**runner, o.spec.model_path));
      !s.ok()) {
    return fail(s, kExitRuntimeFailure);
  }
  Status served = engine::RunTpWorker(**runner, **comm, fd);
  if (!served.ok()) return fail(served, kExitRuntimeFailure);
  return kExitOk;
}

}  // namespace

Command AddTpWorkerCommand(CLI::App& root) {
  auto o = std::make_shared<TpWorkerOptions>();
  Command command;
  CLI::App* app = root.add_subcommand(
      "tp-worker", "one tensor-parallel worker rank (started by --tp-size; not for people)");
  app->group("");  // hidden from --help
  command.app = app;
  app->add_option("--model-path", o->spec.model_path)->required();
  app->add_option("--dtype", o->spec.dtype);
  app->add_option("--kv-cache-dtype", o->spec.kv_cache_dtype);
  app->add_option("--quantization", o->spec.quantization);
  app->add_option("--page-size", o->spec.page_size);
  app->add_option("--max-total-tokens", o->spec.kv_tokens);
  app->add_option("--max-batch-tokens", o->spec.max_batch_tokens);
  app->add_option("--cpu-threads", o->spec.cpu_threads);
  app->add_option("--device-plugin", o->spec.flags.device_plugin);
  app->add_option("--platform", o->spec.flags.platform);
  app->add_option("--tp-size", o->tp_size)->required();
  app->add_option("--rank", o->rank)->required();
  app->add_option("--device", o->device)->required();
  app->add_option("--comm-id", o->comm_id);
  app->add_option("--control-fd", o->control_fd);
  app->add_option("--control-addr", o->control_addr);
  app->add_option("--nnodes", o->nnodes);
  app->add_option("--node-rank", o->node_rank);
  command.run = [o] { return RunTpWorkerCommand(*o); };
  return command;
}

}  // namespace tessera::cli
