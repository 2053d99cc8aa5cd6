// Unit tests of the serving benchmark's parts that need no server: SSE
// parsing at every split point, stream measurements, statistics, datasets,
// arrival times and the load generator's concurrency limit. The run
// against a real `tessera serve` is an end-to-end test (tests/e2e).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/completion_stream.h"
#include "bench/datasets.h"
#include "bench/http_endpoint.h"
#include "bench/load_generator.h"
#include "bench/multi_turn.h"
#include "bench/request_runner.h"
#include "bench/seeded_random.h"
#include "bench/server_probe.h"
#include "bench/sse_reader.h"

namespace tessera::bench {
namespace {

// A /v1/completions stream as the server sends it: three token chunks (the
// second holds its text back), the usage chunk and [DONE].
const std::string kRecordedStream =
    "data: {\"id\":\"cmpl-7\",\"object\":\"text_completion\",\"created\":"
    "1700000000,\"model\":\"tiny\",\"choices\":[{\"index\":0,\"text\":\" "
    "Hello\",\"logprobs\":null,\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"cmpl-7\",\"object\":\"text_completion\",\"created\":"
    "1700000000,\"model\":\"tiny\",\"choices\":[{\"index\":0,\"text\":\"\","
    "\"logprobs\":null,\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"cmpl-7\",\"object\":\"text_completion\",\"created\":"
    "1700000000,\"model\":\"tiny\",\"choices\":[{\"index\":0,\"text\":\" "
    "w\xc3\xb6rld\",\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n"
    "data: {\"id\":\"cmpl-7\",\"object\":\"text_completion\",\"created\":"
    "1700000000,\"model\":\"tiny\",\"choices\":[],\"usage\":{\"prompt_tokens\""
    ":5,\"completion_tokens\":3,\"total_tokens\":8,\"prompt_tokens_details\":"
    "{\"cached_tokens\":2}}}\n\n"
    "data: [DONE]\n\n";

std::string ReplaceAll(std::string text, const std::string& from,
                       const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::vector<std::string> FeedAll(SseReader& reader,
                                 const std::vector<std::string_view>& pieces) {
  std::vector<std::string> events;
  for (const std::string_view piece : pieces) {
    for (std::string& e : reader.Feed(piece)) events.push_back(std::move(e));
  }
  return events;
}

TEST(SseReaderTest, RecordedStreamGivesItsFiveEvents) {
  SseReader reader;
  const std::vector<std::string> events = reader.Feed(kRecordedStream);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[4], "[DONE]");
  EXPECT_EQ(events[0].front(), '{');
  EXPECT_NE(events[2].find("w\xc3\xb6rld"), std::string::npos);
  EXPECT_TRUE(reader.Finish());
}

// Every way of cutting the stream in two, and in three at every pair of
// points of a short stream, with LF, CRLF and CR line ends.
TEST(SseReaderTest, EverySplitPointGivesTheSameEvents) {
  SseReader whole_reader;
  const std::vector<std::string> expected = whole_reader.Feed(kRecordedStream);
  for (const std::string newline : {"\n", "\r\n", "\r"}) {
    const std::string stream = ReplaceAll(kRecordedStream, "\n", newline);
    for (size_t cut = 0; cut <= stream.size(); ++cut) {
      SseReader reader;
      const std::string_view s = stream;
      EXPECT_EQ(FeedAll(reader, {s.substr(0, cut), s.substr(cut)}), expected)
          << "newline " << int(newline[0]) << " cut at " << cut;
      EXPECT_TRUE(reader.Finish());
    }
  }
  const std::string short_stream =
      "data: {\"a\":1}\r\n\r\n: keep-alive\r\n\r\ndata: [DONE]\r\n\r\n";
  for (size_t i = 0; i <= short_stream.size(); ++i) {
    for (size_t j = i; j <= short_stream.size(); ++j) {
      SseReader reader;
      const std::string_view s = short_stream;
      EXPECT_EQ(FeedAll(reader, {s.substr(0, i), s.substr(i, j - i),
                                 s.substr(j)}),
                (std::vector<std::string>{"{\"a\":1}", "[DONE]"}))
          << i << " " << j;
    }
  }
}

TEST(SseReaderTest, ByteByByte) {
  SseReader reader;
  std::vector<std::string> events;
  for (const char c : kRecordedStream) {
    for (std::string& e : reader.Feed(std::string_view(&c, 1))) {
      events.push_back(std::move(e));
    }
  }
  SseReader whole;
  EXPECT_EQ(events, whole.Feed(kRecordedStream));
}

TEST(SseReaderTest, FieldsCommentsAndMultiLineData) {
  SseReader reader;
  const std::vector<std::string> events = reader.Feed(
      ": a comment\n"
      "event: message\nid: 3\nretry: 100\ndata:no-space\n\n"
      "data: line one\ndata: line two\n\n"
      "data\n\n"          // a data field without a colon: empty data
      "event: only\n\n"   // no data: not dispatched
      "data:  two spaces\n\n");
  EXPECT_EQ(events, (std::vector<std::string>{
                        "no-space", "line one\nline two", "", " two spaces"}));
  EXPECT_TRUE(reader.Finish());
}

TEST(SseReaderTest, UnfinishedEventIsPending) {
  SseReader reader;
  EXPECT_TRUE(reader.Feed("data: {\"x\":1}\n").empty());
  EXPECT_FALSE(reader.Finish());
  SseReader partial_line;
  EXPECT_TRUE(partial_line.Feed("data: {\"x\"").empty());
  EXPECT_FALSE(partial_line.Finish());
}

// The recorded stream's events, timed by hand.
RequestResult MeasureRecorded(const std::vector<double>& times) {
  SseReader reader;
  const std::vector<std::string> events = reader.Feed(kRecordedStream);
  CompletionStream stream(/*input_len=*/5, /*requested_output_len=*/3);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_TRUE(stream.OnEvent(events[i], times[i]));
  }
  stream.OnEnd(times.back(), reader.Finish());
  return stream.TakeResult();
}

TEST(CompletionStreamTest, MeasuresTheRecordedStream) {
  const RequestResult r = MeasureRecorded({0.1, 0.15, 0.3, 0.31, 0.32, 0.33});
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.1);
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.05, 1e-12);
  EXPECT_NEAR(r.itl_s[1], 0.15, 1e-12);
  EXPECT_DOUBLE_EQ(r.e2e_s, 0.33);
  EXPECT_EQ(r.choice_events, 3);
  EXPECT_TRUE(r.usage_reported);
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(r.prompt_tokens, 5);
  EXPECT_EQ(r.cached_tokens, 2);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.input_len, 5);
  EXPECT_EQ(r.requested_output_len, 3);
}

