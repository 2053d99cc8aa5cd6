#include "engine/tp_protocol.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tessera::engine {
namespace {

constexpr uint32_t kMagic = 0x54505331;  // "TPS1"
constexpr uint64_t kMaxPayload = uint64_t{1} << 30;

struct Header {
  uint32_t magic;
  uint32_t type;
  uint64_t bytes;
};

class Writer {
 public:
  void I64(int64_t v) { Raw(&v, sizeof(v)); }
  void I32s(std::span<const int32_t> v) {
    I64(static_cast<int64_t>(v.size()));
    Raw(v.data(), v.size() * sizeof(int32_t));
  }
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const char*>(p);
    out.insert(out.end(), b, b + n);
  }
  std::vector<char> out;
};

class Reader {
 public:
  explicit Reader(const std::vector<char>& in) : in_(in) {}
  bool I64(int64_t* v) { return Raw(v, sizeof(*v)); }
  bool I32s(std::vector<int32_t>* v) {
    int64_t n = 0;
    if (!I64(&n) || n < 0 ||
        static_cast<uint64_t>(n) > (in_.size() - pos_) / sizeof(int32_t)) {
      return false;
    }
    v->resize(static_cast<size_t>(n));
    return Raw(v->data(), v->size() * sizeof(int32_t));
  }
  bool Raw(void* p, size_t n) {
    if (in_.size() - pos_ < n) return false;
    if (n > 0) std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  const std::vector<char>& in_;
  size_t pos_ = 0;
};

Status WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      return UnavailableError(fmt::format(
          "the tensor-parallel control channel closed while sending ({}); the "
          "worker rank exited",
          std::strerror(errno)));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return OkStatus();
}

// false at a clean end of stream before any byte.
StatusOr<bool> ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      return UnavailableError(fmt::format(
          "reading the tensor-parallel control channel: {}", std::strerror(errno)));
    }
    if (r == 0) {
      if (got == 0) return false;
      return UnavailableError("the tensor-parallel control channel closed mid-message");
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

// One write per message (a TCP channel then sends it as one segment).
Status Send(int fd, TpMessageType type, const std::vector<char>& payload) {
  const Header h{kMagic, static_cast<uint32_t>(type), payload.size()};
  std::vector<char> frame(sizeof(h) + payload.size());
  std::memcpy(frame.data(), &h, sizeof(h));
  if (!payload.empty()) std::memcpy(frame.data() + sizeof(h), payload.data(), payload.size());
  return WriteAll(fd, frame.data(), frame.size());
}

}  // namespace

model::Batch TpStep::batch() const {
  model::Batch b;
  b.all_logits = all_logits;
  b.device_tokens = device_tokens;
  for (const Sequence& s : sequences) {
    b.sequences.push_back({s.tokens, s.cached_len, s.pages, s.all_rows});
  }
  return b;
}

Status SendTpStep(int fd, const model::Batch& batch, int64_t sampled_rows) {
  Writer w;
  w.I64(static_cast<int64_t>(batch.sequences.size()));
  w.I64(sampled_rows);
  w.I64(batch.all_logits ? 1 : 0);
  for (const model::SequenceInput& s : batch.sequences) {
    w.I64(s.cached_len);
    w.I64(s.all_rows ? 1 : 0);
    w.I32s(s.tokens);
    w.I32s(s.pages);
  }
  w.I64(static_cast<int64_t>(batch.device_tokens.size()));
  for (const model::DeviceToken& t : batch.device_tokens) {
    w.I64(t.token);
    w.I64(t.source);
  }
  return Send(fd, TpMessageType::kStep, w.out);
}

Status SendTpShutdown(int fd) { return Send(fd, TpMessageType::kShutdown, {}); }

Status SendTpHello(int fd) { return Send(fd, TpMessageType::kHello, {}); }

Status SendTpReady(int fd, const std::string& description) {
  return SendTpText(fd, TpMessageType::kReady, description);
}

Status SendTpText(int fd, TpMessageType type, const std::string& text) {
  return Send(fd, type, std::vector<char>(text.begin(), text.end()));
}

StatusOr<TpMessage> ReceiveTpMessage(int fd) {
  Header h{};
  TSR_ASSIGN_OR_RETURN(bool any, ReadAll(fd, &h, sizeof(h)));
  if (!any) return UnavailableError("rank 0 closed the tensor-parallel control channel");
  if (h.magic != kMagic || h.bytes > kMaxPayload) {
    return DataLossError("the tensor-parallel control channel is out of step (bad header)");
  }
  std::vector<char> payload(h.bytes);
  if (h.bytes > 0) {
    TSR_ASSIGN_OR_RETURN(bool got, ReadAll(fd, payload.data(), payload.size()));
    if (!got) return UnavailableError("the control channel closed mid-message");
  }
  TpMessage m;
  m.type = static_cast<TpMessageType>(h.type);
  if (m.type == TpMessageType::kShutdown || m.type == TpMessageType::kHello) return m;
  if (m.type == TpMessageType::kReady || m.type == TpMessageType::kJoin ||
      m.type == TpMessageType::kJoined) {
    m.text.assign(payload.begin(), payload.end());
    return m;
  }
  if (m.type != TpMessageType::kStep) {
    return DataLossError(fmt::format("unknown tensor-parallel message type {}", h.type));
  }
  Reader r(payload);
  int64_t n = 0, all = 0, nd = 0;
  bool ok = r.I64(&n) && r.I64(&m.step.sampled_rows) && r.I64(&all) && n >= 0;
  m.step.all_logits = all != 0;
  for (int64_t i = 0; ok && i < n; ++i) {
    TpStep::Sequence s;
    int64_t all_rows = 0;
    ok = r.I64(&s.cached_len) && r.I64(&all_rows) && r.I32s(&s.tokens) &&
         r.I32s(&s.pages);
    s.all_rows = all_rows != 0;
    m.step.sequences.push_back(std::move(s));
  }
  ok = ok && r.I64(&nd) && nd >= 0;
  for (int64_t i = 0; ok && i < nd; ++i) {
    model::DeviceToken t;
    ok = r.I64(&t.token) && r.I64(&t.source);
    m.step.device_tokens.push_back(t);
  }
  if (!ok || !r.done()) return DataLossError("a malformed tensor-parallel step message");
  return m;
}

}  // namespace tessera::engine
