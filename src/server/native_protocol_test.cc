#include "server/native_protocol.h"

#include <gtest/gtest.h>

#include <string>

#include "server/api_error.h"
#include "server/openai_response.h"
#include "server/protocol_test_util.h"

namespace tessera::server {
namespace {

using testing::ExpectBadParam;
using testing::ParseJson;

TEST(GenerateRequestTest, TextWithSamplingParams) {
  GenerateRequest r;
  ASSERT_FALSE(ParseGenerateRequest(ParseJson(R"({"text": "Once",
      "sampling_params": {"max_new_tokens": 8, "temperature": 0.5,
        "top_p": 0.8, "top_k": 20, "min_p": 0.1, "stop": "\n",
        "stop_token_ids": [2], "ignore_eos": true, "presence_penalty": 0.1,
        "frequency_penalty": 0.2, "repetition_penalty": 1.2, "n": 2,
        "seed": 7},
      "stream": true, "rid": "req-1", "return_text_in_logprobs": true})"),
                                    {}, &r));
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_FALSE(r.batched);
  EXPECT_EQ(r.prompts[0].text, "Once");
  EXPECT_EQ(*r.sampling.max_tokens, 8);
  EXPECT_DOUBLE_EQ(r.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.sampling.top_p, 0.8);
  EXPECT_EQ(r.sampling.top_k, 20);
  EXPECT_DOUBLE_EQ(r.sampling.min_p, 0.1);
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"\n"}));
  EXPECT_EQ(r.sampling.stop_token_ids, (std::vector<int32_t>{2}));
  EXPECT_TRUE(r.sampling.ignore_eos);
  EXPECT_DOUBLE_EQ(r.sampling.presence_penalty, 0.1);
  EXPECT_DOUBLE_EQ(r.sampling.frequency_penalty, 0.2);
  EXPECT_DOUBLE_EQ(r.sampling.repetition_penalty, 1.2);
  EXPECT_EQ(r.sampling.n, 2);
  EXPECT_EQ(*r.sampling.seed, 7);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(*r.rid, "req-1");
}

TEST(GenerateRequestTest, SglangSamplingExtrasAndUnknownFields) {
  GenerateRequest r;
  ASSERT_FALSE(ParseGenerateRequest(ParseJson(R"({"text": "Once",
      "sampling_params": {"max_new_tokens": 8, "min_new_tokens": 4,
        "skip_special_tokens": false, "spaces_between_special_tokens": true,
        "no_stop_trim": true, "logit_bias": {"5": -100}}})"),
                                    {}, &r));
  EXPECT_EQ(r.sampling.min_tokens, 4);
  EXPECT_FALSE(r.sampling.skip_special_tokens);
  EXPECT_TRUE(r.sampling.no_stop_trim);
  EXPECT_EQ(r.sampling.logit_bias.at(5), -100.0f);
  ExpectBadParam(ParseGenerateRequest(ParseJson(R"({"text": "Once",
      "sampling_params": {"max_new_tokens": 8, "min_new_tokens": 9}})"),
                                      {}, &r),
                 "sampling_params.min_new_tokens", "min_new_tokens");
  ASSERT_FALSE(ParseGenerateRequest(
      ParseJson(R"({"text": "x", "sampling_params": {"regex": "[0-9]+"}})"), {},
      &r));
  ASSERT_TRUE(r.sampling.constraint);
  EXPECT_EQ(r.sampling.constraint->text, "[0-9]+");
  MaybeApiError e;
  ExpectBadParam(
      ParseGenerateRequest(ParseJson(R"({"text": "x", "sampling_param": {}})"), {},
                           &r),
      "sampling_param", "not a field of a /generate request");
}

