// Collectives across 3 virtual devices: all_reduce (sum/max/min; f32, bf16,
// i32; in place and out of place), all_gather, broadcast, send/recv in a
// ring, mismatched calls, and argument validation. Every rank's call is
// enqueued from this one thread; the stream workers meet in the plugin.
#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

class CollectivesTest : public CpuPluginTest {
 protected:
  static constexpr int kRanks = 3;
  void SetUp() override {
    CpuPluginTest::SetUp();
    ASSERT_EQ(InitWith({{"devices", "3"}, {"threads", "1"}}), TSR_OK) << api_->last_error();
    int32_t devices[kRanks] = {0, 1, 2};
    for (int r = 0; r < kRanks; ++r) ASSERT_EQ(api_->stream_create(r, &streams_[r]), TSR_OK);
    ASSERT_EQ(api_->comm->comm_init_all(devices, kRanks, comms_), TSR_OK) << api_->last_error();
  }
  void TearDown() override {
    for (int r = 0; r < kRanks; ++r) {
      api_->comm->comm_destroy(comms_[r]);
      api_->stream_destroy(streams_[r]);
    }
    CpuPluginTest::TearDown();
  }
  void SyncAll(tsr_status expected = TSR_OK) {
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_EQ(api_->stream_synchronize(streams_[r]), expected) << api_->last_error();
    }
  }
  tsr_stream streams_[kRanks] = {};
  tsr_comm comms_[kRanks] = {};
};

TEST_F(CollectivesTest, AllReduceSumMaxMinInPlaceAndOutOfPlace) {
  // rank r holds {r + 1, -r, 2r}.
  for (tsr_reduce_op op : {TSR_REDUCE_SUM, TSR_REDUCE_MAX, TSR_REDUCE_MIN}) {
    for (tsr_dtype dt : {TSR_DTYPE_F32, TSR_DTYPE_BF16, TSR_DTYPE_F16, TSR_DTYPE_I32}) {
      std::vector<DeviceTensor> send, recv;
      for (int r = 0; r < kRanks; ++r) {
        send.push_back(Make(dt, {3}, {r + 1.0, -r * 1.0, 2.0 * r}, {}, 0, r));
        // Rank 0 reduces in place, the others out of place.
        recv.push_back(r == 0 ? send.back() : Zeros(dt, {3}));
      }
      for (int r = 0; r < kRanks; ++r) {
        ASSERT_EQ(api_->comm->all_reduce(comms_[r], streams_[r], &send[r].desc, &recv[r].desc, op),
                  TSR_OK)
            << api_->last_error();
      }
      SyncAll();
      std::vector<double> expected = op == TSR_REDUCE_SUM   ? std::vector<double>{6, -3, 6}
                                     : op == TSR_REDUCE_MAX ? std::vector<double>{3, 0, 4}
                                                            : std::vector<double>{1, -2, 0};
      for (int r = 0; r < kRanks; ++r) ExpectNear(Read(recv[r]), expected, 0);
    }
  }
}

TEST_F(CollectivesTest, AllGatherBroadcastAndSendRecvRing) {
  std::vector<DeviceTensor> send, gathered, bcast, ring_out;
  for (int r = 0; r < kRanks; ++r) {
    send.push_back(Make(TSR_DTYPE_F32, {2}, {10.0 * r, 10.0 * r + 1}, {}, 0, r));
    gathered.push_back(Zeros(TSR_DTYPE_F32, {kRanks, 2}));
    bcast.push_back(Make(TSR_DTYPE_I32, {2}, {r * 1.0, r * 2.0}, {}, 0, r));
    ring_out.push_back(Zeros(TSR_DTYPE_F32, {2}));
  }
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(api_->comm->all_gather(comms_[r], streams_[r], &send[r].desc, &gathered[r].desc),
              TSR_OK)
        << api_->last_error();
    ASSERT_EQ(api_->comm->broadcast(comms_[r], streams_[r], &bcast[r].desc, 1), TSR_OK);
    ASSERT_EQ(api_->comm->send(comms_[r], streams_[r], &send[r].desc, (r + 1) % kRanks), TSR_OK);
    ASSERT_EQ(api_->comm->recv(comms_[r], streams_[r], &ring_out[r].desc, (r + 2) % kRanks),
              TSR_OK);
  }
  SyncAll();
  for (int r = 0; r < kRanks; ++r) {
    ExpectNear(Read(gathered[r]), {0, 1, 10, 11, 20, 21}, 0);
    ExpectNear(Read(bcast[r]), {1, 2}, 0);
    const int from = (r + 2) % kRanks;
    ExpectNear(Read(ring_out[r]), {10.0 * from, 10.0 * from + 1}, 0);
  }
}

TEST_F(CollectivesTest, MismatchedCallsFailOnEveryRank) {
  std::vector<DeviceTensor> t;
  for (int r = 0; r < kRanks; ++r) t.push_back(Zeros(TSR_DTYPE_F32, {r == 2 ? 3 : 2}));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(api_->comm->all_reduce(comms_[r], streams_[r], &t[r].desc, &t[r].desc,
                                     TSR_REDUCE_SUM),
              TSR_OK);
  }
  SyncAll(TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), ::testing::HasSubstr("must match"));
}

