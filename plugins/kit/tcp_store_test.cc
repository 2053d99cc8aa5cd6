// The rendezvous store (tcp_store.h) over loopback: values round-trip,
// wait() blocks until another client sets the key and times out naming it
// otherwise, and a client started before the server is up connects once it
// is.
#include "kit/tcp_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace tessera::plugin_kit {
namespace {

class TcpStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(EnsureStoreServer(&host_, &port_).ok()); }
  void TearDown() override { StopStoreServer(); }
  std::string host_ = "127.0.0.1";
  uint16_t port_ = 0;
};

TEST_F(TcpStoreTest, ValuesRoundTripBetweenClients) {
  TcpStore a(host_, port_, std::chrono::seconds(5));
  TcpStore b(host_, port_, std::chrono::seconds(5));
  std::vector<char> big(300000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  a.set("rank0", big);
  a.set("empty", {});
  EXPECT_EQ(b.get("rank0"), big);
  EXPECT_TRUE(b.get("empty").empty());
}

TEST_F(TcpStoreTest, WaitBlocksUntilAnotherClientSets) {
  TcpStore a(host_, port_, std::chrono::seconds(5));
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    TcpStore b(host_, port_, std::chrono::seconds(5));
    b.set("late", {'x'});
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(a.get("late"), std::vector<char>{'x'});
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(90));
  setter.join();
}

TEST_F(TcpStoreTest, WaitTimesOutNamingTheKey) {
  TcpStore a(host_, port_, std::chrono::milliseconds(200));
  try {
    a.wait({"never"});
    FAIL() << "wait returned for a key nobody set";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("never"), std::string::npos) << e.what();
  }
}

TEST(TcpStoreClientTest, NobodyListeningFailsWithinTheTimeout) {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  ASSERT_TRUE(EnsureStoreServer(&host, &port).ok());
  StopStoreServer();  // the port is free again
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(TcpStore(host, port, std::chrono::milliseconds(300)), std::runtime_error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace tessera::plugin_kit