TEST(GenerateRequestTest, InputIdsAndBatches) {
  GenerateRequest r;
  ASSERT_FALSE(ParseGenerateRequest(ParseJson(R"({"input_ids": [1, 2]})"), {}, &r));
  EXPECT_FALSE(r.batched);
  EXPECT_EQ(r.prompts[0].token_ids, (std::vector<int32_t>{1, 2}));
  ASSERT_FALSE(
      ParseGenerateRequest(ParseJson(R"({"input_ids": [[1], [2, 3]]})"), {}, &r));
  EXPECT_TRUE(r.batched);
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].token_ids, (std::vector<int32_t>{2, 3}));
  ASSERT_FALSE(ParseGenerateRequest(ParseJson(R"({"text": ["a", "b"]})"), {}, &r));
  EXPECT_TRUE(r.batched);
  EXPECT_EQ(r.prompts.size(), 2u);
}

TEST(GenerateRequestTest, Errors) {
  GenerateRequest r;
  ExpectBadParam(ParseGenerateRequest(ParseJson("{}"), {}, &r), "text",
                 "'text' or 'input_ids' is required");
  ExpectBadParam(
      ParseGenerateRequest(ParseJson(R"({"text": "a", "input_ids": [1]})"), {}, &r),
      "text", "not both");
  ExpectBadParam(ParseGenerateRequest(ParseJson(R"({"text": 3})"), {}, &r), "text",
                 "a string");
  ExpectBadParam(
      ParseGenerateRequest(ParseJson(R"({"input_ids": [[1], [-1]]})"), {}, &r),
      "input_ids[1][0]", "not a token id");
  ExpectBadParam(ParseGenerateRequest(ParseJson(R"({"text": "a",
      "sampling_params": {"max_new_tokens": 0}})"),
                                      {}, &r),
                 "sampling_params.max_new_tokens",
                 "'sampling_params.max_new_tokens' must be at least 1");
  ExpectBadParam(ParseGenerateRequest(ParseJson(R"({"text": "a",
      "sampling_params": {"temperature": -1}})"),
                                      {}, &r),
                 "sampling_params.temperature", ">= 0");
  ExpectBadParam(ParseGenerateRequest(ParseJson(R"({"text": "a",
      "sampling_params": {"max_tokens": 5}})"),
                                      {}, &r),
                 "sampling_params.max_tokens", "not a sampling parameter");
  ExpectBadParam(ParseGenerateRequest(ParseJson(R"({"text": "a",
      "sampling_params": []})"),
                                      {}, &r),
                 "sampling_params", "an object");
  MaybeApiError e = ParseGenerateRequest(
      ParseJson(R"({"text": "a", "return_hidden_states": true})"), {}, &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "unsupported_parameter");
  EXPECT_EQ(e->param, "return_hidden_states");
  ExpectBadParam(ParseGenerateRequest(
                     ParseJson(R"({"text": "a", "return_logprob": true,
                               "logprob_start_len": -2})"),
                     {}, &r),
                 "logprob_start_len", "-1");
  ExpectBadParam(ParseGenerateRequest(
                     ParseJson(R"({"text": "a", "top_logprobs_num": 50})"), {}, &r),
                 "top_logprobs_num", "between 0");
  // max_new_tokens 0 scores the prompt: only with its logprobs asked for.
  ExpectBadParam(ParseGenerateRequest(
                     ParseJson(R"({"text": "a", "sampling_params": {"max_new_tokens": 0}})"),
                     {}, &r),
                 "sampling_params.max_new_tokens", "logprob_start_len");
  ASSERT_FALSE(ParseGenerateRequest(
      ParseJson(R"({"text": "a", "sampling_params": {"max_new_tokens": 0},
                "return_logprob": true, "logprob_start_len": 0,
                "top_logprobs_num": 2, "return_text_in_logprobs": true})"),
      {}, &r));
  EXPECT_TRUE(r.return_logprob);
  EXPECT_EQ(r.logprob_start_len, 0);
  EXPECT_EQ(r.top_logprobs_num, 2);
  EXPECT_TRUE(r.return_text_in_logprobs);
  e = ParseGenerateRequest(ParseJson(R"({"text": "a", "image_data": "x"})"), {},
                           &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "image_data");
}

