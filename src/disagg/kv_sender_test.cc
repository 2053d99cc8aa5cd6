// The KV sender and receiver in one process over real UCX and two real KV
// pools (cpu plugin): a begun room's layers go on the wire as its
// LayerProgress says each is written — layer 0 arrives while layer 1 is
// still being "computed" — and the completion (first token) only follows
// the last layer; a room cancelled mid-stream is reported failed on both
// sides once its writes are done.
#include "disagg/kv_sender.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "disagg/kv_receiver.h"
#include "runtime/runtime.h"

namespace tessera::disagg {
namespace {

using Clock = std::chrono::steady_clock;

kv::KvPoolOptions TwoLayerPool(int64_t capacity) {
  kv::KvPoolOptions o;
  o.num_layers = 2;
  o.num_kv_heads = 2;
  o.head_dim = 4;
  o.dtype = TSR_DTYPE_F32;
  o.page_size = 4;
  o.capacity_tokens = capacity;
  return o;
}

class KvSenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = runtime::RuntimeConfig::FromEnvironment();
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto rt = runtime::Runtime::Create(*config);
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(rt).value();
    auto a = kv::KvPool::Create(runtime_->device(0), TwoLayerPool(32));
    auto b = kv::KvPool::Create(runtime_->device(0), TwoLayerPool(64));
    ASSERT_TRUE(a.ok() && b.ok());
    src_ = std::move(a).value();
    dst_ = std::move(b).value();
    for (int64_t l = 0; l < src_->num_layers(); ++l) {
      for (runtime::Buffer* buf : {&src_->k_buffer(l), &src_->v_buffer(l)}) {
        float* f = static_cast<float*>(buf->host_pointer());
        for (uint64_t i = 0; i < buf->size() / 4; ++i) {
          f[i] = 1.0f + static_cast<float>(i) + 1000.0f * static_cast<float>(l);
        }
      }
    }
    auto sender = UcxKvSender::Create(*src_, KvLayout::Of(*src_, "m"),
                                      "127.0.0.1", 0, 20.0);
    ASSERT_TRUE(sender.ok()) << sender.status().ToString();
    sender_ = std::move(sender).value();
    auto receiver = UcxKvReceiver::Create(*dst_, KvLayout::Of(*dst_, "m"), 20.0);
    ASSERT_TRUE(receiver.ok()) << receiver.status().ToString();
    receiver_ = std::move(receiver).value();
    // A 7-token prompt: source pages {1, 0}, destination pages {5, 2}.
    const std::vector<int32_t> src_pages = {1, 0}, dst_pages = {5, 2};
    for (int64_t p = 0; p < 7; ++p) {
      prompt_.push_back(static_cast<int32_t>(10 + p));
      s_.push_back(src_->SlotOf(src_pages, p));
      d_.push_back(dst_->SlotOf(dst_pages, p));
    }
  }

  // Whether layer `l` of the prompt is at the destination.
  bool LayerArrived(int64_t l) const {
    for (int kv = 0; kv < 2; ++kv) {
      const float* from = static_cast<const float*>(
          (kv == 0 ? src_->k_buffer(l) : src_->v_buffer(l)).host_pointer());
      const float* to = static_cast<const float*>(
          (kv == 0 ? dst_->k_buffer(l) : dst_->v_buffer(l)).host_pointer());
      for (int64_t h = 0; h < 2; ++h) {
        for (size_t p = 0; p < s_.size(); ++p) {
          for (int64_t i = 0; i < 4; ++i) {
            if (to[(h * dst_->slab_slots() + d_[p]) * 4 + i] !=
                from[(h * src_->slab_slots() + s_[p]) * 4 + i]) {
              return false;
            }
          }
        }
      }
    }
    return true;
  }

  void Expect(uint64_t room) {
    engine::KvRecvJob job;
    job.bootstrap = {"127.0.0.1", sender_->port(), room};
    job.prompt_ids = prompt_;
    job.slots = d_;
    receiver_->Expect(std::move(job));
  }

  std::shared_ptr<engine::LayerProgress> Begin(uint64_t room) {
    auto progress = std::make_shared<engine::LayerProgress>(2);
    engine::KvBeginJob job;
    job.room = room;
    job.prompt_ids = prompt_;
    job.slots = s_;
    job.layers = progress;
    sender_->Begin(std::move(job));
    return progress;
  }

  // Polls `poll` until it reports `room` (or 20 s pass).
  template <class Side>
  std::optional<engine::KvTransferResult> WaitReported(Side& side, uint64_t room) {
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < until) {
      for (engine::KvTransferResult& r : side.Poll()) {
        if (r.room == room) return r;
        ADD_FAILURE() << "unexpected room " << r.room;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return std::nullopt;
  }

  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<kv::KvPool> src_, dst_;
  std::unique_ptr<UcxKvSender> sender_;
  std::unique_ptr<UcxKvReceiver> receiver_;
  std::vector<int32_t> prompt_, s_, d_;
};

TEST_F(KvSenderTest, LayerZeroIsOnTheWireWhileLayerOneComputes) {
  Expect(7);
  auto progress = Begin(7);
  std::atomic<bool> layer1_written{false};
  progress->Attach([&](int64_t l) {
    while (l == 1 && !layer1_written) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return OkStatus();
  });
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (!LayerArrived(0) && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(LayerArrived(0)) << "layer 0 never arrived";
  EXPECT_FALSE(LayerArrived(1)) << "layer 1 went before it was written";
  EXPECT_TRUE(receiver_->Poll().empty()) << "completed before the last layer";
  EXPECT_TRUE(sender_->Poll().empty());

  layer1_written = true;
  progress->Finish(OkStatus());  // the step is collected
  engine::KvSendJob first;
  first.room = 7;
  first.first_token = 42;
  sender_->Send(std::move(first));
  auto got = WaitReported(*receiver_, 7);
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->status.ok()) << got->status.ToString();
  EXPECT_EQ(got->first_token, 42);
  EXPECT_TRUE(LayerArrived(0));
  EXPECT_TRUE(LayerArrived(1));
  auto sent = WaitReported(*sender_, 7);
  ASSERT_TRUE(sent.has_value());
  EXPECT_TRUE(sent->status.ok()) << sent->status.ToString();
  EXPECT_EQ(sent->bytes, 7u * 2 * 2 * 2 * 4 * 4);  // pos, layer, K/V, head, dim
}

TEST_F(KvSenderTest, ARoomCancelledMidStreamFailsOnBothSides) {
  Expect(8);
  auto progress = Begin(8);
  progress->Attach([](int64_t) { return OkStatus(); });
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (!LayerArrived(1) && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(LayerArrived(1));
  // Writes have gone out: the pages stay held until Poll reports the room.
  EXPECT_FALSE(sender_->Cancel(8));
  auto sent = WaitReported(*sender_, 8);
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(sent->status.code(), StatusCode::kAborted) << sent->status.ToString();
  auto got = WaitReported(*receiver_, 8);
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->status.ok());
  progress->Finish(AbortedError("the request ended"));
}

TEST_F(KvSenderTest, ARoomCancelledBeforeAnyWriteIsFreeAtOnce) {
  auto progress = Begin(9);  // no registration: nothing can be written
  EXPECT_TRUE(sender_->Cancel(9));
  progress->Finish(AbortedError("the request ended"));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(sender_->Poll().empty());  // never reported
}

}  // namespace
}  // namespace tessera::disagg
