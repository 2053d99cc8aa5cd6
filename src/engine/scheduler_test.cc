// The scheduler's bookkeeping driven by a fake executor (no model): lpm
// order, in-batch prefix deferral, the retraction victim, the prefill token
// budget, chunking, and aborts of queued and running requests. The KV pool
// is a real one (cpu plugin) so pages, the radix cache and their integrity
// checks are the real thing; only the forward pass is replaced.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <deque>
#include <numeric>

#include "engine/executor.h"
#include "model/runner_test_util.h"
#include "model/synthetic_tokenizer.h"

namespace tessera::engine {
namespace {

constexpr int32_t kPageSize = 4;
constexpr int32_t kToken = 7;  // what the fake executor samples

// Samples kToken for every row and records what it was asked to run.
class FakeExecutor : public Executor {
 public:
  void Launch(const ScheduledBatch& batch) override {
    ++steps;
    StepResult r;
    r.ids.assign(batch.rows.size(), next_id);
    r.logprobs.resize(batch.rows.size());
    results_.push_back(std::move(r));
  }
  StatusOr<StepResult> Collect() override {
    StepResult r = std::move(results_.front());
    results_.pop_front();
    return r;
  }
  int steps = 0;
  int32_t next_id = kToken;  // what the next Launch samples for every row

 private:
  std::deque<StepResult> results_;
};

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto made = model::MakeSyntheticTokenizer(300, 4096);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    auto tok = Tokenizer::FromJsonText(made->tokenizer_json,
                                       made->tokenizer_config_json, "test");
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tokenizer_ = tok->release();
  }
  static void TearDownTestSuite() { delete tokenizer_; }

  // A scheduler over a pool of `pages` pages.
  void Make(int64_t pages, EngineOptions options = {}) {
    scheduler_.reset();
    pool_.reset();
    finished_.clear();
    if (!runtime_) {
      auto rt = model::testing::CreateRuntime();
      ASSERT_TRUE(rt.ok()) << rt.status().ToString();
      runtime_ = std::move(*rt);
    }
    kv::KvPoolOptions o;
    o.num_layers = 1;
    o.num_kv_heads = 1;
    o.head_dim = 4;
    o.page_size = kPageSize;
    o.capacity_tokens = pages * kPageSize;
    auto pool = kv::KvPool::Create(runtime_->device(0), o);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    options_ = options;
    scheduler_ = std::make_unique<Scheduler>(*pool_, options_,
                                             [this](const Sequence& s) {
                                               finished_.push_back(
                                                   s.stream->rid());
                                             });
  }

  void TearDown() override {
    if (!scheduler_) return;
    Status s = scheduler_->kv().CheckIntegrity();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  // Queues a request; returns its stream.
  std::shared_ptr<RequestStream> Add(const std::string& rid,
                                     std::vector<int32_t> prompt,
                                     int64_t max_new = 4,
                                     std::vector<int32_t> stop_ids = {}) {
    EngineRequest r;
    r.rid = rid;
    r.prompt_ids = std::move(prompt);
    auto stops = StopTokens::Create({}, stop_ids, false, 300);
    auto matcher = StopMatcher::Create({});
    auto processor = LogitProcessor::Create({}, 300, r.prompt_ids);
    EXPECT_TRUE(stops.ok() && matcher.ok() && processor.ok());
    auto seq = std::make_unique<Sequence>(
        std::move(r), *tokenizer_, std::move(*stops), std::move(*matcher),
        std::move(*processor), 1, max_new);
    seq->stream = std::make_shared<RequestStream>(rid);
    auto stream = seq->stream;
    scheduler_->Enqueue(std::move(seq));
    return stream;
  }

  // One full step; returns the batch that ran.
  ScheduledBatch Step() {
    ScheduledBatch batch = scheduler_->Schedule();
    if (!batch.empty()) scheduler_->Postprocess(batch, executor_.Run(batch));
    return batch;
  }
  void RunToCompletion() {
    for (int i = 0; i < 1000 && scheduler_->has_work(); ++i) Step();
    ASSERT_FALSE(scheduler_->has_work());
  }

  static std::vector<int32_t> Iota(int n, int start) {
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), start);
    return v;
  }
  static std::vector<std::string> Rids(const ScheduledBatch& b) {
    std::vector<std::string> out;
    for (const BatchRow& r : b.rows) out.push_back(r.seq->stream->rid());
    return out;
  }
  static std::vector<int64_t> Sizes(const ScheduledBatch& b) {
    std::vector<int64_t> out;
    for (const BatchRow& r : b.rows) out.push_back(r.n);
    return out;
  }
  static RequestOutput Last(RequestStream& s) {
    auto outs = s.Wait(std::chrono::milliseconds(0));
    EXPECT_FALSE(outs.empty());
    return outs.empty() ? RequestOutput{} : outs.back();
  }

  static Tokenizer* tokenizer_;
  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<kv::KvPool> pool_;
  EngineOptions options_;
  std::unique_ptr<Scheduler> scheduler_;
  FakeExecutor executor_;
  std::vector<std::string> finished_;
};

