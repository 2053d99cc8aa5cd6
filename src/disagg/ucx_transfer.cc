#include "disagg/ucx_transfer.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <list>
#include <map>
#include <thread>
#include <utility>

#include "base/logging.h"
#include "base/mutex.h"

namespace tessera::disagg {
namespace {

Status UcxError(const char* what, ucs_status_t status) {
  return UnavailableError(
      fmt::format("UCX {} failed: {}", what, ucs_status_string(status)));
}

// The progress thread polls the worker: UCX's wakeup feature (an event fd)
// is offered only by transports with event support (TCP, verbs), so asking
// for it would drop shared memory and CMA (same-host puts at memcpy speed).
// It polls every kActivePollUs while work is in flight or was recently,
// else every kIdlePollMs (a completion then waits at most that long).
constexpr int kActivePollUs = 50;
constexpr int kIdlePollMs = 5;
constexpr auto kActiveWindow = std::chrono::seconds(2);

}  // namespace

class UcxTransfer::Impl {
 public:
  ~Impl() {
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    Wake();
    if (thread_.joinable()) thread_.join();
    for (ucp_mem_h m : memhs_) ucp_mem_unmap(context_, m);
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    if (context_ != nullptr) ucp_cleanup(context_);
    if (wake_fd_ >= 0) close(wake_fd_);
  }

  Status Init() {
    ucp_config_t* config = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
    if (st != UCS_OK) return UcxError("reading the configuration", st);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES |
                        UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_TAG;
    params.mt_workers_shared = 1;  // Register runs on callers' threads
    st = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (st != UCS_OK) return UcxError("initialisation (ucp_init)", st);
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(context_, &wp, &worker_);
    if (st != UCS_OK) return UcxError("creating a worker", st);
    ucp_address_t* addr = nullptr;
    size_t addr_len = 0;
    st = ucp_worker_get_address(worker_, &addr, &addr_len);
    if (st != UCS_OK) return UcxError("getting the worker address", st);
    address_.assign(reinterpret_cast<const char*>(addr), addr_len);
    ucp_worker_release_address(worker_, addr);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return UnavailableError("eventfd failed");
    thread_ = std::thread([this] { Run(); });
    return OkStatus();
  }

  const std::string& address() const { return address_; }

  StatusOr<RemoteRegion> Register(void* address, uint64_t length) {
    ucp_mem_map_params_t mp{};
    mp.field_mask =
        UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = address;
    mp.length = length;
    ucp_mem_h memh = nullptr;
    ucs_status_t st = ucp_mem_map(context_, &mp, &memh);
    if (st != UCS_OK) return UcxError("registering KV memory", st);
    void* packed = nullptr;
    size_t packed_len = 0;
    st = ucp_rkey_pack(context_, memh, &packed, &packed_len);
    if (st != UCS_OK) {
      ucp_mem_unmap(context_, memh);
      return UcxError("packing a remote key", st);
    }
    RemoteRegion region;
    region.address = reinterpret_cast<uint64_t>(address);
    region.length = length;
    region.rkey.assign(static_cast<const char*>(packed), packed_len);
    ucp_rkey_buffer_release(packed);
    MutexLock lock(&mu_);
    if (registered_.size() > kMaxChunkRegionId) {
      ucp_mem_unmap(context_, memh);
      return InvalidArgumentError(fmt::format(
          "more than {} KV regions registered", kMaxChunkRegionId + 1));
    }
    region.id = static_cast<uint32_t>(registered_.size());
    memhs_.push_back(memh);
    registered_.push_back({static_cast<uint8_t*>(address), length});
    return region;
  }

  void SetHandler(MessageHandler handler) {
    MutexLock lock(&mu_);
    handler_ = std::move(handler);
  }

  void SetExpecting(bool expecting) {
    const bool was = expecting_.exchange(expecting, std::memory_order_relaxed);
    if (expecting && !was) Wake();
  }

