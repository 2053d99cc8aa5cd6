// `tessera serve` against hostile clients (issue: "an HTTP front that slow or
// hostile clients cannot starve"): every request below once crashed the
// server, hung it or got the wrong status. Each test sends the request, checks
// the answer, and then checks that the server still serves a normal request.
// One server (a make-model tiny qwen3, whose chat template renders tools) is
// shared by the suite; tests that need their own flags start their own.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "testing/server_process.h"
#include "testing/subprocess.h"
#include "testing/tiny_model.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::ServerProcess;

constexpr const char* kBin = TSR_TESSERA_BIN;

// {"a":{"a":...1}} nested `depth` deep, as text (nlohmann cannot build it
// without recursing).
std::string NestedObjectText(size_t depth) {
  std::string s;
  s.reserve(depth * 6 + 1);
  for (size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s.append(depth, '}');
  return s;
}

// `body` (a JSON object) with the text `raw` spliced in at the placeholder
// string "@RAW@".
std::string Splice(const Json& body, const std::string& raw) {
  std::string text = body.dump();
  const std::string mark = "\"@RAW@\"";
  const size_t at = text.find(mark);
  EXPECT_NE(at, std::string::npos);
  return text.replace(at, mark.size(), raw);
}

class HostileClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new testing::ScratchTinyModel(kBin, 5);
    ASSERT_TRUE(model_->ok()) << model_->error();
    server_ = new ServerProcess();
    ASSERT_TRUE(server_->Start(
        kBin, {"--model-path", model_->dir(), "--log-interval", "0"}))
        << server_->log();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete model_;
    model_ = nullptr;
  }

  // The server answers /health and a one-token completion.
  static void ExpectStillServing() {
    EXPECT_EQ(server_->Get("/health").status, 200) << server_->log();
    const auto res = server_->Post(
        "/v1/completions", Json{{"prompt", "hello"}, {"max_tokens", 1}}.dump());
    EXPECT_EQ(res.status, 200) << res.body;
  }

  static void Expect400Naming(const testing::HttpResult& res,
                              const std::string& words) {
    EXPECT_EQ(res.status, 400) << res.body.substr(0, 500);
    const Json j = Json::parse(res.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << res.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(words),
              std::string::npos)
        << j.dump();
  }

  static testing::ScratchTinyModel* model_;
  static ServerProcess* server_;
};
testing::ScratchTinyModel* HostileClientTest::model_ = nullptr;
ServerProcess* HostileClientTest::server_ = nullptr;

Json ChatBody() {
  return Json{{"messages", {{{"role", "user"}, {"content", "hi"}}}},
              {"max_tokens", 1}};
}

// Every route with a JSON body, and every place a client's JSON reaches a
// recursive walker (the chat template's tools, tool-call arguments and
// kwargs): 100,000 levels deep is a 400 naming the limit, not a SIGSEGV.
TEST_F(HostileClientTest, JsonNested100000DeepIs400OnEveryRoute) {
  const std::string deep = NestedObjectText(100000);
  Json tools = ChatBody();
  tools["tools"] = {{{"type", "function"},
                     {"function", {{"name", "f"}, {"parameters", "@RAW@"}}}}};
  Json kwargs = ChatBody();
  kwargs["chat_template_kwargs"] = "@RAW@";
  Json call = ChatBody();
  call["messages"].push_back(
      {{"role", "assistant"},
       {"content", ""},
       {"tool_calls",
        {{{"id", "c1"},
          {"type", "function"},
          {"function", {{"name", "f"}, {"arguments", "@RAW@"}}}}}}});
  Json completion{{"prompt", "hi"}, {"max_tokens", 1}, {"logit_bias", "@RAW@"}};
  Json generate{{"text", "hi"}, {"sampling_params", "@RAW@"}};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v1/chat/completions", Splice(tools, deep)},
      {"/v1/chat/completions", Splice(kwargs, deep)},
      {"/v1/chat/completions", Splice(call, deep)},
      {"/v1/completions", Splice(completion, deep)},
      {"/v1/completions", deep},
      {"/generate", Splice(generate, deep)},
      {"/tokenize", Splice(Json{{"prompt", "@RAW@"}}, deep)},
      {"/detokenize", Splice(Json{{"tokens", "@RAW@"}}, deep)},
      {"/abort_request", Splice(Json{{"rid", "@RAW@"}}, deep)},
      {"/generate", std::string(100000, '[') + std::string(100000, ']')},
  };
  for (const auto& [route, body] : cases) {
    SCOPED_TRACE(route);
    Expect400Naming(server_->Post(route, body), "nested deeper than 512");
    ExpectStillServing();
  }
}