Tokenizer* SchedulerTest::tokenizer_ = nullptr;

TEST_F(SchedulerTest, DecodeRowsComeFirstAndEveryRequestFinishesAtItsLength) {
  Make(64);
  Add("a", Iota(10, 1), 3);
  ScheduledBatch first = Step();
  ASSERT_EQ(first.size(), 1);
  EXPECT_TRUE(first.rows[0].prefill);
  EXPECT_TRUE(first.rows[0].sample);
  EXPECT_EQ(first.rows[0].n, 10);
  Add("b", Iota(6, 100), 1);
  ScheduledBatch second = Step();
  EXPECT_EQ(Rids(second), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(second.num_decode, 1);
  EXPECT_EQ(Sizes(second), (std::vector<int64_t>{1, 6}));
  RunToCompletion();
  EXPECT_EQ(finished_, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(scheduler_->kv().UsedTokens(), 0);
}

TEST_F(SchedulerTest, LongestPrefixMatchAdmitsTheCachedPrefixFirst) {
  for (SchedulePolicy policy : {SchedulePolicy::kLongestPrefixMatch,
                                SchedulePolicy::kFirstComeFirstServed}) {
    EngineOptions o;
    o.policy = policy;
    o.max_running_requests = 1;
    Make(64, o);
    const auto shared = Iota(24, 1);
    Add("warm", shared, 1);
    RunToCompletion();  // its prompt is now in the radix cache
    Add("cold", Iota(24, 100), 1);
    auto hit = shared;
    hit.push_back(200);
    hit.push_back(201);
    Add("hit", hit, 1);
    ScheduledBatch b = scheduler_->Schedule();
    ASSERT_EQ(b.size(), 1);
    if (policy == SchedulePolicy::kLongestPrefixMatch) {
      EXPECT_EQ(Rids(b)[0], "hit");
      // Only the uncached tail runs: 24 cached (whole pages) of 26.
      EXPECT_EQ(b.rows[0].n, 2);
    } else {
      EXPECT_EQ(Rids(b)[0], "cold");
    }
    scheduler_->Postprocess(b, executor_.Run(b));
    RunToCompletion();
  }
}

TEST_F(SchedulerTest, SecondRequestWithTheSameNewPrefixWaitsOneStep) {
  Make(128);
  auto p1 = Iota(40, 1);
  auto p2 = p1;
  p1.push_back(250);
  p2.push_back(251);
  Add("first", p1, 2);
  Add("second", p2, 2);
  Add("other", Iota(8, 150), 2);
  ScheduledBatch b1 = Step();
  // "second" shares 40 uncached tokens with "first": deferred, so it can
  // reuse first's KV next step; "other" shares nothing and runs now.
  EXPECT_EQ(Rids(b1), (std::vector<std::string>{"first", "other"}));
  ScheduledBatch b2 = Step();
  ASSERT_EQ(b2.size(), 3);
  EXPECT_EQ(Rids(b2)[2], "second");
  // 40 shared tokens, whole pages: 40 cached, 1 computed.
  EXPECT_EQ(b2.rows[2].n, 1);
  RunToCompletion();
}

TEST_F(SchedulerTest, PoolExhaustionRetractsTheMostRecentlyAdmitted) {
  // 8 pages = 32 slots; two 14-token prompts take 4 pages each, then the
  // first decode step needs a ninth page.
  Make(8);
  Add("old", Iota(14, 1), 10);
  Step();
  Add("young", Iota(14, 100), 10);
  Step();
  // Both are at 15 tokens in KV (4 pages each, 16 slots): the next decode
  // needs a fifth page for one of them while the pool has none free and
  // nothing evictable; the younger one goes back to the queue.
  for (int i = 0; i < 3 && scheduler_->retractions() == 0; ++i) Step();
  EXPECT_EQ(scheduler_->retractions(), 1);
  EXPECT_EQ(scheduler_->running(), 1);
  EXPECT_EQ(scheduler_->waiting(), 1);
  RunToCompletion();
  EXPECT_EQ(finished_, (std::vector<std::string>{"old", "young"}));
}

TEST_F(SchedulerTest, PrefillRespectsTheTokenBudgetAndChunksTheOverflow) {
  EngineOptions o;
  o.chunked_prefill_size = 64;
  Make(256, o);
  Add("a", Iota(30, 1), 2);
  Add("b", Iota(30, 40), 2);
  Add("c", Iota(30, 80), 2);
  ScheduledBatch b1 = Step();
  EXPECT_EQ(Sizes(b1), (std::vector<int64_t>{30, 30, 4}));
  EXPECT_EQ(b1.num_tokens(), 64);
  EXPECT_FALSE(b1.rows[2].sample);  // a chunk: nothing to sample yet
  ScheduledBatch b2 = Step();
  // Two decode rows, then the rest of c's prompt.
  EXPECT_EQ(Rids(b2), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Sizes(b2), (std::vector<int64_t>{1, 1, 26}));
  EXPECT_TRUE(b2.rows[2].sample);
  RunToCompletion();
}

TEST_F(SchedulerTest, LongPromptIsSplitIntoChunksOverLaterSteps) {
  EngineOptions o;
  o.chunked_prefill_size = 64;
  Make(256, o);
  Add("long", Iota(150, 1), 2);
  std::vector<int64_t> chunks;
  for (int i = 0; i < 3; ++i) {
    ScheduledBatch b = Step();
    ASSERT_EQ(b.size(), 1);
    EXPECT_TRUE(b.rows[0].prefill);
    EXPECT_EQ(b.rows[0].sample, i == 2);
    chunks.push_back(b.rows[0].n);
  }
  EXPECT_EQ(chunks, (std::vector<int64_t>{64, 64, 22}));
  // While chunking, no second prompt starts: one chunked prompt at a time.
  RunToCompletion();
}

TEST_F(SchedulerTest, CancelledQueuedRequestIsAbortedWithItsCause) {
  Make(64);
  auto s = Add("q", Iota(8, 1), 4);
  s->Cancel(AbortCause::kAbortRequest, "aborted by /abort_request");
  ScheduledBatch b = scheduler_->Schedule();
  EXPECT_TRUE(b.empty());
  RequestOutput last = Last(*s);
  EXPECT_TRUE(last.finished);
  EXPECT_EQ(last.finish.kind, FinishReason::Kind::kAbort);
  EXPECT_EQ(last.finish.cause, AbortCause::kAbortRequest);
  EXPECT_FALSE(scheduler_->has_work());
}

TEST_F(SchedulerTest, CancelledRunningRequestFreesItsKv) {
  Make(64);
  auto s = Add("r", Iota(18, 1), 100);
  Step();
  Step();
  EXPECT_GT(scheduler_->kv().UsedTokens(), 0);
  s->Cancel(AbortCause::kClientGone, "client disconnected");
  ScheduledBatch b = scheduler_->Schedule();
  EXPECT_TRUE(b.empty());
  auto outs = s->Wait(std::chrono::milliseconds(0));
  ASSERT_FALSE(outs.empty());
  EXPECT_EQ(outs.back().finish.cause, AbortCause::kClientGone);
  EXPECT_EQ(outs.back().completion_tokens, 2);
  EXPECT_EQ(scheduler_->kv().UsedTokens(), 0);
}

TEST_F(SchedulerTest, FailedStepAbortsEveryRequestAsAnError) {
  Make(64);
  auto a = Add("a", Iota(8, 1), 4);
  auto b = Add("b", Iota(8, 50), 4);
  ScheduledBatch batch = scheduler_->Schedule();
  scheduler_->Postprocess(batch, InternalError("device lost"));
  for (auto* s : {a.get(), b.get()}) {
    RequestOutput last = Last(*s);
    EXPECT_EQ(last.finish.cause, AbortCause::kError);
    EXPECT_NE(last.finish.message.find("device lost"), std::string::npos);
  }
  EXPECT_FALSE(scheduler_->has_work());
  EXPECT_EQ(scheduler_->kv().UsedTokens(), 0);
}

// Overlap: batch n + 1 is scheduled while batch n is in flight. A sequence
// whose token batch n samples decodes it in n + 1 straight from the device
// (input_from); when that token turns out to stop the sequence, n + 1's
// token for it is discarded and its KV goes with the sequence.
TEST_F(SchedulerTest, OverlapFeedsTheInFlightTokenAndDiscardsTheOneAfterAStop) {
  Make(64);
  constexpr int32_t kStop = 42;
  auto a = Add("a", Iota(10, 1), 20, {kStop});
  auto b = Add("b", Iota(6, 100), 20);
  ScheduledBatch b1 = scheduler_->Schedule();
  ASSERT_EQ(b1.size(), 2);
  executor_.next_id = kStop;  // batch 1 samples the stop id for both
  executor_.Launch(b1);
  ScheduledBatch b2 = scheduler_->Schedule();  // batch 1 still in flight
  ASSERT_EQ(Rids(b2), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(b2.rows[0].input_from, 0);
  EXPECT_EQ(b2.rows[1].input_from, 1);
  EXPECT_EQ(b2.rows[0].kv_start, 10);  // the pending token's position
  EXPECT_EQ(b2.rows[1].kv_start, 6);
  executor_.next_id = kToken;
  executor_.Launch(b2);
  scheduler_->Postprocess(b1, executor_.Collect());
  // a stopped at batch 1's token; b did not (kStop is not b's stop id).
  auto a_out = a->Wait(std::chrono::milliseconds(0));
  ASSERT_EQ(a_out.size(), 1u);
  EXPECT_TRUE(a_out[0].finished);
  EXPECT_EQ(a_out[0].token_ids, (std::vector<int32_t>{kStop}));
  ScheduledBatch b3 = scheduler_->Schedule();  // batch 2 in flight
  EXPECT_EQ(Rids(b3), (std::vector<std::string>{"b"}));
  executor_.Launch(b3);
  scheduler_->Postprocess(b2, executor_.Collect());
  scheduler_->Postprocess(b3, executor_.Collect());
  EXPECT_TRUE(a->Wait(std::chrono::milliseconds(0)).empty());  // discarded
  auto b_out = b->Wait(std::chrono::milliseconds(0));
  ASSERT_EQ(b_out.size(), 3u);
  EXPECT_EQ(b_out[2].completion_tokens, 3);
  b->Cancel();
  RunToCompletion();
  EXPECT_EQ(scheduler_->kv().UsedTokens(), 0);
}

TEST_F(SchedulerTest, OverlapGivesNoRowBeyondTheLengthLimit) {
  Make(64);
  auto a = Add("a", Iota(10, 1), 2);
  ScheduledBatch b1 = scheduler_->Schedule();
  executor_.Launch(b1);
  ScheduledBatch b2 = scheduler_->Schedule();
  ASSERT_EQ(b2.size(), 1);  // token 2 of 2: decoded
  executor_.Launch(b2);
  scheduler_->Postprocess(b1, executor_.Collect());
  ScheduledBatch b3 = scheduler_->Schedule();
  EXPECT_TRUE(b3.empty());  // its last token is in flight: nothing more
  EXPECT_FALSE(b3.blocked);
  scheduler_->Postprocess(b2, executor_.Collect());
  auto outs = a->Wait(std::chrono::milliseconds(0));
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs.back().finish.kind, FinishReason::Kind::kLength);
  EXPECT_FALSE(scheduler_->has_work());
  EXPECT_EQ(scheduler_->kv().UsedTokens(), 0);
}

TEST_F(SchedulerTest, RetractionWaitsForTheBatchInFlight) {
  Make(8);
  Add("old", Iota(14, 1), 10);
  Step();
  Add("young", Iota(14, 100), 10);
  Step();
  // Decode with a batch in flight until the pool runs out: Schedule then
  // asks for the in-flight batch first instead of retracting.
  ScheduledBatch inflight = scheduler_->Schedule();
  executor_.Launch(inflight);
  bool blocked = false;
  for (int i = 0; i < 4 && !blocked; ++i) {
    ScheduledBatch next = scheduler_->Schedule();
    blocked = next.blocked;
    if (!blocked) executor_.Launch(next);
    scheduler_->Postprocess(inflight, executor_.Collect());
    if (!blocked) inflight = std::move(next);
  }
  EXPECT_TRUE(blocked);
  EXPECT_EQ(scheduler_->retractions(), 0);
  // With nothing in flight the same step retracts the younger request.
  Step();
  EXPECT_EQ(scheduler_->retractions(), 1);
  RunToCompletion();
  EXPECT_EQ(finished_, (std::vector<std::string>{"old", "young"}));
}

}  // namespace
}  // namespace tessera::engine
