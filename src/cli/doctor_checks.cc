#include "cli/doctor_checks.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "conformance/plugin_check.h"
#include "runtime/communicator.h"
#include "runtime/op_names.h"

namespace tessera::cli {
namespace {

using runtime::BufferPtr;
using runtime::Device;
using runtime::StreamPtr;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

// Runs one f32 op on device 0 and compares its single output with `want`.
class OpRunner {
 public:
  explicit OpRunner(runtime::Runtime& rt) : rt_(rt) {}

  OpCheck Run(tsr_op_id op, const std::vector<std::vector<float>>& inputs,
              const std::vector<std::vector<int64_t>>& shapes,
              const std::vector<int64_t>& out_shape,
              const std::vector<float>& want, const void* params,
              size_t params_size) {
    OpCheck check;
    check.op = runtime::OpName(op);
    check.route =
        std::string(runtime::OpRouteName(rt_.dispatcher().Coverage(op)));
    Status s = RunImpl(op, inputs, shapes, out_shape, want, params, params_size,
                       &check);
    if (!s.ok()) {
      check.ok = false;
      check.error = s.message();
    }
    return check;
  }

 private:
  Status RunImpl(tsr_op_id op, const std::vector<std::vector<float>>& inputs,
                 const std::vector<std::vector<int64_t>>& shapes,
                 const std::vector<int64_t>& out_shape,
                 const std::vector<float>& want, const void* params,
                 size_t params_size, OpCheck* check) {
    Device& device = rt_.device(0);
    TSR_ASSIGN_OR_RETURN(StreamPtr stream, device.CreateStream());
    std::vector<BufferPtr> buffers;
    std::vector<tsr_tensor> in;
    for (size_t i = 0; i < inputs.size(); ++i) {
      TSR_ASSIGN_OR_RETURN(BufferPtr b, device.Allocate(inputs[i].size() * 4));
      TSR_RETURN_IF_ERROR(
          b->CopyFromHost(0, inputs[i].data(), inputs[i].size() * 4));
      in.push_back(b->View(TSR_DTYPE_F32, shapes[i]));
      buffers.push_back(std::move(b));
    }
    TSR_ASSIGN_OR_RETURN(BufferPtr y, device.Allocate(want.size() * 4));
    TSR_RETURN_IF_ERROR(y->Fill(0));
    tsr_tensor out = y->View(TSR_DTYPE_F32, out_shape);
    std::vector<tsr_dtype> dtypes(in.size() + 1, TSR_DTYPE_F32);
    TSR_ASSIGN_OR_RETURN(
        const runtime::ResolvedOp* resolved,
        rt_.dispatcher().Resolve(0, runtime::MakeSignature(op, 1, dtypes)));
    check->route = std::string(runtime::OpRouteName(resolved->route));
    TSR_RETURN_IF_ERROR(rt_.dispatcher().Launch(
        *resolved, *stream, in, std::span<const tsr_tensor>(&out, 1), params,
        params_size));
    TSR_RETURN_IF_ERROR(stream->Synchronize());
    std::vector<float> got(want.size());
    TSR_RETURN_IF_ERROR(y->CopyToHost(got.data(), 0, got.size() * 4));
    check->ok = true;
    for (size_t i = 0; i < want.size(); ++i) {
      double err = std::fabs(double(got[i]) - want[i]);
      check->max_abs_error = std::max(check->max_abs_error, err);
      if (!(err <= 1e-4 * (1.0 + std::fabs(want[i])))) {
        check->ok = false;
        check->error = fmt::format(
            "element {} is {} but the host computes {}; the {} kernel is "
            "wrong",
            i, got[i], want[i], check->route == "native" ? "plugin's" : "cpu");
        break;
      }
    }
    return OkStatus();
  }

