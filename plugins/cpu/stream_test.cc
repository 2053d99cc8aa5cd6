// Streams and events of the cpu plugin: launches never block, events order
// work across streams and devices, errors are sticky, NULL-stream copies
// are synchronous. A two-rank all_reduce with only one rank arrived serves
// as a gate that holds a stream's worker deterministically.
#include <chrono>
#include <thread>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

using ::testing::HasSubstr;

class StreamTest : public CpuPluginTest {
 protected:
  void SetUp() override {
    CpuPluginTest::SetUp();
    ASSERT_EQ(InitWith({{"devices", "2"}, {"threads", "2"}}), TSR_OK) << api_->last_error();
    ASSERT_EQ(api_->stream_create(0, &stream_), TSR_OK);
    ASSERT_EQ(api_->stream_create(1, &gate_peer_), TSR_OK);
    int32_t devices[2] = {0, 1};
    ASSERT_EQ(api_->comm->comm_init_all(devices, 2, comms_), TSR_OK) << api_->last_error();
    gate0_ = Make(TSR_DTYPE_F32, {1}, {1}, {}, 0, 0);
    gate1_ = Make(TSR_DTYPE_F32, {1}, {2}, {}, 0, 1);
  }
  void TearDown() override {
    api_->stream_destroy(gate_peer_);
    for (tsr_comm c : comms_) api_->comm->comm_destroy(c);
    CpuPluginTest::TearDown();
  }
  // Blocks `stream` (on device 0) until OpenGate().
  void CloseGate(tsr_stream stream) {
    ASSERT_EQ(api_->comm->all_reduce(comms_[0], stream, &gate0_.desc, &gate0_.desc,
                                     TSR_REDUCE_SUM),
              TSR_OK)
        << api_->last_error();
  }
  void OpenGate() {
    ASSERT_EQ(api_->comm->all_reduce(comms_[1], gate_peer_, &gate1_.desc, &gate1_.desc,
                                     TSR_REDUCE_SUM),
              TSR_OK);
    ASSERT_EQ(api_->stream_synchronize(gate_peer_), TSR_OK);
  }

  tsr_stream gate_peer_ = nullptr;
  tsr_comm comms_[2] = {};
  DeviceTensor gate0_, gate1_;
};

TEST_F(StreamTest, LaunchReturnsWhileTheStreamIsBlocked) {
  DeviceTensor a = Make(TSR_DTYPE_F32, {3}, {1, 2, 3});
  DeviceTensor y = Zeros(TSR_DTYPE_F32, {3});
  tsr_kernel add = Resolve(TSR_OP_ADD, {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32});
  CloseGate(stream_);
  tsr_tensor in[2] = {a.desc, a.desc};
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(api_->launch(add, stream_, in, 2, &y.desc, 1, nullptr, 0), TSR_OK);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(api_->stream_query(stream_), TSR_ERR_NOT_READY);
  ExpectNear(Read(y), {0, 0, 0}, 0);  // nothing ran yet
  OpenGate();
  ASSERT_EQ(api_->stream_synchronize(stream_), TSR_OK) << api_->last_error();
  EXPECT_EQ(api_->stream_query(stream_), TSR_OK);
  ExpectNear(Read(y), {2, 4, 6}, 0);
  ExpectNear(Read(gate0_), {3}, 0);
}