  void Write(WriteJob job) {
    {
      MutexLock lock(&mu_);
      if (!stop_) {
        queue_.push_back(std::move(job));
        job.done = nullptr;
      }
    }
    if (job.done) job.done(UnavailableError("the KV transfer engine stopped"));
    Wake();
  }

 private:
  // A write in progress on the progress thread.
  struct Active {
    WriteJob job;
    ucp_ep_h ep = nullptr;
    std::vector<ucp_rkey_h> rkeys;
    void* flush = nullptr;  // kRma: flush request (puts complete at the peer)
    std::vector<void*> chunks;  // kRendezvous: chunk sends still in flight
    void* send = nullptr;   // the message's send request
    bool flushed = false;
    bool send_started = false;
    bool sent = false;
  };
  struct Receive {
    void* request = nullptr;
    uint64_t tag = 0;
    bool chunk = false;  // a kRendezvous chunk, received in place
    std::string buffer;  // a message (or a refused chunk, discarded)
  };
  struct Registered {
    uint8_t* base = nullptr;
    uint64_t length = 0;
  };

  void Wake() {
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
  }

  static void OnEpError(void* arg, ucp_ep_h ep, ucs_status_t status) {
    auto* self = static_cast<Impl*>(arg);
    TSR_LOG_WARN("KV transfer: a peer endpoint failed: {}",
                 ucs_status_string(status));
    self->failed_eps_.push_back(ep);
  }

  StatusOr<ucp_ep_h> Endpoint(const std::string& peer, bool same_host) {
    auto it = eps_.find(peer);
    if (it != eps_.end()) return it->second;
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(peer.data());
    ep.err_mode = same_host ? UCP_ERR_HANDLING_MODE_NONE
                            : UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = &Impl::OnEpError;
    ep.err_handler.arg = this;
    ucp_ep_h handle = nullptr;
    ucs_status_t st = ucp_ep_create(worker_, &ep, &handle);
    if (st != UCS_OK) return UcxError("connecting to the peer", st);
    eps_.emplace(peer, handle);
    return handle;
  }

  void DropEndpoint(ucp_ep_h ep) {
    for (auto it = eps_.begin(); it != eps_.end(); ++it) {
      if (it->second == ep) {
        eps_.erase(it);
        break;
      }
    }
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* r = ucp_ep_close_nbx(ep, &p);
    if (UCS_PTR_IS_PTR(r)) ucp_request_free(r);
  }

  // Checks every put against the peer's regions as it published them.
  static Status CheckPuts(const WriteJob& job) {
    for (const PutOp& op : job.puts) {
      if (op.region >= job.regions.size() ||
          op.offset + op.length > job.regions[op.region].length) {
        return InvalidArgumentError(fmt::format(
            "a KV put of {} bytes at offset {} falls outside the peer's "
            "registered region {}",
            op.length, op.offset, op.region));
      }
      if (job.method == WriteMethod::kRendezvous &&
          (job.regions[op.region].id > kMaxChunkRegionId ||
           op.offset > kMaxChunkOffset)) {
        return InvalidArgumentError(fmt::format(
            "a KV put at offset {} of region id {} cannot be named in a "
            "rendezvous tag",
            op.offset, job.regions[op.region].id));
      }
    }
    return OkStatus();
  }

  // kRendezvous: one tagged send per put; the peer receives each in place.
  Status StartChunks(Active& a) {
    ucp_request_param_t p{};
    for (const PutOp& op : a.job.puts) {
      if (op.length == 0) continue;
      const uint64_t tag =
          kChunkTag |
          (static_cast<uint64_t>(a.job.regions[op.region].id) << kChunkIdShift) |
          op.offset;
      void* r = ucp_tag_send_nbx(a.ep, op.src, op.length, tag, &p);
      if (UCS_PTR_IS_ERR(r)) {
        return UcxError("sending a KV chunk", UCS_PTR_STATUS(r));
      }
      if (r != nullptr) a.chunks.push_back(r);
    }
    a.flushed = a.chunks.empty();
    return OkStatus();
  }

