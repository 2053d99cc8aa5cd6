// The engine end to end on a make-model tiny checkpoint (cpu plugin):
// batching invariance, chunked prefill, prefix reuse, n > 1 sharing,
// retraction under KV pressure, aborts, stop conditions and validation. Each
// test ends with the KV pool back at its baseline and CheckIntegrity OK.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <numeric>
#include <thread>

#include "engine/engine_test_fixture.h"
#include "model/runner_test_util.h"

namespace tessera::engine {
namespace {

using testing::Collect;
using testing::Collected;
using testing::EngineTest;

TEST_F(EngineTest, ConcurrentRequestsEqualTheSameRequestAlone) {
  Start();
  std::vector<Collected> alone;
  for (int i = 0; i < 6; ++i)
    alone.push_back(Run(Greedy(Prompt(10 + 7 * i, i), 12)));
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 6; ++i) {
    auto s = engine_->Submit(Greedy(Prompt(10 + 7 * i, i), 12));
    ASSERT_TRUE(s.ok());
    streams.push_back(*s);
  }
  for (int i = 0; i < 6; ++i) {
    Collected c = Collect(*streams[i]);
    EXPECT_EQ(c.ids, alone[i].ids) << "request " << i;
    EXPECT_EQ(c.text, alone[i].text);
    EXPECT_EQ(c.last.finish.kind, FinishReason::Kind::kLength);
    EXPECT_EQ(c.last.completion_tokens, 12);
  }
}

// A kernel failing on the device leaves the compute stream with a sticky
// error: the step's requests end as errors, the engine stops (Stats and
// /health say why) and refuses new requests instead of serving garbage.
TEST_F(EngineTest, ADeviceErrorStopsTheEngineAndSaysWhy) {
  Start();
  Collected before = Run(Greedy(Prompt(6, 1), 3));
  ASSERT_EQ(before.ids.size(), 3u);
  // Between steps, on the scheduler thread: an embedding lookup of id 7 in
  // a 2-row table, queued on the compute stream, fails when it runs.
  runtime::BufferPtr table, ids, out;
  Status poisoned = engine_->RunOnScheduler([&]() -> Status {
    runtime::Device& device = runner_->device();
    TSR_ASSIGN_OR_RETURN(table, device.Allocate(2 * 4 * 4));
    TSR_ASSIGN_OR_RETURN(ids, device.Allocate(4));
    TSR_ASSIGN_OR_RETURN(out, device.Allocate(4 * 4));
    const int32_t bad_id = 7;
    TSR_RETURN_IF_ERROR(ids->CopyFromHost(0, &bad_id, 4));
    const tsr_tensor in[] = {ids->View(TSR_DTYPE_I32, {1}),
                             table->View(TSR_DTYPE_F32, {2, 4})};
    const tsr_tensor y[] = {out->View(TSR_DTYPE_F32, {1, 4})};
    return runtime_->dispatcher().Launch(runner_->stream(), TSR_OP_EMBEDDING, in, y);
  });
  ASSERT_TRUE(poisoned.ok()) << poisoned.ToString();
  Collected failed = Run(Greedy(Prompt(6, 2), 3));
  EXPECT_EQ(failed.last.finish.kind, FinishReason::Kind::kAbort);
  EXPECT_TRUE(failed.last.finish.server_abort());
  const std::string failure = engine_->Stats().failure;
  EXPECT_NE(failure.find("the device failed"), std::string::npos) << failure;
  EXPECT_NE(failure.find("restart the server"), std::string::npos) << failure;
  auto refused = engine_->Submit(Greedy(Prompt(6, 3), 3));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("the device failed"), std::string::npos);
  // Nothing leaked: TearDown checks the KV pool and the cache.
}

TEST_F(EngineTest, ChunkedPrefillGivesTheSameTokens) {
  Start();
  Collected whole = Run(Greedy(Prompt(90, 3), 8));
  EngineOptions o;
  o.chunked_prefill_size = 16;
  Start(o);
  Collected chunked = Run(Greedy(Prompt(90, 3), 8));
  EXPECT_EQ(whole.ids, chunked.ids);
}