TEST_F(StreamTest, EventOrdersWorkAcrossStreamsAndDevices) {
  tsr_stream other;  // on device 1
  ASSERT_EQ(api_->stream_create(1, &other), TSR_OK);
  tsr_event event;
  ASSERT_EQ(api_->event_create(0, &event), TSR_OK);
  DeviceTensor src = Make(TSR_DTYPE_F32, {4}, {1, 2, 3, 4});
  DeviceTensor mid = Zeros(TSR_DTYPE_F32, {4});
  DeviceTensor dst = Make(TSR_DTYPE_F32, {4}, {}, {}, 0, 1);

  CloseGate(stream_);
  ASSERT_EQ(api_->copy_device_to_device(stream_, mid.buffer, 0, src.buffer, 0, 16), TSR_OK);
  ASSERT_EQ(api_->event_record(event, stream_), TSR_OK);
  ASSERT_EQ(api_->stream_wait_event(other, event), TSR_OK);  // does not block
  ASSERT_EQ(api_->copy_device_to_device(other, dst.buffer, 0, mid.buffer, 0, 16), TSR_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(api_->event_query(event), TSR_ERR_NOT_READY);
  EXPECT_EQ(api_->stream_query(other), TSR_ERR_NOT_READY);
  OpenGate();
  ASSERT_EQ(api_->stream_synchronize(other), TSR_OK) << api_->last_error();
  EXPECT_EQ(api_->event_query(event), TSR_OK);
  EXPECT_EQ(api_->event_synchronize(event), TSR_OK);
  ExpectNear(Read(dst), {1, 2, 3, 4}, 0);
  EXPECT_EQ(api_->event_destroy(event), TSR_OK);
  EXPECT_EQ(api_->stream_destroy(other), TSR_OK);
}

TEST_F(StreamTest, NeverRecordedEventIsCompleteAndReRecordReplaces) {
  tsr_event event;
  ASSERT_EQ(api_->event_create(0, &event), TSR_OK);
  EXPECT_EQ(api_->event_query(event), TSR_OK);
  EXPECT_EQ(api_->event_synchronize(event), TSR_OK);
  EXPECT_EQ(api_->stream_wait_event(stream_, event), TSR_OK);
  EXPECT_EQ(api_->stream_synchronize(stream_), TSR_OK);

  tsr_stream idle;
  ASSERT_EQ(api_->stream_create(0, &idle), TSR_OK);
  CloseGate(stream_);
  ASSERT_EQ(api_->event_record(event, stream_), TSR_OK);
  EXPECT_EQ(api_->event_query(event), TSR_ERR_NOT_READY);
  ASSERT_EQ(api_->event_record(event, idle), TSR_OK);  // replaces the capture
  EXPECT_EQ(api_->event_synchronize(event), TSR_OK);
  EXPECT_EQ(api_->event_query(event), TSR_OK);
  OpenGate();
  EXPECT_EQ(api_->stream_synchronize(stream_), TSR_OK);
  EXPECT_EQ(api_->stream_destroy(idle), TSR_OK);
  EXPECT_EQ(api_->event_destroy(event), TSR_OK);
}

TEST_F(StreamTest, SynchronousCopyDoesNotWaitForStreams) {
  DeviceTensor buf = Zeros(TSR_DTYPE_F32, {2});
  CloseGate(stream_);
  float values[2] = {5, 6};
  ASSERT_EQ(api_->copy_host_to_device(nullptr, buf.buffer, 0, values, 8), TSR_OK);
  ExpectNear(Read(buf), {5, 6}, 0);  // done although stream_ is blocked
  EXPECT_EQ(api_->stream_query(stream_), TSR_ERR_NOT_READY);
  OpenGate();
  EXPECT_EQ(api_->stream_synchronize(stream_), TSR_OK);
}

TEST_F(StreamTest, ErrorsAreStickyAndLaterWorkIsSkipped) {
  DeviceTensor ids = Make(TSR_DTYPE_I32, {2}, {0, 9});  // 9 is out of range
  DeviceTensor table = Make(TSR_DTYPE_F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  DeviceTensor y = Zeros(TSR_DTYPE_F32, {2, 2});
  DeviceTensor marker = Make(TSR_DTYPE_F32, {1}, {7});
  tsr_event before, after;
  ASSERT_EQ(api_->event_create(0, &before), TSR_OK);
  ASSERT_EQ(api_->event_create(0, &after), TSR_OK);
  ASSERT_EQ(api_->event_record(before, stream_), TSR_OK);
  tsr_kernel emb = Resolve(TSR_OP_EMBEDDING, {TSR_DTYPE_I32, TSR_DTYPE_F32, TSR_DTYPE_F32});
  tsr_tensor in[2] = {ids.desc, table.desc};
  ASSERT_EQ(api_->launch(emb, stream_, in, 2, &y.desc, 1, nullptr, 0), TSR_OK);  // async
  ASSERT_EQ(api_->memset(stream_, marker.buffer, 0, 0, 4), TSR_OK);
  ASSERT_EQ(api_->event_record(after, stream_), TSR_OK);
  EXPECT_EQ(api_->stream_synchronize(stream_), TSR_ERR_INVALID_ARGUMENT);
  std::string message = api_->last_error();
  EXPECT_THAT(message, HasSubstr("embedding"));
  EXPECT_THAT(message, HasSubstr("ids[1] = 9"));
  ExpectNear(Read(marker), {7}, 0);  // the memset was skipped
  EXPECT_EQ(api_->stream_synchronize(stream_), TSR_ERR_INVALID_ARGUMENT);  // still sticky
  EXPECT_EQ(api_->stream_query(stream_), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->event_synchronize(before), TSR_OK);
  EXPECT_EQ(api_->event_synchronize(after), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->event_query(after), TSR_ERR_INVALID_ARGUMENT);
  // Other streams are unaffected.
  tsr_stream fresh;
  ASSERT_EQ(api_->stream_create(0, &fresh), TSR_OK);
  ASSERT_EQ(api_->memset(fresh, marker.buffer, 0, 0, 4), TSR_OK);
  EXPECT_EQ(api_->stream_synchronize(fresh), TSR_OK);
  ExpectNear(Read(marker), {0}, 0);
  EXPECT_EQ(api_->stream_destroy(fresh), TSR_OK);
  EXPECT_EQ(api_->event_destroy(before), TSR_OK);
  EXPECT_EQ(api_->event_destroy(after), TSR_OK);
}

TEST_F(StreamTest, KvStoreSlotOutOfRangeIsSticky) {
  DeviceTensor k = Make(TSR_DTYPE_F32, {2, 1, 2}, {1, 2, 3, 4});
  DeviceTensor slots = Make(TSR_DTYPE_I32, {2}, {0, 4});
  DeviceTensor kc = Zeros(TSR_DTYPE_F32, {4, 1, 2});
  DeviceTensor vc = Zeros(TSR_DTYPE_F32, {4, 1, 2});
  EXPECT_EQ(Run(TSR_OP_KV_STORE, {k, k, slots}, {kc, vc}), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("slots[1] = 4"));
  ExpectNear(Read(kc), std::vector<double>(8, 0.0), 0);  // nothing partially written
}

TEST_F(StreamTest, DestroyingABlockedStreamDoesNotHang) {
  tsr_stream blocked;
  ASSERT_EQ(api_->stream_create(0, &blocked), TSR_OK);
  CloseGate(blocked);
  EXPECT_EQ(api_->stream_destroy(blocked), TSR_OK);
}

TEST_F(StreamTest, ShutdownWithBlockedStreamsDoesNotHang) {
  CloseGate(stream_);
  tsr_stream waiter;
  ASSERT_EQ(api_->stream_create(0, &waiter), TSR_OK);
  tsr_event event;
  ASSERT_EQ(api_->event_create(0, &event), TSR_OK);
  ASSERT_EQ(api_->event_record(event, stream_), TSR_OK);
  ASSERT_EQ(api_->stream_wait_event(waiter, event), TSR_OK);
  owned_.clear();
  stream_ = nullptr;
  gate_peer_ = nullptr;
  comms_[0] = comms_[1] = nullptr;
  EXPECT_EQ(api_->shutdown(), TSR_OK);
  initialised_ = false;
}

}  // namespace
}  // namespace tessera::cpu::testing
