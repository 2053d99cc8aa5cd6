#include "kit/net_comm.h"

#include <arpa/inet.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <chrono>
#include <csignal>
#include <mutex>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "kit/half.h"
#include "kit/host_log.h"
#include "kit/tcp_store.h"

namespace tessera::plugin_kit {
namespace {

constexpr size_t kNetOffset = 80;
constexpr char kNetMagic[4] = {'T', 'N', 'E', 'T'};
// Send/recv slots live far above the collectives' (Gloo builds those from
// a small prefix byte and the op's 32-bit tag).
constexpr uint64_t kPointToPointSlot = uint64_t{0x7A} << 56;

// What bytes 80..127 of the id hold.
struct NetId {
  char magic[4];
  uint16_t port;
  char host[42];  // numeric, NUL-terminated
};
static_assert(kNetOffset + sizeof(NetId) <= TSR_COMM_UNIQUE_ID_BYTES);

std::string IdPrefix(const tsr_comm_unique_id& id) {
  static const char* hex = "0123456789abcdef";
  std::string out = "tsr-";
  for (int i = 0; i < 16; ++i) {
    out += hex[id.bytes[i] >> 4];
    out += hex[id.bytes[i] & 15];
  }
  return out + "/";
}

// Gloo writes to its peers' sockets without MSG_NOSIGNAL, so a peer that
// died would kill this process with SIGPIPE instead of failing the
// collective. A process that left SIGPIPE at its default gets it ignored
// (writes then fail with EPIPE); one that installed a handler keeps it.
void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
      LogToHost("comm", TSR_LOG_DEBUG,
                "SIGPIPE is now ignored: a peer's closed TCP connection must fail the "
                "collective, not kill this process");
    }
  });
}

}  // namespace

Status CommHostAddress(std::string* host) {
  const char* want = std::getenv("TESSERA_COMM_SOCKET_IFNAME");
  if (want == nullptr || *want == '\0') want = std::getenv("GLOO_SOCKET_IFNAME");
  if (want != nullptr && *want == '\0') want = nullptr;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) list = nullptr;
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (want != nullptr ? std::strcmp(i->ifa_name, want) != 0
                        : ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0)) {
      continue;
    }
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text,
              sizeof(text));
    found = text;
  }
  if (list != nullptr) freeifaddrs(list);
  if (found.empty() && want != nullptr) {
    return InvalidArgument("TESSERA_COMM_SOCKET_IFNAME (or GLOO_SOCKET_IFNAME) names interface '",
                           want, "', which has no IPv4 address here; see `ip -4 addr`");
  }
  *host = found.empty() ? "127.0.0.1" : found;
  return OkStatus();
}

Status AddNetRendezvous(tsr_comm_unique_id* id) {
  std::string host;
  Status s = CommHostAddress(&host);
  uint16_t port = 0;
  if (s.ok()) s = EnsureStoreServer(&host, &port);
  if (!s.ok()) return s;
  NetId net{};
  std::memcpy(net.magic, kNetMagic, sizeof(kNetMagic));
  net.port = port;
  std::snprintf(net.host, sizeof(net.host), "%s", host.c_str());
  std::memcpy(id->bytes + kNetOffset, &net, sizeof(net));
  return OkStatus();
}

Status NetComm::Join(const tsr_comm_unique_id& id, int num_ranks, int rank, int timeout_ms,
                     std::shared_ptr<NetComm>* out) {
  NetId net{};
  std::memcpy(&net, id.bytes + kNetOffset, sizeof(net));
  if (std::memcmp(net.magic, kNetMagic, sizeof(kNetMagic)) != 0 || net.port == 0 ||
      net.host[sizeof(net.host) - 1] != '\0') {
    return DeviceError(
        "the unique id carries no rendezvous address for ranks on other nodes (the process "
        "that made it could not start its rendezvous store; its log says why)");
  }
  std::string host;
  Status s = CommHostAddress(&host);
  if (!s.ok()) return s;
  IgnoreSigpipe();
  std::shared_ptr<NetComm> comm(new NetComm(num_ranks, rank, timeout_ms));
  const std::chrono::milliseconds timeout(timeout_ms);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, num_ranks);
    context->setTimeout(timeout);
    TcpStore store(net.host, net.port, timeout);
    gloo::rendezvous::PrefixStore prefixed(IdPrefix(id), store);
    context->connectFullMesh(prefixed, device);
    // connectFullMesh can return on one rank while a peer still finishes
    // its handshakes; a barrier makes Join return once all are connected.
    gloo::BarrierOptions barrier(context);
    barrier.setTag(0xFFFFFFFFu);
    gloo::barrier(barrier);
    comm->context_ = std::move(context);
  } catch (const std::exception& e) {
    return DeviceError(StrCat("rank ", rank, " of ", num_ranks, " could not join its peers over ",
                              "TCP (this node's address ", host, ", rendezvous at ", net.host,
                              ":", net.port, ") within comm_timeout_ms=", timeout_ms, ": ",
                              e.what()));
  }
  *out = std::move(comm);
  return OkStatus();
}

