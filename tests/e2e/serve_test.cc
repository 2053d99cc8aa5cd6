// `tessera serve` end to end: the real binary as a child process, real HTTP
// clients. On every platform (cpu, opencl): the stories260k goldens (alone
// and under 32 concurrent streams), prefix-cache reporting, KV freed when a
// client disconnects, retraction under KV pressure, seeded sampling, op
// fallbacks counted and logged. On the default platform: every error status
// and shape, /abort_request, the native endpoints and SIGTERM draining.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <future>
#include <regex>
#include <thread>

#include "testing/fixtures.h"
#include "testing/goldens.h"
#include "testing/platforms.h"
#include "testing/server_process.h"
#include "testing/subprocess.h"
#include "testing/scripted_chat_model.h"

namespace tessera {
namespace {

using Json = nlohmann::json;
using testing::ReadJsonLines;
using testing::ServerProcess;
using testing::SseData;

constexpr const char* kBin = TSR_TESSERA_BIN;

// Starts a server or fails the test with its log.
#define START_SERVER(server, ...)                                  \
  ASSERT_TRUE((server).Start(kBin, __VA_ARGS__)) << (server).log()

// The final output_ids of a /generate stream.
std::vector<int> StreamedGenerateIds(const ServerProcess& server,
                                     const Json& body) {
  auto res = server.PostStream("/generate", body.dump());
  EXPECT_EQ(res.status, 200) << res.body;
  auto events = SseData(res.body);
  if (events.empty()) return {};
  return Json::parse(events.back())["output_ids"].get<std::vector<int>>();
}

Json ServerState(const ServerProcess& server) {
  auto res = server.Get("/server_info");
  EXPECT_EQ(res.status, 200);
  return Json::parse(res.body)["state"];
}

// Waits until no request runs and the KV pool holds only cache.
Json WaitIdle(const ServerProcess& server) {
  Json state;
  for (int i = 0; i < 200; ++i) {
    state = ServerState(server);
    if (state["running_requests"] == 0 && state["queued_requests"] == 0 &&
        state["kv_used_tokens"] == 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return state;
}

void ExpectOpenAiError(const testing::HttpResult& res, int status,
                       const std::string& param = "",
                       const std::string& code = "") {
  EXPECT_EQ(res.status, status) << res.body;
  Json j = Json::parse(res.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << res.body;
  const Json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty());
  EXPECT_TRUE(e["type"].is_string());
  EXPECT_TRUE(e.contains("param") && e.contains("code")) << res.body;
  if (!param.empty()) EXPECT_EQ(e["param"], param) << res.body;
  if (!code.empty()) EXPECT_EQ(e["code"], code) << res.body;
}

// The correctness cases, run on every platform (testing/platforms.h):
// the same HTTP behaviour and the same tokens whichever plugin computes.
class ServeOnPlatformTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { TSR_REQUIRE_PLATFORM(kBin, GetParam()); }
  // Server flags plus --platform <the parameter>.
  std::vector<std::string> Args(std::vector<std::string> args) const {
    args.push_back("--platform");
    args.push_back(GetParam());
    return args;
  }
};
INSTANTIATE_TEST_SUITE_P(Platforms, ServeOnPlatformTest,
                         ::testing::ValuesIn(testing::TestPlatforms()),
                         testing::PlatformParamName);

TEST_P(ServeOnPlatformTest, StoriesGreedyEqualsGoldensAloneAndUnder32ConcurrentStreams) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  const std::vector<Json> cases = ReadJsonLines(golden);
  ASSERT_FALSE(cases.empty());
  ServerProcess server;
  START_SERVER(server, Args({"--model-path", dir, "--log-interval", "0"}));

  auto request = [](const Json& c) {
    return Json{{"input_ids", c["prompt_ids"]},
                {"sampling_params",
                 {{"max_new_tokens", 64}, {"temperature", 0}}}};
  };
  std::vector<std::vector<int>> alone;
  for (const Json& c : cases) {
    auto res = server.Post("/generate", request(c).dump());
    ASSERT_EQ(res.status, 200) << res.body;
    const auto ids = Json::parse(res.body)["output_ids"].get<std::vector<int>>();
    ASSERT_NO_FATAL_FAILURE(testing::ExpectGoldenPrefix(ids, c, c["prompt"].dump()));
    alone.push_back(ids);
    // The OpenAI endpoint gives the same continuation as text.
    auto text = server.Post(
        "/v1/completions",
        Json{{"prompt", c["prompt_ids"]}, {"max_tokens", 64}, {"temperature", 0}}
            .dump());
    ASSERT_EQ(text.status, 200) << text.body;
    EXPECT_EQ(Json::parse(text.body)["choices"][0]["text"],
              Json::parse(res.body)["text"]);
  }

  std::vector<std::future<std::vector<int>>> streams;
  for (int i = 0; i < 32; ++i) {
    Json body = request(cases[i % cases.size()]);
    body["stream"] = true;
    streams.push_back(std::async(std::launch::async, [&server, body] {
      return StreamedGenerateIds(server, body);
    }));
  }
  for (int i = 0; i < 32; ++i) {
    const Json& c = cases[i % cases.size()];
    const auto ids = streams[i].get();
    const size_t stable = c["stable_prefix"].get<size_t>();
    const auto& ref = alone[i % cases.size()];
    for (size_t k = 0; k < stable && k < ref.size(); ++k) {
      ASSERT_LT(k, ids.size()) << "stream " << i;
      EXPECT_EQ(ids[k], ref[k]) << "stream " << i << " step " << k;
    }
  }
  EXPECT_EQ(WaitIdle(server)["kv_integrity"], "ok");
  EXPECT_EQ(server.Stop(), 0) << server.log();
}

TEST_P(ServeOnPlatformTest, SharedPrefixIsCachedAndReportedInUsageAndMetrics) {
  ServerProcess server;
  START_SERVER(server, Args({"--log-interval", "0"}));
  std::vector<int> system(200);
  for (int i = 0; i < 200; ++i) system[i] = (i * 7 + 3) % 1000;
  auto ask = [&](int q) {
    std::vector<int> p = system;
    p.push_back(10 + q);
    p.push_back(20 + q);
    auto res = server.Post(
        "/v1/completions",
        Json{{"prompt", p}, {"max_tokens", 4}, {"temperature", 0}}.dump());
    EXPECT_EQ(res.status, 200) << res.body;
    return Json::parse(res.body)["usage"];
  };
  EXPECT_EQ(ask(0)["prompt_tokens_details"]["cached_tokens"], 0);
  const Json second = ask(1);
  EXPECT_GE(second["prompt_tokens_details"]["cached_tokens"].get<int>(), 192);
  EXPECT_EQ(second["prompt_tokens"], 202);

  auto metrics = server.Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  const std::string& m = metrics.body;
  for (const char* name :
       {"tessera:num_running_reqs", "tessera:num_queue_reqs",
        "tessera:token_usage", "tessera:cache_hit_rate",
        "tessera:prompt_tokens_total", "tessera:generation_tokens_total",
        "tessera:time_to_first_token_seconds_bucket",
        "tessera:inter_token_latency_seconds_bucket",
        "tessera:e2e_request_latency_seconds_bucket",
        "tessera:gen_throughput", "tessera:op_fallback_total"}) {
    EXPECT_NE(m.find(name), std::string::npos) << name << "\n" << m;
  }
  const std::regex hit(R"(tessera:cache_hit_rate\{[^}]*\} ([0-9.eE+-]+))");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(m, match, hit)) << m;
  EXPECT_GT(std::stod(match[1]), 0.3);
  // The device's memory (the plugin's memory_stats, ABI 1.7, or the host's
  // count where a plugin lacks it): the weights and the KV pool are in use,
  // the peak at least that, and the limit above it.
  const std::string source = GetParam() == "cpu" ? "plugin" : "(plugin|host)";
  auto gauge = [&](const std::string& name) {
    const std::regex re("tessera:" + name + "\\{plugin=\"" + GetParam() +
                        "\",device=\"0\",source=\"" + source +
                        "\"\\} ([0-9.eE+-]+)");
    std::smatch g;
    EXPECT_TRUE(std::regex_search(m, g, re)) << name << "\n" << m;
    return g.empty() ? -1.0 : std::stod(g[g.size() - 1]);
  };
  const double in_use = gauge("device_memory_in_use_bytes");
  EXPECT_GT(in_use, 1e5);
  EXPECT_GE(gauge("device_memory_peak_bytes"), in_use);
  EXPECT_GE(gauge("device_memory_limit_bytes"), in_use);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(ServeTest, ErrorsHaveTheirStatusAndOpenAiShape) {
  ServerProcess server;
  START_SERVER(server, {"--log-interval", "0", "--served-model-name", "m1"});
  ExpectOpenAiError(server.Post("/v1/completions", "{not json"), 400);
  ExpectOpenAiError(server.Post("/v1/completions", "[1, 2]"), 400);
  ExpectOpenAiError(
      server.Post("/v1/completions",
                  R"({"prompt": "hi", "temperature": "hot"})"),
      400, "temperature");
  ExpectOpenAiError(
      server.Post("/v1/chat/completions", R"({"messages": "hi"})"), 400,
      "messages");
  ExpectOpenAiError(
      server.Post("/v1/completions", R"({"prompt": "hi", "n": 1000})"), 400,
      "n");
  // The demo model's context is 2048 tokens.
  auto too_long = server.Post("/v1/completions",
                              R"({"prompt": "hi", "max_tokens": 5000})");
  ExpectOpenAiError(too_long, 400);
  EXPECT_NE(too_long.body.find("context length"), std::string::npos);
  ExpectOpenAiError(server.Post("/v1/completions",
                                R"({"model": "gpt-4", "prompt": "hi"})"),
                    404, "model", "model_not_found");
  ExpectOpenAiError(
      server.Post("/v1/chat/completions",
                  R"({"messages": [{"role": "user", "content": "x"}],
                      "response_format": {"type": "json_schema",
                        "json_schema": {"schema": {"not": {}}}}})"),
      400, "response_format.json_schema.schema");
  ExpectOpenAiError(server.Post("/generate", R"({"text": "a",
      "sampling_params": {"max_new_tokenz": 3}})"), 400);
  ExpectOpenAiError(server.Get("/v1/nothing"), 404);
  ExpectOpenAiError(server.Post("/abort_request", R"({"rid": "none"})"), 404);
  // Token ids outside the vocabulary.
  ExpectOpenAiError(server.Post("/v1/completions",
                                R"({"prompt": [1, 2, 999999]})"),
                    400);
  // No request harmed the server.
  auto ok = server.Post("/v1/completions",
                        R"({"model": "m1", "prompt": "hi", "max_tokens": 3})");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(server.Stop(), 0);
}

TEST(ServeTest, ApiKeyIsRequiredExceptOnHealthAndMetrics) {
  ServerProcess server;
  START_SERVER(server, {"--log-interval", "0", "--api-key", "sekret"});
  const std::string body = R"({"prompt": "hi", "max_tokens": 2})";
  ExpectOpenAiError(server.Post("/v1/completions", body), 401, "",
                    "invalid_api_key");
  ExpectOpenAiError(server.Post("/v1/completions", body,
                                {{"Authorization", "Bearer wrong"}}),
                    401, "", "invalid_api_key");
  EXPECT_EQ(server.Post("/v1/completions", body,
                        {{"Authorization", "Bearer sekret"}})
                .status,
            200);
  EXPECT_EQ(server.Get("/health").status, 200);
  EXPECT_EQ(server.Get("/metrics").status, 200);
  EXPECT_EQ(server.Get("/v1/models").status, 401);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(ServeTest, FullQueueAnswers503) {
  ServerProcess server;
  START_SERVER(server, {"--log-interval", "0", "--max-running-requests", "1",
                        "--max-queued-requests", "1"});
  const std::string body =
      R"({"prompt": "x", "max_tokens": 1900, "ignore_eos": true})";
  std::vector<std::future<testing::HttpResult>> calls;
  for (int i = 0; i < 6; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      return server.Post("/v1/completions", body);
    }));
  }
  int overloaded = 0, ok = 0;
  for (auto& c : calls) {
    auto res = c.get();
    if (res.status == 503) {
      ExpectOpenAiError(res, 503);
      ++overloaded;
    } else {
      EXPECT_EQ(res.status, 200) << res.body;
      ++ok;
    }
  }
  EXPECT_GT(overloaded, 0);
  EXPECT_GT(ok, 0);
  EXPECT_EQ(server.Stop(), 0);
}