  runtime::Runtime& rt_;
};

}  // namespace

CopyCheck RunCopyCheck(Device& device, uint64_t bytes) {
  CopyCheck check;
  check.device = device.Label();
  check.bytes = bytes;
  auto run = [&]() -> Status {
    TSR_ASSIGN_OR_RETURN(BufferPtr dev, device.AllocateUncached(bytes));
    // Pinned host memory when the plugin has it (what serving uses).
    BufferPtr pinned;
    std::vector<unsigned char> plain;
    unsigned char* host = nullptr;
    if (device.plugin().SupportsPinnedHost()) {
      auto p = device.AllocateUncached(bytes, TSR_MEM_PINNED_HOST);
      if (p.ok() && (*p)->host_pointer() != nullptr) {
        pinned = std::move(p).value();
        host = static_cast<unsigned char*>(pinned->host_pointer());
      }
    }
    if (host == nullptr) {
      plain.resize(bytes);
      host = plain.data();
    }
    for (uint64_t i = 0; i < bytes; ++i) host[i] = uint8_t(i * 131 + 7);
    std::vector<unsigned char> expect(host, host + bytes);
    std::vector<unsigned char> back(bytes);
    double best_h2d = 1e30, best_d2h = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      TSR_RETURN_IF_ERROR(dev->CopyFromHost(0, host, bytes));
      best_h2d = std::min(best_h2d, Seconds(t0));
      auto t1 = std::chrono::steady_clock::now();
      TSR_RETURN_IF_ERROR(dev->CopyToHost(back.data(), 0, bytes));
      best_d2h = std::min(best_d2h, Seconds(t1));
    }
    if (back != expect) {
      auto diff = std::mismatch(back.begin(), back.end(), expect.begin());
      return DataLossError(fmt::format(
          "the bytes read back differ from those written (first at byte {}); "
          "the plugin's copies are broken",
          diff.first - back.begin()));
    }
    check.h2d_gbps = double(bytes) / std::max(best_h2d, 1e-9) / 1e9;
    check.d2h_gbps = double(bytes) / std::max(best_d2h, 1e-9) / 1e9;
    return OkStatus();
  };
  Status s = run();
  check.ok = s.ok();
  if (!s.ok()) check.error = s.message();
  return check;
}

std::vector<OpCheck> RunOpChecks(runtime::Runtime& rt) {
  OpRunner runner(rt);
  std::vector<OpCheck> checks;

  // add: y = a + b over 16 elements.
  std::vector<float> a(16), b(16), sum(16);
  for (int i = 0; i < 16; ++i) {
    a[i] = 0.25f * i - 1;
    b[i] = 3.0f - 0.5f * i;
    sum[i] = a[i] + b[i];
  }
  checks.push_back(
      runner.Run(TSR_OP_ADD, {a, b}, {{16}, {16}}, {16}, sum, nullptr, 0));

  // rms_norm: x [2, 8], w [8], eps 1e-5.
  std::vector<float> x(16), w(8), norm(16);
  for (int i = 0; i < 16; ++i) x[i] = std::sin(0.7f * i) * 2;
  for (int i = 0; i < 8; ++i) w[i] = 0.5f + 0.125f * i;
  const float eps = 1e-5f;
  for (int r = 0; r < 2; ++r) {
    double ss = 0;
    for (int i = 0; i < 8; ++i) ss += double(x[r * 8 + i]) * x[r * 8 + i];
    double scale = 1.0 / std::sqrt(ss / 8 + eps);
    for (int i = 0; i < 8; ++i) {
      norm[r * 8 + i] = float(x[r * 8 + i] * scale * w[i]);
    }
  }
  tsr_rms_norm_params params{sizeof(tsr_rms_norm_params), eps};
  checks.push_back(runner.Run(TSR_OP_RMS_NORM, {x, w}, {{2, 8}, {8}}, {2, 8},
                              norm, &params, sizeof(params)));

  // linear: x [3, 4], w [5, 4] (row-major) -> y [3, 5].
  std::vector<float> lx(12), lw(20), ly(15);
  for (int i = 0; i < 12; ++i) lx[i] = 0.1f * i - 0.5f;
  for (int i = 0; i < 20; ++i) lw[i] = std::cos(0.3f * i);
  for (int t = 0; t < 3; ++t) {
    for (int n = 0; n < 5; ++n) {
      double acc = 0;
      for (int k = 0; k < 4; ++k) acc += double(lx[t * 4 + k]) * lw[n * 4 + k];
      ly[t * 5 + n] = float(acc);
    }
  }
  checks.push_back(runner.Run(TSR_OP_LINEAR, {lx, lw}, {{3, 4}, {5, 4}}, {3, 5},
                              ly, nullptr, 0));
  return checks;
}

