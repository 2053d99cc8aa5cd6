#include "kit/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace tessera::plugin_kit {
namespace {

constexpr uint8_t kSet = 1, kGet = 2, kCheck = 3;
constexpr uint32_t kMaxKeyBytes = 4096;
constexpr uint64_t kMaxValueBytes = uint64_t{1} << 20;

bool WriteAll(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

void SetTimeouts(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Resolves a numeric host and port into a socket address.
bool Resolve(const std::string& host, uint16_t port, sockaddr_storage* addr, socklen_t* len) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    return false;
  }
  std::memcpy(addr, found->ai_addr, found->ai_addrlen);
  *len = found->ai_addrlen;
  freeaddrinfo(found);
  return true;
}

class StoreServer {
 public:
  static Status Start(const std::string& host, std::unique_ptr<StoreServer>* out) {
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (!Resolve(host, 0, &addr, &len)) {
      return Status(TSR_ERR_DEVICE, StrCat("the collectives' rendezvous address '", host,
                                           "' is not a numeric IP address"));
    }
    const int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status(TSR_ERR_DEVICE, StrCat("socket(): ", std::strerror(errno)));
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 128) != 0) {
      const int e = errno;
      close(fd);
      return Status(TSR_ERR_DEVICE, StrCat("the collectives' rendezvous store cannot listen on ",
                                           host, ": ", std::strerror(e)));
    }
    sockaddr_storage bound{};
    socklen_t blen = sizeof(bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
    const uint16_t port = ntohs(bound.ss_family == AF_INET6
                                    ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                    : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    int wake[2];
    if (pipe2(wake, O_CLOEXEC) != 0) {
      close(fd);
      return Status(TSR_ERR_DEVICE, StrCat("pipe(): ", std::strerror(errno)));
    }
    out->reset(new StoreServer(host, port, fd, wake[0], wake[1]));
    (*out)->thread_ = std::thread([s = out->get()] { s->Serve(); });
    return OkStatus();
  }

  ~StoreServer() {
    const char byte = 0;
    (void)!write(wake_write_, &byte, 1);
    if (thread_.joinable()) thread_.join();
    close(listen_fd_);
    close(wake_read_);
    close(wake_write_);
  }

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }

 private:
  StoreServer(std::string host, uint16_t port, int listen_fd, int wake_read, int wake_write)
      : host_(std::move(host)),
        port_(port),
        listen_fd_(listen_fd),
        wake_read_(wake_read),
        wake_write_(wake_write) {}

  void Serve() {
    std::vector<int> clients;
    for (;;) {
      std::vector<pollfd> fds = {{wake_read_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      for (int c : clients) fds.push_back({c, POLLIN, 0});
      if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
      if (fds[0].revents != 0) break;
      std::vector<int> keep;
      if (fds[1].revents & POLLIN) {
        const int c = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          SetTimeouts(c, std::chrono::seconds(5));
          keep.push_back(c);
        }
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0 || Handle(fds[i].fd)) {
          keep.push_back(fds[i].fd);
        } else {
          close(fds[i].fd);
        }
      }
      clients = std::move(keep);
    }
    for (int c : clients) close(c);
  }

  // One request; false when the client is gone or spoke nonsense.
  bool Handle(int fd) {
    uint8_t op = 0;
    uint32_t key_bytes = 0;
    if (!ReadAll(fd, &op, 1) || !ReadAll(fd, &key_bytes, 4) || key_bytes > kMaxKeyBytes) {
      return false;
    }
    std::string key(key_bytes, '\0');
    if (!ReadAll(fd, key.data(), key_bytes)) return false;
    if (op == kSet) {
      uint64_t value_bytes = 0;
      if (!ReadAll(fd, &value_bytes, 8) || value_bytes > kMaxValueBytes) return false;
      std::vector<char> value(value_bytes);
      if (!ReadAll(fd, value.data(), value.size())) return false;
      values_[key] = std::move(value);
      const uint8_t ok = 1;
      return WriteAll(fd, &ok, 1);
    }
    auto it = values_.find(key);
    const uint8_t present = it != values_.end() ? 1 : 0;
    if (op == kCheck) return WriteAll(fd, &present, 1);
    if (op != kGet) return false;
    const uint64_t bytes = present ? it->second.size() : 0;
    return WriteAll(fd, &present, 1) && WriteAll(fd, &bytes, 8) &&
           (bytes == 0 || WriteAll(fd, it->second.data(), bytes));
  }