TEST_P(ServeOnPlatformTest, ClientDisconnectMidStreamFreesItsKv) {
  ServerProcess server;
  START_SERVER(server, Args({"--log-interval", "0"}));
  const Json before = WaitIdle(server);
  ASSERT_EQ(before["kv_used_tokens"], 0);
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    Json body = {{"max_tokens", 1900}, {"ignore_eos", true}, {"stream", true}};
    if (std::string(path) == "/v1/completions") {
      body["prompt"] = "Once upon a time";
    } else {
      body["messages"] = {{{"role", "user"}, {"content", "hello"}}};
    }
    auto res = server.PostStream(path, body.dump(), /*max_events=*/5);
    EXPECT_EQ(res.status, 200);
    // The client stops reading after 5 events (a read may bring a few more).
    EXPECT_GE(SseData(res.body).size(), 5u);
    const Json after = WaitIdle(server);
    EXPECT_EQ(after["running_requests"], 0) << path;
    EXPECT_EQ(after["kv_used_tokens"], 0) << path;
    EXPECT_EQ(after["kv_integrity"], "ok") << path;
  }
  auto metrics = server.Get("/metrics").body;
  EXPECT_NE(metrics.find("tessera:num_aborted_requests_total"),
            std::string::npos);
  EXPECT_EQ(server.Stop(), 0);
}

