// PD disaggregation end to end on stories260k: real `tessera serve
// --disaggregation-mode prefill|decode` processes, KV moved by UCX, and a
// real `tessera router` in front.
//   - 1P1D, 2P1D and 1P2D on loopback: greedy answers through the router
//     (native and OpenAI, streaming and not, 8 clients at once) are
//     token-identical to an aggregated server's;
//   - failures: a decode server killed (the router routes around it), a
//     prefill server killed after the decode side registered (the decode
//     side frees the reserved pages after its timeout), prefill and decode
//     started with different page sizes (refused, naming both values);
//   - 1P1D across two network namespaces joined by a veth pair with
//     UCX_TLS=tcp, so the KV really crosses the veth (needs root; CI runs
//     as root);
//   - `tessera bench` through the router.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <filesystem>
#include <future>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "testing/fixtures.h"
#include "testing/goldens.h"
#include "testing/network_namespaces.h"
#include "testing/server_process.h"
#include "testing/subprocess.h"

namespace tessera {
namespace {

using Json = nlohmann::json;
using testing::ServerProcess;

constexpr const char* kBin = TSR_TESSERA_BIN;

const std::vector<std::string> kPrompts = {
    "Once upon a time, there was a little girl named Lily. She",
    "The cat sat on the mat and",
    "Tom and his dog went to the park. They",
    "One day, a big red ball",
    "Sara liked to draw pictures of the sun and the",
    "There was a boy who",
    "In the forest lived an old owl. Every night the owl",
    "Mom said, \"Let's bake a cake!\" So"};

class DisaggTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::SharedDir() + "/models/stories260k";
    if (!std::filesystem::exists(model_)) {
      if (testing::RunningUnderCi()) FAIL() << model_ << " missing";
      GTEST_SKIP() << model_ << " not found";
    }
  }

  std::vector<std::string> Flags(std::vector<std::string> extra) const {
    std::vector<std::string> f = {"--model-path", model_, "--log-interval", "0"};
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  }
  // A prefill server on any free bootstrap port; returns that port.
  int StartPrefill(ServerProcess& s, std::vector<std::string> extra = {}) {
    std::vector<std::string> f = {"--disaggregation-mode", "prefill",
                                  "--disaggregation-bootstrap-port", "0"};
    f.insert(f.end(), extra.begin(), extra.end());
    EXPECT_TRUE(s.Start(kBin, Flags(f))) << s.log();
    Json info = Json::parse(s.Get("/server_info").body, nullptr, false);
    return info.is_object() ? info.value("disaggregation_bootstrap_port", 0) : 0;
  }
  void StartDecode(ServerProcess& s, std::vector<std::string> extra = {}) {
    std::vector<std::string> f = {"--disaggregation-mode", "decode"};
    f.insert(f.end(), extra.begin(), extra.end());
    EXPECT_TRUE(s.Start(kBin, Flags(f))) << s.log();
  }
  static void StartRouter(ServerProcess& r, std::vector<std::string> args) {
    args.insert(args.end(), {"--health-check-interval-secs", "1",
                             "--health-failure-threshold", "1"});
    ASSERT_TRUE(r.StartCommand(kBin, "router", args)) << r.log();
  }

  std::string model_;
};

// /generate greedy output ids.
std::vector<int> GenerateIds(const ServerProcess& s, const std::string& prompt,
                             int max_new = 24) {
  Json body = {{"text", prompt},
               {"sampling_params", {{"temperature", 0}, {"max_new_tokens", max_new}}}};
  auto res = s.Post("/generate", body.dump());
  EXPECT_EQ(res.status, 200) << res.body;
  Json j = Json::parse(res.body, nullptr, false);
  if (!j.is_object() || !j.contains("output_ids")) {
    ADD_FAILURE() << "no output_ids: " << res.body;
    return {};
  }
  EXPECT_EQ(j["meta_info"]["finish_reason"]["type"], "length") << res.body;
  return j["output_ids"].get<std::vector<int>>();
}

