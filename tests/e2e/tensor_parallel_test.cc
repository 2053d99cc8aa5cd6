// Tensor parallelism end to end: `tessera serve --tp-size 2` (rank 0 plus a
// `tp-worker` process it starts) answers the stories260k goldens, alone and
// under concurrent streams; `generate --tp-size 2` gives --tp-size 1's
// tokens; a worker killed while serving fails the in-flight request, turns
// /health 503 and makes the server exit 1 naming the rank, leaving no
// process behind; sizes that do not divide the model are refused; and
// `bench-comm --smoke` prints its table as JSON.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "testing/fixtures.h"
#include "testing/goldens.h"
#include "testing/platforms.h"
#include "testing/server_process.h"
#include "testing/subprocess.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::ReadJsonLines;
using testing::RunShell;
using testing::ServerProcess;
using testing::ShellQuote;

constexpr const char* kBin = TSR_TESSERA_BIN;

// The pids whose parent is `parent` (from /proc).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 4 > stat.size()) continue;
    std::istringstream rest(stat.substr(paren + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (ppid == parent && state != 'Z') out.push_back(std::stoi(name));
  }
  return out;
}

bool ProcessAlive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// Waits up to `seconds` for a worker (a child of the server) to appear.
std::vector<pid_t> WaitForWorkers(pid_t server, size_t n, double seconds) {
  std::vector<pid_t> kids;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    kids = ChildrenOf(server);
    if (kids.size() >= n) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return kids;
}

#define START_SERVER(server, ...) \
  ASSERT_TRUE((server).Start(kBin, __VA_ARGS__)) << (server).log()

TEST(TensorParallelServeTest, StoriesGreedyEqualsGoldensWithTwoRanks) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  const std::vector<Json> cases = ReadJsonLines(golden);
  ASSERT_FALSE(cases.empty());
  ServerProcess server;
  START_SERVER(server, {"--model-path", dir, "--tp-size", "2", "--log-interval", "0"});
  const std::vector<pid_t> workers = WaitForWorkers(server.pid(), 1, 10);
  ASSERT_EQ(workers.size(), 1u) << "one tp-worker process";

  auto info = server.Get("/server_info");
  ASSERT_EQ(info.status, 200);
  EXPECT_EQ(Json::parse(info.body)["tp_size"], 2) << info.body;

  auto request = [](const Json& c) {
    return Json{{"input_ids", c["prompt_ids"]},
                {"sampling_params", {{"max_new_tokens", 64}, {"temperature", 0}}}};
  };
  for (const Json& c : cases) {
    auto res = server.Post("/generate", request(c).dump());
    ASSERT_EQ(res.status, 200) << res.body;
    const auto ids = Json::parse(res.body)["output_ids"].get<std::vector<int>>();
    ASSERT_NO_FATAL_FAILURE(testing::ExpectGoldenPrefix(ids, c, c["prompt"].dump()));
  }
  // Concurrent requests batch together (and decode overlapped) on both ranks.
  std::vector<std::future<testing::HttpResult>> streams;
  for (int i = 0; i < 8; ++i) {
    const Json body = request(cases[i % cases.size()]);
    streams.push_back(std::async(std::launch::async,
                                 [&server, body] { return server.Post("/generate", body.dump()); }));
  }
  for (int i = 0; i < 8; ++i) {
    auto res = streams[i].get();
    ASSERT_EQ(res.status, 200) << res.body;
    const Json& c = cases[i % cases.size()];
    const auto ids = Json::parse(res.body)["output_ids"].get<std::vector<int>>();
    ASSERT_NO_FATAL_FAILURE(
        testing::ExpectGoldenPrefix(ids, c, "request " + std::to_string(i)));
  }
  EXPECT_EQ(server.Stop(), 0) << server.log();
  for (pid_t w : workers) EXPECT_FALSE(ProcessAlive(w)) << "worker " << w << " outlived rank 0";
}

