// The HTTP front of `tessera serve` against slow, idle, oversized and odd
// clients, over raw sockets (each test states what a client does byte by
// byte). Each test checks that normal requests keep being served.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "testing/raw_client.h"
#include "testing/server_process.h"
#include "testing/subprocess.h"
#include "testing/tiny_model.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;
using testing::PostRequest;
using testing::RawClient;
using testing::ServerProcess;
using testing::StatusOf;

constexpr const char* kBin = TSR_TESSERA_BIN;

// The server's resident set in KiB, from /proc.
long RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

class HttpFrontTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // 2,000 client sockets plus the server's own in one test process.
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, 16384);
    setrlimit(RLIMIT_NOFILE, &limit);
    model_ = new testing::ScratchTinyModel(kBin, 9);
    ASSERT_TRUE(model_->ok()) << model_->error();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  void StartServer(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--model-path", model_->dir(),
                                     "--log-interval", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_TRUE(server_.Start(kBin, args)) << server_.log();
  }

  // A one-token completion, timed.
  double NormalRequestSeconds() {
    const auto start = Clock::now();
    const auto res = server_.Post(
        "/v1/completions", Json{{"prompt", "hello"}, {"max_tokens", 1}}.dump());
    EXPECT_EQ(res.status, 200) << res.body;
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  static testing::ScratchTinyModel* model_;
  ServerProcess server_;
};
testing::ScratchTinyModel* HttpFrontTest::model_ = nullptr;

