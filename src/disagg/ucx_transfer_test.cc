// UcxTransfer between two workers of one process (UCX's shared-memory /
// loopback transports): puts land before the completion message, a put
// outside the peer's region is refused, a vanished peer fails the write.
#include "disagg/ucx_transfer.h"

#include <gtest/gtest.h>

#include <future>
#include <numeric>
#include <vector>

namespace tessera::disagg {
namespace {

using Clock = std::chrono::steady_clock;

struct Message {
  uint64_t tag = 0;
  std::string text;
};

TEST(UcxTransferTest, PutsLandBeforeTheCompletionMessage) {
  auto a = UcxTransfer::Create();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = UcxTransfer::Create();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  std::vector<uint8_t> target(1 << 20, 0);
  auto region = (*b)->Register(target.data(), target.size());
  ASSERT_TRUE(region.ok()) << region.status().ToString();

  std::promise<Message> got;
  (*b)->SetMessageHandler([&](uint64_t tag, std::string text) {
    // The message's arrival means the puts are in place.
    const bool in_place = target[10] == 1 && target[(1 << 20) - 1] == 200;
    got.set_value({tag, in_place ? text : "bytes missing"});
  });
  std::vector<uint8_t> src(4096);
  std::iota(src.begin(), src.end(), 0);
  std::vector<uint8_t> tail(1, 200);
  WriteJob job;
  job.peer_address = (*b)->WorkerAddress();
  job.regions = {*region};
  job.puts = {{src.data(), 0, 9, 4096}, {tail.data(), 0, (1 << 20) - 1, 1}};
  job.tag = 42;
  job.message = "done";
  job.deadline = Clock::now() + std::chrono::seconds(20);
  std::promise<Status> status;
  job.done = [&](Status s) { status.set_value(std::move(s)); };
  (*a)->Write(std::move(job));
  auto st = status.get_future();
  ASSERT_EQ(st.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(st.get().ok());
  auto msg = got.get_future();
  ASSERT_EQ(msg.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  Message m = msg.get();
  EXPECT_EQ(m.tag, 42u);
  EXPECT_EQ(m.text, "done");
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(target[9 + i], src[i]) << i;
  EXPECT_EQ(target[8], 0);
}

TEST(UcxTransferTest, APutOutsideThePeersRegionIsRefused) {
  auto a = UcxTransfer::Create();
  ASSERT_TRUE(a.ok());
  auto b = UcxTransfer::Create();
  ASSERT_TRUE(b.ok());
  std::vector<uint8_t> target(64);
  auto region = (*b)->Register(target.data(), target.size());
  ASSERT_TRUE(region.ok());
  std::vector<uint8_t> src(128);
  WriteJob job;
  job.peer_address = (*b)->WorkerAddress();
  job.regions = {*region};
  job.puts = {{src.data(), 0, 0, 128}};
  job.deadline = Clock::now() + std::chrono::seconds(20);
  std::promise<Status> status;
  job.done = [&](Status s) { status.set_value(std::move(s)); };
  (*a)->Write(std::move(job));
  Status s = status.get_future().get();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("outside the peer's registered region"),
            std::string::npos)
      << s.message();
}

TEST(UcxTransferTest, AMissedDeadlineOrAGonePeerFailsTheWrite) {
  auto a = UcxTransfer::Create();
  ASSERT_TRUE(a.ok());
  std::string address;
  RemoteRegion region;
  std::vector<uint8_t> target(64);
  {
    auto b = UcxTransfer::Create();
    ASSERT_TRUE(b.ok());
    address = (*b)->WorkerAddress();
    auto r = (*b)->Register(target.data(), target.size());
    ASSERT_TRUE(r.ok());
    region = *r;
  }  // the peer is gone
  std::vector<uint8_t> src(64);
  WriteJob job;
  job.peer_address = address;
  job.regions = {region};
  job.puts = {{src.data(), 0, 0, 64}};
  job.deadline = Clock::now() + std::chrono::seconds(2);
  std::promise<Status> status;
  job.done = [&](Status s) { status.set_value(std::move(s)); };
  (*a)->Write(std::move(job));
  auto st = status.get_future();
  ASSERT_EQ(st.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_FALSE(st.get().ok());
}

}  // namespace
}  // namespace tessera::disagg