TEST_P(ServeOnPlatformTest, KvPoolExhaustionCompletesEveryRequestThroughRetraction) {
  ServerProcess server;
  START_SERVER(server, Args({"--log-interval", "0", "--max-total-tokens", "512",
                        "--page-size", "16"}));
  auto body = [](int i) {
    std::vector<int> p(60);
    for (int k = 0; k < 60; ++k) p[k] = (k * 13 + i * 31 + 1) % 1000;
    return Json{{"input_ids", p},
                {"sampling_params",
                 {{"max_new_tokens", 150}, {"temperature", 0},
                  {"ignore_eos", true}}}};
  };
  std::vector<std::vector<int>> alone;
  for (int i = 0; i < 8; ++i) {
    auto res = server.Post("/generate", body(i).dump());
    ASSERT_EQ(res.status, 200) << res.body;
    alone.push_back(Json::parse(res.body)["output_ids"].get<std::vector<int>>());
  }
  std::vector<std::future<testing::HttpResult>> calls;
  for (int i = 0; i < 8; ++i) {
    calls.push_back(std::async(std::launch::async, [&server, &body, i] {
      return server.Post("/generate", body(i).dump());
    }));
  }
  for (int i = 0; i < 8; ++i) {
    auto res = calls[i].get();
    ASSERT_EQ(res.status, 200) << res.body;
    Json j = Json::parse(res.body);
    EXPECT_EQ(j["output_ids"].get<std::vector<int>>(), alone[i]) << i;
    EXPECT_EQ(j["meta_info"]["finish_reason"]["type"], "length");
  }
  const Json state = WaitIdle(server);
  EXPECT_GT(state["retractions"].get<int>(), 0) << state.dump();
  EXPECT_EQ(state["kv_integrity"], "ok");
  EXPECT_EQ(state["kv_used_tokens"], 0);
  // /metrics counts the same retractions, however often it is scraped.
  for (int scrape = 0; scrape < 2; ++scrape) {
    const std::string m = server.Get("/metrics").body;
    const std::regex line(
        R"(tessera:num_retracted_requests_total\{[^}]*\} ([0-9]+))");
    std::smatch match;
    ASSERT_TRUE(std::regex_search(m, match, line)) << m;
    EXPECT_EQ(std::stoi(match[1]), state["retractions"].get<int>());
  }
  EXPECT_EQ(server.Stop(), 0);
}