// Within the limit, the same places render: tools 200 levels deep reach the
// chat template and the request completes (or fails cleanly), and the
// server lives on.
TEST_F(HostileClientTest, ToolsNestedWithinTheLimitRender) {
  Json tools = ChatBody();
  tools["tools"] = {{{"type", "function"},
                     {"function", {{"name", "f"}, {"parameters", "@RAW@"}}}}};
  const auto res = server_->Post("/v1/chat/completions",
                                 Splice(tools, NestedObjectText(200)));
  EXPECT_EQ(res.status, 200) << res.body.substr(0, 500);
  ExpectStillServing();
}

// A number that overflows a double is a client error, not a 500.
TEST_F(HostileClientTest, OverflowingNumberIs400) {
  Expect400Naming(
      server_->Post("/v1/completions",
                    R"({"prompt":"hi","max_tokens":1,"temperature":1e400})"),
      "overflow");
  ExpectStillServing();
}

// An object with 200,000 keys parses in linear time and is refused by the
// per-object key limit; the server keeps serving meanwhile.
TEST_F(HostileClientTest, HugeObjectsAreRefusedQuickly) {
  std::string bias = "{";
  for (int i = 0; i < 200000; ++i) {
    if (i) bias += ',';
    bias += "\"" + std::to_string(i) + "\":1";
  }
  bias += "}";
  const auto start = std::chrono::steady_clock::now();
  const auto res = server_->Post(
      "/v1/completions",
      Splice(Json{{"prompt", "hi"}, {"max_tokens", 1}, {"logit_bias", "@RAW@"}},
             bias));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  Expect400Naming(res, "more than 65536 keys");
  // Quadratic parsing took tens of seconds; linear takes a fraction of one.
  EXPECT_LT(seconds, 20.0);
  ExpectStillServing();
}

// A second server on a busy port is a start-up error (exit 2, naming the
// port), not a second listener splitting the traffic (SO_REUSEPORT).
TEST_F(HostileClientTest, BusyPortIsAStartUpError) {
  const std::string port = std::to_string(server_->port());
  const auto second = testing::RunShell(
      "timeout 120 " + testing::ShellQuote(kBin) + " serve --model-path " +
      testing::ShellQuote(model_->dir()) + " --port " + port);
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find("address already in use"), std::string::npos)
      << second.err;
  EXPECT_NE(second.err.find(":" + port), std::string::npos) << second.err;
  ExpectStillServing();
}

// A prompt that cannot fit the context whatever its tokenization is refused
// before it is tokenized; a list of prompts is bounded; a rid is limited to
// safe characters.
TEST_F(HostileClientTest, OversizedPromptsAndUnsafeRidsAre400) {
  const std::string huge(20 << 20, 'a');
  Expect400Naming(
      server_->Post("/v1/completions",
                    Json{{"prompt", huge}, {"max_tokens", 1}}.dump()),
      "maximum context length is 2048");
  Expect400Naming(server_->Post("/generate", Json{{"text", huge}}.dump()),
                  "bytes");
  Json many = Json::array();
  for (int i = 0; i < 100000; ++i) many.push_back("a");
  Expect400Naming(
      server_->Post("/v1/completions",
                    Json{{"prompt", many}, {"max_tokens", 1}}.dump()),
      "at most 64");
  Expect400Naming(
      server_->Post("/generate",
                    Json{{"text", "hi"}, {"rid", "a\"}\n{\"x\":1"}}.dump()),
      "'rid' must be 1 to 128 characters");
  Expect400Naming(server_->Post("/abort_request", Json{{"rid", "x\ny"}}.dump()),
                  "'rid' must be");
  ExpectStillServing();
}