TEST(CompletionStreamTest, ErrorEventFailsAndStopsReading) {
  CompletionStream stream(4, 8);
  EXPECT_TRUE(stream.OnEvent(
      "{\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}]}",
      0.1));
  EXPECT_FALSE(stream.OnEvent(
      "{\"error\":{\"message\":\"KV cache exhausted\",\"type\":"
      "\"server_error\",\"code\":503}}",
      0.2));
  EXPECT_FALSE(stream.OnEvent("[DONE]", 0.3));
  stream.OnEnd(0.3, true);
  const RequestResult& r = stream.result();
  EXPECT_FALSE(r.success);
  EXPECT_NE(r.error.find("KV cache exhausted"), std::string::npos) << r.error;
}

TEST(CompletionStreamTest, TruncatedAndMalformedStreamsFail) {
  CompletionStream no_done(4, 2);
  EXPECT_TRUE(no_done.OnEvent("{\"choices\":[{\"text\":\"a\"}]}", 0.1));
  no_done.OnEnd(0.2, false);
  EXPECT_FALSE(no_done.result().success);
  EXPECT_NE(no_done.result().error.find("[DONE]"), std::string::npos);

  CompletionStream not_json(4, 2);
  EXPECT_FALSE(not_json.OnEvent("{\"choices\": [", 0.1));
  not_json.OnEnd(0.2, true);
  EXPECT_FALSE(not_json.result().success);
  EXPECT_NE(not_json.result().error.find("not a JSON object"),
            std::string::npos);

  CompletionStream no_tokens(4, 2);
  EXPECT_TRUE(no_tokens.OnEvent("[DONE]", 0.1));
  no_tokens.OnEnd(0.1, true);
  EXPECT_FALSE(no_tokens.result().success);

  CompletionStream http_error(4, 2);
  http_error.Fail("HTTP 400: prompt too long");
  http_error.Fail("a later reason");
  http_error.OnEnd(0.01, true);
  EXPECT_EQ(http_error.result().error, "HTTP 400: prompt too long");
}