  const std::string host_;
  const uint16_t port_;
  const int listen_fd_;
  const int wake_read_;
  const int wake_write_;
  std::thread thread_;
  std::map<std::string, std::vector<char>> values_;  // only the serving thread
};

std::mutex server_mu;
std::unique_ptr<StoreServer>& Server() {
  static std::unique_ptr<StoreServer> server;
  return server;
}

}  // namespace

Status EnsureStoreServer(std::string* host, uint16_t* port) {
  std::lock_guard<std::mutex> lock(server_mu);
  if (Server() == nullptr) {
    Status s = StoreServer::Start(*host, &Server());
    if (!s.ok()) return s;
  }
  *host = Server()->host();
  *port = Server()->port();
  return OkStatus();
}

void StopStoreServer() {
  std::lock_guard<std::mutex> lock(server_mu);
  Server().reset();
}

TcpStore::TcpStore(const std::string& host, uint16_t port, std::chrono::milliseconds timeout)
    : where_(StrCat(host, ":", port)), timeout_(timeout) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!Resolve(host, port, &addr, &len)) {
    throw std::runtime_error(StrCat("the rendezvous address ", where_, " is not numeric"));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  for (;;) {
    fd_ = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0) break;
    last = std::strerror(errno);
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error(StrCat("cannot reach rank 0's rendezvous store at ", where_,
                                      " within ", timeout.count(), " ms (", last,
                                      "): is rank 0 running, and is the address routable "
                                      "from this node (TESSERA_COMM_SOCKET_IFNAME)?"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  SetTimeouts(fd_, std::chrono::seconds(10));
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) close(fd_);
}

void TcpStore::ReadExact(void* data, size_t bytes) {
  if (!ReadAll(fd_, data, bytes)) {
    throw std::runtime_error(StrCat("the rendezvous store at ", where_, " went away"));
  }
}

void TcpStore::SendRequest(uint8_t op, const std::string& key, const std::vector<char>* value) {
  std::string frame;
  const uint32_t key_bytes = static_cast<uint32_t>(key.size());
  frame.append(reinterpret_cast<const char*>(&op), 1);
  frame.append(reinterpret_cast<const char*>(&key_bytes), 4);
  frame += key;
  if (value != nullptr) {
    const uint64_t value_bytes = value->size();
    frame.append(reinterpret_cast<const char*>(&value_bytes), 8);
    frame.append(value->data(), value->size());
  }
  if (!WriteAll(fd_, frame.data(), frame.size())) {
    throw std::runtime_error(StrCat("the rendezvous store at ", where_, " went away"));
  }
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  SendRequest(kSet, key, &data);
  uint8_t ok = 0;
  ReadExact(&ok, 1);
}

bool TcpStore::Check(const std::string& key) {
  SendRequest(kCheck, key, nullptr);
  uint8_t present = 0;
  ReadExact(&present, 1);
  return present != 0;
}

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  SendRequest(kGet, key, nullptr);
  uint8_t present = 0;
  uint64_t bytes = 0;
  ReadExact(&present, 1);
  ReadExact(&bytes, 8);
  std::vector<char> value(bytes);
  if (bytes > 0) ReadExact(value.data(), bytes);
  return value;
}

void TcpStore::wait(const std::vector<std::string>& keys,
                    const std::chrono::milliseconds& timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const std::string& key : keys) {
    while (!Check(key)) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error(StrCat("a peer rank did not publish its address (", key,
                                        ") in the rendezvous store at ", where_, " within ",
                                        timeout.count(), " ms: is every rank started?"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

}  // namespace tessera::plugin_kit