// n larger than the whole queue can never be queued: 400, not 503.
TEST(HostileServerFlagsTest, ChoicesBeyondTheQueueAre400) {
  const testing::ScratchTinyModel model(kBin);
  ASSERT_TRUE(model.ok()) << model.error();
  const std::string& dir = model.dir();
  ServerProcess server;
  ASSERT_TRUE(server.Start(kBin, {"--model-path", dir, "--log-interval", "0",
                                  "--max-queued-requests", "4"}))
      << server.log();
  const auto res =
      server.Post("/v1/completions",
                  Json{{"prompt", "hi"}, {"max_tokens", 1}, {"n", 5}}.dump());
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_NE(res.body.find("--max-queued-requests"), std::string::npos)
      << res.body;
  EXPECT_EQ(
      server
          .Post("/v1/completions",
                Json{{"prompt", "hi"}, {"max_tokens", 1}, {"n", 4}}.dump())
          .status,
      200);
  server.Stop();
}

// With --api-key: two Authorization headers are refused whatever their
// order; a hostile --served-model-name is escaped in /metrics.
TEST(HostileServerFlagsTest, DuplicateAuthorizationAndMetricsLabels) {
  const testing::ScratchTinyModel model(kBin);
  ASSERT_TRUE(model.ok()) << model.error();
  const std::string& dir = model.dir();
  const std::string name = "m\"} 1\nfake_metric{a=\"b\\";
  ServerProcess server;
  ASSERT_TRUE(
      server.Start(kBin, {"--model-path", dir, "--log-interval", "0",
                          "--api-key", "sekrit", "--served-model-name", name}))
      << server.log();
  const std::string body = Json{{"prompt", "hi"}, {"max_tokens", 1}}.dump();
  EXPECT_EQ(
      server.Post("/v1/completions", body, {{"Authorization", "Bearer sekrit"}})
          .status,
      200);
  for (const httplib::Headers& twice :
       {httplib::Headers{{"Authorization", "Bearer sekrit"},
                         {"Authorization", "Bearer wrong"}},
        httplib::Headers{{"Authorization", "Bearer wrong"},
                         {"Authorization", "Bearer sekrit"}},
        httplib::Headers{{"Authorization", "Bearer sekrit"},
                         {"Authorization", "Bearer sekrit"}}}) {
    const auto res = server.Post("/v1/completions", body, twice);
    EXPECT_EQ(res.status, 401) << res.body;
    EXPECT_NE(res.body.find("more than one Authorization header"),
              std::string::npos)
        << res.body;
  }
  const std::string metrics = server.Get("/metrics").body;
  // No line may start with the injected metric; the label value is escaped.
  EXPECT_EQ(metrics.find("\nfake_metric"), std::string::npos);
  EXPECT_NE(metrics.find("model_name=\"m\\\"} 1\\nfake_metric{a=\\\"b\\\\\""),
            std::string::npos)
      << metrics.substr(0, 2000);
  server.Stop();
}

// Files that are not regular files are refused at start-up with a clear
// error instead of blocking (a FIFO) or reading for ever (/dev/zero).
TEST(HostileServerFlagsTest, ChatTemplateFromADeviceAndAFifoWeightsFile) {
  const testing::ScratchTinyModel model(kBin);
  ASSERT_TRUE(model.ok()) << model.error();
  const std::string& dir = model.dir();
  const auto zero = testing::RunShell(
      "timeout 60 " + testing::ShellQuote(kBin) + " generate --model-path " +
      testing::ShellQuote(dir) +
      " --chat-template /dev/zero --prompt hi --chat --max-new-tokens 1");
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
  EXPECT_NE(zero.err.find("/dev/zero is a character device"), std::string::npos)
      << zero.err;

  fs::remove(fs::path(dir) / "model.safetensors");
  ASSERT_EQ(::mkfifo((fs::path(dir) / "model.safetensors").c_str(), 0600), 0);
  const auto fifo = testing::RunShell(
      "timeout 60 " + testing::ShellQuote(kBin) + " generate --model-path " +
      testing::ShellQuote(dir) + " --prompt hi --max-new-tokens 1");
  EXPECT_NE(fifo.exit_code, 124) << "blocked on the FIFO";
  EXPECT_NE(fifo.exit_code, 0);
  EXPECT_NE(fifo.err.find("not a regular file"), std::string::npos) << fifo.err;
}

}  // namespace
}  // namespace tessera
