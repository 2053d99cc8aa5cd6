#include "kit/shm_comm.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "kit/half.h"

namespace tessera::plugin_kit {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kIdMagic[8] = {'T', 'S', 'R', 'S', 'H', 'M', '1', '\0'};
constexpr uint64_t kSegmentMagic = 0x314D48535253544EULL;  // segment ready
constexpr size_t kShmAlign = 64;
// Busy-wait this long before yielding, and yield this long before sleeping.
constexpr auto kSpinFor = std::chrono::microseconds(50);
constexpr auto kYieldFor = std::chrono::milliseconds(2);
constexpr auto kSleep = std::chrono::microseconds(50);
constexpr auto kLivenessEvery = std::chrono::milliseconds(2);

// What the 128 id bytes hold.
struct ShmId {
  char magic[8];
  uint64_t nonce;
  char name[64];  // the segment's name, "/tessera-ccl-<16 hex digits>"
};
static_assert(sizeof(ShmId) <= 80);  // rank_comm.h: bytes 80.. are the network's

size_t AlignUp(size_t n) { return (n + kShmAlign - 1) / kShmAlign * kShmAlign; }

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}


// True when process `pid` is gone: no such process, or a zombie (a dead
// child its parent has not reaped yet still answers kill(pid, 0)).
bool ProcessGone(int32_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;  // no procfs: trust kill()
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');  // the name may hold spaces and ')'
  return paren != nullptr && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

// Per-rank staging: 32 MiB over all ranks' two slots, each 64 KiB..4 MiB.
size_t SlotBytesFor(int n) {
  const size_t share = (size_t{32} << 20) / (2 * static_cast<size_t>(n));
  return std::clamp(share, size_t{64} << 10, size_t{4} << 20) & ~(kShmAlign - 1);
}
size_t ChannelBytesFor(int n) {
  if (n < 2) return 0;
  const size_t share = (size_t{16} << 20) / (static_cast<size_t>(n) * (n - 1));
  return std::clamp(share, size_t{64} << 10, size_t{1} << 20) & ~(kShmAlign - 1);
}

// What a barrier wait names in a timeout message ("at all_reduce"); string
// literals, so the hot path builds no string per step.
const char* BarrierLabel(CollectiveKind kind, bool second) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return second ? "at all_reduce (second barrier)" : "at all_reduce";
    case CollectiveKind::kAllGather:
      return second ? "at all_gather (second barrier)" : "at all_gather";
    case CollectiveKind::kBroadcast:
      return second ? "at broadcast (second barrier)" : "at broadcast";
    case CollectiveKind::kReduceScatter:
      return second ? "at reduce_scatter (second barrier)" : "at reduce_scatter";
  }
  return "at a collective";
}

}  // namespace

struct alignas(64) ShmComm::Header {
  std::atomic<uint64_t> magic;  // kSegmentMagic once rank 0 laid it out
  int32_t num_ranks;
  int32_t reserved;
  uint64_t slot_bytes;
  uint64_t channel_bytes;
  uint64_t total_bytes;
  std::atomic<int32_t> joined;
  std::atomic<int32_t> breaking;  // 1 once a rank started writing `reason`
  std::atomic<int32_t> broken;    // 0, else 1 + the rank that broke it
  char reason[384];
};

struct alignas(64) ShmComm::RankState {
  std::atomic<int32_t> pid;   // 0 until the rank joined
  std::atomic<int32_t> left;  // 1 after comm_destroy
  // The current step's call, written before `arrived` is published.
  int32_t kind;
  int32_t dtype;
  int32_t op;
  int32_t root;
  int64_t count;
  alignas(64) std::atomic<uint64_t> arrived;  // first barrier: steps passed
  alignas(64) std::atomic<uint64_t> reduced;  // second barrier
};

struct alignas(64) ShmComm::Channel {
  std::atomic<uint64_t> written;  // bytes the sender ever put in
  alignas(64) std::atomic<uint64_t> read;  // bytes the receiver ever took
};

