#include "cli/tp_nodes.h"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/logging.h"
#include "cli/tp_launch.h"
#include "engine/tp_protocol.h"

namespace tessera::cli {
namespace {

using Clock = std::chrono::steady_clock;

StatusOr<addrinfo*> Resolve(const HostPort& addr, bool passive) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  const int rc =
      getaddrinfo(addr.host.c_str(), std::to_string(addr.port).c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return InvalidArgumentError(fmt::format("--dist-init-addr {}:{}: cannot resolve '{}' ({})",
                                            addr.host, addr.port, addr.host, gai_strerror(rc)));
  }
  return found;
}

void NoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

StatusOr<HostPort> ParseDistInitAddr(const std::string& text) {
  HostPort out;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return InvalidArgumentError(
          fmt::format("--dist-init-addr '{}' is not [IPv6]:PORT", text));
    }
    out.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return InvalidArgumentError(fmt::format(
          "--dist-init-addr '{}' is not HOST:PORT (node 0's address and a free port, "
          "e.g. 10.0.0.1:5000)",
          text));
    }
    out.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 1 || p > 65535) {
    return InvalidArgumentError(
        fmt::format("--dist-init-addr '{}': the port must be 1..65535", text));
  }
  out.port = static_cast<uint16_t>(p);
  return out;
}

StatusOr<int> ListenForNodes(const HostPort& addr) {
  TSR_ASSIGN_OR_RETURN(addrinfo * found, Resolve(addr, true));
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(found);
    return InternalError(fmt::format("socket(): {}", std::strerror(errno)));
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const bool ok = bind(fd, found->ai_addr, found->ai_addrlen) == 0 && listen(fd, 64) == 0;
  const int err = errno;
  freeaddrinfo(found);
  if (!ok) {
    close(fd);
    return UnavailableError(fmt::format(
        "node 0 cannot listen on --dist-init-addr {}:{}: {}{}", addr.host, addr.port,
        std::strerror(err),
        err == EADDRINUSE ? " (another process holds the port: pick another)"
        : err == EADDRNOTAVAIL ? " (the host is not an address of this node: node 0 listens "
                                 "on it)"
                               : ""));
  }
  return fd;
}

StatusOr<int> ConnectToRankZero(const HostPort& addr, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  std::string last;
  for (;;) {
    TSR_ASSIGN_OR_RETURN(addrinfo * found, Resolve(addr, false));
    const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool ok = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0;
    last = std::strerror(errno);
    freeaddrinfo(found);
    if (ok) {
      NoDelay(fd);
      return fd;
    }
    if (fd >= 0) close(fd);
    if (Clock::now() > deadline) {
      return UnavailableError(fmt::format(
          "cannot reach rank 0 at --dist-init-addr {}:{} within {:.0f} s ({}): start node 0 "
          "with the same --dist-init-addr, and check that this node can route to it",
          addr.host, addr.port, timeout_s, last));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Status AcceptRemoteRanks(int listen_fd, const std::vector<int>& ranks,
                         const std::string& joined_text, RankProcesses& local, double timeout_s,
                         std::map<int, int>* fds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  auto missing = [&] {
    std::string out;
    for (int r : ranks) {
      if (fds->count(r) == 0) out += fmt::format("{}{}", out.empty() ? "" : ", ", r);
    }
    return out;
  };
  while (fds->size() < ranks.size()) {
    if (auto exit = local.PollExited()) {
      return UnavailableError(fmt::format(
          "tensor-parallel rank {} exited ({}) while rank 0 waited for the other nodes; its "
          "own message is above",
          exit->rank, RankProcesses::DescribeWaitStatus(exit->wait_status)));
    }
    if (Clock::now() > deadline) {
      return UnavailableError(fmt::format(
          "tensor-parallel rank(s) {} on other nodes did not connect within {:.0f} s: start "
          "each node with the same --tp-size, --nnodes and --dist-init-addr and its own "
          "--node-rank",
          missing(), timeout_s));
    }
    pollfd p{listen_fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    NoDelay(fd);
    // A silent or foreign peer must not stall start-up: bound the read.
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    auto m = engine::ReceiveTpMessage(fd);
    tv = timeval{0, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (!m.ok() || m->type != engine::TpMessageType::kJoin) {
      TSR_LOG_WARN("tensor parallel: dropped a connection to --dist-init-addr that is not a "
                   "tessera worker ({})",
                   m.ok() ? "unexpected message" : std::string(m.status().message()));
      close(fd);
      continue;
    }
    char* end = nullptr;
    const long rank = std::strtol(m->text.c_str(), &end, 10);
    bool expected = false;
    for (int r : ranks) expected |= r == rank;
    if (*end != '\0' || !expected || fds->count(static_cast<int>(rank)) > 0) {
      close(fd);
      return FailedPreconditionError(fmt::format(
          "a worker joined as rank {}, which is {}: give every node the same --tp-size and "
          "--nnodes and its own --node-rank",
          m->text, expected ? "taken by another worker already" : "not a rank of another node"));
    }
    TSR_RETURN_IF_ERROR(
        engine::SendTpText(fd, engine::TpMessageType::kJoined, joined_text)
            .WithContext(fmt::format("answering rank {}", rank)));
    (*fds)[static_cast<int>(rank)] = fd;
    TSR_LOG_INFO("tensor parallel: rank {} joined from another node", rank);
  }
  return OkStatus();
}

int RunFollowerNode(const TpFlags& flags, const TpRunnerSpec& spec) {
  const int k = TpLocalRanks(flags);
  const int first = flags.node_rank * k;
  // Spawn numbers its children 1..k; child i is rank first + i - 1.
  auto spawned = RankProcesses::Spawn(
      k + 1,
      [&](int i) {
        const int rank = first + i - 1;
        std::vector<std::string> args = {"tp-worker"};
        std::vector<std::string> more = spec.ToArgs();
        args.insert(args.end(), more.begin(), more.end());
        args.insert(args.end(),
                    {"--tp-size", std::to_string(flags.tp_size), "--rank", std::to_string(rank),
                     "--device", std::to_string(TpDevice(flags, rank)), "--nnodes",
                     std::to_string(flags.nnodes), "--node-rank",
                     std::to_string(flags.node_rank), "--control-addr", flags.dist_init_addr});
        return args;
      },
      [](int) { return -1; });
  if (!spawned.ok()) {
    TSR_LOG_ERROR("{}", spawned.status().message());
    return 1;
  }
  TSR_LOG_INFO("node {} of {}: running tensor-parallel ranks {}..{} of {}; rank 0 (the "
               "server) is at {}",
               flags.node_rank, flags.nnodes, first, first + k - 1, flags.tp_size,
               flags.dist_init_addr);
  int remaining = k;
  while (remaining > 0) {
    if (auto exit = spawned->PollExited()) {
      --remaining;
      const int rank = first + exit->rank - 1;
      if (!WIFEXITED(exit->wait_status) || WEXITSTATUS(exit->wait_status) != 0) {
        TSR_LOG_ERROR("tensor-parallel rank {} exited ({}); stopping this node's ranks", rank,
                      RankProcesses::DescribeWaitStatus(exit->wait_status));
        spawned->KillAll();
        return 1;
      }
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  TSR_LOG_INFO("node {}: every rank exited cleanly", flags.node_rank);
  return 0;
}

}  // namespace tessera::cli
