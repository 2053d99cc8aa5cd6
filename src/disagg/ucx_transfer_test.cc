// UcxTransfer between two workers of one process (UCX's shared-memory /
// loopback transports): puts land before the completion message with
// either write method, a put outside the peer's region is refused by the
// sender (and a rendezvous chunk outside it dropped by the receiver), a
// vanished peer fails the write.
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

// Both write methods: small puts (UCX's eager path), a large one (its
// rendezvous path: a CMA read on this host) and puts into a second region,
// all in place when the message arrives.
class UcxWriteMethodTest : public ::testing::TestWithParam<WriteMethod> {};

TEST_P(UcxWriteMethodTest, PutsLandBeforeTheCompletionMessage) {
  auto a = UcxTransfer::Create();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = UcxTransfer::Create();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  constexpr size_t kSize = 1 << 20;
  std::vector<uint8_t> target(kSize, 0), second(kSize, 0);
  auto region = (*b)->Register(target.data(), target.size());
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  auto region2 = (*b)->Register(second.data(), second.size());
  ASSERT_TRUE(region2.ok()) << region2.status().ToString();
  EXPECT_NE(region->id, region2->id);

  std::promise<Message> got;
  (*b)->SetMessageHandler([&](uint64_t tag, std::string text) {
    // The message's arrival means the puts are in place.
    const bool in_place = target[10] == 1 && target[kSize - 1] == 200 &&
                          second[1001] == 1 && second[1000 + 300000] == 0xe0;
    got.set_value({tag, in_place ? text : "bytes missing"});
  });
  std::vector<uint8_t> src(4096);
  std::iota(src.begin(), src.end(), 0);
  std::vector<uint8_t> big(300001);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> tail(1, 200);
  WriteJob job;
  job.method = GetParam();
  job.peer_address = (*b)->WorkerAddress();
  job.same_host = true;
  job.regions = {*region, *region2};
  // Listed in the peer's order but given out of order here: the tag of a
  // chunk names the region's id, not its place in this list.
  std::swap(job.regions[0], job.regions[1]);
  job.puts = {{src.data(), 1, 9, 4096},
              {tail.data(), 1, kSize - 1, 1},
              {big.data(), 0, 1000, big.size()}};
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
  for (size_t i = 0; i < big.size(); ++i) {
    ASSERT_EQ(second[1000 + i], big[i]) << i;
  }
  EXPECT_EQ(second[999], 0);
  EXPECT_EQ(second[1000 + big.size()], 0);
}

INSTANTIATE_TEST_SUITE_P(Methods, UcxWriteMethodTest,
                         ::testing::Values(WriteMethod::kRma,
                                           WriteMethod::kRendezvous),
                         [](const auto& info) {
                           return info.param == WriteMethod::kRma
                                      ? std::string("Rma")
                                      : std::string("Rendezvous");
                         });

// A rendezvous chunk naming a region the receiver never registered (or a
// range past its end) is dropped there: nothing is written, the message
// still arrives.
TEST(UcxTransferTest, ARendezvousChunkOutsideTheReceiversRegionsIsDropped) {
  auto a = UcxTransfer::Create();
  ASSERT_TRUE(a.ok());
  auto b = UcxTransfer::Create();
  ASSERT_TRUE(b.ok());
  std::vector<uint8_t> target(64, 0);
  auto region = (*b)->Register(target.data(), target.size());
  ASSERT_TRUE(region.ok());
  std::promise<std::string> got;
  (*b)->SetMessageHandler(
      [&](uint64_t, std::string text) { got.set_value(std::move(text)); });
  RemoteRegion unknown = *region;
  unknown.id = 7;            // never registered by b
  unknown.length = 1 << 20;  // what a confused sender believes
  RemoteRegion too_long = *region;
  too_long.length = 1 << 20;
  std::vector<uint8_t> src(20000, 0xab);
  WriteJob job;
  job.method = WriteMethod::kRendezvous;
  job.peer_address = (*b)->WorkerAddress();
  job.same_host = true;
  job.regions = {unknown, too_long};
  job.puts = {{src.data(), 0, 0, 64}, {src.data(), 1, 32, 20000}};
  job.tag = 5;
  job.message = "after";
  job.deadline = Clock::now() + std::chrono::seconds(20);
  std::promise<Status> status;
  job.done = [&](Status s) { status.set_value(std::move(s)); };
  (*a)->Write(std::move(job));
  auto st = status.get_future();
  ASSERT_EQ(st.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  auto msg = got.get_future();
  ASSERT_EQ(msg.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(msg.get(), "after");
  for (uint8_t v : target) ASSERT_EQ(v, 0);
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