namespace {

struct Layout {
  size_t header, ranks, slots, channels, total;
};

Layout LayoutFor(int n, size_t slot_bytes, size_t channel_bytes, size_t header_size,
                 size_t rank_size, size_t channel_size) {
  Layout l;
  l.header = 0;
  l.ranks = AlignUp(header_size);
  l.slots = l.ranks + AlignUp(rank_size) * n;
  l.channels = l.slots + slot_bytes * 2 * n;
  l.total = l.channels + (AlignUp(channel_size) + channel_bytes) * n * n;
  return l;
}

}  // namespace

Status NewShmUniqueId(tsr_comm_unique_id* out) {
  if (out == nullptr) return InvalidArgument("out must not be NULL");
  std::random_device device;
  uint64_t nonce = (static_cast<uint64_t>(device()) << 32) ^ device();
  nonce ^= static_cast<uint64_t>(getpid()) << 17;
  nonce ^= static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  ShmId id{};
  std::memcpy(id.magic, kIdMagic, sizeof(kIdMagic));
  id.nonce = nonce;
  std::snprintf(id.name, sizeof(id.name), "/tessera-ccl-%016llx",
                static_cast<unsigned long long>(nonce));
  std::memset(out->bytes, 0, sizeof(out->bytes));
  std::memcpy(out->bytes, &id, sizeof(id));
  return OkStatus();
}

void ShmComm::Locate(size_t slot_bytes, size_t channel_bytes) {
  const Layout l = LayoutFor(num_ranks_, slot_bytes, channel_bytes, sizeof(Header),
                             sizeof(RankState), sizeof(Channel));
  slot_bytes_ = slot_bytes;
  channel_bytes_ = channel_bytes;
  ranks_ = base_ + l.ranks;
  slots_ = base_ + l.slots;
  channels_ = base_ + l.channels;
}

ShmComm::RankState& ShmComm::rank_state(int r) const {
  return *reinterpret_cast<RankState*>(ranks_ + AlignUp(sizeof(RankState)) * r);
}

char* ShmComm::slot(int r, uint64_t step) const {
  return slots_ + slot_bytes_ * (2 * r + (step & 1));
}

ShmComm::Channel& ShmComm::channel(int from, int to) const {
  const size_t stride = AlignUp(sizeof(Channel)) + channel_bytes_;
  return *reinterpret_cast<Channel*>(channels_ +
                                     stride * (static_cast<size_t>(from) * num_ranks_ + to));
}

char* ShmComm::channel_data(int from, int to) const {
  return reinterpret_cast<char*>(&channel(from, to)) + AlignUp(sizeof(Channel));
}

Status ShmComm::Map(int fd, size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    return DeviceError(StrCat("mapping the communicator's shared memory (", bytes,
                              " bytes) failed: ", std::strerror(errno)));
  }
  base_ = static_cast<char*>(p);
  bytes_ = bytes;
  header_ = reinterpret_cast<Header*>(base_);
  return OkStatus();
}