// 2,000 connections that send nothing, and 200 that send their header a
// byte at a time, hold no thread: a normal request still completes at once.
TEST_F(HttpFrontTest, IdleAndSlowConnectionsDoNotStarveOthers) {
  StartServer();
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 2000; ++i) {
    idle.push_back(std::make_unique<RawClient>(server_.port()));
    ASSERT_TRUE(idle.back()->connected()) << i;
  }
  std::vector<std::unique_ptr<RawClient>> slow;
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 200; ++i) {
    slow.push_back(std::make_unique<RawClient>(server_.port()));
  }
  for (size_t b = 0; b < 5; ++b) {
    for (auto& c : slow) c->Send(head.substr(b, 1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(NormalRequestSeconds(), 1.0);
  EXPECT_LT(NormalRequestSeconds(), 1.0);
}

// A client that sends its header a byte at a time is cut off at the read
// deadline (408), and an idle connection is closed.
TEST_F(HttpFrontTest, HeaderDeadlineAndIdleTimeout) {
  StartServer({"--http-read-timeout", "2", "--http-keep-alive-timeout", "1"});
  RawClient slow(server_.port());
  RawClient idle(server_.port());
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n";
  const auto start = Clock::now();
  std::string answer;
  for (size_t i = 0; i < head.size(); ++i) {
    if (!slow.Send(head.substr(i, 1))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (Clock::now() - start > std::chrono::seconds(6)) break;
  }
  answer = slow.ReadAll(std::chrono::seconds(3));
  EXPECT_EQ(StatusOf(answer), 408) << answer;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 8.0);
  // The idle one was closed without an answer (the first request must come
  // within the read timeout).
  EXPECT_EQ(idle.ReadAll(std::chrono::seconds(4)), "");
  EXPECT_LT(NormalRequestSeconds(), 1.0);
}

// 25 MB of headers: 431 as soon as the limit is passed, and the server's
// memory barely moves; a 50 MB request line: 414.
TEST_F(HttpFrontTest, HugeHeadersAndRequestLinesAreRefused) {
  StartServer();
  const long rss_before = RssKib(server_.pid());
  {
    RawClient c(server_.port());
    c.Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n");
    const std::string line = "X-Filler: " + std::string(1000, 'a') + "\r\n";
    std::string block;
    for (int i = 0; i < 1000; ++i) block += line;  // ~1 MB
    for (int i = 0; i < 25; ++i) {
      if (!c.Send(block)) break;  // the server closes after its 431
    }
    const std::string answer = c.ReadAll(std::chrono::seconds(5));
    EXPECT_EQ(StatusOf(answer), 431) << answer.substr(0, 300);
  }
  {
    RawClient c(server_.port());
    c.Send("GET /" + std::string(1 << 20, 'a'));
    for (int i = 0; i < 50; ++i) {
      if (!c.Send(std::string(1 << 20, 'a'))) break;
    }
    const std::string answer = c.ReadAll(std::chrono::seconds(5));
    EXPECT_EQ(StatusOf(answer), 414) << answer.substr(0, 300);
  }
  const long rss_after = RssKib(server_.pid());
  EXPECT_LT(rss_after - rss_before, 10 * 1024)
      << "RSS " << rss_before << " -> " << rss_after << " KiB";
  EXPECT_LT(NormalRequestSeconds(), 1.0);
}

// Five requests in one write get five answers, in order; a client that
// shuts down its sending side after its request still gets the answer.
TEST_F(HttpFrontTest, PipelinedAndHalfClosedClientsAreAnswered) {
  StartServer();
  {
    RawClient c(server_.port());
    std::string batch;
    for (int i = 0; i < 5; ++i) {
      batch += PostRequest("/tokenize",
                           Json{{"prompt", "n" + std::to_string(i)}}.dump());
    }
    ASSERT_TRUE(c.Send(batch));
    c.ShutdownWrite();
    const std::string answers = c.ReadAll(std::chrono::seconds(10));
    size_t pos = 0;
    for (int i = 0; i < 5; ++i) {
      const size_t at = answers.find("HTTP/1.1 200 OK", pos);
      ASSERT_NE(at, std::string::npos) << "answer " << i << " of\n" << answers;
      pos = at + 1;
    }
    EXPECT_EQ(answers.find("HTTP/1.1", pos), std::string::npos);
    // In order: each answer's prompt text comes back in sequence.
    size_t last = 0;
    for (int i = 0; i < 5; ++i) {
      const size_t at = answers.find("\"n" + std::to_string(i) + "\"");
      ASSERT_NE(at, std::string::npos) << answers;
      EXPECT_GT(at, last);
      last = at;
    }
  }
  {
    // Half-close while a generation is still running.
    RawClient c(server_.port());
    ASSERT_TRUE(c.Send(PostRequest(
        "/v1/completions",
        Json{{"prompt", "hi"}, {"max_tokens", 64}, {"ignore_eos", true}}
            .dump())));
    c.ShutdownWrite();
    const std::string answer = c.ReadAll(std::chrono::seconds(30));
    const size_t final_at = answer.find("HTTP/1.1 200 OK");
    ASSERT_NE(final_at, std::string::npos) << answer;
    EXPECT_NE(answer.find("\"completion_tokens\":64"), std::string::npos)
        << answer;
  }
}

// A non-streaming request whose client goes away is cancelled, as a
// stream's is: its KV returns to the pool.
TEST_F(HttpFrontTest, NonStreamingRequestsOfVanishedClientsAreCancelled) {
  // One sequence runs at a time (8 requests x 8 choices), so most are still
  // waiting when their clients go, however fast the model is.
  StartServer({"--max-running-requests", "1"});
  std::vector<std::unique_ptr<RawClient>> gone;
  for (int i = 0; i < 8; ++i) {
    gone.push_back(std::make_unique<RawClient>(server_.port()));
    ASSERT_TRUE(gone.back()->Send(
        PostRequest("/v1/completions", Json{{"prompt", "tell me a long story"},
                                            {"max_tokens", 1500},
                                            {"n", 8},
                                            {"ignore_eos", true}}
                                           .dump())));
  }
  // Close every client as soon as the server holds all 8 x 8 sequences.
  Json state;
  for (int i = 0; i < 3000; ++i) {
    state = Json::parse(server_.Get("/server_info").body)["state"];
    const int64_t seen = state["running_requests"].get<int64_t>() +
                         state["queued_requests"].get<int64_t>() +
                         state["requests_total"].get<int64_t>();
    if (seen >= 64) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  gone.clear();  // close() every client
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    state = Json::parse(server_.Get("/server_info").body)["state"];
    if (state["running_requests"] == 0 && state["queued_requests"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(state["running_requests"], 0) << state.dump();
  EXPECT_EQ(state["kv_used_tokens"], 0) << state.dump();
  // Cancelled, not finished: most of the 64 sequences (a sequence of this
  // model takes tens of milliseconds, and a vanished client of a
  // non-streaming request is noticed within about a second).
  EXPECT_GE(state["aborted_requests"].get<int64_t>(), 32) << state.dump();
}

// Beyond --max-connections a new connection is answered 503 at once.
TEST_F(HttpFrontTest, ConnectionsBeyondTheLimitGet503) {
  StartServer({"--max-connections", "8"});
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 8; ++i) {
    held.push_back(std::make_unique<RawClient>(server_.port()));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // On a loaded machine the server may still be accepting the held ones:
  // one of a few further connections must be refused.
  std::string answer;
  std::vector<std::unique_ptr<RawClient>> extra;
  for (int i = 0; i < 3 && StatusOf(answer) != 503; ++i) {
    extra.push_back(std::make_unique<RawClient>(server_.port()));
    answer = extra.back()->ReadAll(std::chrono::seconds(3));
  }
  EXPECT_EQ(StatusOf(answer), 503) << answer;
  EXPECT_NE(answer.find("--max-connections"), std::string::npos) << answer;
  extra.clear();
  held.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LT(NormalRequestSeconds(), 1.0);
}

// SIGTERM while a client is still sending a large body and another holds a
// stream: the server exits within the grace period plus a few seconds.
TEST_F(HttpFrontTest, SigtermExitsWhileClientsAreMidRequest) {
  StartServer({"--shutdown-grace", "2"});
  RawClient uploading(server_.port());
  ASSERT_TRUE(uploading.Send(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
      "50000000\r\n\r\n{\"prompt\": \""));
  RawClient streaming(server_.port());
  ASSERT_TRUE(
      streaming.Send(PostRequest("/v1/completions", Json{{"prompt", "hi"},
                                                         {"max_tokens", 2000},
                                                         {"ignore_eos", true},
                                                         {"stream", true}}
                                                        .dump())));
  const std::string first =
      streaming.ReadUntil("data:", std::chrono::seconds(10));
  ASSERT_NE(first.find("data:"), std::string::npos) << first;
  const auto start = Clock::now();
  const int code = server_.Stop(30);
  const double took =
      std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(code, 0) << server_.log();
  EXPECT_LT(took, 2 + 6.0) << server_.log();
}

// A header's value in a raw HTTP answer ("" when absent); names compare
// case-insensitively.
std::string HeaderOf(const std::string& answer, const std::string& name) {
  std::string lower_answer = answer.substr(0, answer.find("\r\n\r\n"));
  for (char& c : lower_answer) c = static_cast<char>(std::tolower(c));
  std::string key = "\r\n" + name + ":";
  for (char& c : key) c = static_cast<char>(std::tolower(c));
  const size_t at = lower_answer.find(key);
  if (at == std::string::npos) return "";
  size_t begin = at + key.size();
  while (begin < answer.size() && answer[begin] == ' ') ++begin;
  return answer.substr(begin, answer.find("\r\n", begin) - begin);
}

std::string Exchange(int port, const std::string& request) {
  RawClient client(port);
  client.Send(request);
  return client.ReadAll(std::chrono::seconds(10));
}

// --allowed-origins: a browser's preflight is answered before the API key is
// checked, an allowed origin's responses (errors and streams included) carry
// Access-Control-Allow-Origin, other origins get none (preflight 403); without
// the flag there is no CORS at all.
TEST_F(HttpFrontTest, CorsFollowsAllowedOrigins) {
  StartServer({"--allowed-origins", "http://ui.example:8080,http://b.example",
               "--api-key", "k"});
  const std::string ok_origin = "http://ui.example:8080";
  const std::string preflight =
      "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: {}\r\n"
      "Access-Control-Request-Method: POST\r\n"
      "Access-Control-Request-Headers: authorization, content-type\r\n"
      "Connection: close\r\n\r\n";
  auto preflight_from = [&](const std::string& origin) {
    std::string r = preflight;
    r.replace(r.find("{}"), 2, origin);
    return Exchange(server_.port(), r);
  };
  std::string answer = preflight_from(ok_origin);
  EXPECT_EQ(StatusOf(answer), 200) << answer;
  EXPECT_EQ(HeaderOf(answer, "Access-Control-Allow-Origin"), ok_origin);
  EXPECT_NE(HeaderOf(answer, "Access-Control-Allow-Methods").find("POST"),
            std::string::npos);
  EXPECT_EQ(HeaderOf(answer, "Access-Control-Allow-Headers"),
            "authorization, content-type");
  answer = preflight_from("http://evil.example");
  EXPECT_EQ(StatusOf(answer), 403) << answer;
  EXPECT_EQ(HeaderOf(answer, "Access-Control-Allow-Origin"), "");

  auto post_from = [&](const std::string& origin, bool stream) {
    const std::string body =
        Json{{"prompt", "hello"}, {"max_tokens", 2}, {"stream", stream}}
            .dump();
    return Exchange(
        server_.port(),
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nOrigin: " + origin +
            "\r\nAuthorization: Bearer k\r\nContent-Type: "
            "application/json\r\nConnection: close\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body);
  };
  for (bool stream : {false, true}) {
    answer = post_from(ok_origin, stream);
    EXPECT_EQ(StatusOf(answer), 200) << answer;
    EXPECT_EQ(HeaderOf(answer, "Access-Control-Allow-Origin"), ok_origin)
        << answer;
    EXPECT_EQ(HeaderOf(answer, "Vary"), "Origin");
    answer = post_from("http://evil.example", stream);
    EXPECT_EQ(StatusOf(answer), 200) << answer;
    EXPECT_EQ(HeaderOf(answer, "Access-Control-Allow-Origin"), "");
  }
  // An error (no API key) still carries the header, so the page can read it.
  answer = Exchange(server_.port(),
                    "GET /v1/models HTTP/1.1\r\nHost: x\r\nOrigin: "
                    "http://b.example\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(StatusOf(answer), 401) << answer;
  EXPECT_EQ(HeaderOf(answer, "Access-Control-Allow-Origin"),
            "http://b.example");

  // Off by default: no headers, and OPTIONS is a method no route takes.
  // (Fresh processes: a ServerProcess starts once.)
  auto preflight_to = [&](const ServerProcess& server,
                          const std::string& origin) {
    std::string r = preflight;
    r.replace(r.find("{}"), 2, origin);
    return Exchange(server.port(), r);
  };
  {
    ServerProcess plain;
    ASSERT_TRUE(plain.Start(kBin, {"--model-path", model_->dir()}))
        << plain.log();
    answer = preflight_to(plain, ok_origin);
    EXPECT_EQ(StatusOf(answer), 405) << answer;
    EXPECT_EQ(HeaderOf(answer, "Access-Control-Allow-Origin"), "");
  }
  // vLLM's JSON-list spelling, and a bad origin is refused at start-up.
  {
    ServerProcess any;
    ASSERT_TRUE(any.Start(kBin, {"--model-path", model_->dir(),
                                 "--allowed-origins", "[\"*\"]"}))
        << any.log();
    answer = preflight_to(any, "http://anything.example");
    EXPECT_EQ(StatusOf(answer), 200) << answer;
    EXPECT_EQ(HeaderOf(answer, "Access-Control-Allow-Origin"), "*");
  }
  const auto bad = testing::RunShell(
      std::string(kBin) + " serve --model-path " + model_->dir() +
      " --port 0 --allowed-origins http://x.example/path");
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE((bad.out + bad.err).find("scheme://host[:port]"),
            std::string::npos)
      << bad.out << bad.err;
}

}  // namespace
}  // namespace tessera