  // Issues a job's puts and its flush (kRma) or its chunks (kRendezvous).
  // Error: the job failed.
  Status Start(Active& a) {
    TSR_RETURN_IF_ERROR(CheckPuts(a.job));
    TSR_ASSIGN_OR_RETURN(a.ep, Endpoint(a.job.peer_address, a.job.same_host));
    if (a.job.method == WriteMethod::kRendezvous) return StartChunks(a);
    for (const RemoteRegion& r : a.job.regions) {
      ucp_rkey_h rkey = nullptr;
      ucs_status_t st = ucp_ep_rkey_unpack(a.ep, r.rkey.data(), &rkey);
      if (st != UCS_OK) return UcxError("unpacking the peer's remote key", st);
      a.rkeys.push_back(rkey);
    }
    ucp_request_param_t p{};
    for (const PutOp& op : a.job.puts) {
      void* r = ucp_put_nbx(a.ep, op.src, op.length,
                            a.job.regions[op.region].address + op.offset,
                            a.rkeys[op.region], &p);
      if (UCS_PTR_IS_ERR(r)) return UcxError("put", UCS_PTR_STATUS(r));
      if (r != nullptr) ucp_request_free(r);  // the flush covers it
    }
    void* f = ucp_ep_flush_nbx(a.ep, &p);
    if (UCS_PTR_IS_ERR(f)) return UcxError("flush", UCS_PTR_STATUS(f));
    a.flush = f;
    a.flushed = f == nullptr;
    return OkStatus();
  }

  // Advances a job; true when it is finished (done called).
  bool Advance(Active& a, std::chrono::steady_clock::time_point now) {
    auto finish = [&a](Status s) {
      if (a.job.done) a.job.done(std::move(s));
      return true;
    };
    if (!a.flushed && a.job.method == WriteMethod::kRendezvous) {
      // Each chunk's send completes once the peer has read its bytes.
      while (!a.chunks.empty()) {
        ucs_status_t st = ucp_request_check_status(a.chunks.back());
        if (st == UCS_INPROGRESS) {
          if (now > a.job.deadline) {
            return finish(UnavailableError(
                "the KV transfer timed out before the peer received the "
                "KV"));
          }
          return false;
        }
        ucp_request_free(a.chunks.back());
        a.chunks.pop_back();
        if (st != UCS_OK) return finish(UcxError("writing KV to the peer", st));
      }
      a.flushed = true;
    }
    if (!a.flushed) {
      ucs_status_t st = ucp_request_check_status(a.flush);
      if (st == UCS_INPROGRESS) {
        if (now > a.job.deadline) {
          return finish(UnavailableError(
              "the KV transfer timed out before the peer acknowledged the "
              "writes"));
        }
        return false;
      }
      ucp_request_free(a.flush);
      a.flush = nullptr;
      a.flushed = true;
      if (st != UCS_OK) return finish(UcxError("writing KV to the peer", st));
    }
    // The puts are complete at the peer (a flush may also complete at
    // once, in Start): now the completion message.
    if (a.job.message.empty()) return finish(OkStatus());  // puts alone
    if (!a.send_started) {
      a.send_started = true;
      ucp_request_param_t p{};
      void* s = ucp_tag_send_nbx(a.ep, a.job.message.data(),
                                 a.job.message.size(), a.job.tag, &p);
      if (UCS_PTR_IS_ERR(s)) {
        return finish(UcxError("sending the completion", UCS_PTR_STATUS(s)));
      }
      a.send = s;
      a.sent = s == nullptr;
    }
    if (!a.sent) {
      ucs_status_t st = ucp_request_check_status(a.send);
      if (st == UCS_INPROGRESS) {
        if (now > a.job.deadline) {
          return finish(UnavailableError(
              "the KV transfer timed out sending its completion"));
        }
        return false;
      }
      ucp_request_free(a.send);
      a.send = nullptr;
      a.sent = true;
      if (st != UCS_OK) return finish(UcxError("sending the completion", st));
    }
    return finish(OkStatus());
  }