// `tessera generate` is a client of the same engine as the server: with
// stop strings, stop ids, penalties, min tokens, logprobs and a seed it
// gives the tokens and logprobs /v1/completions gives for that request.
TEST(ServeTest, GenerateCliAnswersLikeTheServer) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  ServerProcess server;
  START_SERVER(server, {"--model-path", dir, "--log-interval", "0"});
  auto generate = [&](const std::string& flags) {
    const auto run = testing::RunShell(
        std::string(kBin) + " generate --json --model-path " +
        testing::ShellQuote(dir) + " --prompt 'Once upon a time' " + flags);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    Json out = Json::parse(run.out, nullptr, false);
    EXPECT_TRUE(out.is_object()) << run.out << run.err;
    return out.is_object() ? out : Json::object();
  };
  const Json greedy = generate("--temperature 0 --max-new-tokens 48");
  ASSERT_TRUE(greedy.contains("text"));
  const std::string greedy_text = greedy["text"];
  ASSERT_GT(greedy_text.size(), 40u);
  const Json prompt_ids = greedy["prompt_ids"];
  const auto greedy_ids = greedy["output_ids"].get<std::vector<int>>();

  struct Case {
    std::string flags;
    Json body;  // /v1/completions fields besides prompt
  };
  const std::string stop = greedy_text.substr(25, 4);
  const std::vector<Case> cases = {
      {"--temperature 0 --max-new-tokens 48 --stop " + testing::ShellQuote(stop),
       {{"temperature", 0}, {"max_tokens", 48}, {"stop", {stop}}}},
      {"--temperature 0 --max-new-tokens 48 --stop-token-ids " +
           std::to_string(greedy_ids[7]),
       {{"temperature", 0}, {"max_tokens", 48},
        {"stop_token_ids", {greedy_ids[7]}}}},
      {"--temperature 0.9 --top-p 0.95 --seed 11 --max-new-tokens 40 "
       "--repetition-penalty 1.3 --presence-penalty 0.4 "
       "--frequency-penalty 0.3 --top-logprobs 2",
       {{"temperature", 0.9}, {"top_p", 0.95}, {"seed", 11},
        {"max_tokens", 40}, {"repetition_penalty", 1.3},
        {"presence_penalty", 0.4}, {"frequency_penalty", 0.3},
        {"logprobs", 2}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flags);
    const Json cli = generate(c.flags);
    Json body = c.body;
    body["prompt"] = prompt_ids;
    auto res = server.Post("/v1/completions", body.dump());
    ASSERT_EQ(res.status, 200) << res.body;
    const Json choice = Json::parse(res.body)["choices"][0];
    EXPECT_EQ(cli["text"], choice["text"]);
    EXPECT_EQ(cli["finish_reason"], choice["finish_reason"]);
    if (body.contains("logprobs")) {
      const Json& want = choice["logprobs"]["token_logprobs"];
      ASSERT_EQ(cli["logprobs"].size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(cli["logprobs"][i]["logprob"].get<double>(),
                    want[i].get<double>(), 1e-4);
        EXPECT_EQ(cli["logprobs"][i]["top"].size(), 2u);
      }
    }
  }
  // The stop string and id really stopped generation early.
  const Json stopped = generate(cases[0].flags);
  EXPECT_EQ(stopped["matched_stop"], stop);
  EXPECT_EQ(stopped["text"], greedy_text.substr(0, 25));
  const Json stopped_id = generate(cases[1].flags);
  EXPECT_EQ(stopped_id["output_ids"].size(), 8u);
  EXPECT_EQ(stopped_id["matched_stop"], greedy_ids[7]);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(ServeTest, AbortRequestEndsAStreamWithAbort) {
  ServerProcess server;
  START_SERVER(server, {"--log-interval", "0"});
  auto stream = std::async(std::launch::async, [&] {
    return server.PostStream(
        "/generate", R"({"text": "abc", "rid": "my-rid", "stream": true,
            "sampling_params": {"max_new_tokens": 1900, "ignore_eos": true}})");
  });
  testing::HttpResult aborted;
  for (int i = 0; i < 100; ++i) {
    aborted = server.Post("/abort_request", R"({"rid": "my-rid"})");
    if (aborted.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(aborted.status, 200) << aborted.body;
  auto events = SseData(stream.get().body);
  ASSERT_FALSE(events.empty());
  const Json last = Json::parse(events.back());
  EXPECT_EQ(last["meta_info"]["finish_reason"]["type"], "abort") << last;
  EXPECT_EQ(server.Stop(), 0);
}

TEST(ServeTest, NativeEndpoints) {
  ServerProcess server;
  START_SERVER(server, {"--log-interval", "0"});
  EXPECT_EQ(server.Get("/health_generate").status, 200);
  auto models = Json::parse(server.Get("/v1/models").body);
  EXPECT_EQ(models["data"][0]["id"], "tessera-demo");
  EXPECT_EQ(models["data"][0]["max_model_len"], 2048);
  auto info = Json::parse(server.Get("/server_info").body);
  EXPECT_EQ(info["served_model_name"], "tessera-demo");
  EXPECT_EQ(info["demo_model"], true);
  EXPECT_GT(info["max_total_num_tokens"].get<int>(), 0);
  auto tok = server.Post("/tokenize", R"({"prompt": "hello world"})");
  ASSERT_EQ(tok.status, 200) << tok.body;
  const Json t = Json::parse(tok.body);
  EXPECT_EQ(t["count"], t["tokens"].size());
  auto detok = server.Post("/detokenize",
                           Json{{"tokens", t["tokens"]}}.dump());
  EXPECT_EQ(Json::parse(detok.body)["text"], "hello world");
  auto chat_tok = server.Post(
      "/tokenize", R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_NE(Json::parse(chat_tok.body)["prompt"].get<std::string>().find(
                "<|im_start|>assistant"),
            std::string::npos);
  EXPECT_EQ(server.Post("/flush_cache", "").status, 200);
  // n > 1 and a list of prompts.
  auto many = server.Post(
      "/v1/completions",
      R"({"prompt": ["a b", "c d"], "n": 2, "max_tokens": 3, "seed": 5})");
  ASSERT_EQ(many.status, 200) << many.body;
  EXPECT_EQ(Json::parse(many.body)["choices"].size(), 4u);
  EXPECT_EQ(server.Stop(), 0);
}

// Prompt logprobs as lm-evaluation-harness asks for them (echo, logprobs,
// max_tokens 0) on a real model: scoring "prompt + greedy continuation"
// gives the continuation the logprobs decoding gave it (prefill and decode
// are different code paths), /generate's input_token_logprobs agree, and a
// cached prefix does not cut the scores short.
TEST(ServeTest, EchoLogprobsScoreThePromptLikeDecodingDid) {
  TSR_REQUIRE_SHARED_FIXTURE(model, "models/stories260k");
  ServerProcess server;
  START_SERVER(server, {"--model-path", model, "--log-interval", "0"});
  auto gen = server.Post("/v1/completions", R"({"prompt": "Once upon a time",
      "max_tokens": 6, "temperature": 0, "logprobs": 0})");
  ASSERT_EQ(gen.status, 200) << gen.body;
  const Json g = Json::parse(gen.body)["choices"][0];
  const std::string full = "Once upon a time" + g["text"].get<std::string>();
  const Json decoded = g["logprobs"]["token_logprobs"];
  ASSERT_EQ(decoded.size(), 6u);

  auto scored = server.Post("/v1/completions",
                            Json{{"prompt", full}, {"max_tokens", 0},
                                 {"echo", true}, {"logprobs", 1}}.dump());
  ASSERT_EQ(scored.status, 200) << scored.body;
  const Json c = Json::parse(scored.body)["choices"][0];
  EXPECT_EQ(c["text"], full);
  EXPECT_EQ(c["finish_reason"], "length");
  const Json lps = c["logprobs"]["token_logprobs"];
  const Json tokens = c["logprobs"]["tokens"];
  ASSERT_EQ(lps.size(), tokens.size());
  ASSERT_GE(lps.size(), 7u);
  EXPECT_TRUE(lps[0].is_null());  // the first token has nothing before it
  EXPECT_TRUE(c["logprobs"]["top_logprobs"][0].is_null());
  for (size_t k = 0; k < 6; ++k) {
    const size_t pos = lps.size() - 6 + k;
    EXPECT_NEAR(lps[pos].get<double>(), decoded[k].get<double>(), 2e-3)
        << "continuation token " << k << " (" << tokens[pos] << ")";
    // Greedy: each continuation token was the most likely one.
    const Json& top = c["logprobs"]["top_logprobs"][pos];
    ASSERT_EQ(top.size(), 1u);
    EXPECT_EQ(top.begin().key(), tokens[pos].get<std::string>());
  }
  // Again, now that the prompt is in the radix cache: the same scores.
  auto again = server.Post("/v1/completions",
                           Json{{"prompt", full}, {"max_tokens", 0},
                                {"echo", true}, {"logprobs", 1}}.dump());
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(Json::parse(again.body)["choices"][0]["logprobs"]["token_logprobs"], lps);
  // SGLang's spelling of the same scores.
  auto native = server.Post("/generate", Json{{"text", full},
      {"sampling_params", {{"max_new_tokens", 0}}}, {"return_logprob", true},
      {"logprob_start_len", 0}}.dump());
  ASSERT_EQ(native.status, 200) << native.body;
  const Json in = Json::parse(native.body)["meta_info"]["input_token_logprobs"];
  ASSERT_EQ(in.size(), lps.size());
  EXPECT_TRUE(in[0][0].is_null());
  for (size_t p = 1; p < in.size(); ++p) {
    EXPECT_DOUBLE_EQ(in[p][0].get<double>(), lps[p].get<double>()) << p;
  }
  // max_tokens 0 without echo says what it needs.
  ExpectOpenAiError(server.Post("/v1/completions",
                                R"({"prompt": "a", "max_tokens": 0})"),
                    400, "max_tokens");
  ExpectOpenAiError(server.Post("/v1/chat/completions",
                                R"({"messages": [{"role": "user", "content": "a"}],
                                    "max_tokens": 0})"),
                    400, "max_tokens");
  EXPECT_EQ(server.Stop(), 0);
}

TEST(ServeTest, SigtermLetsRunningRequestsFinishAndExitsZero) {
  ServerProcess server;
  START_SERVER(server, {"--log-interval", "0", "--shutdown-grace", "60"});
  std::atomic<bool> started{false};
  auto stream = std::async(std::launch::async, [&] {
    started = true;
    return server.PostStream(
        "/v1/completions",
        R"({"prompt": "x", "max_tokens": 400, "ignore_eos": true,
            "stream": true})");
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(server.Stop(), 0) << server.log();
  const std::string body = stream.get().body;
  EXPECT_NE(body.find("data: [DONE]"), std::string::npos) << body;
  EXPECT_NE(body.find(R"("finish_reason":"length")"), std::string::npos);
  EXPECT_NE(server.log().find("received SIGTERM"), std::string::npos);
}

TEST(ServeTest, Holds256ConcurrentStreams) {
  ServerProcess server;
  START_SERVER(server, {"--log-interval", "0"});
  constexpr int kStreams = 256;
  std::vector<std::future<testing::HttpResult>> calls;
  for (int i = 0; i < kStreams; ++i) {
    calls.push_back(std::async(std::launch::async, [&server, i] {
      return server.PostStream(
          "/v1/completions",
          Json{{"prompt", "stream " + std::to_string(i)},
               {"max_tokens", 16},
               {"ignore_eos", true},
               {"stream", true}}
              .dump());
    }));
  }
  int done = 0;
  for (auto& c : calls) {
    auto res = c.get();
    EXPECT_EQ(res.status, 200);
    if (res.body.find("data: [DONE]") != std::string::npos) ++done;
  }
  EXPECT_EQ(done, kStreams);
  EXPECT_EQ(WaitIdle(server)["kv_integrity"], "ok");
  EXPECT_EQ(server.Stop(), 0);
}

TEST_P(ServeOnPlatformTest, SeededSamplingIsTheSameAloneAndInABusyBatch) {
  ServerProcess server;
  START_SERVER(server, Args({"--log-interval", "0"}));
  const std::string seeded =
      R"({"prompt": "seeded", "max_tokens": 24, "temperature": 0.9,
          "top_p": 0.95, "top_k": 50, "seed": 1234, "ignore_eos": true})";
  auto alone = server.Post("/v1/completions", seeded);
  ASSERT_EQ(alone.status, 200) << alone.body;
  std::vector<std::future<testing::HttpResult>> noise;
  for (int i = 0; i < 6; ++i) {
    noise.push_back(std::async(std::launch::async, [&server, i] {
      return server.Post("/v1/completions",
                         Json{{"prompt", "noise " + std::to_string(i)},
                              {"max_tokens", 40},
                              {"temperature", 1.0},
                              {"ignore_eos", true}}
                             .dump());
    }));
  }
  auto busy = server.Post("/v1/completions", seeded);
  for (auto& n : noise) EXPECT_EQ(n.get().status, 200);
  EXPECT_EQ(Json::parse(busy.body)["choices"][0]["text"],
            Json::parse(alone.body)["choices"][0]["text"]);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(ServeTest, OutputParsersPassPlainTextThroughUnchanged) {
  const std::string body =
      R"({"messages": [{"role": "user", "content": "What is the weather?"}],
          "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties":
              {"city": {"type": "string"}}}}}],
          "max_tokens": 24, "temperature": 0})";
  ServerProcess plain;
  START_SERVER(plain, {"--log-interval", "0"});
  auto expected = plain.Post("/v1/chat/completions", body);
  ASSERT_EQ(expected.status, 200) << expected.body;
  plain.Stop();
  ServerProcess parsed;
  START_SERVER(parsed, {"--log-interval", "0", "--reasoning-parser", "qwen3",
                        "--tool-call-parser", "qwen"});
  auto got = parsed.Post("/v1/chat/completions", body);
  ASSERT_EQ(got.status, 200) << got.body;
  const Json e = Json::parse(expected.body)["choices"][0]["message"];
  const Json g = Json::parse(got.body)["choices"][0]["message"];
  // Random weights never write <think> or <tool_call>: all of it is content.
  EXPECT_EQ(g["content"], e["content"]);
  EXPECT_TRUE(g["reasoning_content"].is_null());
  EXPECT_FALSE(g.contains("tool_calls"));
  // The streamed deltas add up to the same content.
  // (Not through Json: it would sort the tools' keys, and the template
  // renders them as sent.)
  const std::string stream_body = "{\"stream\": true, " + body.substr(1);
  auto streamed = parsed.PostStream("/v1/chat/completions", stream_body);
  std::string text;
  for (const std::string& event : SseData(streamed.body)) {
    const Json d = Json::parse(event)["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
  }
  EXPECT_EQ(text, e["content"].get<std::string>()) << streamed.body;
  EXPECT_EQ(parsed.Stop(), 0);
}