TEST(CompletionStreamTest, WithoutUsageCountsTheChoiceEvents) {
  CompletionStream stream(7, 2);
  EXPECT_TRUE(stream.OnEvent("{\"choices\":[{\"text\":\"a\"}]}", 0.5));
  EXPECT_TRUE(stream.OnEvent("{\"choices\":[{\"text\":\"b\"}]}", 0.75));
  EXPECT_TRUE(stream.OnEvent("[DONE]", 0.8));
  stream.OnEnd(0.8, true);
  const RequestResult& r = stream.result();
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_FALSE(r.usage_reported);
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_EQ(r.prompt_tokens, 7);
  EXPECT_EQ(r.cached_tokens, 0);
}

TEST(BenchStatsTest, PercentilesMatchHandComputedValues) {
  const std::vector<double> v = {15, 20, 35, 40, 50};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 15);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 50);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 35);
  EXPECT_DOUBLE_EQ(Percentile(v, 40), 29);    // rank 1.6: 20 + 0.6 * 15
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 49.6);  // rank 3.96: 40 + 0.96 * 10
  EXPECT_DOUBLE_EQ(Percentile({7.0}, 99), 7.0);

  const Distribution d = Summarize({4, 1, 3, 2});
  EXPECT_EQ(d.count, 4);
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_DOUBLE_EQ(d.median, 2.5);
  EXPECT_DOUBLE_EQ(d.std, std::sqrt(1.25));  // population: (2.25+.25)*2 / 4
  EXPECT_DOUBLE_EQ(d.p95, 3.85);             // rank 2.85
  EXPECT_DOUBLE_EQ(d.p99, 3.97);             // rank 2.97
  EXPECT_DOUBLE_EQ(d.max, 4);
  const Distribution empty = Summarize({});
  EXPECT_EQ(empty.count, 0);
  EXPECT_EQ(empty.mean, 0.0);
}

TEST(BenchStatsTest, SummaryOfHandMadeResults) {
  LoadResult load;
  load.duration_s = 2.0;
  load.peak_concurrency = 2;
  RequestResult a;
  a.success = true;
  a.input_len = 10;
  a.requested_output_len = 5;
  a.output_tokens = 5;
  a.prompt_tokens = 10;
  a.cached_tokens = 4;
  a.ttft_s = 0.1;
  a.e2e_s = 0.5;
  a.itl_s = {0.1, 0.1, 0.1, 0.1};
  RequestResult b;
  b.success = true;
  b.input_len = 20;
  b.requested_output_len = 2;
  b.output_tokens = 1;  // short: a mismatch, and no TPOT
  b.prompt_tokens = 20;
  b.ttft_s = 0.2;
  b.e2e_s = 0.2;
  RequestResult failed;
  failed.error = "HTTP 503: overloaded";
  load.results = {a, failed, b};

  const BenchSummary s = SummarizeLoad(load);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.errors, std::vector<std::string>{"HTTP 503: overloaded"});
  EXPECT_EQ(s.total_input_tokens, 30);
  EXPECT_EQ(s.total_output_tokens, 6);
  EXPECT_EQ(s.cached_tokens, 4);
  EXPECT_DOUBLE_EQ(s.cached_token_fraction, 4.0 / 30.0);
  EXPECT_EQ(s.output_len_mismatches, 1);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.input_throughput, 15.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 3.0);
  EXPECT_DOUBLE_EQ(s.total_throughput, 18.0);
  EXPECT_DOUBLE_EQ(s.mean_concurrency, 0.35);  // (0.5 + 0.2) / 2
  EXPECT_EQ(s.peak_concurrency, 2);
  EXPECT_DOUBLE_EQ(s.ttft_ms.mean, 150.0);
  EXPECT_DOUBLE_EQ(s.e2e_ms.median, 350.0);
  EXPECT_EQ(s.tpot_ms.count, 1);
  EXPECT_NEAR(s.tpot_ms.mean, 100.0, 1e-9);  // (500 - 100) / (5 - 1)
  EXPECT_EQ(s.itl_ms.count, 4);
  EXPECT_NEAR(s.itl_ms.p99, 100.0, 1e-9);

  nlohmann::ordered_json result = SummaryJson(s);
  EXPECT_EQ(result["completed"], 2);
  EXPECT_DOUBLE_EQ(result["tpot_ms"]["mean"].get<double>(), s.tpot_ms.mean);
  result["base_url"] = "http://127.0.0.1:30000";
  result["model"] = "tiny";
  result["dataset"] = {{"name", "random"}, {"num_prompts", 3}};
  result["request_rate"] = nullptr;
  result["max_concurrency"] = 4;
  const std::string table = ResultTable(result);
  EXPECT_NE(table.find("Serving Benchmark Result"), std::string::npos);
  EXPECT_NE(table.find("Successful requests:"), std::string::npos);
  EXPECT_NE(table.find("Mean TPOT (ms):"), std::string::npos);
  EXPECT_NE(table.find("HTTP 503: overloaded"), std::string::npos);
  EXPECT_NE(table.find("ignore_eos"), std::string::npos);
  EXPECT_NE(table.find("random (num_prompts=3)"), std::string::npos);
}