AllReduceCheck RunAllReduceCheck(runtime::Runtime& rt) {
  AllReduceCheck check;
  check.devices = rt.num_devices();
  if (!rt.plugin().HasCollectives()) {
    check.status = "skipped";
    check.detail = "plugin has no collectives";
    return check;
  }
  constexpr int64_t kCount = 4096;  // f32 elements per rank
  const int n = rt.num_devices();
  auto run = [&]() -> Status {
    std::vector<int32_t> ordinals(n);
    for (int i = 0; i < n; ++i) ordinals[i] = i;
    TSR_ASSIGN_OR_RETURN(
        auto comms, runtime::Communicator::CreateAll(rt.plugin(), ordinals));
    std::vector<StreamPtr> streams(n);
    std::vector<BufferPtr> send(n), recv(n);
    for (int r = 0; r < n; ++r) {
      TSR_ASSIGN_OR_RETURN(streams[r], rt.device(r).CreateStream());
      TSR_ASSIGN_OR_RETURN(send[r], rt.device(r).Allocate(kCount * 4));
      TSR_ASSIGN_OR_RETURN(recv[r], rt.device(r).Allocate(kCount * 4));
      std::vector<float> values(kCount);
      for (int64_t i = 0; i < kCount; ++i) values[i] = float((r + 1) * (i % 7));
      TSR_RETURN_IF_ERROR(send[r]->CopyFromHost(0, values.data(), kCount * 4));
    }
    // One thread per rank, as ranks run in serving.
    std::vector<Status> results(n);
    std::vector<std::thread> threads;
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        tsr_tensor s = send[r]->View(TSR_DTYPE_F32, {kCount});
        tsr_tensor d = recv[r]->View(TSR_DTYPE_F32, {kCount});
        results[r] = comms[r]->AllReduce(*streams[r], s, d, TSR_REDUCE_SUM);
        if (results[r].ok()) results[r] = streams[r]->Synchronize();
      });
    }
    for (auto& t : threads) t.join();
    double seconds = Seconds(t0);
    for (const Status& s : results) TSR_RETURN_IF_ERROR(s);
    const float ranks_sum = float(n * (n + 1) / 2);
    for (int r = 0; r < n; ++r) {
      std::vector<float> got(kCount);
      TSR_RETURN_IF_ERROR(recv[r]->CopyToHost(got.data(), 0, kCount * 4));
      for (int64_t i = 0; i < kCount; ++i) {
        float want = ranks_sum * float(i % 7);
        if (got[i] != want) {
          return DataLossError(fmt::format(
              "rank {} element {} is {}, expected {}", r, i, got[i], want));
        }
      }
    }
    check.detail = fmt::format("sum of {} KiB over {} device(s) in {:.2f} ms",
                               kCount * 4 / 1024, n, seconds * 1e3);
    return OkStatus();
  };
  Status s = run();
  check.status = s.ok() ? "passed" : "failed";
  if (!s.ok()) check.detail = s.message();
  return check;
}

namespace {

// Runs this binary with `args`, collecting its stdout (stderr goes to
// /dev/null); kills it after `timeout_s`. Returns the wait status.
StatusOr<int> RunSelf(const std::vector<std::string>& args, double timeout_s,
                      std::string* out) {
  std::vector<std::string> strings = {"/proc/self/exe"};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return InternalError(fmt::format("pipe() failed: {}", std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return InternalError(fmt::format("fork() failed: {}", std::strerror(errno)));
  }
  if (pid == 0) {  // only async-signal-safe calls until exec
    dup2(fds[1], STDOUT_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout_s);
  char buf[4096];
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready <= 0) continue;  // EINTR or the deadline: the loop decides
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return UnavailableError(
        fmt::format("did not finish within {:.0f} s", timeout_s));
  }
  return status;
}

}  // namespace

QuickConformance RunQuickConformance(
    const std::string& path, const std::vector<runtime::PluginOption>& options) {
  constexpr double kTimeoutS = 120;
  QuickConformance q;
  const std::string joined = runtime::FormatPluginOptions(options);
  std::vector<std::string> args = {"plugin-check", path, "--quick", "--json"};
  if (!joined.empty()) {
    args.push_back("--options");
    args.push_back(joined);
  }
  q.command = fmt::format("tessera plugin-check {}{}", path,
                          joined.empty() ? "" : " --options " + joined);
  const auto start = std::chrono::steady_clock::now();
  std::string out;
  auto status = RunSelf(args, kTimeoutS, &out);
  q.seconds = Seconds(start);
  if (!status.ok()) {
    q.status = "failed";
    q.detail = fmt::format("plugin-check --quick {}", status.status().message());
    return q;
  }
  if (WIFEXITED(*status) &&
      WEXITSTATUS(*status) == conformance::kExitNoHardware) {
    q.detail = "the plugin reports no hardware to the kit (probe() returned 0)";
    return q;
  }
  auto doc = nlohmann::json::parse(out, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("checks")) {
    q.status = "failed";
    q.detail = WIFSIGNALED(*status)
                   ? fmt::format("plugin-check --quick died on signal {}",
                                 WTERMSIG(*status))
                   : fmt::format("plugin-check --quick exited {} without a "
                                 "report",
                                 WIFEXITED(*status) ? WEXITSTATUS(*status) : -1);
    return q;
  }
  for (const auto& check : doc["checks"]) {
    const std::string st = check.value("status", "");
    if (st == "pass") {
      ++q.passed;
    } else if (st == "skip") {
      ++q.skipped;
    } else {
      ++q.failed;
      q.failures.emplace_back(check.value("name", "?"),
                              check.value("message", ""));
    }
  }
  q.status = q.failed > 0 ? "failed" : "passed";
  return q;
}

}  // namespace tessera::cli