TEST_F(EngineTest, SharedPrefixIsReportedAsCached) {
  Start();
  auto p1 = Prompt(64, 1);
  auto p2 = p1;
  p2.push_back(7);
  p2.push_back(8);
  Collected first = Run(Greedy(p1, 4));
  EXPECT_EQ(first.last.cached_tokens, 0);
  Collected second = Run(Greedy(p2, 4));
  EXPECT_EQ(second.last.cached_tokens, 64);
  EXPECT_GT(engine_->Stats().cache_hit_rate, 0.0);
  // Same tokens as without the cache.
  EngineOptions o;
  o.disable_radix_cache = true;
  Start(o);
  Collected fresh = Run(Greedy(p2, 4));
  EXPECT_EQ(fresh.last.cached_tokens, 0);
  EXPECT_EQ(fresh.ids, second.ids);
}

TEST_F(EngineTest, RequestsArrivingTogetherShareTheirCommonPrefix) {
  Start();
  const auto system = Prompt(64, 11);
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i) {
    auto p = system;
    p.push_back(100 + i);
    p.push_back(200 + i);
    prompts.push_back(p);
    auto s = engine_->Submit(Greedy(p, 3));
    ASSERT_TRUE(s.ok());
    streams.push_back(*s);
  }
  int64_t cached = 0;
  std::vector<Collected> together;
  for (auto& s : streams) {
    together.push_back(Collect(*s));
    cached += together.back().last.cached_tokens;
  }
  // The first computes the 64 shared tokens; the other three reuse them.
  EXPECT_EQ(cached, 3 * 64);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(together[i].ids, Run(Greedy(prompts[i], 3)).ids) << i;
  }
}

TEST_F(EngineTest, GroupFollowersReuseTheLeadersPrompt) {
  Start();
  std::vector<EngineRequest> group;
  for (int i = 0; i < 3; ++i) {
    EngineRequest r = Greedy(Prompt(41, 9), 5);
    r.sampling.temperature = 1.0f;
    r.seed = 100 + i;
    group.push_back(std::move(r));
  }
  auto streams = engine_->SubmitGroup(std::move(group));
  ASSERT_TRUE(streams.ok());
  std::vector<Collected> out;
  for (auto& s : *streams) out.push_back(Collect(*s));
  EXPECT_EQ(out[0].last.cached_tokens, 0);
  EXPECT_EQ(out[1].last.cached_tokens, 40);
  EXPECT_EQ(out[2].last.cached_tokens, 40);
  // A seeded request gives the same tokens alone.
  EngineRequest again = Greedy(Prompt(41, 9), 5);
  again.sampling.temperature = 1.0f;
  again.seed = 101;
  EXPECT_EQ(Run(std::move(again)).ids, out[1].ids);
}

TEST_F(EngineTest, RetractionUnderKvPressureCompletesEveryRequestCorrectly) {
  Start({}, /*kv_tokens=*/160, /*page_size=*/4);
  std::vector<Collected> alone;
  for (int i = 0; i < 5; ++i)
    alone.push_back(Run(Greedy(Prompt(30, 20 + i), 50)));
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 5; ++i) {
    auto s = engine_->Submit(Greedy(Prompt(30, 20 + i), 50));
    ASSERT_TRUE(s.ok());
    streams.push_back(*s);
  }
  for (int i = 0; i < 5; ++i) {
    Collected c = Collect(*streams[i]);
    EXPECT_EQ(c.ids, alone[i].ids) << "request " << i;
    EXPECT_EQ(c.last.finish.kind, FinishReason::Kind::kLength);
  }
  EXPECT_GT(engine_->Stats().retractions_total, 0);
}

TEST_F(EngineTest, CancelledRequestFreesItsKv) {
  Start();
  auto s = engine_->Submit(Greedy(Prompt(20, 4), 2000));
  ASSERT_TRUE(s.ok());
  // Wait for some output, then cancel.
  int got = 0;
  while (got < 3)
    got += static_cast<int>((*s)->Wait(std::chrono::milliseconds(100)).size());
  EXPECT_TRUE(engine_->Abort((*s)->rid()));
  Collected c = Collect(**s);
  EXPECT_EQ(c.last.finish.kind, FinishReason::Kind::kAbort);
  EXPECT_FALSE(engine_->Abort((*s)->rid()));
}

