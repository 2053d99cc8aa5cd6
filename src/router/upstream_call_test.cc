// UpstreamCall against a real cpp-httplib server on loopback whose handler
// holds every request (as a prefill server waiting for a decode server's
// KV registration does, up to its 300 s transfer timeout): a Cancel()
// ends the call promptly whether it lands before the request is sent,
// while it connects, or once it waits for the answer — the router relies
// on that to drop the prefill half of a pair whose decode server died.
#include "router/upstream_call.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace tessera::router {
namespace {

class HeldServer {
 public:
  HeldServer() {
    server_.Post("/generate", [this](const httplib::Request&, httplib::Response& res) {
      ++requests_;
      // Held until the test ends (or 30 s).
      for (int i = 0; i < 3000 && !release_; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      res.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~HeldServer() {
    release_ = true;
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  int requests() const { return requests_; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> release_{false};
  std::atomic<int> requests_{0};
};

double SecondsToEnd(UpstreamCall& call) {
  const auto start = std::chrono::steady_clock::now();
  call.WaitDone();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(UpstreamCallTest, CancelRightAfterStartEndsTheCallPromptly) {
  HeldServer server;
  // Many times: the cancel lands before, during and after the connect.
  for (int i = 0; i < 40; ++i) {
    UpstreamCall call;
    call.StartPost("127.0.0.1", server.port(), "/generate", "{}", "",
                   std::chrono::seconds(60));
    if (i % 4 == 1) std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (i % 4 == 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    call.Cancel();
    EXPECT_LT(SecondsToEnd(call), 2.0) << "attempt " << i;
    EXPECT_TRUE(call.done());
    EXPECT_EQ(call.status(), 0);
    EXPECT_TRUE(call.transport_failed());
  }
}

TEST(UpstreamCallTest, CancelOfAHeldRequestEndsIt) {
  HeldServer server;
  UpstreamCall call;
  call.StartPost("127.0.0.1", server.port(), "/generate", "{}", "", std::chrono::seconds(60));
  for (int i = 0; i < 500 && server.requests() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(server.requests(), 1);
  EXPECT_FALSE(call.WaitDoneFor(std::chrono::milliseconds(100)));  // held
  call.Cancel();
  EXPECT_LT(SecondsToEnd(call), 2.0);
}

}  // namespace
}  // namespace tessera::router
