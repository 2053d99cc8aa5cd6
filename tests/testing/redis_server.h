// A real Redis server for tests: Debian's redis-server started on a free
// loopback port with persistence off, stopped (or killed, to test a Redis
// that goes away) by the test. scripts/setup.sh installs redis-server;
// TSR_REQUIRE_REDIS skips a test without it (fails under CI=true).
//
// Thread-compatible: one test thread drives one RedisServer.
#ifndef TESSERA_TESTS_TESTING_REDIS_SERVER_H_
#define TESSERA_TESTS_TESTING_REDIS_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "testing/fixtures.h"

namespace tessera::testing {

inline std::string RedisServerBinary() {
  for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

class RedisServer {
 public:
  RedisServer() = default;
  ~RedisServer() { Stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts redis-server and waits (up to 10 s) until it answers PING.
  // `port` 0 picks a free one; a fixed port lets a test restart a server
  // where clients expect it.
  bool Start(int port = 0) {
    const std::string binary = RedisServerBinary();
    if (binary.empty()) return false;
    port_ = port != 0 ? port : FreePort();
    if (port_ <= 0) return false;
    const std::string port_text = std::to_string(port_);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execl(binary.c_str(), binary.c_str(), "--port", port_text.c_str(),
              "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
              "--daemonize", "no", "--loglevel", "warning", "--dir",
              std::filesystem::temp_directory_path().c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (pid_ < 0) return false;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Ping()) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Stop();
    return false;
  }

  // SIGTERM (or SIGKILL with `kill`) and wait.
  void Stop(bool kill = false) {
    if (pid_ <= 0) return;
    ::kill(pid_, kill ? SIGKILL : SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  int port() const { return port_; }
  std::string url() const {
    return "redis://127.0.0.1:" + std::to_string(port_);
  }

 private:
  static int FreePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    int port = -1;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    ::close(fd);
    return port;
  }

  bool Ping() const {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    bool ok = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      const char ping[] = "PING\r\n";
      char buf[16] = {};
      if (::write(fd, ping, sizeof(ping) - 1) == sizeof(ping) - 1 &&
          ::read(fd, buf, sizeof(buf) - 1) > 0) {
        ok = std::strncmp(buf, "+PONG", 5) == 0;
      }
    }
    ::close(fd);
    return ok;
  }

  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace tessera::testing

// Starts `server` (a RedisServer) or skips the test when redis-server is
// not installed (fails under CI=true: scripts/setup.sh installs it).
#define TSR_REQUIRE_REDIS(server)                                            \
  if (::tessera::testing::RedisServerBinary().empty()) {                     \
    if (::tessera::testing::RunningUnderCi()) {                              \
      FAIL() << "redis-server is missing and CI=true; run scripts/setup.sh"; \
    }                                                                        \
    GTEST_SKIP() << "redis-server not installed; run scripts/setup.sh";      \
  }                                                                          \
  ASSERT_TRUE((server).Start()) << "redis-server did not start"

#endif  // TESSERA_TESTS_TESTING_REDIS_SERVER_H_