TEST_F(EngineTest, AbortReachesEveryRequestDerivedFromTheRid) {
  Start();
  std::vector<EngineRequest> group;
  for (const char* rid : {"fam-0", "fam-1-0", "family", "fam"}) {
    EngineRequest r = Greedy(Prompt(8, 3), 2000);
    r.rid = rid;
    group.push_back(std::move(r));
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (auto& r : group) {
    auto s = engine_->Submit(std::move(r));
    ASSERT_TRUE(s.ok());
    streams.push_back(*s);
  }
  EXPECT_TRUE(engine_->Abort("fam"));
  for (const char* rid : {"fam", "fam-0", "fam-1-0"}) {
    auto it = std::find_if(streams.begin(), streams.end(),
                           [&](const auto& s) { return s->rid() == rid; });
    EXPECT_EQ(Collect(**it).last.finish.kind, FinishReason::Kind::kAbort)
        << rid;
  }
  // "family" shares the letters but is not derived from "fam".
  EXPECT_FALSE(streams[2]->cancelled());
  EXPECT_TRUE(engine_->Abort("family"));
  Collect(*streams[2]);
  EXPECT_FALSE(engine_->Abort("fam"));
}

TEST_F(EngineTest, StopStringsStopTokensAndLength) {
  Start();
  Collected free_run = Run(Greedy(Prompt(12, 5), 16));
  ASSERT_EQ(free_run.ids.size(), 16u);
  // Stop on the 4th token id.
  EngineRequest r = Greedy(Prompt(12, 5), 16);
  r.stop_token_ids = {free_run.ids[3]};
  Collected by_id = Run(std::move(r));
  EXPECT_EQ(by_id.last.finish.kind, FinishReason::Kind::kStop);
  ASSERT_TRUE(by_id.last.finish.matched_token.has_value());
  EXPECT_LE(by_id.ids.size(), 4u);
  // Stop on a piece of the text: the text ends right before it.
  if (free_run.text.size() > 6) {
    const std::string stop = free_run.text.substr(3, 3);
    EngineRequest rs = Greedy(Prompt(12, 5), 16);
    rs.stop = {stop};
    Collected by_text = Run(std::move(rs));
    EXPECT_EQ(by_text.last.finish.kind, FinishReason::Kind::kStop);
    EXPECT_EQ(by_text.last.finish.matched_text, stop);
    EXPECT_EQ(by_text.text, free_run.text.substr(0, free_run.text.find(stop)));
  }
}

TEST_F(EngineTest, LogprobsAndPenaltiesRunOnTheHostPath) {
  Start();
  EngineRequest r = Greedy(Prompt(12, 6), 6);
  r.top_logprobs = 3;
  Collected c = Run(std::move(r));
  Collected plain = Run(Greedy(Prompt(12, 6), 6));
  EXPECT_EQ(c.ids, plain.ids);  // logprobs change nothing
  EngineRequest biased = Greedy(Prompt(12, 6), 6);
  biased.logit.logit_bias = {{777, 100.0f}};
  Collected b = Run(std::move(biased));
  EXPECT_EQ(b.ids, std::vector<int32_t>(6, 777));
}

// Overlap scheduling changes when the host works, never what it computes:
// a mix of greedy, seeded sampling, stop strings / ids, penalties and
// logprobs, all at once, gives the same tokens serial and overlapped.
TEST_F(EngineTest, OverlapOnAndOffGiveIdenticalTokens) {
  auto requests = [] {
    std::vector<EngineRequest> out;
    for (int i = 0; i < 12; ++i) {
      EngineRequest r = Greedy(Prompt(8 + 5 * i, 20 + i), 10 + i);
      if (i % 3 == 1) {
        r.sampling.temperature = 0.9f;
        r.sampling.top_p = 0.9f;
        r.seed = 1000 + i;
      }
      if (i % 4 == 2) r.stop_token_ids = {7, 11, 13, 17, 19, 23};
      if (i % 5 == 3) r.stop = {"e", "a"};
      if (i == 5) r.logit.presence_penalty = 1.0f;
      if (i == 9) r.top_logprobs = 2;
      if (i % 2 == 0) r.ignore_eos = false;
      out.push_back(std::move(r));
    }
    return out;
  };
  std::vector<std::vector<Collected>> runs;
  for (int64_t inflight : {1, 2}) {
    EngineOptions o;
    o.max_inflight_launches = inflight;
    o.chunked_prefill_size = 32;  // chunks and prefill/decode mixing too
    Start(o);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (EngineRequest& r : requests()) {
      auto s = engine_->Submit(std::move(r));
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      streams.push_back(*s);
    }
    std::vector<Collected> got;
    for (auto& s : streams) got.push_back(Collect(*s));
    runs.push_back(std::move(got));
    Status integrity = engine_->CheckIntegrity();
    EXPECT_TRUE(integrity.ok()) << integrity.ToString();
  }
  for (size_t i = 0; i < runs[0].size(); ++i) {
    EXPECT_EQ(runs[0][i].ids, runs[1][i].ids) << "request " << i;
    EXPECT_EQ(runs[0][i].text, runs[1][i].text) << "request " << i;
    EXPECT_EQ(runs[0][i].last.finish.kind, runs[1][i].last.finish.kind);
    EXPECT_FALSE(runs[1][i].ids.empty());
  }
}

TEST_F(EngineTest, InvalidRequestsAreRejectedUpFront) {
  Start();
  EXPECT_EQ(engine_->Submit(Greedy({}, 4)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_->Submit(Greedy({5, 99999}, 4)).status().code(),
            StatusCode::kInvalidArgument);
  auto too_long = engine_->Submit(Greedy(Prompt(10, 1), 1 << 20));
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.status().message().find("maximum context length"),
            std::string::npos);
}

TEST_F(EngineTest, FullQueueIsResourceExhausted) {
  EngineOptions o;
  o.max_queued_requests = 2;
  o.max_running_requests = 1;
  Start(o);
  std::vector<std::shared_ptr<RequestStream>> streams;
  int rejected = 0;
  for (int i = 0; i < 8; ++i) {
    auto s = engine_->Submit(Greedy(Prompt(10, i), 200));
    if (s.ok()) {
      streams.push_back(*s);
    } else {
      EXPECT_EQ(s.status().code(), StatusCode::kResourceExhausted);
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  for (auto& s : streams) s->Cancel();
  for (auto& s : streams) Collect(*s);
}

// A group larger than the whole queue can never be queued: InvalidArgument
// (HTTP 400), not ResourceExhausted (503 "retry later"), even when idle.
TEST_F(EngineTest, GroupLargerThanTheQueueIsInvalidArgument) {
  EngineOptions o;
  o.max_queued_requests = 4;
  Start(o);
  auto group = [](const std::string& prefix, int size) {
    std::vector<EngineRequest> requests;
    for (int i = 0; i < size; ++i) {
      EngineRequest r = Greedy(Prompt(10, 1), 4);
      r.rid = prefix + std::to_string(i);
      requests.push_back(std::move(r));
    }
    return requests;
  };
  auto rejected = engine_->SubmitGroup(group("group-", 5));
  EXPECT_EQ(rejected.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(rejected.status().message().find("--max-queued-requests"),
            std::string::npos);
  auto queued = engine_->SubmitGroup(group("fits-", 4));
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  for (auto& s : *queued) Collect(*s);
}

}  // namespace
}  // namespace tessera::engine

namespace tessera::engine {
namespace {

// A task handed to RunOnScheduler while the engine shuts down is either run
// or refused with Unavailable; before the loop closed its inbox under the
// lock, one queued after the loop's last drain was never run and its caller
// blocked for ever.
TEST_F(EngineTest, TasksRacingShutdownAreRunOrRefusedNeverLost) {
  for (int round = 0; round < 8; ++round) {
    Start();
    std::atomic<int> ran{0};
    auto hammer = std::async(std::launch::async, [&]() -> Status {
      while (true) {
        Status s = engine_->RunOnScheduler([&] {
          ran.fetch_add(1);
          return OkStatus();
        });
        if (!s.ok()) return s;
      }
    });
    while (ran.load() < 3) std::this_thread::yield();
    engine_->Shutdown(0);
    ASSERT_EQ(hammer.wait_for(std::chrono::seconds(10)),
              std::future_status::ready)
        << "RunOnScheduler blocked after shutdown (round " << round << ")";
    EXPECT_EQ(hammer.get().code(), StatusCode::kUnavailable);
    // Submit after shutdown is refused too.
    auto late = engine_->Submit(Greedy(Prompt(4, 1), 2));
    EXPECT_EQ(late.status().code(), StatusCode::kUnavailable);
    engine_.reset();
  }
}

}  // namespace
}  // namespace tessera::engine