TEST(DatasetsTest, RandomShapesAndDeterminism) {
  RandomDatasetOptions o;
  o.num_prompts = 2000;
  o.input_len = 10;
  o.output_len = 8;
  o.range_ratio = 0.5;
  o.vocab_size = 50;
  o.seed = 3;
  auto a = MakeRandomDataset(o);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->size(), 2000u);
  std::set<size_t> input_lens;
  std::set<int64_t> output_lens;
  std::set<int32_t> ids;
  for (const BenchRequest& r : *a) {
    input_lens.insert(r.prompt_ids.size());
    output_lens.insert(r.output_len);
    ids.insert(r.prompt_ids.begin(), r.prompt_ids.end());
    EXPECT_EQ(r.group, -1);
  }
  // Every length of [5, 10] and [4, 8], every id of [0, 50).
  EXPECT_EQ(input_lens, (std::set<size_t>{5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(output_lens, (std::set<int64_t>{4, 5, 6, 7, 8}));
  EXPECT_EQ(ids.size(), 50u);
  EXPECT_EQ(*ids.begin(), 0);
  EXPECT_EQ(*ids.rbegin(), 49);

  auto again = MakeRandomDataset(o);
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].prompt_ids, (*again)[i].prompt_ids);
    EXPECT_EQ((*a)[i].output_len, (*again)[i].output_len);
  }
  o.seed = 4;
  auto other = MakeRandomDataset(o);
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*a)[0].prompt_ids, (*other)[0].prompt_ids);

  o.range_ratio = 1.0;
  o.num_prompts = 20;
  auto exact = MakeRandomDataset(o);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(TotalInputTokens(*exact), 200);
  EXPECT_EQ(TotalOutputTokens(*exact), 160);
  o.range_ratio = 0.0;  // SGLang's default: lengths in [1, len]
  auto wide = MakeRandomDataset(o);
  ASSERT_TRUE(wide.ok());
  for (const BenchRequest& r : *wide) EXPECT_GE(r.prompt_ids.size(), 1u);
}

TEST(DatasetsTest, RandomRejectsBadOptions) {
  RandomDatasetOptions o;
  o.vocab_size = 100;
  o.num_prompts = 0;
  auto none = MakeRandomDataset(o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("--num-prompts"), std::string::npos);
  o.num_prompts = 1;
  o.range_ratio = 1.5;
  EXPECT_FALSE(MakeRandomDataset(o).ok());
  o.range_ratio = 0.5;
  o.vocab_size = 0;
  EXPECT_FALSE(MakeRandomDataset(o).ok());
}