TEST(ServeTest, BadFlagsExitWithTwoAndSayWhy) {
  ServerProcess server;
  EXPECT_FALSE(server.Start(kBin, {"--reasoning-parser", "nope"}, 20));
  EXPECT_NE(server.log().find("reasoning"), std::string::npos) << server.log();
  EXPECT_EQ(server.Stop(), 2);
  ServerProcess missing;
  EXPECT_FALSE(missing.Start(kBin, {"--model-path", "/nonexistent/model"}, 20));
  EXPECT_EQ(missing.Stop(), 2);
}

TEST(ServeTest, BenchSmokeAgainstTheRealServer) {
  ServerProcess server;
  START_SERVER(server, {"--log-interval", "0"});
  for (const char* dataset : {"random", "shared-prefix"}) {
    const auto run = testing::RunShell(
        std::string(kBin) + " bench --base-url " + server.base_url() +
        " --smoke --json --dataset-name " + dataset);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err << server.log();
    const Json r = Json::parse(run.out);
    EXPECT_EQ(r["failed"], 0) << r.dump(2);
    EXPECT_GT(r["completed"].get<int>(), 0);
    EXPECT_GT(r["output_throughput"].get<double>(), 0);
    for (const char* k : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}) {
      EXPECT_GT(r[k]["mean"].get<double>(), 0) << k;
      EXPECT_GE(r[k]["p99"].get<double>(), r[k]["median"].get<double>()) << k;
    }
    if (std::string(dataset) == "shared-prefix") {
      EXPECT_GT(r["cached_token_fraction"].get<double>(), 0) << r.dump(2);
    }
  }
  // No server: exit 2 with what to do.
  const auto none = testing::RunShell(std::string(kBin) +
                                      " bench --base-url http://127.0.0.1:1 "
                                      "--smoke");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("tessera serve"), std::string::npos) << none.err;
  EXPECT_EQ(server.Stop(), 0);
}

