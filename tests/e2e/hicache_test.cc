// `tessera serve --enable-hierarchical-cache` end to end on stories260k:
// real servers as child processes, a real redis-server started here.
//   - host tier: greedy outputs equal a device-only server while the
//     device pool is far smaller than the working set; host hits and bytes
//     on /metrics, tier usage on /server_info, /flush_cache?tier=...;
//   - two servers running at once share one Redis: B hits A's prefixes;
//   - file tier: `kill -9` while pages are being written, then a restart
//     on the same directory: every answer equals the device-only one and
//     the restarted server hits what was stored.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "testing/fixtures.h"
#include "testing/redis_server.h"
#include "testing/server_process.h"

namespace tessera {
namespace {

using Json = nlohmann::json;
using testing::ServerProcess;

constexpr const char* kBin = TSR_TESSERA_BIN;

#define START_SERVER(server, ...)                                  \
  ASSERT_TRUE((server).Start(kBin, __VA_ARGS__)) << (server).log()

// Multi-turn prompts: each round resends the conversation so far.
std::vector<std::string> Conversations(int n, int rounds) {
  const char* turns[] = {
      " Tom had a red ball and he liked to throw it high.",
      " One day the ball went over the fence into the garden.",
      " A kind old dog found it and brought it back to him.",
      " Tom was happy and they played together until the sun went down."};
  std::vector<std::string> out;
  for (int r = 0; r < rounds; ++r) {
    for (int c = 0; c < n; ++c) {
      std::string p = "Once upon a time, in a small town, lived child number " +
                      std::to_string(c) + ".";
      for (int t = 0; t <= r; ++t) p += turns[(t + c) % 4];
      out.push_back(p);
    }
  }
  return out;
}

struct Answer {
  std::vector<int> ids;
  int cached = 0;
};

Answer Generate(const ServerProcess& s, const std::string& prompt) {
  Json body = {{"text", prompt},
               {"sampling_params", {{"temperature", 0}, {"max_new_tokens", 8}}}};
  auto res = s.Post("/generate", body.dump());
  EXPECT_EQ(res.status, 200) << res.body;
  Json j = Json::parse(res.body, nullptr, false);
  Answer a;
  if (j.is_object() && j.contains("output_ids")) {
    a.ids = j["output_ids"].get<std::vector<int>>();
    a.cached = j["meta_info"]["cached_tokens"].get<int>();
  }
  return a;
}

double Metric(const ServerProcess& s, const std::string& name,
              const std::string& label) {
  auto res = s.Get("/metrics");
  std::regex re(name + "\\{" + label + "\\} ([0-9.e+-]+)");
  std::smatch m;
  if (!std::regex_search(res.body, m, re)) return -1;
  return std::stod(m[1]);
}

Json HiCacheInfo(const ServerProcess& s) {
  auto res = s.Get("/server_info");
  Json j = Json::parse(res.body, nullptr, false);
  return j.is_object() ? j["state"]["hicache"] : Json();
}

class HiCacheServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::SharedDir() + "/models/stories260k";
    if (!std::filesystem::exists(model_)) {
      if (testing::RunningUnderCi()) FAIL() << model_ << " missing";
      GTEST_SKIP() << model_ << " not found";
    }
    dir_ = (std::filesystem::temp_directory_path() /
            ("tessera_hicache_e2e_" + std::to_string(::getpid())))
               .string();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Small device pool (128 tokens), pages of 4.
  std::vector<std::string> Flags(std::vector<std::string> extra) const {
    std::vector<std::string> f = {"--model-path", model_, "--max-total-tokens",
                                  "128", "--page-size", "4", "--log-interval",
                                  "0"};
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  }
  std::vector<Answer> RunAll(const ServerProcess& s,
                             const std::vector<std::string>& prompts) {
    std::vector<Answer> out;
    for (const auto& p : prompts) out.push_back(Generate(s, p));
    return out;
  }
  // Answers of a device-only server with a pool that holds everything.
  std::vector<Answer> Reference(const std::vector<std::string>& prompts) {
    ServerProcess s;
    EXPECT_TRUE(s.Start(kBin, {"--model-path", model_, "--max-total-tokens",
                               "8192", "--page-size", "4"}))
        << s.log();
    return RunAll(s, prompts);
  }