Status ShmComm::Join(const tsr_comm_unique_id& id_bytes, int num_ranks, int rank,
                     int timeout_ms, std::shared_ptr<ShmComm>* out) {
  ShmId id;
  std::memcpy(&id, id_bytes.bytes, sizeof(id));
  if (std::memcmp(id.magic, kIdMagic, sizeof(kIdMagic)) != 0 ||
      id.name[sizeof(id.name) - 1] != '\0' || id.name[0] != '/') {
    return InvalidArgument("the unique id was not made by this plugin's comm_get_unique_id "
                           "(or its bytes were changed on the way to this rank)");
  }
  std::shared_ptr<ShmComm> comm(new ShmComm(num_ranks, rank, timeout_ms));
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  const size_t slot_bytes = SlotBytesFor(num_ranks);
  const size_t channel_bytes = ChannelBytesFor(num_ranks);
  const Layout layout = LayoutFor(num_ranks, slot_bytes, channel_bytes, sizeof(Header),
                                  sizeof(RankState), sizeof(Channel));
  if (rank == 0) {
    int fd = shm_open(id.name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      return DeviceError(StrCat("creating shared memory ", id.name, " failed: ",
                                std::strerror(errno),
                                errno == EEXIST ? " (this unique id was used before: get a new "
                                                  "one per communicator)"
                                                : " (is /dev/shm mounted and writable?)"));
    }
    Status s = ftruncate(fd, static_cast<off_t>(layout.total)) == 0
                   ? comm->Map(fd, layout.total)
                   : DeviceError(StrCat("sizing shared memory ", id.name, " to ", layout.total,
                                        " bytes failed: ", std::strerror(errno),
                                        " (is /dev/shm full?)"));
    close(fd);
    if (!s.ok()) {
      shm_unlink(id.name);
      return s;
    }
    Header* h = new (comm->base_) Header();
    comm->Locate(slot_bytes, channel_bytes);
    h->num_ranks = num_ranks;
    h->slot_bytes = slot_bytes;
    h->channel_bytes = channel_bytes;
    h->total_bytes = layout.total;
    for (int r = 0; r < num_ranks; ++r) new (&comm->rank_state(r)) RankState();
    for (int a = 0; a < num_ranks; ++a) {
      for (int b = 0; b < num_ranks; ++b) new (&comm->channel(a, b)) Channel();
    }
    h->magic.store(kSegmentMagic, std::memory_order_release);
  } else {
    // Rank 0 may not have created the segment yet: poll until it is laid out.
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    for (;;) {
      int fd = shm_open(id.name, O_RDWR, 0600);
      if (fd >= 0) {
        struct stat st {};
        bool ready = false;
        if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= page) {
          void* p = mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, 0);
          if (p != MAP_FAILED) {
            const Header* h = static_cast<const Header*>(p);
            ready = h->magic.load(std::memory_order_acquire) == kSegmentMagic;
            const int32_t their_ranks = h->num_ranks;
            munmap(p, page);
            if (ready && their_ranks != num_ranks) {
              close(fd);
              return InvalidArgument("rank ", rank, " joined with num_ranks ", num_ranks,
                                     " but rank 0 created the communicator for ",
                                     their_ranks, " ranks; every rank must pass the same");
            }
          }
        }
        if (ready) {
          Status s = comm->Map(fd, layout.total);
          close(fd);
          TSR_KIT_RETURN_IF_ERROR(s);
          comm->Locate(comm->header_->slot_bytes, comm->header_->channel_bytes);
          break;
        }
        close(fd);
      }
      if (Clock::now() >= deadline) {
        return DeviceError(StrCat("rank ", rank, " waited ", timeout_ms,
                                  " ms for rank 0 to create the communicator (shared memory ",
                                  id.name, "); is rank 0 running on this node, and did it call "
                                  "comm_init_rank with this id? (comm_timeout_ms)"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  RankState& me = comm->rank_state(rank);
  int32_t expected = 0;
  const int32_t pid = static_cast<int32_t>(getpid());
  if (!me.pid.compare_exchange_strong(expected, pid)) {
    return InvalidArgument("rank ", rank, " of this communicator was already taken (by pid ",
                           expected, "); each rank joins exactly once");
  }
  comm->header_->joined.fetch_add(1, std::memory_order_acq_rel);
  Status joined = comm->WaitUntil(
      [&] {
        return comm->header_->joined.load(std::memory_order_acquire) == num_ranks;
      },
      [&] {
        std::vector<int> missing;
        for (int r = 0; r < num_ranks; ++r) {
          if (comm->rank_state(r).pid.load(std::memory_order_acquire) == 0) missing.push_back(r);
        }
        return missing;
      },
      "in comm_init_rank for the other ranks to join", nullptr);
  if (rank == 0) shm_unlink(id.name);  // all joined (or given up): the name is no longer needed
  TSR_KIT_RETURN_IF_ERROR(joined);
  *out = std::move(comm);
  return OkStatus();
}

ShmComm::~ShmComm() {
  if (base_ == nullptr) return;
  rank_state(rank_).left.store(1, std::memory_order_release);
  munmap(base_, bytes_);
}

Status ShmComm::BrokenError() const {
  // The breaker writes `reason` before publishing `broken`.
  for (int i = 0; i < 100000 && header_->broken.load(std::memory_order_acquire) == 0; ++i) {
    CpuRelax();
  }
  return DeviceError(StrCat("the communicator is broken: ", header_->reason,
                            "; destroy it (and its peers) and create a new one"));
}

Status ShmComm::Break(const std::string& reason) {
  broken_ = true;
  int32_t expected = 0;
  if (header_->breaking.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    std::snprintf(header_->reason, sizeof(header_->reason), "%s", reason.c_str());
    header_->broken.store(rank_ + 1, std::memory_order_release);
  }
  return BrokenError();
}

template <typename Done, typename Lagging>
Status ShmComm::WaitUntil(Done done, Lagging lagging, const char* what, const CommExec* ctx) {
  const Clock::time_point start = Clock::now();
  while (Clock::now() - start < kSpinFor) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return OkStatus();
      CpuRelax();
    }
  }
  Clock::time_point next_check = start;
  for (;;) {
    if (done()) return OkStatus();
    if (header_->broken.load(std::memory_order_acquire) != 0) {
      broken_ = true;
      return BrokenError();
    }
    if (ctx != nullptr && ctx->cancelled()) {
      return Break(StrCat("rank ", rank_, "'s stream was destroyed while it waited ", what));
    }
    const Clock::time_point now = Clock::now();
    if (now >= next_check) {
      next_check = now + kLivenessEvery;
      const std::vector<int> behind = lagging();
      std::string names;
      for (int q : behind) {
        names += names.empty() ? StrCat(q) : StrCat(", ", q);
        const RankState& st = rank_state(q);
        // A peer may have arrived, passed and left since lagging() read its
        // counter: it published the counter before leaving (or exiting),
        // so look again before blaming it.
        if (st.left.load(std::memory_order_acquire) != 0) {
          if (done()) return OkStatus();
          return Break(StrCat("rank ", q, " destroyed its communicator while rank ", rank_,
                              " waited ", what));
        }
        const int32_t pid = st.pid.load(std::memory_order_acquire);
        if (pid > 0 && pid != getpid() && ProcessGone(pid)) {
          if (done()) return OkStatus();
          return Break(StrCat("rank ", q, " (pid ", pid, ") exited while rank ", rank_,
                              " waited ", what));
        }
      }
      if (now - start >= std::chrono::milliseconds(timeout_ms_)) {
        return Break(StrCat("rank ", rank_, " waited ", timeout_ms_, " ms ", what,
                            "; still missing: rank(s) ", names.empty() ? "?" : names,
                            " (they stopped issuing the matching call, hang, or never "
                            "started; the plugin's comm_timeout_ms option sets the limit)"));
      }
    }
    if (now - start < kYieldFor) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(kSleep);
    }
  }
}