TEST(TensorParallelServeTest, AKilledWorkerFailsRequestsAndStopsTheServer) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  ServerProcess server;
  START_SERVER(server, {"--model-path", dir, "--tp-size", "2", "--log-interval", "0",
                        "--shutdown-grace", "5"});
  const std::vector<pid_t> workers = WaitForWorkers(server.pid(), 1, 10);
  ASSERT_EQ(workers.size(), 1u);
  const pid_t server_pid = server.pid();
  // A long generation in flight when the worker dies.
  auto inflight = std::async(std::launch::async, [&server] {
    return server.Post("/generate",
                       Json{{"input_ids", {1, 400, 500}},
                            {"sampling_params",
                             {{"max_new_tokens", 100000}, {"ignore_eos", true}}}}
                           .dump());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(kill(workers[0], SIGKILL), 0);
  auto res = inflight.get();
  EXPECT_NE(res.status, 200) << "the in-flight request must fail: " << res.body;
  // The server goes down on its own, naming the rank.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool saw_unhealthy = false;
  while (ProcessAlive(server_pid) && std::chrono::steady_clock::now() < deadline) {
    auto health = server.Get("/health");
    if (health.status == 503) saw_unhealthy = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(ProcessAlive(server_pid)) << "the server did not exit";
  EXPECT_EQ(server.Stop(), 1) << server.log();
  EXPECT_NE(server.log().find("tensor-parallel rank 1 exited"), std::string::npos)
      << server.log();
  (void)saw_unhealthy;  // the window can be shorter than one poll
  for (pid_t w : workers) EXPECT_FALSE(ProcessAlive(w));
}

TEST(TensorParallelCliTest, GenerateWithTwoRanksGivesTheTokensOfOne) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const std::string base = std::string(kBin) + " generate --model-path " + ShellQuote(dir) +
                           " --prompt 'Once upon a time' --max-new-tokens 24 --temperature 0"
                           " --json";
  auto one = RunShell(base);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto two = RunShell(base + " --tp-size 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(Json::parse(two.out)["output_ids"], Json::parse(one.out)["output_ids"]) << two.out;
}

#ifdef TSR_HAVE_OPENCL_PLUGIN
// The OpenCL plugin's collectives stage through host memory into the same
// shared-memory transport; both ranks share the one PoCL device here
// (--gpu-id-step 0), and decode runs eagerly (no graph can record a host
// step). Greedy tokens equal the goldens' stable prefix, as on cpu.
TEST(TensorParallelCliTest, OpenClWithTwoRanksGivesTheGoldens) {
  TSR_REQUIRE_PLATFORM(kBin, "opencl");
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  const Json c = ReadJsonLines(golden).front();
  auto r = RunShell(std::string(kBin) + " generate --platform opencl --model-path " +
                    ShellQuote(dir) + " --prompt " + ShellQuote(c["prompt"].get<std::string>()) +
                    " --max-new-tokens 32 --temperature 0 --json --tp-size 2 --gpu-id-step 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json out = Json::parse(r.out);
  ASSERT_EQ(out["prompt_ids"], c["prompt_ids"]);
  const auto got = out["output_ids"].get<std::vector<int>>();
  const auto expected = c["greedy_output_ids"].get<std::vector<int>>();
  const size_t stable = std::min<size_t>(c["stable_prefix"].get<size_t>(), 32);
  for (size_t i = 0; i < stable && i < expected.size(); ++i) {
    ASSERT_LT(i, got.size());
    EXPECT_EQ(got[i], expected[i]) << "step " << i;
  }
}
#endif

// A synthetic interconnect: 16 cpu virtual devices as a 4x4 torus numbered
// by column, where only the chips of one row can form a ring (the cpu
// plugin's fabric_rings option). With the default rank order a TP group of
// 4 takes devices 0..3 — a column, spanning every row — and the fabric
// refuses it on every rank; --rank-order 0,4,8,12 (or the same in a file)
// keeps the group on row 0.
TEST(TensorParallelCliTest, RankOrderKeepsATpGroupOnOneRingOfASyntheticTorus) {
  const std::string dir = (fs::temp_directory_path() /
                           ("tessera_tp_torus_" + std::to_string(getpid())))
                              .string();
  auto made = RunShell(std::string(kBin) + " make-model --arch qwen3 --preset tiny --out " +
                       ShellQuote(dir) + " --force");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string env =
      "TESSERA_CPU_DEVICES=16 "
      "TESSERA_PLUGIN_OPTIONS='fabric_rings=0+4+8+12;1+5+9+13;2+6+10+14;3+7+11+15' ";
  const std::string gen = env + std::string(kBin) + " generate --model-path " + ShellQuote(dir) +
                          " --prompt hi --max-new-tokens 4 --temperature 0 --json --tp-size 4";
  auto refused = RunShell(gen);
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.err.find("the fabric cannot route collectives between these devices"),
            std::string::npos)
      << refused.err;
  auto row = RunShell(gen + " --rank-order 0,4,8,12");
  EXPECT_EQ(row.exit_code, 0) << row.err;
  const std::string order_file = dir + "/rank_order.txt";
  std::ofstream(order_file) << "0\n4\n8\n12\n";
  auto from_file = RunShell(gen + " --rank-order " + ShellQuote(order_file));
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  if (row.exit_code == 0 && from_file.exit_code == 0) {
    EXPECT_EQ(Json::parse(from_file.out)["output_ids"], Json::parse(row.out)["output_ids"]);
  }
  auto bad = RunShell(gen + " --rank-order 0,4,4,12");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("lists slot 4 twice"), std::string::npos) << bad.err;
  fs::remove_all(dir);
}

TEST(TensorParallelCliTest, SizesThatDoNotDivideTheModelAreRefused) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  auto r = RunShell(std::string(kBin) + " generate --model-path " + ShellQuote(dir) +
                    " --prompt hi --max-new-tokens 2 --tp-size 3");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--tp-size 3 does not divide"), std::string::npos) << r.err;
}