  std::string model_;
  std::string dir_;
};

TEST_F(HiCacheServeTest, HostTierKeepsAnswersAndReportsHits) {
  const auto prompts = Conversations(4, 3);
  const auto reference = Reference(prompts);
  ServerProcess s;
  START_SERVER(s, Flags({"--enable-hierarchical-cache", "--hicache-ratio", "8",
                         "--hicache-mem-layout", "layer_first"}));
  const auto got = RunAll(s, prompts);
  int late_cached = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].ids, reference[i].ids) << "prompt " << i;
    if (i >= 4) late_cached += got[i].cached;
  }
  EXPECT_GT(late_cached, 0);
  EXPECT_GT(Metric(s, "tessera:cache_tier_hit_tokens_total", "tier=\"host\""), 0);
  EXPECT_GT(Metric(s, "tessera:cache_transfer_bytes_total", "direction=\"load\""), 0);
  const Json info = HiCacheInfo(s);
  ASSERT_TRUE(info.is_object()) << info.dump();
  EXPECT_EQ(info["mem_layout"], "layer_first");
  EXPECT_GT(info["host_cached_tokens"].get<int>(), 0);
  EXPECT_EQ(s.Post("/flush_cache?tier=host", "").status, 200);
  EXPECT_EQ(HiCacheInfo(s)["host_cached_tokens"], 0);
  EXPECT_EQ(s.Post("/flush_cache?tier=storage", "").status, 400);
  EXPECT_EQ(s.Post("/flush_cache", "").status, 200);
  EXPECT_EQ(s.Stop(), 0) << s.log();
}

TEST_F(HiCacheServeTest, TwoServersShareOneRedis) {
  testing::RedisServer redis;
  TSR_REQUIRE_REDIS(redis);
  const auto prompts = Conversations(3, 2);
  const auto reference = Reference(prompts);
  const std::vector<std::string> tier = {
      "--enable-hierarchical-cache", "--hicache-storage-backend", "redis",
      "--hicache-storage-redis-url", redis.url(),
      "--hicache-storage-prefetch-policy", "wait_complete"};
  ServerProcess a, b;
  START_SERVER(a, Flags(tier));
  START_SERVER(b, Flags(tier));
  const auto from_a = RunAll(a, prompts);
  // A's pages reach Redis from its storage thread: wait until it has
  // written some and stopped writing (a loaded machine delays the thread).
  int last = -1, stable = 0;
  for (int i = 0; i < 400 && stable < 4; ++i) {
    const int written = HiCacheInfo(a)["storage"]["pages_written"].get<int>();
    stable = written >= 20 && written == last ? stable + 1 : 0;
    last = written;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto from_b = RunAll(b, prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(from_a[i].ids, reference[i].ids) << i;
    EXPECT_EQ(from_b[i].ids, reference[i].ids) << i;
  }
  EXPECT_GT(from_b[0].cached, 0) << "B did not hit A's first prompt";
  EXPECT_GT(Metric(b, "tessera:cache_tier_hit_tokens_total", "tier=\"storage\""), 0);
  EXPECT_EQ(a.Stop(), 0) << a.log();
  EXPECT_EQ(b.Stop(), 0) << b.log();
}

TEST_F(HiCacheServeTest, KillNineDuringWritesThenRestartServesNothingCorrupt) {
  const auto prompts = Conversations(4, 2);
  const auto reference = Reference(prompts);
  const std::vector<std::string> tier = {
      "--enable-hierarchical-cache", "--hicache-storage-backend", "file",
      "--hicache-storage-dir", dir_, "--hicache-storage-prefetch-policy",
      "wait_complete"};
  {
    ServerProcess s;
    START_SERVER(s, Flags(tier));
    // Requests in flight from several threads, then SIGKILL mid-stream.
    std::vector<std::thread> clients;
    for (size_t i = 0; i < prompts.size(); ++i) {
      clients.emplace_back([&s, &prompts, i] {
        Json body = {{"text", prompts[i]},
                     {"sampling_params",
                      {{"temperature", 0}, {"max_new_tokens", 8}}}};
        (void)s.Post("/generate", body.dump());
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    ::kill(s.pid(), SIGKILL);
    for (auto& c : clients) c.join();
    s.Stop();
  }
  ServerProcess s;
  START_SERVER(s, Flags(tier));
  const auto got = RunAll(s, prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got[i].ids, reference[i].ids) << "prompt " << i;
  }
  const Json info = HiCacheInfo(s);
  EXPECT_EQ(info["storage"]["corrupt_pages"], 0) << info.dump();
  // Everything the second run computed is stored; a third run hits it.
  EXPECT_EQ(s.Stop(), 0) << s.log();
  ServerProcess again;
  START_SERVER(again, Flags(tier));
  const auto third = RunAll(again, prompts);
  int cached = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(third[i].ids, reference[i].ids) << i;
    cached += third[i].cached;
  }
  EXPECT_GT(cached, 0);
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos);
  }
  EXPECT_EQ(again.Stop(), 0) << again.log();
}

}  // namespace
}  // namespace tessera