Status ShmComm::Barrier(bool second, uint64_t step, const char* what, const CommExec& ctx) {
  const uint64_t target = step + 1;
  auto counter = [second](RankState& st) -> std::atomic<uint64_t>& {
    return second ? st.reduced : st.arrived;
  };
  counter(rank_state(rank_)).store(target, std::memory_order_release);
  return WaitUntil(
      [&] {
        for (int q = 0; q < num_ranks_; ++q) {
          if (counter(rank_state(q)).load(std::memory_order_acquire) < target) return false;
        }
        return true;
      },
      [&] {
        std::vector<int> behind;
        for (int q = 0; q < num_ranks_; ++q) {
          if (counter(rank_state(q)).load(std::memory_order_acquire) < target) behind.push_back(q);
        }
        return behind;
      },
      what, &ctx);
}

Status ShmComm::CheckCallsMatch(uint64_t step) const {
  const RankState& a = rank_state(0);
  for (int q = 1; q < num_ranks_; ++q) {
    const RankState& b = rank_state(q);
    if (b.kind != a.kind) {
      return InvalidArgument("collective #", step, ": rank ", q, " called ",
                             CollectiveKindName(static_cast<CollectiveKind>(b.kind)), " where rank 0 called ",
                             CollectiveKindName(static_cast<CollectiveKind>(a.kind)),
                             "; every rank must issue the same collectives in the same order");
    }
    if (b.dtype != a.dtype || b.count != a.count || b.op != a.op || b.root != a.root) {
      return InvalidArgument(CollectiveKindName(static_cast<CollectiveKind>(a.kind)), ": rank ", q,
                             " passed ", b.count, " ", DTypeName(b.dtype), " elements (op ", b.op,
                             ", root ", b.root, ") where rank 0 passed ", a.count, " ",
                             DTypeName(a.dtype), " (op ", a.op, ", root ", a.root,
                             "); the calls must match on every rank");
    }
  }
  return OkStatus();
}