// /v1/completions greedy text, streamed or not.
std::string CompletionText(const ServerProcess& s, const std::string& prompt,
                           bool stream) {
  Json body = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0},
               {"stream", stream}};
  if (!stream) {
    auto res = s.Post("/v1/completions", body.dump());
    EXPECT_EQ(res.status, 200) << res.body;
    Json j = Json::parse(res.body, nullptr, false);
    return j.is_object() && j.contains("choices")
               ? j["choices"][0]["text"].get<std::string>()
               : "<" + res.body + ">";
  }
  auto res = s.PostStream("/v1/completions", body.dump());
  EXPECT_EQ(res.status, 200) << res.body;
  std::string text;
  std::regex data("data: (\\{.*\\})");
  for (auto it = std::sregex_iterator(res.body.begin(), res.body.end(), data);
       it != std::sregex_iterator(); ++it) {
    Json chunk = Json::parse((*it)[1].str(), nullptr, false);
    if (chunk.is_object() && chunk.contains("choices") && !chunk["choices"].empty()) {
      text += chunk["choices"][0].value("text", "");
    } else {
      ADD_FAILURE() << "unexpected event: " << (*it)[1].str();
    }
  }
  EXPECT_NE(res.body.find("data: [DONE]"), std::string::npos) << res.body;
  return text;
}

struct Reference {
  std::vector<std::vector<int>> ids;
  std::vector<std::string> texts;
};

Reference Aggregated(const std::vector<std::string>& flags) {
  ServerProcess s;
  EXPECT_TRUE(s.Start(kBin, flags)) << s.log();
  Reference r;
  for (const auto& p : kPrompts) {
    r.ids.push_back(GenerateIds(s, p));
    r.texts.push_back(CompletionText(s, p, false));
  }
  return r;
}

// Every prompt through `router`, 8 clients at once, native and OpenAI,
// streamed and not: all equal the aggregated reference.
void ExpectSameAsAggregated(const ServerProcess& router, const Reference& ref) {
  std::vector<std::future<void>> clients;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    clients.push_back(std::async(std::launch::async, [&, i] {
      EXPECT_EQ(GenerateIds(router, kPrompts[i]), ref.ids[i]) << kPrompts[i];
      EXPECT_EQ(CompletionText(router, kPrompts[i], i % 2 == 0), ref.texts[i])
          << kPrompts[i];
      EXPECT_EQ(CompletionText(router, kPrompts[i], i % 2 == 1), ref.texts[i])
          << kPrompts[i];
    }));
  }
  for (auto& c : clients) c.get();
}

Json ServerInfo(const ServerProcess& s) {
  return Json::parse(s.Get("/server_info").body, nullptr, false);
}