// A rid is echoed into JSON, logs and metrics: only a safe character set.
TEST(GenerateRequestTest, RidIsRestrictedToSafeCharacters) {
  GenerateRequest r;
  for (const char* bad :
       {R"({"text": "a", "rid": "x\"y"})", R"({"text": "a", "rid": "a\nb"})",
        R"({"text": "a", "rid": ""})", R"({"text": "a", "rid": "a b"})"}) {
    SCOPED_TRACE(bad);
    ExpectBadParam(ParseGenerateRequest(ParseJson(bad), {}, &r), "rid",
                   "1 to 128 characters");
  }
  ExpectBadParam(
      ParseGenerateRequest(Json{{"text", "a"}, {"rid", std::string(129, 'a')}},
                           {}, &r),
      "rid", "1 to 128 characters");
  EXPECT_FALSE(ParseGenerateRequest(
      ParseJson(R"({"text": "a", "rid": "Req-1.a_b:9"})"), {}, &r));
  EXPECT_EQ(*r.rid, "Req-1.a_b:9");
}

// A batch of more prompts than the server accepts per request is a 400
// (the per-choice limit 'n' cannot be sidestepped with many prompts).
TEST(GenerateRequestTest, PromptCountIsBounded) {
  GenerateRequest r;
  ProtocolLimits limits;
  Json text = Json::array();
  Json ids = Json::array();
  for (int i = 0; i <= limits.max_prompts; ++i) {
    text.push_back("a");
    ids.push_back({1});
  }
  ExpectBadParam(ParseGenerateRequest(Json{{"text", text}}, limits, &r), "text",
                 "at most");
  ExpectBadParam(ParseGenerateRequest(Json{{"input_ids", ids}}, limits, &r),
                 "input_ids", "at most");
  text.erase(text.size() - 1);
  EXPECT_FALSE(ParseGenerateRequest(Json{{"text", text}}, limits, &r));
}

TEST(GenerateResponseTest, Shapes) {
  GenerateResult res;
  res.id = "g1";
  res.text = "hi";
  res.output_ids = {5, 6};
  res.prompt_tokens = 3;
  res.completion_tokens = 2;
  res.cached_tokens = 1;
  FinishReason stop;
  stop.matched_token = 2;
  res.finish_reason = stop;
  EXPECT_EQ(DumpCompact(GenerateResultJson(res)),
            R"({"text":"hi","output_ids":[5,6],"meta_info":{"id":"g1",)"
            R"("prompt_tokens":3,"completion_tokens":2,"cached_tokens":1,)"
            R"("finish_reason":{"type":"stop","matched":2}}})");
  FinishReason text_stop;
  text_stop.matched_text = "\n";
  EXPECT_EQ(FinishReasonJson(text_stop)["matched"], "\n");
  FinishReason length;
  length.kind = FinishReason::Kind::kLength;
  length.length = 16;
  EXPECT_EQ(DumpCompact(FinishReasonJson(length)),
            R"({"type":"length","length":16})");
  EXPECT_EQ(OpenAiFinishReason(length), "length");
  FinishReason abort;
  abort.kind = FinishReason::Kind::kAbort;
  abort.cause = engine::AbortCause::kClientGone;
  abort.message = "client left";
  EXPECT_EQ(DumpCompact(FinishReasonJson(abort)),
            R"({"type":"abort","message":"client left","cause":"client_gone"})");
  EXPECT_FALSE(abort.server_abort());
  abort.cause = engine::AbortCause::kShutdown;
  EXPECT_TRUE(abort.server_abort());
  EXPECT_EQ(AbortError(abort).http_status, 503);
  abort.cause = engine::AbortCause::kError;
  abort.message = "a message that mentions the client and shutting down";
  EXPECT_EQ(AbortError(abort).http_status, 500);
  res.finish_reason.reset();
  EXPECT_TRUE(GenerateResultJson(res)["meta_info"]["finish_reason"].is_null());
}

}  // namespace
}  // namespace tessera::server