Status ShmComm::RunCollective(const CollectiveArgs& args, const CommExec& ctx) {
  if (broken_) return BrokenError();
  const int n = num_ranks_;
  const auto es = static_cast<int64_t>(DTypeSize(args.dtype));
  const auto cap = static_cast<int64_t>(slot_bytes_) / es;
  // Elements of `count` handled per step.
  const int64_t per_step = args.kind == CollectiveKind::kReduceScatter ? cap / n : cap;
  RankState& me = rank_state(rank_);
  int64_t offset = 0;
  do {
    const uint64_t step = next_step_++;
    const int64_t c = std::min(per_step, args.count - offset);
    char* mine = slot(rank_, step);
    // 1. Write this rank's share into its slot and describe the call.
    switch (args.kind) {
      case CollectiveKind::kAllReduce:
      case CollectiveKind::kAllGather:
        ParallelCopy(mine, args.send + offset * es, c * es, ctx.parallel);
        break;
      case CollectiveKind::kBroadcast:
        if (rank_ == args.root) ParallelCopy(mine, args.send + offset * es, c * es, ctx.parallel);
        break;
      case CollectiveKind::kReduceScatter:
        for (int q = 0; q < n; ++q) {
          ParallelCopy(mine + q * c * es, args.send + (q * args.count + offset) * es, c * es,
                       ctx.parallel);
        }
        break;
    }
    me.kind = static_cast<int32_t>(args.kind);
    me.dtype = args.dtype;
    me.op = args.kind == CollectiveKind::kAllReduce || args.kind == CollectiveKind::kReduceScatter
                ? args.op
                : 0;
    me.root = args.kind == CollectiveKind::kBroadcast ? args.root : 0;
    me.count = args.count;
    TSR_KIT_RETURN_IF_ERROR(Barrier(false, step, BarrierLabel(args.kind, false), ctx));
    Status match = CheckCallsMatch(step);
    if (!match.ok()) {
      (void)Break(match.message());
      return match;
    }
    // 2. The middle: reduce this rank's slice, or read what is complete.
    switch (args.kind) {
      case CollectiveKind::kAllReduce: {
        const int64_t lo = c * rank_ / n, hi = c * (rank_ + 1) / n;
        std::vector<const char*> inputs(n);
        for (int q = 0; q < n; ++q) inputs[q] = slot(q, step) + lo * es;
        ReduceInto(args.dtype, args.op, inputs, mine + lo * es, hi - lo, ctx.parallel);
        break;
      }
      case CollectiveKind::kReduceScatter: {
        std::vector<const char*> inputs(n);
        for (int q = 0; q < n; ++q) inputs[q] = slot(q, step) + rank_ * c * es;
        ReduceInto(args.dtype, args.op, inputs, args.recv + offset * es, c, ctx.parallel);
        break;
      }
      case CollectiveKind::kAllGather:
        for (int q = 0; q < n; ++q) {
          ParallelCopy(args.recv + (q * args.count + offset) * es, slot(q, step), c * es,
                       ctx.parallel);
        }
        break;
      case CollectiveKind::kBroadcast:
        if (rank_ != args.root) {
          ParallelCopy(args.recv + offset * es, slot(args.root, step), c * es, ctx.parallel);
        }
        break;
    }
    TSR_KIT_RETURN_IF_ERROR(
        Barrier(true, step, BarrierLabel(args.kind, true), ctx));
    // 3. all_reduce: gather every rank's reduced slice.
    if (args.kind == CollectiveKind::kAllReduce) {
      for (int q = 0; q < n; ++q) {
        const int64_t lo = c * q / n, hi = c * (q + 1) / n;
        ParallelCopy(args.recv + (offset + lo) * es, slot(q, step) + lo * es, (hi - lo) * es,
                     ctx.parallel);
      }
    }
    offset += c;
  } while (offset < args.count);
  return OkStatus();
}