// KV usage and integrity at rest (server_info checks the tree).
void ExpectKvAtRest(const ServerProcess& s, const std::string& who) {
  Json state;
  for (int i = 0; i < 100; ++i) {
    state = ServerInfo(s)["state"];
    if (state["kv_used_tokens"] == 0 && state["running_requests"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(state["kv_used_tokens"], 0) << who << ": " << state.dump();
  EXPECT_EQ(state["running_requests"], 0) << who << ": " << state.dump();
  EXPECT_EQ(state["kv_integrity"], "ok") << who << ": " << state.dump();
}

TEST_F(DisaggTest, OnePrefillOneDecodeMatchesAggregated) {
  const Reference ref = Aggregated(Flags({}));
  ServerProcess prefill, decode, router;
  const int bootstrap = StartPrefill(prefill);
  ASSERT_GT(bootstrap, 0) << prefill.log();
  StartDecode(decode);
  StartRouter(router, {"--prefill", prefill.base_url(), std::to_string(bootstrap),
                       "--decode", decode.base_url(), "--policy", "round_robin"});
  ExpectSameAsAggregated(router, ref);
  // The KV really moved: the decode side counted transfers and bytes.
  Json d = ServerInfo(decode)["disaggregation"];
  EXPECT_EQ(d["mode"], "decode");
  EXPECT_GE(d["transfers"].get<int>(), 3 * static_cast<int>(kPrompts.size()))
      << d.dump();
  EXPECT_GT(d["transfer_bytes"].get<double>(), 0) << d.dump();
  EXPECT_EQ(d["transfer_failures"], 0) << d.dump();
  EXPECT_EQ(ServerInfo(prefill)["disaggregation"]["transfers"], d["transfers"]);
  ExpectKvAtRest(prefill, "prefill");
  ExpectKvAtRest(decode, "decode");
  // Both radix caches hold the prompts: a repeated prompt is served from
  // the decode server's cache (fewer bytes sent).
  auto metrics = router.Get("/metrics");
  EXPECT_NE(metrics.body.find("tessera_router_worker_healthy"), std::string::npos);
}

TEST_F(DisaggTest, TwoPrefillsOneDecodeAndOnePrefillTwoDecodes) {
  const Reference ref = Aggregated(Flags({}));
  ServerProcess p1, p2, d1, d2, two_p, two_d;
  const int b1 = StartPrefill(p1);
  const int b2 = StartPrefill(p2);
  StartDecode(d1);
  StartDecode(d2);
  StartRouter(two_p, {"--prefill", p1.base_url(), std::to_string(b1), "--prefill",
                      p2.base_url(), std::to_string(b2), "--decode", d1.base_url(),
                      "--policy", "round_robin"});
  StartRouter(two_d, {"--prefill", p1.base_url(), std::to_string(b1), "--decode",
                      d1.base_url(), "--decode", d2.base_url(), "--policy",
                      "round_robin"});
  ExpectSameAsAggregated(two_p, ref);
  ExpectSameAsAggregated(two_d, ref);
  EXPECT_GT(ServerInfo(p2)["disaggregation"]["transfers"].get<int>(), 0);
  EXPECT_GT(ServerInfo(d2)["disaggregation"]["transfers"].get<int>(), 0);
  for (auto* s : {&p1, &p2, &d1, &d2}) ExpectKvAtRest(*s, "worker");
}

TEST_F(DisaggTest, ADeadDecodeServerIsRoutedAround) {
  const Reference ref = Aggregated(Flags({}));
  ServerProcess prefill, d1, d2, router;
  const int bootstrap = StartPrefill(prefill);
  StartDecode(d1);
  StartDecode(d2);
  StartRouter(router, {"--prefill", prefill.base_url(), std::to_string(bootstrap),
                       "--decode", d1.base_url(), "--decode", d2.base_url(),
                       "--policy", "round_robin"});
  ::kill(d2.pid(), SIGKILL);
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    EXPECT_EQ(GenerateIds(router, kPrompts[i]), ref.ids[i]) << router.log();
  }
  Json workers = Json::parse(router.Get("/workers").body);
  for (const Json& w : workers["workers"]) {
    EXPECT_EQ(w["healthy"].get<bool>(), w["url"] != d2.base_url()) << w.dump();
  }
  ExpectKvAtRest(prefill, "prefill");
}

TEST_F(DisaggTest, APrefillServerThatDiesLeavesNoPagesBehind) {
  ServerProcess prefill, decode;
  const int bootstrap = StartPrefill(prefill);
  StartDecode(decode, {"--disaggregation-transfer-timeout", "3"});
  // The decode side registers with the prefill server and waits; the
  // prefill copy of the request never comes, and the prefill server dies.
  Json body = {{"text", kPrompts[0]},
               {"sampling_params", {{"temperature", 0}, {"max_new_tokens", 8}}},
               {"bootstrap_host", "127.0.0.1"},
               {"bootstrap_port", bootstrap},
               {"bootstrap_room", 4242}};
  auto pending = std::async(std::launch::async,
                            [&] { return decode.Post("/generate", body.dump()); });
  for (int i = 0; i < 100; ++i) {
    if (ServerInfo(decode)["disaggregation"]["awaiting_kv"] == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(ServerInfo(decode)["disaggregation"]["awaiting_kv"], 1);
  EXPECT_GT(ServerInfo(decode)["state"]["kv_used_tokens"].get<int>(), 0);
  ::kill(prefill.pid(), SIGKILL);
  auto res = pending.get();
  EXPECT_EQ(res.status, 200) << res.body;
  Json j = Json::parse(res.body, nullptr, false);
  EXPECT_EQ(j["meta_info"]["finish_reason"]["type"], "abort") << res.body;
  EXPECT_NE(res.body.find("no KV from the prefill server"), std::string::npos)
      << res.body;
  ExpectKvAtRest(decode, "decode");
  EXPECT_EQ(ServerInfo(decode)["disaggregation"]["transfer_failures"], 1);
  // Requests without bootstrap info still run there (aggregated).
  EXPECT_EQ(GenerateIds(decode, kPrompts[1], 8).size(), 8u);
}

TEST_F(DisaggTest, MismatchedLayoutsAreRefusedNamingBothSides) {
  ServerProcess prefill, decode, router;
  const int bootstrap = StartPrefill(prefill, {"--page-size", "16"});
  StartDecode(decode, {"--page-size", "32"});
  StartRouter(router, {"--prefill", prefill.base_url(), std::to_string(bootstrap),
                       "--decode", decode.base_url()});
  Json body = {{"text", kPrompts[0]},
               {"sampling_params", {{"temperature", 0}, {"max_new_tokens", 4}}}};
  auto res = router.Post("/generate", body.dump());
  EXPECT_NE(res.body.find("page size: prefill 16 vs decode 32"), std::string::npos)
      << res.body;
  ExpectKvAtRest(decode, "decode");
  ExpectKvAtRest(prefill, "prefill");
}

TEST_F(DisaggTest, BenchThroughTheRouter) {
  ServerProcess prefill, decode, router;
  const int bootstrap = StartPrefill(prefill);
  StartDecode(decode);
  StartRouter(router, {"--prefill", prefill.base_url(), std::to_string(bootstrap),
                       "--decode", decode.base_url()});
  const auto run = testing::RunShell(std::string(kBin) + " bench --base-url " +
                                     router.base_url() + " --smoke --json");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err << router.log();
  const Json r = Json::parse(run.out);
  EXPECT_EQ(r["failed"], 0) << r.dump(2);
  EXPECT_GT(r["completed"].get<int>(), 0);
  EXPECT_GT(r["itl_ms"]["mean"].get<double>(), 0);
}

TEST_F(DisaggTest, AggregatedWorkersBehindTheRouter) {
  const Reference ref = Aggregated(Flags({}));
  ServerProcess w1, w2, router;
  ASSERT_TRUE(w1.Start(kBin, Flags({}))) << w1.log();
  ASSERT_TRUE(w2.Start(kBin, Flags({}))) << w2.log();
  StartRouter(router, {"--worker-urls", w1.base_url(), w2.base_url(),
                       "--policy", "cache_aware"});
  ExpectSameAsAggregated(router, ref);
  // A second router on the same port is refused.
  ServerProcess clash;
  EXPECT_FALSE(clash.StartCommand(kBin, "router",
                                  {"--worker-urls", w1.base_url(), "--port",
                                   std::to_string(router.port())},
                                  10));
}

TEST_F(DisaggTest, AcrossTwoNetworkNamespacesOverTcp) {
  if (geteuid() != 0 || testing::RunShell("command -v ip").exit_code != 0) {
    if (testing::RunningUnderCi()) FAIL() << "CI runs as root with iproute2";
    GTEST_SKIP() << "needs root and `ip` (iproute2) for network namespaces";
  }
  const Reference ref = Aggregated(Flags({}));
  testing::TwoHosts hosts;
  std::string why;
  ASSERT_TRUE(hosts.Create(&why)) << why;
  // UCX over TCP on each side's veth only, so the KV crosses the pair.
  // Both servers start through `ip netns exec`, which also mounts the
  // namespace's /sys (UCX finds network devices there). Both share one
  // host identity, so without UCX_NET_DEVICES UCX would pick tcp/lo, which
  // does not cross namespaces: containers on one machine need it too.
  const std::string ip = testing::RunShell("command -v ip").out;
  const std::string ip_path = ip.substr(0, ip.find('\n'));
  auto in_netns = [&](const std::string& ns, const std::string& dev,
                      std::vector<std::string> args) {
    std::vector<std::string> argv = {"exec", ns, "env", "UCX_TLS=tcp",
                                     "UCX_NET_DEVICES=" + dev, kBin, "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  };
  // The decode server in namespace b, the prefill server in a; the router
  // and the test's client threads in a too.
  testing::Background decode;
  std::vector<std::string> argv = {ip_path, "netns"};
  for (std::string& a :
       in_netns(hosts.b(), hosts.b_dev(),
                Flags({"--host", hosts.b_addr(), "--port", "31555",
                       "--disaggregation-mode", "decode"}))) {
    argv.push_back(std::move(a));
  }
  ASSERT_TRUE(decode.Start(argv));
  testing::InNetns in_a(hosts.a());
  ASSERT_TRUE(in_a.ok());
  ServerProcess prefill, router;
  ASSERT_TRUE(prefill.StartCommand(
      ip_path, "netns",
      in_netns(hosts.a(), hosts.a_dev(),
               Flags({"--host", hosts.a_addr(), "--disaggregation-mode",
                      "prefill", "--disaggregation-bootstrap-port", "31556"}))))
      << prefill.log();
  StartRouter(router, {"--prefill", "http://" + hosts.a_addr() + ":" +
                                        std::to_string(prefill.port()),
                       "31556", "--decode",
                       "http://" + hosts.b_addr() + ":31555"});
  bool up = false;
  for (int i = 0; i < 200 && !up; ++i) {
    up = router.Get("/health").status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(up) << router.log() << decode.log();
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    EXPECT_EQ(GenerateIds(router, kPrompts[i]), ref.ids[i])
        << router.log() << "\ndecode:\n" << decode.log();
  }
  EXPECT_GT(ServerInfo(prefill)["disaggregation"]["transfer_bytes"].get<double>(), 0);
}

}  // namespace
}  // namespace tessera