TEST(DatasetsTest, SharedPrefixGroupsShareTheirSystemPrompt) {
  SharedPrefixDatasetOptions o;
  o.num_groups = 4;
  o.prompts_per_group = 5;
  o.system_prompt_len = 16;
  o.question_len = 4;
  o.output_len = 3;
  o.vocab_size = 1000;
  o.seed = 9;
  auto made = MakeSharedPrefixDataset(o);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  const std::vector<BenchRequest>& requests = *made;
  ASSERT_EQ(requests.size(), 20u);
  std::vector<std::vector<int32_t>> prefix(4);
  std::vector<std::set<std::vector<int32_t>>> questions(4);
  std::vector<int32_t> order;
  for (const BenchRequest& r : requests) {
    ASSERT_GE(r.group, 0);
    ASSERT_LT(r.group, 4);
    ASSERT_EQ(r.prompt_ids.size(), 20u);
    EXPECT_EQ(r.output_len, 3);
    const std::vector<int32_t> head(r.prompt_ids.begin(),
                                    r.prompt_ids.begin() + 16);
    if (prefix[size_t(r.group)].empty()) prefix[size_t(r.group)] = head;
    EXPECT_EQ(head, prefix[size_t(r.group)]) << "group " << r.group;
    questions[size_t(r.group)].insert(
        std::vector<int32_t>(r.prompt_ids.begin() + 16, r.prompt_ids.end()));
    order.push_back(r.group);
  }
  for (size_t g = 0; g < 4; ++g) {
    EXPECT_EQ(questions[g].size(), 5u) << "questions of group " << g;
    for (size_t h = g + 1; h < 4; ++h) EXPECT_NE(prefix[g], prefix[h]);
  }
  // Shuffled: the groups interleave rather than come one after another.
  EXPECT_FALSE(std::is_sorted(order.begin(), order.end()));
  auto again = MakeSharedPrefixDataset(o);
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].prompt_ids, (*again)[i].prompt_ids);
  }
  o.question_len = 0;
  EXPECT_FALSE(MakeSharedPrefixDataset(o).ok());
}

TEST(DatasetsTest, WarmupRequestHasTheShapeButNotTheIds) {
  BenchRequest like;
  like.prompt_ids.assign(64, 5);
  like.output_len = 7;
  const BenchRequest w = MakeWarmupRequest(like, 32000, 1);
  EXPECT_EQ(w.prompt_ids.size(), 64u);
  EXPECT_EQ(w.output_len, 7);
  EXPECT_NE(w.prompt_ids, like.prompt_ids);
}

TEST(MultiTurnTest, EachRoundResendsTheHistory) {
  MultiTurnDatasetOptions o;
  o.num_conversations = 3;
  o.rounds = 4;
  o.question_len = 5;
  o.output_len = 2;
  o.vocab_size = 100;
  o.seed = 9;
  auto convs = MakeMultiTurnDataset(o);
  ASSERT_TRUE(convs.ok()) << convs.status().ToString();
  ASSERT_EQ(convs->size(), 3u);
  for (size_t c = 0; c < convs->size(); ++c) {
    const auto& rounds = (*convs)[c];
    ASSERT_EQ(rounds.size(), 4u);
    for (size_t r = 0; r < rounds.size(); ++r) {
      EXPECT_EQ(rounds[r].prompt_ids.size(), 5 + r * 7);
      EXPECT_EQ(rounds[r].output_len, 2);
      EXPECT_EQ(rounds[r].group, int32_t(c));
      if (r > 0) {  // round r starts with all of round r - 1
        EXPECT_TRUE(std::equal(rounds[r - 1].prompt_ids.begin(),
                               rounds[r - 1].prompt_ids.end(),
                               rounds[r].prompt_ids.begin()));
      }
    }
  }
  // Deterministic, and conversations differ.
  auto again = MakeMultiTurnDataset(o);
  EXPECT_EQ((*again)[1][2].prompt_ids, (*convs)[1][2].prompt_ids);
  EXPECT_NE((*convs)[0][0].prompt_ids, (*convs)[1][0].prompt_ids);
  o.rounds = 0;
  EXPECT_NE(MakeMultiTurnDataset(o).status().message().find(
                "--multi-turn-rounds"),
            std::string::npos);
}