TEST_F(CollectivesTest, SingleRankCommunicatorIsTrivial) {
  int32_t device = 1;
  tsr_comm solo;
  ASSERT_EQ(api_->comm->comm_init_all(&device, 1, &solo), TSR_OK);
  DeviceTensor a = Make(TSR_DTYPE_F32, {2}, {1, 2}, {}, 0, 1);
  DeviceTensor b = Zeros(TSR_DTYPE_F32, {2});
  ASSERT_EQ(api_->comm->all_reduce(solo, streams_[1], &a.desc, &b.desc, TSR_REDUCE_SUM), TSR_OK);
  ASSERT_EQ(api_->comm->all_gather(solo, streams_[1], &a.desc, &b.desc), TSR_OK);
  ASSERT_EQ(api_->comm->broadcast(solo, streams_[1], &a.desc, 0), TSR_OK);
  ASSERT_EQ(api_->stream_synchronize(streams_[1]), TSR_OK) << api_->last_error();
  ExpectNear(Read(b), {1, 2}, 0);
  EXPECT_EQ(api_->comm->comm_destroy(solo), TSR_OK);
  EXPECT_EQ(api_->comm->comm_destroy(solo), TSR_ERR_INVALID_HANDLE);
}

TEST_F(CollectivesTest, TwoRanksOnOneStreamIsRejected) {
  int32_t devices[2] = {0, 0};  // two ranks on one device
  tsr_comm pair[2];
  ASSERT_EQ(api_->comm->comm_init_all(devices, 2, pair), TSR_OK);
  DeviceTensor a = Zeros(TSR_DTYPE_F32, {2});
  ASSERT_EQ(api_->comm->all_reduce(pair[0], streams_[0], &a.desc, &a.desc, TSR_REDUCE_SUM),
            TSR_OK);
  EXPECT_EQ(api_->comm->all_reduce(pair[1], streams_[0], &a.desc, &a.desc, TSR_REDUCE_SUM),
            TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), ::testing::HasSubstr("own stream"));
  tsr_stream second;
  ASSERT_EQ(api_->stream_create(0, &second), TSR_OK);
  // Rank 1's own tensor: ranks that share one buffer race on it (both write
  // the result into it at once; ThreadSanitizer caught this in CI).
  DeviceTensor b = Zeros(TSR_DTYPE_F32, {2});
  ASSERT_EQ(api_->comm->all_reduce(pair[1], second, &b.desc, &b.desc, TSR_REDUCE_SUM), TSR_OK);
  EXPECT_EQ(api_->stream_synchronize(second), TSR_OK);
  EXPECT_EQ(api_->stream_synchronize(streams_[0]), TSR_OK);
  EXPECT_EQ(api_->stream_destroy(second), TSR_OK);
  for (tsr_comm c : pair) EXPECT_EQ(api_->comm->comm_destroy(c), TSR_OK);
}

TEST_F(CollectivesTest, ArgumentsAreValidatedSynchronously) {
  DeviceTensor a = Zeros(TSR_DTYPE_F32, {2, 2});
  DeviceTensor a_t = Zeros(TSR_DTYPE_F32, {2, 2}, {1, 2});  // not contiguous
  DeviceTensor big = Zeros(TSR_DTYPE_F32, {5});
  DeviceTensor i64 = Zeros(TSR_DTYPE_I64, {4});
  const tsr_comm_api* c = api_->comm;
  EXPECT_EQ(c->all_reduce(comms_[0], streams_[1], &a.desc, &a.desc, TSR_REDUCE_SUM),
            TSR_ERR_INVALID_ARGUMENT);  // stream of another device
  EXPECT_EQ(c->all_reduce(comms_[0], streams_[0], &a_t.desc, &a_t.desc, TSR_REDUCE_SUM),
            TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c->all_reduce(comms_[0], streams_[0], &a.desc, &big.desc, TSR_REDUCE_SUM),
            TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c->all_reduce(comms_[0], streams_[0], &i64.desc, &i64.desc, TSR_REDUCE_SUM),
            TSR_ERR_UNSUPPORTED);
  EXPECT_EQ(c->all_reduce(comms_[0], streams_[0], &a.desc, &a.desc, 9), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c->all_gather(comms_[0], streams_[0], &a.desc, &a.desc), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c->broadcast(comms_[0], streams_[0], &a.desc, 3), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c->send(comms_[0], streams_[0], &a.desc, -1), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c->recv(comms_[0], streams_[0], &a.desc, 3), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c->all_reduce(comms_[0], streams_[0], nullptr, &a.desc, TSR_REDUCE_SUM),
            TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c->all_reduce(reinterpret_cast<tsr_comm>(0x1234), streams_[0], &a.desc, &a.desc,
                          TSR_REDUCE_SUM),
            TSR_ERR_INVALID_HANDLE);
  int32_t bad_devices[2] = {0, 5};
  tsr_comm out[2];
  EXPECT_NE(c->comm_init_all(bad_devices, 2, out), TSR_OK);
  EXPECT_EQ(c->comm_init_all(bad_devices, 0, out), TSR_ERR_INVALID_ARGUMENT);
  SyncAll();
}

}  // namespace
}  // namespace tessera::cpu::testing
