// Network namespaces as hosts for end-to-end tests that need two machines
// (CI runs as root): TwoHosts makes two namespaces joined by a veth pair,
// InNetns moves the calling thread into one (children it spawns start
// there), Background runs a process (e.g. `ip netns exec NS tessera ...`)
// with its output in a log file.
//
// Thread-compatible: one object per test.
#ifndef TESSERA_TESTS_TESTING_NETWORK_NAMESPACES_H_
#define TESSERA_TESTS_TESTING_NETWORK_NAMESPACES_H_

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "testing/subprocess.h"

extern char** environ;

namespace tessera::testing {

// A background process with its output in a log file.
class Background {
 public:
  bool Start(const std::vector<std::string>& argv) {
    log_ = (std::filesystem::temp_directory_path() /
            ("tessera_node_" + std::to_string(getpid()) + "_" + std::to_string(count_++) +
             ".log"))
               .string();
    std::vector<std::string> args = argv;
    std::vector<char*> c;
    for (auto& a : args) c.push_back(a.data());
    c.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 2, 1);
    const int rc = posix_spawnp(&pid_, args[0].c_str(), &actions, nullptr, c.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) pid_ = -1;
    return rc == 0;
  }
  // The exit status (as waitpid's), or -1 when it still ran after
  // `timeout_s` (then it is killed).
  int Wait(double timeout_s) {
    if (pid_ < 0) return exit_;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int st = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        exit_ = st;
        return st;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Kill();
    return -1;
  }
  void Kill() {
    if (pid_ < 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }
  std::string log() const { return ReadFile(log_); }
  ~Background() { Kill(); }

 private:
  static inline int count_ = 0;
  pid_t pid_ = -1;
  int exit_ = -1;
  std::string log_;
};

// Two namespaces "<prefix>a" (10.231.X.1) and "<prefix>b" (10.231.X.2)
// joined by a veth pair; deleted (with the pair) on destruction.
class TwoHosts {
 public:
  bool Create(std::string* why) {
    const int x = getpid() % 250 + 1;
    prefix_ = "tsrn" + std::to_string(getpid());
    a_addr_ = "10.231." + std::to_string(x) + ".1";
    b_addr_ = "10.231." + std::to_string(x) + ".2";
    const std::string a = prefix_ + "a", b = prefix_ + "b";
    va_ = "tv" + std::to_string(getpid()) + "a";
    vb_ = "tv" + std::to_string(getpid()) + "b";
    const std::string& va = va_;
    const std::string& vb = vb_;
    const std::vector<std::string> steps = {
        "ip netns add " + a,
        "ip netns add " + b,
        "ip link add " + va + " type veth peer name " + vb,
        "ip link set " + va + " netns " + a,
        "ip link set " + vb + " netns " + b,
        "ip -n " + a + " addr add " + a_addr_ + "/24 dev " + va,
        "ip -n " + b + " addr add " + b_addr_ + "/24 dev " + vb,
        "ip -n " + a + " link set " + va + " up",
        "ip -n " + b + " link set " + vb + " up",
        "ip -n " + a + " link set lo up",
        "ip -n " + b + " link set lo up",
    };
    created_ = true;
    for (const std::string& step : steps) {
      auto r = RunShell(step);
      if (r.exit_code != 0) {
        *why = step + ": " + r.err;
        return false;
      }
    }
    return true;
  }
  ~TwoHosts() {
    if (!created_) return;
    RunShell("ip netns del " + prefix_ + "a 2>/dev/null", false);
    RunShell("ip netns del " + prefix_ + "b 2>/dev/null", false);
  }
  std::string a() const { return prefix_ + "a"; }
  std::string b() const { return prefix_ + "b"; }
  const std::string& a_addr() const { return a_addr_; }
  const std::string& b_addr() const { return b_addr_; }
  // The veth ends (network devices) in a and b.
  const std::string& a_dev() const { return va_; }
  const std::string& b_dev() const { return vb_; }

 private:
  bool created_ = false;
  std::string prefix_, a_addr_, b_addr_, va_, vb_;
};

// Moves the calling thread into network namespace `name` until destroyed
// (a child it spawns starts there too; other threads stay where they are).
class InNetns {
 public:
  explicit InNetns(const std::string& name) {
    home_ = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    const int fd = open(("/var/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    ok_ = home_ >= 0 && fd >= 0 && setns(fd, CLONE_NEWNET) == 0;
    if (fd >= 0) close(fd);
  }
  ~InNetns() {
    if (home_ >= 0) {
      setns(home_, CLONE_NEWNET);
      close(home_);
    }
  }
  bool ok() const { return ok_; }

 private:
  int home_ = -1;
  bool ok_ = false;
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_NETWORK_NAMESPACES_H_