NetComm::~NetComm() = default;

Status NetComm::Fail(const std::string& what, const std::string& why) {
  if (broken_.empty()) {
    broken_ = StrCat(what, " over TCP failed on rank ", rank_, " of ", num_ranks_, ": ", why,
                     " (a peer died, or did not call within comm_timeout_ms=", timeout_ms_, ")");
  }
  return DeviceError(broken_);
}

void NetComm::AllReduceInPlace(char* data, tsr_dtype dtype, int64_t count, tsr_reduce_op op) {
  gloo::AllreduceOptions opts(context_);
  if (DTypeSize(dtype) == 2) {
    opts.setOutput(reinterpret_cast<uint16_t*>(data), static_cast<size_t>(count));
  } else {
    opts.setOutput(reinterpret_cast<uint32_t*>(data), static_cast<size_t>(count));
  }
  opts.setReduceFunction([dtype, op](void* c, const void* a, const void* b, size_t n) {
    ReduceInto(dtype, op, {static_cast<const char*>(a), static_cast<const char*>(b)},
               static_cast<char*>(c), static_cast<int64_t>(n), {});
  });
  opts.setTag(next_tag_++);
  gloo::allreduce(opts);
}

Status NetComm::RunCollective(const CollectiveArgs& a, const CommExec& ctx) {
  if (!broken_.empty()) return DeviceError(broken_);
  if (a.count == 0) return OkStatus();
  const size_t es = DTypeSize(a.dtype);
  const size_t bytes = es * static_cast<size_t>(a.count);
  const int n = num_ranks_;
  try {
    switch (a.kind) {
      case CollectiveKind::kAllReduce:
        if (a.send != a.recv) ParallelCopy(a.recv, a.send, bytes, ctx.parallel);
        AllReduceInPlace(a.recv, a.dtype, a.count, a.op);
        break;
      case CollectiveKind::kReduceScatter: {
        // Reduced in a scratch copy (kept: fresh pages per call cost more
        // than the transfer), of which this rank keeps its slice.
        if (scratch_.size() < bytes * n) scratch_.resize(bytes * n);
        ParallelCopy(scratch_.data(), a.send, bytes * n, ctx.parallel);
        AllReduceInPlace(scratch_.data(), a.dtype, a.count * n, a.op);
        ParallelCopy(a.recv, scratch_.data() + bytes * rank_, bytes, ctx.parallel);
        break;
      }
      case CollectiveKind::kAllGather: {
        gloo::AllgatherOptions opts(context_);
        // In place (send is this rank's slice of recv): Gloo reads it there.
        if (a.send != a.recv + bytes * rank_) {
          opts.setInput(const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(a.send)), bytes);
        }
        opts.setOutput(reinterpret_cast<uint8_t*>(a.recv), bytes * n);
        opts.setTag(next_tag_++);
        gloo::allgather(opts);
        break;
      }
      case CollectiveKind::kBroadcast: {
        gloo::BroadcastOptions opts(context_);
        opts.setOutput(reinterpret_cast<uint8_t*>(a.recv), bytes);
        opts.setRoot(a.root);
        opts.setTag(next_tag_++);
        gloo::broadcast(opts);
        break;
      }
    }
  } catch (const std::exception& e) {
    return Fail(CollectiveKindName(a.kind), e.what());
  }
  return OkStatus();
}

Status NetComm::Send(int peer, const void* data, tsr_dtype dtype, int64_t count,
                     const CommExec&) {
  return Transfer(true, peer, const_cast<void*>(data), DTypeSize(dtype) * static_cast<size_t>(count));
}

Status NetComm::Recv(int peer, void* data, tsr_dtype dtype, int64_t count, const CommExec&) {
  return Transfer(false, peer, data, DTypeSize(dtype) * static_cast<size_t>(count));
}

Status NetComm::Transfer(bool sending, int peer, void* data, size_t bytes) {
  const char* what = sending ? "send" : "recv";
  if (!broken_.empty()) return DeviceError(broken_);
  if (bytes == 0) return OkStatus();
  try {
    auto buffer = context_->createUnboundBuffer(data, bytes);
    const std::chrono::milliseconds timeout(timeout_ms_);
    bool done;
    if (sending) {
      buffer->send(peer, kPointToPointSlot + sent_[peer]++);
      done = buffer->waitSend(timeout);
    } else {
      buffer->recv(peer, kPointToPointSlot + received_[peer]++);
      done = buffer->waitRecv(timeout);
    }
    if (!done) return Fail(what, "the transfer was aborted");
  } catch (const std::exception& e) {
    return Fail(what, e.what());
  }
  return OkStatus();
}

}  // namespace tessera::plugin_kit
