// HttpConnection against raw clients, with a fake host instead of the
// routes: pipelining, limits and deadlines, streamed and deferred bodies
// woken from other threads (as the engine's scheduler wakes them), and
// cancellation when a client goes. Runs under ThreadSanitizer in CI
// (scripts/sanitize.sh), so it also checks the connection's threading.
#include "server/http_connection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "testing/raw_client.h"

namespace tessera::server {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::PostRequest;
using testing::RawClient;
using testing::StatusOf;

// A body fed by a producer thread: `events` chunks `gap` apart, then done
// (streaming), or one whole answer after `delay` (deferred). Records
// cancellation; the producer stops early when cancelled.
class ThreadFedBody : public AsyncBody {
 public:
  ThreadFedBody(bool streaming, int events, milliseconds gap,
                std::atomic<int>* cancels)
      : streaming_(streaming), events_(events), gap_(gap), cancels_(cancels) {}
  ~ThreadFedBody() override {
    Cancel();
    if (producer_.joinable()) producer_.join();
  }

  bool streaming() const override { return streaming_; }

  void Start(std::function<void()> wake) override {
    producer_ = std::thread([this, wake] {
      for (int i = 0; i < events_; ++i) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          if (cv_.wait_for(lock, gap_, [&] { return cancelled_; })) return;
          ready_.push_back("data: " + std::to_string(i) + "\n\n");
        }
        wake();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_ = true;
      }
      wake();
    });
  }

  bool Pump(std::string* chunk, HttpResponse* final) override {
    std::lock_guard<std::mutex> lock(mu_);
    // A stream hands out what is ready; a whole answer collects it.
    std::string& out = streaming_ ? *chunk : collected_;
    for (const std::string& s : ready_) out += s;
    ready_.clear();
    if (!streaming_ && done_) {
      final->status = 200;
      final->set_content(collected_, "text/plain");
    }
    return done_;
  }

  void Cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_ || done_) return;
    cancelled_ = true;
    ++*cancels_;
    cv_.notify_all();
  }

 private:
  const bool streaming_;
  const int events_;
  const milliseconds gap_;
  std::atomic<int>* cancels_;
  std::thread producer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> ready_;  // guarded by mu_
  std::string collected_;          // a whole answer so far; guarded by mu_
  bool done_ = false;              // guarded by mu_
  bool cancelled_ = false;         // guarded by mu_
};

// Routes: /echo (the body back), /sse (5 events 50 ms apart), /slow (a
// whole answer after 1.5 s), /never (a whole answer after 60 s), /small
// (bodies up to 16 bytes). Handlers run on threads of their own.
class FakeHost : public ConnectionHost {
 public:
  ~FakeHost() override { JoinHandlers(); }

  // Waits for every handler thread. A finished handler's thread still holds
  // its `done` (and with it a connection) until joined, so the fixture joins
  // them before the io_context goes: a connection must not outlive it.
  void JoinHandlers() {
    for (;;) {
      std::vector<std::thread> joining;
      {
        std::lock_guard<std::mutex> lock(mu_);
        joining.swap(handlers_);
      }
      if (joining.empty()) return;
      for (auto& t : joining) t.join();
    }
  }

  size_t MaxBodyBytes(const std::string& /*method*/,
                      const std::string& path) override {
    return path == "/small" ? 16 : size_t{1} << 20;
  }

  void Dispatch(std::shared_ptr<HttpRequest> request,
                std::function<void(HttpResponse)> done) override {
    std::lock_guard<std::mutex> lock(mu_);
    handlers_.emplace_back([this, request, done] {
      HttpResponse res;
      if (request->path == "/sse") {
        res.content_type = "text/event-stream";
        res.async = std::make_shared<ThreadFedBody>(true, 5, milliseconds(50),
                                                    &cancels);
      } else if (request->path == "/slow" || request->path == "/never") {
        res.async = std::make_shared<ThreadFedBody>(
            false, 1,
            request->path == "/slow" ? milliseconds(1500) : milliseconds(60000),
            &cancels);
      } else {
        res.set_content("echo:" + request->body, "text/plain");
      }
      done(std::move(res));
    });
  }

  void ConnectionClosed(const HttpConnection* /*connection*/) override {
    ++closed;
  }

  std::atomic<int> cancels{0};
  std::atomic<int> closed{0};

 private:
  std::mutex mu_;
  std::vector<std::thread> handlers_;  // guarded by mu_
};

class HttpConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    limits_.read_timeout = seconds(1);
    limits_.keep_alive_timeout = seconds(1);
    limits_.max_request_line_bytes = 1024;
    limits_.max_header_bytes = 4096;
    acceptor_.open(tcp::v4());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    Accept();
    for (int i = 0; i < 2; ++i) io_threads_.emplace_back([this] { io_.run(); });
  }
  void TearDown() override {
    host_.JoinHandlers();
    io_.stop();
    for (auto& t : io_threads_) t.join();
  }

  void Accept() {
    acceptor_.async_accept(asio::make_strand(io_),
                           [this](const boost::system::error_code& ec,
                                  tcp::socket socket) {
                             if (ec) return;
                             std::make_shared<HttpConnection>(
                                 std::move(socket), host_, limits_)
                                 ->Start();
                             Accept();
                           });
  }

  // Waits up to `timeout` for `condition`.
  template <typename F>
  static bool Eventually(F condition, milliseconds timeout = milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (condition()) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return condition();
  }

  FakeHost host_;  // outlives the I/O threads (declared first)
  ConnectionLimits limits_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::vector<std::thread> io_threads_;
  int port_ = 0;
};

TEST_F(HttpConnectionTest, PipelinedRequestsAreAnsweredInOrder) {
  RawClient c(port_);
  ASSERT_TRUE(c.Send(PostRequest("/echo", "one") + PostRequest("/echo", "two") +
                     PostRequest("/echo", "three")));
  const std::string answers = c.ReadUntil("echo:three", seconds(5));
  const size_t one = answers.find("echo:one");
  const size_t two = answers.find("echo:two");
  const size_t three = answers.find("echo:three");
  ASSERT_NE(three, std::string::npos) << answers;
  EXPECT_LT(one, two);
  EXPECT_LT(two, three);
}

TEST_F(HttpConnectionTest, StreamedBodyArrivesChunkedAndComplete) {
  RawClient c(port_);
  ASSERT_TRUE(c.Send("GET /sse HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string answer = c.ReadUntil("\r\n0\r\n\r\n", seconds(5));
  EXPECT_EQ(StatusOf(answer), 200) << answer;
  EXPECT_NE(answer.find("Transfer-Encoding: chunked"), std::string::npos);
  for (int i = 0; i < 5; ++i) {
    EXPECT_NE(answer.find("data: " + std::to_string(i)), std::string::npos)
        << answer;
  }
  EXPECT_NE(answer.find("\r\n0\r\n\r\n"), std::string::npos) << answer;
}

TEST_F(HttpConnectionTest, ClosingClientCancelsAPendingWholeAnswer) {
  {
    RawClient c(port_);
    ASSERT_TRUE(c.Send("GET /never HTTP/1.1\r\nHost: x\r\n\r\n"));
    std::this_thread::sleep_for(milliseconds(200));
  }  // close(): FIN; the "102 Processing" probe then meets a reset
  EXPECT_TRUE(Eventually([&] { return host_.cancels.load() == 1; }))
      << host_.cancels.load();
  EXPECT_TRUE(Eventually([&] { return host_.closed.load() == 1; }));
}

TEST_F(HttpConnectionTest, HalfClosedClientStillGetsItsAnswer) {
  RawClient c(port_);
  ASSERT_TRUE(c.Send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"));
  c.ShutdownWrite();
  const std::string answer = c.ReadAll(seconds(5));
  const size_t final_at = answer.find("HTTP/1.1 200 OK");
  ASSERT_NE(final_at, std::string::npos) << answer;
  EXPECT_NE(answer.find("data: 0", final_at), std::string::npos) << answer;
  EXPECT_EQ(host_.cancels.load(), 0);
}

TEST_F(HttpConnectionTest, LimitsAnswer413And414And431) {
  {
    RawClient c(port_);
    c.Send(PostRequest("/small", std::string(100, 'x')));
    const std::string answer = c.ReadAll(seconds(3));
    EXPECT_EQ(StatusOf(answer), 413) << answer;
  }
  {
    RawClient c(port_);
    c.Send("GET /" + std::string(5000, 'a') + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(StatusOf(c.ReadAll(seconds(3))), 414);
  }
  {
    RawClient c(port_);
    c.Send("GET /echo HTTP/1.1\r\nX-Big: " + std::string(8000, 'a') +
           "\r\n\r\n");
    EXPECT_EQ(StatusOf(c.ReadAll(seconds(3))), 431);
  }
  {
    RawClient c(port_);
    c.Send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\nExpect: "
           "100-continue\r\n\r\n");
    const std::string interim = c.ReadUntil("100 Continue\r\n\r\n", seconds(3));
    EXPECT_EQ(StatusOf(interim), 100) << interim;
    c.Send("hello");
    EXPECT_NE(c.ReadUntil("echo:hello", seconds(3)).find("echo:hello"),
              std::string::npos);
  }
}

TEST_F(HttpConnectionTest, DeadlinesCloseSlowAndIdleClients) {
  RawClient slow(port_);
  RawClient idle(port_);
  slow.Send("GET /ec");  // never finishes its request line
  const std::string answer = slow.ReadAll(seconds(4));
  EXPECT_EQ(StatusOf(answer), 408) << answer;
  EXPECT_EQ(idle.ReadAll(seconds(4)), "");  // closed without an answer
  EXPECT_TRUE(Eventually([&] { return host_.closed.load() == 2; }));
}

}  // namespace
}  // namespace tessera::server