namespace {

// The header of one send/recv message in a channel.
struct MessageHeader {
  int32_t dtype;
  int32_t reserved;
  int64_t count;
};

}  // namespace

Status ShmComm::Send(int peer, const void* data, tsr_dtype dtype, int64_t count,
                     const CommExec& ctx) {
  if (broken_) return BrokenError();
  Channel& ch = channel(rank_, peer);
  char* ring = channel_data(rank_, peer);
  const uint64_t capacity = channel_bytes_;
  const MessageHeader mh{dtype, 0, count};
  const std::string what = StrCat("in send to rank ", peer, " for it to receive");
  auto put = [&](const char* src, uint64_t len) -> Status {
    uint64_t written = ch.written.load(std::memory_order_relaxed);
    while (len > 0) {
      TSR_KIT_RETURN_IF_ERROR(WaitUntil(
          [&] { return written - ch.read.load(std::memory_order_acquire) < capacity; },
          [&] { return std::vector<int>{peer}; }, what.c_str(), &ctx));
      const uint64_t space = capacity - (written - ch.read.load(std::memory_order_acquire));
      const uint64_t at = written % capacity;
      const uint64_t n = std::min({len, space, capacity - at});
      std::memcpy(ring + at, src, n);
      written += n;
      src += n;
      len -= n;
      ch.written.store(written, std::memory_order_release);
    }
    return OkStatus();
  };
  TSR_KIT_RETURN_IF_ERROR(put(reinterpret_cast<const char*>(&mh), sizeof(mh)));
  return put(static_cast<const char*>(data), static_cast<uint64_t>(count) * DTypeSize(dtype));
}

Status ShmComm::Recv(int peer, void* data, tsr_dtype dtype, int64_t count, const CommExec& ctx) {
  if (broken_) return BrokenError();
  Channel& ch = channel(peer, rank_);
  const char* ring = channel_data(peer, rank_);
  const uint64_t capacity = channel_bytes_;
  const std::string what = StrCat("in recv from rank ", peer, " for its send");
  auto take = [&](char* dst, uint64_t len) -> Status {
    uint64_t read = ch.read.load(std::memory_order_relaxed);
    while (len > 0) {
      TSR_KIT_RETURN_IF_ERROR(WaitUntil(
          [&] { return ch.written.load(std::memory_order_acquire) > read; },
          [&] { return std::vector<int>{peer}; }, what.c_str(), &ctx));
      const uint64_t avail = ch.written.load(std::memory_order_acquire) - read;
      const uint64_t at = read % capacity;
      const uint64_t n = std::min({len, avail, capacity - at});
      std::memcpy(dst, ring + at, n);
      read += n;
      dst += n;
      len -= n;
      ch.read.store(read, std::memory_order_release);
    }
    return OkStatus();
  };
  MessageHeader mh{};
  TSR_KIT_RETURN_IF_ERROR(take(reinterpret_cast<char*>(&mh), sizeof(mh)));
  if (mh.dtype != dtype || mh.count != count) {
    const Status mismatch = InvalidArgument(
        "recv on rank ", rank_, " expected ", count, " ", DTypeName(dtype), " elements from rank ",
        peer, ", but the matching send carried ", mh.count, " ", DTypeName(mh.dtype),
        "; sends and receives must pair up in order with equal tensors");
    (void)Break(mismatch.message());
    return mismatch;
  }
  return take(static_cast<char*>(data), static_cast<uint64_t>(count) * DTypeSize(dtype));
}

}  // namespace tessera::plugin_kit