// TESSERA_DISABLE_OPS=paged_attention: the platform's attention runs
// through the cpu plugin instead, the tokens stay the goldens, and /metrics
// and the log say which op fell back and how often.
TEST_P(ServeOnPlatformTest, DisabledOpFallsBackCorrectlyAndVisibly) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  const Json c = ReadJsonLines(golden).at(0);
  setenv("TESSERA_DISABLE_OPS", "paged_attention", 1);
  ServerProcess server;
  const bool started =
      server.Start(kBin, Args({"--model-path", dir, "--log-interval", "0"}));
  unsetenv("TESSERA_DISABLE_OPS");
  ASSERT_TRUE(started) << server.log();
  auto res = server.Post(
      "/generate", Json{{"input_ids", c["prompt_ids"]},
                        {"sampling_params", {{"max_new_tokens", 16}, {"temperature", 0}}}}
                       .dump());
  ASSERT_EQ(res.status, 200) << res.body;
  const auto ids = Json::parse(res.body)["output_ids"].get<std::vector<int>>();
  const auto expected = c["greedy_output_ids"].get<std::vector<int>>();
  for (size_t i = 0; i < 16 && i < c["stable_prefix"].get<size_t>(); ++i) {
    ASSERT_LT(i, ids.size());
    EXPECT_EQ(ids[i], expected[i]) << "step " << i;
  }
  const std::string m = server.Get("/metrics").body;
  const std::regex line("tessera:op_fallback_total\\{op=\"paged_attention\",plugin=\"" +
                        GetParam() + "\"\\} ([0-9]+)");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(m, match, line)) << m;
  // Warm-up, the request's prefill and 15 decode steps: every layer each time.
  EXPECT_GE(std::stoi(match[1]), 17 * 5);
  EXPECT_NE(server.log().find("op paged_attention falls back from plugin " + GetParam()),
            std::string::npos)
      << server.log();
  EXPECT_EQ(server.Stop(), 0);
}

