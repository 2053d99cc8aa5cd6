// KvLayout checks and put plans between two real KV pools (cpu plugin):
// a planned copy through UCX reproduces the prompt's K/V at the peer's
// slots, coalesced over runs of consecutive slots.
#include "disagg/kv_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <future>

#include "runtime/runtime.h"

namespace tessera::disagg {
namespace {

kv::KvPoolOptions Small(int64_t capacity) {
  kv::KvPoolOptions o;
  o.num_layers = 2;
  o.num_kv_heads = 2;
  o.head_dim = 4;
  o.dtype = TSR_DTYPE_F32;
  o.page_size = 4;
  o.capacity_tokens = capacity;
  return o;
}

class KvLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = runtime::RuntimeConfig::FromEnvironment();
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto rt = runtime::Runtime::Create(*config);
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(rt).value();
  }
  std::unique_ptr<runtime::Runtime> runtime_;
};

TEST(KvLayoutMismatchTest, NamesEveryDifferingFieldWithBothValues) {
  KvLayout p{"llama/6x288", 6, 6, 48, "bf16", 16, 1, 100};
  KvLayout d = p;
  d.slab_slots = 999;  // capacity may differ
  EXPECT_EQ(LayoutMismatch(p, d), "");
  d.page_size = 32;
  d.dtype = "f32";
  const std::string m = LayoutMismatch(p, d);
  EXPECT_NE(m.find("page size: prefill 16 vs decode 32"), std::string::npos) << m;
  EXPECT_NE(m.find("KV dtype: prefill bf16 vs decode f32"), std::string::npos) << m;
  auto round = KvLayout::FromJson(p.ToJson());
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(LayoutMismatch(p, *round), "");
  EXPECT_FALSE(KvLayout::FromJson(Json{{"model", 1}}).ok());
}

TEST(KvLayoutMismatchTest, HexRoundTrips) {
  const std::string bytes("\x00\x01\xfe\xff ab", 6);
  auto back = FromHex(ToHex(bytes));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
  EXPECT_FALSE(FromHex("abc").ok());
  EXPECT_FALSE(FromHex("zz").ok());
}

void ExpectCopied(const kv::KvPool& a, const kv::KvPool& b,
                  const std::vector<int32_t>& s, const std::vector<int32_t>& d);

TEST_F(KvLayoutTest, PlannedPutsCopyThePromptBetweenPools) {
  auto src = kv::KvPool::Create(runtime_->device(0), Small(32));
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  auto dst = kv::KvPool::Create(runtime_->device(0), Small(64));
  ASSERT_TRUE(dst.ok());
  kv::KvPool& a = **src;
  kv::KvPool& b = **dst;
  // Fill the source slabs with a recognisable pattern.
  for (int64_t l = 0; l < a.num_layers(); ++l) {
    for (runtime::Buffer* buf : {&a.k_buffer(l), &a.v_buffer(l)}) {
      float* f = static_cast<float*>(buf->host_pointer());
      ASSERT_NE(f, nullptr);
      for (uint64_t i = 0; i < buf->size() / 4; ++i) {
        f[i] = static_cast<float>(i) + (buf == &a.k_buffer(l) ? 0.5f : 0.25f) +
               1000.0f * static_cast<float>(l);
      }
    }
  }
  // A 7-token prompt: source pages {1, 0}, destination pages {5, 2}.
  std::vector<int32_t> src_pages = {1, 0}, dst_pages = {5, 2};
  std::vector<int32_t> s, d;
  for (int64_t p = 0; p < 7; ++p) {
    s.push_back(a.SlotOf(src_pages, p));
    d.push_back(b.SlotOf(dst_pages, p));
  }
  const KvLayout peer = KvLayout::Of(b, "m");
  uint64_t bytes = 0;
  auto puts = PlanPuts(a, peer, s, d, /*cached=*/1, &bytes);
  ASSERT_TRUE(puts.ok()) << puts.status().ToString();
  // Runs: positions 1..3 (page 1 -> page 5), 4..6 (page 0 -> page 2); per
  // layer, K/V and head.
  EXPECT_EQ(puts->size(), 2u * 2 * 2 * 2);
  EXPECT_EQ(bytes, 6u * 2 * 2 * 2 * 4 * 4);

  auto sender = UcxTransfer::Create();
  ASSERT_TRUE(sender.ok());
  for (WriteMethod method : {WriteMethod::kRma, WriteMethod::kRendezvous}) {
    SCOPED_TRACE(method == WriteMethod::kRma ? "rma" : "rendezvous");
    for (int64_t l = 0; l < b.num_layers(); ++l) {
      for (runtime::Buffer* buf : {&b.k_buffer(l), &b.v_buffer(l)}) {
        std::memset(buf->host_pointer(), 0, buf->size());
      }
    }
    auto receiver = UcxTransfer::Create();
    ASSERT_TRUE(receiver.ok());
    auto regions = RegisterPool(**receiver, b);
    ASSERT_TRUE(regions.ok()) << regions.status().ToString();
    // The message's arrival at the receiver is what says the bytes are in
    // place (the sender's done may come first with kRendezvous).
    std::promise<void> arrived;
    (*receiver)->SetMessageHandler(
        [&](uint64_t, std::string) { arrived.set_value(); });
    WriteJob job;
    job.method = method;
    job.same_host = true;
    job.peer_address = (*receiver)->WorkerAddress();
    job.regions = *regions;
    job.puts = *puts;
    job.message = "m";
    job.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::promise<Status> done;
    job.done = [&](Status st) { done.set_value(std::move(st)); };
    (*sender)->Write(std::move(job));
    ASSERT_TRUE(done.get_future().get().ok());
    ASSERT_EQ(arrived.get_future().wait_for(std::chrono::seconds(30)),
              std::future_status::ready);
    ExpectCopied(a, b, s, d);
  }
}

// Every position but the cached first one arrived where `d` says.
void ExpectCopied(const kv::KvPool& a, const kv::KvPool& b,
                  const std::vector<int32_t>& s, const std::vector<int32_t>& d) {
  const int64_t hd = 4;
  for (int64_t l = 0; l < 2; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      const float* from = static_cast<const float*>(
          (kv == 0 ? a.k_buffer(l) : a.v_buffer(l)).host_pointer());
      const float* to = static_cast<const float*>(
          (kv == 0 ? b.k_buffer(l) : b.v_buffer(l)).host_pointer());
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t p = 0; p < 7; ++p) {
          for (int64_t i = 0; i < hd; ++i) {
            const float want =
                from[(h * a.slab_slots() + s[p]) * hd + i];
            const float got = to[(h * b.slab_slots() + d[p]) * hd + i];
            if (p == 0) {
              EXPECT_EQ(got, 0.0f) << "cached position 0 must not be sent";
            } else {
              ASSERT_EQ(got, want) << "layer " << l << " kv " << kv << " head "
                                   << h << " pos " << p << " i " << i;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::disagg