TEST(MultiTurnTest, RoundsFollowEachOtherAndTheLimitHolds) {
  MultiTurnDatasetOptions o;
  o.num_conversations = 4;
  o.rounds = 3;
  o.question_len = 2;
  o.output_len = 1;
  o.vocab_size = 10;
  auto convs = MakeMultiTurnDataset(o);
  ASSERT_TRUE(convs.ok());
  std::atomic<int> in_flight{0}, peak{0};
  std::mutex mu;
  std::map<int32_t, size_t> last_len;  // per conversation, the last sent
  bool ordered = true;
  const SendFn send = [&](const BenchRequest& r) {
    const int now = ++in_flight;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      ordered = ordered && r.prompt_ids.size() > last_len[r.group];
      last_len[r.group] = r.prompt_ids.size();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    --in_flight;
    RequestResult res;
    res.success = true;
    res.input_len = int64_t(r.prompt_ids.size());
    return res;
  };
  LoadOptions lo;
  lo.max_concurrency = 2;
  auto load = RunMultiTurnLoad(*convs, send, lo);
  ASSERT_TRUE(load.ok());
  ASSERT_EQ(load->results.size(), 12u);
  EXPECT_TRUE(ordered);
  EXPECT_LE(peak.load(), 2);
  EXPECT_EQ(load->peak_concurrency, 2);
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(load->results[i].input_len,
              int64_t((*convs)[i / 3][i % 3].prompt_ids.size()));
  }
}

TEST(SeededRandomTest, BoundsAndShuffle) {
  SeededRandom rng(1);
  for (int i = 0; i < 1000; ++i) {
    const int64_t v = rng.UniformInt(-3, 3);
    EXPECT_GE(v, -3);
    EXPECT_LE(v, 3);
    const double u = rng.UniformReal();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
  EXPECT_EQ(rng.UniformInt(5, 5), 5);
  std::vector<int> items(100);
  for (int i = 0; i < 100; ++i) items[size_t(i)] = i;
  std::vector<int> shuffled = items;
  rng.Shuffle(shuffled);
  EXPECT_NE(shuffled, items);
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, items);
}

TEST(ArrivalTimesTest, PoissonGapsHaveTheRequestedMean) {
  const int64_t n = 20001;
  const double rate = 10.0;
  const std::vector<double> t = ArrivalTimes(n, rate, 7);
  ASSERT_EQ(t.size(), size_t(n));
  EXPECT_EQ(t[0], 0.0);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  // 20000 exponential gaps of mean 0.1 s: the sample mean's standard error
  // is 0.1 / sqrt(20000) = 0.7%; allow 3%. The std of an exponential
  // equals its mean.
  const double mean_gap = t.back() / double(n - 1);
  EXPECT_NEAR(mean_gap, 1.0 / rate, 0.03 / rate);
  double squares = 0.0;
  for (size_t i = 1; i < t.size(); ++i) {
    const double gap = t[i] - t[i - 1];
    squares += (gap - mean_gap) * (gap - mean_gap);
  }
  EXPECT_NEAR(std::sqrt(squares / double(n - 1)), 1.0 / rate, 0.05 / rate);
  EXPECT_EQ(ArrivalTimes(n, rate, 7), t);
  EXPECT_NE(ArrivalTimes(n, rate, 8), t);
  for (const double x : ArrivalTimes(5, kInfiniteRate, 7)) EXPECT_EQ(x, 0.0);
}

std::vector<BenchRequest> NumberedRequests(int n) {
  std::vector<BenchRequest> requests(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) requests[size_t(i)].prompt_ids.assign(size_t(i + 1), 1);
  return requests;
}

TEST(LoadGeneratorTest, ConcurrencyLimitHoldsAndResultsKeepTheirOrder) {
  const std::vector<BenchRequest> requests = NumberedRequests(12);
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  const SendFn send = [&](const BenchRequest& r) {
    const int now = ++in_flight;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    --in_flight;
    RequestResult result;
    result.success = true;
    result.input_len = int64_t(r.prompt_ids.size());
    return result;
  };
  std::vector<int64_t> progress;
  LoadOptions options;
  options.max_concurrency = 3;
  options.on_progress = [&](int64_t done, int64_t total) {
    EXPECT_EQ(total, 12);
    progress.push_back(done);
  };
  auto load = RunLoad(requests, send, options);
  ASSERT_TRUE(load.ok()) << load.status().ToString();
  EXPECT_LE(most.load(), 3);
  EXPECT_EQ(load->peak_concurrency, 3);
  ASSERT_EQ(load->results.size(), 12u);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(load->results[i].input_len, int64_t(i + 1));
  EXPECT_EQ(progress.size(), 12u);
  EXPECT_EQ(progress.back(), 12);
  // 12 requests of 30 ms, 3 at a time: at least 4 rounds.
  EXPECT_GE(load->duration_s, 0.12);
}