TEST(ServeTest, ToolCallsFromARealModelAreParsedStreamedAndNot) {
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("tessera_tool_model_" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(dir);
  Status made = testing::MakeScriptedChatModel(dir, testing::ToolCallScript());
  ASSERT_TRUE(made.ok()) << made.ToString();
  ServerProcess server;
  START_SERVER(server, {"--model-path", dir, "--log-interval", "0",
                        "--tool-call-parser", "qwen", "--reasoning-parser",
                        "qwen3"});
  const std::string body =
      R"({"messages": [{"role": "user", "content": "Weather in Paris?"}],
          "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties":
              {"city": {"type": "string"}}}}}],
          "max_tokens": 16, "temperature": 0})";
  auto res = server.Post("/v1/chat/completions", body);
  ASSERT_EQ(res.status, 200) << res.body;
  const Json choice = Json::parse(res.body)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << choice;
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << choice;
  const Json call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(call["function"]["arguments"].get<std::string>()),
            Json::parse(R"({"city": "Paris"})"));
  EXPECT_TRUE(call["id"].get<std::string>().rfind("call_", 0) == 0);
  EXPECT_TRUE(choice["message"]["content"].is_null()) << choice;

  // Streamed: the call arrives as tool_calls deltas with the same content.
  const std::string stream_body = "{\"stream\": true, " + body.substr(1);
  auto streamed = server.PostStream("/v1/chat/completions", stream_body);
  std::string name, arguments, finish, content;
  for (const std::string& event : SseData(streamed.body)) {
    const Json c = Json::parse(event)["choices"][0];
    const Json& d = c["delta"];
    if (d.contains("content") && d["content"].is_string()) {
      content += d["content"].get<std::string>();
    }
    if (d.contains("tool_calls")) {
      for (const Json& t : d["tool_calls"]) {
        EXPECT_EQ(t["index"], 0);
        if (t["function"].contains("name")) {
          name += t["function"]["name"].get<std::string>();
        }
        arguments += t["function"]["arguments"].get<std::string>();
      }
    }
    if (c["finish_reason"].is_string()) finish = c["finish_reason"];
  }
  EXPECT_EQ(name, "get_weather") << streamed.body;
  EXPECT_EQ(Json::parse(arguments), Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(content, "");
  EXPECT_EQ(server.Stop(), 0);
  std::filesystem::remove_all(dir);
}