  void Cleanup(Active& a) {
    if (a.flush != nullptr) ucp_request_cancel(worker_, a.flush);
    for (void* c : a.chunks) {
      ucp_request_cancel(worker_, c);
      ucp_request_free(c);
    }
    a.chunks.clear();
    if (a.send != nullptr) ucp_request_cancel(worker_, a.send);
    for (ucp_rkey_h k : a.rkeys) ucp_rkey_destroy(k);
    a.rkeys.clear();
  }

  void ProbeMessages(MessageHandler& handler) {
    for (;;) {
      ucp_tag_recv_info_t info{};
      ucp_tag_message_h msg = ucp_tag_probe_nb(worker_, 0, 0, 1, &info);
      if (msg == nullptr) break;
      // Posted into its list node: the buffer must not move while UCX
      // may still write it (a moved short string changes address).
      Receive& r = receives_.emplace_back();
      r.tag = info.sender_tag;
      void* into = nullptr;
      if ((r.tag & kChunkTag) != 0) {
        into = ChunkDestination(r.tag, info.length);
        r.chunk = into != nullptr;
      }
      if (into == nullptr) {
        r.buffer.resize(info.length);
        into = r.buffer.data();
      }
      ucp_request_param_t p{};
      void* req = ucp_tag_msg_recv_nbx(worker_, into, info.length, msg, &p);
      if (UCS_PTR_IS_ERR(req)) {
        TSR_LOG_WARN("KV transfer: receiving a message failed: {}",
                     ucs_status_string(UCS_PTR_STATUS(req)));
        receives_.pop_back();
        continue;
      }
      r.request = req;
    }
    // In arrival order, stopping at the first receive still in progress:
    // a message is handled only after the chunks sent before it landed.
    while (!receives_.empty()) {
      Receive& r = receives_.front();
      if (r.request != nullptr) {
        ucs_status_t st = ucp_request_check_status(r.request);
        if (st == UCS_INPROGRESS) break;
        ucp_request_free(r.request);
        r.request = nullptr;
        if (st != UCS_OK) {
          TSR_LOG_WARN("KV transfer: a receive failed: {}",
                       ucs_status_string(st));
          receives_.pop_front();
          continue;
        }
      }
      if ((r.tag & kChunkTag) == 0 && handler) {
        handler(r.tag, std::move(r.buffer));
      }
      receives_.pop_front();
    }
  }

  // Where a kRendezvous chunk of `length` bytes named by `tag` lands: inside
  // a region this side registered, or nullptr (logged; the chunk is read
  // into a scratch buffer and dropped, so a confused peer cannot write
  // outside the KV pool).
  uint8_t* ChunkDestination(uint64_t tag, uint64_t length) {
    const uint64_t id = (tag & ~kChunkTag) >> kChunkIdShift;
    const uint64_t offset = tag & kMaxChunkOffset;
    MutexLock lock(&mu_);
    if (id < registered_.size() && offset <= registered_[id].length &&
        length <= registered_[id].length - offset) {
      return registered_[id].base + offset;
    }
    TSR_LOG_WARN("KV transfer: dropped a chunk of {} bytes at offset {} of "
                 "region {} (not inside a registered region)",
                 length, offset, id);
    return nullptr;
  }