TEST(LoadGeneratorTest, UnlimitedSendsEverythingAtOnce) {
  const std::vector<BenchRequest> requests = NumberedRequests(8);
  const SendFn send = [](const BenchRequest&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    RequestResult result;
    result.success = true;
    return result;
  };
  auto load = RunLoad(requests, send, LoadOptions{});
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(load->peak_concurrency, 8);
}

TEST(LoadGeneratorTest, PoissonArrivalsSpreadTheRun) {
  const std::vector<BenchRequest> requests = NumberedRequests(20);
  const SendFn send = [](const BenchRequest&) { return RequestResult{}; };
  LoadOptions options;
  options.request_rate = 100.0;
  options.seed = 5;
  auto load = RunLoad(requests, send, options);
  ASSERT_TRUE(load.ok());
  EXPECT_GE(load->duration_s, ArrivalTimes(20, 100.0, 5).back());
  options.request_rate = 0.0;
  EXPECT_FALSE(RunLoad(requests, send, options).ok());
}

TEST(HttpEndpointTest, ParsesBaseUrls) {
  auto plain = ParseBaseUrl("http://127.0.0.1:30000");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->origin, "http://127.0.0.1:30000");
  EXPECT_EQ(plain->path_prefix, "");
  auto prefixed = ParseBaseUrl("https://example.org:8443/tessera/");
  ASSERT_TRUE(prefixed.ok());
  EXPECT_EQ(prefixed->origin, "https://example.org:8443");
  EXPECT_EQ(prefixed->path_prefix, "/tessera");
  EXPECT_EQ(prefixed->Url(), "https://example.org:8443/tessera");
  auto bare = ParseBaseUrl("localhost:8000");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->origin, "http://localhost:8000");
  EXPECT_FALSE(ParseBaseUrl("ftp://host:21").ok());
  EXPECT_FALSE(ParseBaseUrl("http://").ok());
  EXPECT_FALSE(ParseBaseUrl("http://:80").ok());
}

TEST(HttpEndpointTest, ErrorMessages) {
  EXPECT_EQ(ErrorMessageFromBody(
                "{\"error\":{\"message\":\"max_tokens too large\",\"type\":"
                "\"invalid_request_error\"}}"),
            "max_tokens too large");
  EXPECT_EQ(ErrorMessageFromBody("Not Found"), "Not Found");
  EXPECT_EQ(ErrorMessageFromBody(""), "(empty body)");
}

TEST(RequestRunnerTest, RequestBodyAsksForExactStreamedOutput) {
  BenchRequest r;
  r.prompt_ids = {3, 1, 4};
  r.output_len = 9;
  const nlohmann::ordered_json body = CompletionRequestJson("tiny", r);
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_EQ(body["prompt"], nlohmann::json::array({3, 1, 4}));
  EXPECT_EQ(body["max_tokens"], 9);
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  // --extra-request-body adds members and overrides ours.
  const nlohmann::ordered_json extra = {
      {"response_format", {{"type", "json_object"}}}, {"temperature", 0.7}};
  const nlohmann::ordered_json merged = CompletionRequestJson("tiny", r, extra);
  EXPECT_EQ(merged["response_format"]["type"], "json_object");
  EXPECT_EQ(merged["temperature"], 0.7);
  EXPECT_EQ(merged["max_tokens"], 9);
}

TEST(ServerProbeTest, ChoosesTheModel) {
  ServerInfo info;
  info.models = {{"tiny", 512}, {"other", 0}};
  auto first = ChooseModel(info, "");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->id, "tiny");
  EXPECT_EQ(first->max_model_len, 512);
  auto named = ChooseModel(info, "other");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->id, "other");
  auto missing = ChooseModel(info, "huge");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("tiny, other"), std::string::npos);
  ServerInfo unlisted;
  unlisted.served_model_name = "served";
  auto fallback = ChooseModel(unlisted, "");
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(fallback->id, "served");
}

}  // namespace
}  // namespace tessera::bench