// Structured output on a reasoning model: the schema constrains the answer
// after </think>, not the thinking (the scripted model thinks first; were
// the grammar applied from the first token, <think> would be masked away).
TEST(ServeTest, StructuredOutputOfAReasoningModelStartsAfterItsThinking) {
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("tessera_think_json_model_" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(dir);
  Status made = testing::MakeScriptedChatModel(
      dir, {"<think>", "\nA city, as JSON.\n", "</think>", R"({"city": "Paris"})"});
  ASSERT_TRUE(made.ok()) << made.ToString();
  ServerProcess server;
  START_SERVER(server, {"--model-path", dir, "--log-interval", "0",
                        "--reasoning-parser", "qwen3"});
  const Json body = {
      {"messages", {{{"role", "user"}, {"content", "Where?"}}}},
      {"max_tokens", 16},
      {"temperature", 0},
      {"response_format",
       {{"type", "json_schema"},
        {"json_schema",
         {{"name", "place"},
          {"schema",
           {{"type", "object"},
            {"properties", {{"city", {{"type", "string"}}}}},
            {"required", {"city"}}}}}}}}};
  auto res = server.Post("/v1/chat/completions", body.dump());
  ASSERT_EQ(res.status, 200) << res.body;
  const Json choice = Json::parse(res.body)["choices"][0];
  EXPECT_EQ(choice["message"]["reasoning_content"], "\nA city, as JSON.\n");
  EXPECT_EQ(choice["message"]["content"], R"({"city": "Paris"})");
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(server.Stop(), 0);
  std::filesystem::remove_all(dir);
}

TEST(ServeTest, ReasoningFromARealModelGoesToReasoningContent) {
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("tessera_think_model_" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(dir);
  Status made = testing::MakeScriptedChatModel(dir, testing::ReasoningScript());
  ASSERT_TRUE(made.ok()) << made.ToString();
  const std::string body =
      R"({"messages": [{"role": "user", "content": "Weather in Paris?"}],
          "max_tokens": 16, "temperature": 0})";
  {
    // Without the parser the <think> block is plain content.
    ServerProcess plain;
    START_SERVER(plain, {"--model-path", dir, "--log-interval", "0"});
    auto res = plain.Post("/v1/chat/completions", body);
    ASSERT_EQ(res.status, 200) << res.body;
    EXPECT_EQ(Json::parse(res.body)["choices"][0]["message"]["content"],
              "<think>\nThe user wants the weather.\n</think>\n\nIt is "
              "sunny in Paris.");
    EXPECT_EQ(plain.Stop(), 0);
  }
  ServerProcess server;
  START_SERVER(server, {"--model-path", dir, "--log-interval", "0",
                        "--reasoning-parser", "qwen3"});
  auto res = server.Post("/v1/chat/completions", body);
  ASSERT_EQ(res.status, 200) << res.body;
  const Json message = Json::parse(res.body)["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "\nThe user wants the weather.\n");
  EXPECT_EQ(message["content"], "It is sunny in Paris.");
  EXPECT_EQ(Json::parse(res.body)["choices"][0]["finish_reason"], "stop");

  const std::string stream_body = "{\"stream\": true, " + body.substr(1);
  auto streamed = server.PostStream("/v1/chat/completions", stream_body);
  std::string reasoning, content;
  for (const std::string& event : SseData(streamed.body)) {
    const Json d = Json::parse(event)["choices"][0]["delta"];
    if (d.contains("reasoning_content") && d["reasoning_content"].is_string()) {
      reasoning += d["reasoning_content"].get<std::string>();
    }
    if (d.contains("content") && d["content"].is_string()) {
      content += d["content"].get<std::string>();
    }
  }
  EXPECT_EQ(reasoning, "\nThe user wants the weather.\n") << streamed.body;
  EXPECT_EQ(content, "It is sunny in Paris.") << streamed.body;
  // separate_reasoning: false keeps the block in the content.
  auto joined = server.Post(
      "/v1/chat/completions",
      "{\"separate_reasoning\": false, " + body.substr(1));
  ASSERT_EQ(joined.status, 200) << joined.body;
  EXPECT_NE(Json::parse(joined.body)["choices"][0]["message"]["content"]
                .get<std::string>()
                .find("<think>"),
            std::string::npos);
  EXPECT_EQ(server.Stop(), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