  void Run() {
    for (;;) {
      std::deque<WriteJob> fresh;
      MessageHandler handler;
      bool stop = false;
      {
        MutexLock lock(&mu_);
        fresh.swap(queue_);
        handler = handler_;
        stop = stop_;
      }
      for (WriteJob& job : fresh) {
        active_.emplace_back();
        Active& a = active_.back();
        a.job = std::move(job);
        Status started = Start(a);
        if (!started.ok()) {
          if (a.job.done) a.job.done(started);
          Cleanup(a);
          active_.pop_back();
        }
      }
      bool progressed = false;
      while (ucp_worker_progress(worker_) != 0) progressed = true;
      for (ucp_ep_h ep : failed_eps_) DropEndpoint(ep);
      failed_eps_.clear();
      ProbeMessages(handler);
      const auto now = std::chrono::steady_clock::now();
      for (auto it = active_.begin(); it != active_.end();) {
        if (Advance(*it, now)) {
          Cleanup(*it);
          it = active_.erase(it);
        } else {
          ++it;
        }
      }
      if (stop) {
        for (Active& a : active_) {
          if (a.job.done) {
            a.job.done(UnavailableError("the KV transfer engine stopped"));
          }
          Cleanup(a);
        }
        active_.clear();
        for (auto& [peer, ep] : eps_) {
          ucp_request_param_t p{};
          p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
          p.flags = UCP_EP_CLOSE_FLAG_FORCE;
          void* r = ucp_ep_close_nbx(ep, &p);
          if (UCS_PTR_IS_PTR(r)) ucp_request_free(r);
        }
        eps_.clear();
        return;
      }
      const auto after = std::chrono::steady_clock::now();
      if (progressed || !fresh.empty() || !active_.empty() ||
          !receives_.empty() || expecting_.load(std::memory_order_relaxed)) {
        last_active_ = after;
      }
      if (progressed) continue;
      const bool active = after - last_active_ < kActiveWindow;
      pollfd fd = {wake_fd_, POLLIN, 0};
      timespec wait{};
      if (active) {
        wait.tv_nsec = kActivePollUs * 1000;
      } else {
        wait.tv_nsec = kIdlePollMs * 1000000L;
      }
      (void)ppoll(&fd, 1, &wait, nullptr);
      uint64_t drained = 0;
      (void)!read(wake_fd_, &drained, sizeof(drained));
    }
  }

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
  int wake_fd_ = -1;

  Mutex mu_;
  std::deque<WriteJob> queue_ TSR_GUARDED_BY(mu_);
  MessageHandler handler_ TSR_GUARDED_BY(mu_);
  std::vector<ucp_mem_h> memhs_ TSR_GUARDED_BY(mu_);
  std::vector<Registered> registered_ TSR_GUARDED_BY(mu_);  // by region id
  std::atomic<bool> expecting_{false};
  bool stop_ TSR_GUARDED_BY(mu_) = false;

  // Progress-thread state.
  std::map<std::string, ucp_ep_h> eps_;
  std::vector<ucp_ep_h> failed_eps_;
  std::list<Active> active_;
  std::list<Receive> receives_;
  std::chrono::steady_clock::time_point last_active_{};
  std::thread thread_;
};

UcxTransfer::UcxTransfer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
UcxTransfer::~UcxTransfer() = default;

StatusOr<std::unique_ptr<UcxTransfer>> UcxTransfer::Create() {
  auto impl = std::make_unique<Impl>();
  TSR_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<UcxTransfer>(new UcxTransfer(std::move(impl)));
}

const std::string& UcxTransfer::HostId() {
  // Read once: neither changes for the life of the process (a server does
  // not move between network namespaces).
  static const std::string id = [] {
    std::string boot_id;
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::getline(boot, boot_id);
    char ns[128] = {0};
    const ssize_t n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
    if (boot_id.empty() || n <= 0) return std::string();  // never "same host"
    return boot_id + "/" + std::string(ns, static_cast<size_t>(n));
  }();
  return id;
}

const std::string& UcxTransfer::WorkerAddress() const {
  return impl_->address();
}

StatusOr<RemoteRegion> UcxTransfer::Register(void* address, uint64_t length) {
  return impl_->Register(address, length);
}

void UcxTransfer::SetMessageHandler(MessageHandler handler) {
  impl_->SetHandler(std::move(handler));
}

void UcxTransfer::SetExpecting(bool expecting) {
  impl_->SetExpecting(expecting);
}

void UcxTransfer::Write(WriteJob job) { impl_->Write(std::move(job)); }

std::string UcxTransfer::TransportSummary() const {
  const char* tls = std::getenv("UCX_TLS");
  return tls != nullptr && *tls != '\0' ? fmt::format("UCX_TLS={}", tls)
                                        : std::string("UCX_TLS=all");
}

}  // namespace tessera::disagg