TEST(TensorParallelCliTest, AWorkerThatCannotStartStopsStartUpWithItsOwnMessage) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  // One virtual device: rank 1's device 1 does not exist in its process.
  auto r = RunShell("TESSERA_CPU_DEVICES=1 " + std::string(kBin) + " generate --model-path " +
                    ShellQuote(dir) + " --prompt hi --max-new-tokens 2 --tp-size 2");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("tensor-parallel rank 1: device 1 does not exist"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("tensor-parallel rank 1 exited (exit code 2)"), std::string::npos)
      << r.err;
}

TEST(TensorParallelCliTest, DoctorTpRunsTheCrossProcessSmokeOrSaysWhyNot) {
  auto ok = RunShell(std::string(kBin) + " doctor --tp 2 --json --platform cpu");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const Json j = Json::parse(ok.out);
  EXPECT_EQ(j["tp"]["ranks"], 2);
  EXPECT_GT(j["tp"]["all_reduce_4k_us"].get<double>(), 0);
  EXPECT_GT(j["tp"]["busbw_vs_memcpy"].get<double>(), 0);
#ifdef TSR_HAVE_OPENCL_PLUGIN
  // The OpenCL plugin's host-staged collectives (both ranks on its device).
  auto cl = RunShell(std::string(kBin) + " doctor --tp 2 --platform opencl");
  if (cl.exit_code != 2) {  // 2: no OpenCL device here
    EXPECT_EQ(cl.exit_code, 0) << cl.out << cl.err;
    EXPECT_NE(cl.out.find("cross-process collectives: 2 rank processes"), std::string::npos)
        << cl.out;
  }
#endif
}

TEST(BenchCommTest, SmokePrintsEveryOpAndTheMemcpyReference) {
  auto r = RunShell(std::string(kBin) + " bench-comm --smoke --json --tp-size 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["tp_size"], 2);
  EXPECT_GT(j["memcpy_gbps"].get<double>(), 0);
  EXPECT_GT(j["all_reduce_4k_us"].get<double>(), 0);
  EXPECT_GT(j["busbw_vs_memcpy"].get<double>(), 0);
  int ops[3] = {0, 0, 0};
  for (const Json& row : j["results"]) {
    EXPECT_GT(row["busbw_gbps"].get<double>(), 0) << row.dump();
    const std::string op = row["op"];
    ops[op == "all_reduce" ? 0 : op == "all_gather" ? 1 : 2]++;
  }
  EXPECT_EQ(ops[0], 6);  // 1 KiB .. 1 MiB by 4
  EXPECT_EQ(ops[1], 6);
  EXPECT_EQ(ops[2], 6);
}

}  // namespace
}  // namespace tessera
