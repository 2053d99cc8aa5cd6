// ServerProcess: a real `tessera serve` child process for end-to-end tests.
// Start() launches the binary with the given flags on --port 0, reads the
// port from its "listening on http://HOST:PORT" log line and waits until
// GET /health answers 200. The destructor (or Stop) sends SIGTERM and
// waits for the exit code (SIGKILL after a timeout). The server's log goes
// to a temporary file (log()), shown by tests on failure.
//
// Clients: Get/Post return status + body; PostStream reads an SSE response
// and returns its raw text (optionally stopping after `max_events` events,
// which closes the connection mid-stream like a client that goes away).
// Thread-compatible: one ServerProcess per test; the client calls may run
// on many threads at once (each uses its own connection).
#ifndef TESSERA_TESTS_TESTING_SERVER_PROCESS_H_
#define TESSERA_TESTS_TESTING_SERVER_PROCESS_H_

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace tessera::testing {

struct HttpResult {
  int status = -1;  // -1: no answer (connection failed)
  std::string body;
};

class ServerProcess {
 public:
  ServerProcess() = default;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() { Stop(); }

  // Launches `binary serve <args...> --port 0`. False (with log()) when the
  // server exits or does not become healthy within `timeout_s`.
  bool Start(const std::string& binary, const std::vector<std::string>& args,
             double timeout_s = 60.0) {
    return StartCommand(binary, "serve", args, timeout_s);
  }
  // The same for another subcommand that logs "listening on http://..."
  // and answers GET /health (`tessera router`).
  bool StartCommand(const std::string& binary, const std::string& subcommand,
                    const std::vector<std::string>& args,
                    double timeout_s = 60.0) {
    static int counter = 0;
    log_path_ = (std::filesystem::temp_directory_path() /
                 ("tessera_serve_" + std::to_string(::getpid()) + "_" +
                  std::to_string(counter++) + ".log"))
                    .string();
    std::vector<std::string> argv = {binary, subcommand};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--port");
    argv.push_back("0");
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 2, 1);
    const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr,
                               cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      return false;
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(int(timeout_s * 1000));
    const std::regex listening("listening on http://([0-9.]+):([0-9]+)");
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        pid_ = -1;
        return false;
      }
      std::smatch m;
      const std::string text = log();
      if (port_ == 0 && std::regex_search(text, m, listening)) {
        host_ = m[1];  // --host, when the test gave one
        port_ = std::stoi(m[2]);
      }
      if (port_ != 0 && Get("/health").status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // SIGTERM and wait; returns the exit code (-1 if killed by a signal).
  int Stop(double timeout_s = 60.0) {
    if (pid_ <= 0) return exit_code_;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(int(timeout_s * 1000));
    int status = 0;
    while (true) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    pid_ = -1;
    return exit_code_;
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string base_url() const {
    return "http://" + host_ + ":" + std::to_string(port_);
  }
  std::string log() const {
    std::ifstream in(log_path_);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  HttpResult Get(const std::string& path,
                 const httplib::Headers& headers = {}) const {
    httplib::Client client(host_, port_);
    client.set_read_timeout(120, 0);
    auto res = client.Get(path.c_str(), headers);
    if (!res) return {};
    return {res->status, res->body};
  }

  HttpResult Post(const std::string& path, const std::string& body,
                  const httplib::Headers& headers = {}) const {
    httplib::Client client(host_, port_);
    client.set_read_timeout(300, 0);
    auto res = client.Post(path.c_str(), headers, body, "application/json");
    if (!res) return {};
    return {res->status, res->body};
  }

  // POSTs and reads the SSE body. With max_events > 0 the client hangs up
  // after that many "data:" events.
  HttpResult PostStream(const std::string& path, const std::string& body,
                        int max_events = 0) const {
    httplib::Client client(host_, port_);
    client.set_read_timeout(300, 0);
    HttpResult out;
    int events = 0;
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body;
    req.set_header("Content-Type", "application/json");
    req.response_handler = [&](const httplib::Response& r) {
      out.status = r.status;
      return true;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t,
                               uint64_t) {
      out.body.append(data, n);
      size_t pos = 0;
      events = 0;
      while ((pos = out.body.find("data: ", pos)) != std::string::npos) {
        ++events;
        pos += 6;
      }
      return max_events <= 0 || events < max_events;
    };
    auto res = client.send(req);
    (void)res;
    return out;
  }

 private:
  pid_t pid_ = -1;
  std::string host_ = "127.0.0.1";  // where it listens (its log says)
  int port_ = 0;
  int exit_code_ = -1;
  std::string log_path_;
};

// The JSON payloads of an SSE body ("data: {...}" lines), [DONE] excluded.
inline std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("data: ", 0) == 0 && line != "data: [DONE]") {
      out.push_back(line.substr(6));
    }
  }
  return out;
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_SERVER_PROCESS_H_
