#include "server/openai_request.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "server/protocol_test_util.h"

namespace tessera::server {
namespace {

using testing::ExpectBadParam;
using testing::ParseJson;

// Parses a completions body with `extra` merged into {"prompt": "hi"}.
MaybeApiError Completion(const Json& extra, CompletionRequest* out,
                         ProtocolLimits limits = {}) {
  Json body = {{"model", "m"}, {"prompt", "hi"}};
  for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = *it;
  return ParseCompletionRequest(body, limits, out);
}

MaybeApiError Chat(const Json& extra, ChatRequest* out) {
  Json body = ParseJson(R"({"model": "m", "messages": [{"role": "user",
                        "content": "hi"}]})");
  for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = *it;
  return ParseChatRequest(body, ProtocolLimits{}, out);
}

TEST(CompletionRequestTest, Defaults) {
  CompletionRequest r;
  ASSERT_FALSE(ParseCompletionRequest(ParseJson(R"({"prompt": "hello"})"), {}, &r));
  EXPECT_FALSE(r.model.has_value());
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_FALSE(r.prompts[0].is_token_ids);
  EXPECT_EQ(r.prompts[0].text, "hello");
  EXPECT_EQ(r.sampling.temperature, 1.0);
  EXPECT_EQ(r.sampling.top_p, 1.0);
  EXPECT_EQ(r.sampling.top_k, -1);
  EXPECT_EQ(r.sampling.n, 1);
  // OpenAI's, SGLang's and vLLM's default for completions.
  EXPECT_EQ(r.sampling.max_tokens, 16);
  EXPECT_EQ(r.sampling.min_tokens, 0);
  EXPECT_TRUE(r.sampling.skip_special_tokens);
  EXPECT_FALSE(r.sampling.no_stop_trim);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.logprobs.has_value());
  EXPECT_FALSE(r.echo);
  // min_tokens above the default raises it; an explicit max_tokens stays.
  ASSERT_FALSE(ParseCompletionRequest(
      ParseJson(R"({"prompt": "hello", "min_tokens": 30})"), {}, &r));
  EXPECT_EQ(r.sampling.max_tokens, 30);
  ASSERT_FALSE(ParseCompletionRequest(
      ParseJson(R"({"prompt": "hello", "max_tokens": 100})"), {}, &r));
  EXPECT_EQ(r.sampling.max_tokens, 100);
}

TEST(CompletionRequestTest, AllSamplingParametersHappyPath) {
  CompletionRequest r;
  ASSERT_FALSE(Completion(ParseJson(R"({
      "max_tokens": 32, "temperature": 0.7, "top_p": 0.9, "top_k": 40,
      "min_p": 0.05, "presence_penalty": 0.5, "frequency_penalty": -0.5,
      "repetition_penalty": 1.1, "seed": 1234, "n": 3,
      "stop": ["\n", "END"], "stop_token_ids": [2, 7], "ignore_eos": true,
      "logprobs": 5, "echo": true, "logit_bias": {"50256": -100, "7": 2.5},
      "stream": true, "stream_options": {"include_usage": true},
      "best_of": 3, "user": "someone", "metadata": {"x": 1}})"),
                          &r));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(*r.sampling.max_tokens, 32);
  EXPECT_DOUBLE_EQ(r.sampling.temperature, 0.7);
  EXPECT_DOUBLE_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_DOUBLE_EQ(r.sampling.min_p, 0.05);
  EXPECT_DOUBLE_EQ(r.sampling.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(r.sampling.frequency_penalty, -0.5);
  EXPECT_DOUBLE_EQ(r.sampling.repetition_penalty, 1.1);
  EXPECT_EQ(*r.sampling.seed, 1234);
  EXPECT_EQ(r.sampling.n, 3);
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(r.sampling.stop_token_ids, (std::vector<int32_t>{2, 7}));
  EXPECT_TRUE(r.sampling.ignore_eos);
  EXPECT_EQ(*r.logprobs, 5);
  EXPECT_TRUE(r.echo);
  ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
  EXPECT_FLOAT_EQ(r.sampling.logit_bias.at(50256), -100.0f);
  EXPECT_FLOAT_EQ(r.sampling.logit_bias.at(7), 2.5f);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(CompletionRequestTest, NullMeansDefault) {
  CompletionRequest r;
  ASSERT_FALSE(Completion(ParseJson(R"({"temperature": null, "stop": null,
      "max_tokens": null, "logprobs": null, "suffix": null,
      "response_format": null})"),
                          &r));
  EXPECT_EQ(r.sampling.temperature, 1.0);
  EXPECT_TRUE(r.sampling.stop.empty());
}

TEST(CompletionRequestTest, StopStringVersusList) {
  CompletionRequest r;
  ASSERT_FALSE(Completion(ParseJson(R"({"stop": "###"})"), &r));
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"###"}));
  ASSERT_FALSE(Completion(ParseJson(R"({"stop": ["a", "b"]})"), &r));
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"a", "b"}));
  ExpectBadParam(Completion(ParseJson(R"({"stop": 5})"), &r), "stop",
                 "a string or an array of strings");
  ExpectBadParam(Completion(ParseJson(R"({"stop": ["a", 1]})"), &r), "stop[1]",
                 "must be a string");
  ExpectBadParam(Completion(ParseJson(R"({"stop": [""]})"), &r), "stop",
                 "empty string");
}

TEST(CompletionRequestTest, PromptForms) {
  CompletionRequest r;
  ASSERT_FALSE(Completion(ParseJson(R"({"prompt": [1, 2, 3]})"), &r));
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_TRUE(r.prompts[0].is_token_ids);
  EXPECT_EQ(r.prompts[0].token_ids, (std::vector<int32_t>{1, 2, 3}));

  ASSERT_FALSE(Completion(ParseJson(R"({"prompt": ["a", "b", "c"]})"), &r));
  ASSERT_EQ(r.prompts.size(), 3u);
  EXPECT_EQ(r.prompts[2].text, "c");

  ASSERT_FALSE(Completion(ParseJson(R"({"prompt": [[1, 2], [3]]})"), &r));
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].token_ids, (std::vector<int32_t>{3}));

  ASSERT_FALSE(Completion(ParseJson(R"({"prompt": ["text", [9, 8]]})"), &r));
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_FALSE(r.prompts[0].is_token_ids);
  EXPECT_TRUE(r.prompts[1].is_token_ids);
}

TEST(CompletionRequestTest, PromptErrors) {
  CompletionRequest r;
  ExpectBadParam(ParseCompletionRequest(ParseJson(R"({"model": "m"})"), {}, &r),
                 "prompt", "required");
  ExpectBadParam(Completion(ParseJson(R"({"prompt": 5})"), &r), "prompt",
                 "not an integer");
  ExpectBadParam(Completion(ParseJson(R"({"prompt": []})"), &r), "prompt",
                 "empty array");
  ExpectBadParam(Completion(ParseJson(R"({"prompt": [[]]})"), &r), "prompt",
                 "empty token array");
  ExpectBadParam(Completion(ParseJson(R"({"prompt": [1, -2]})"), &r), "prompt[1]",
                 "not a token id");
  ExpectBadParam(Completion(ParseJson(R"({"prompt": [1.5]})"), &r), "prompt[0]",
                 "integer token id");
  ExpectBadParam(Completion(ParseJson(R"({"prompt": ["a", {}]})"), &r), "prompt",
                 "prompt[1]");
  ExpectBadParam(ParseCompletionRequest(ParseJson("[1]"), {}, &r), "",
                 "JSON object");
}

struct RangeCase {
  const char* body;
  const char* param;
  const char* needle;
};

void PrintTo(const RangeCase& c, std::ostream* os) { *os << c.body; }

class CompletionRangeTest : public ::testing::TestWithParam<RangeCase> {};

TEST_P(CompletionRangeTest, Rejects) {
  CompletionRequest r;
  ProtocolLimits limits;
  limits.max_n = 8;
  ExpectBadParam(Completion(ParseJson(GetParam().body), &r, limits),
                 GetParam().param, GetParam().needle);
}

INSTANTIATE_TEST_SUITE_P(
    AllParams, CompletionRangeTest,
    ::testing::Values(
        RangeCase{R"({"model": 3})", "model", "must be a string"},
        RangeCase{R"({"temperature": -0.1})", "temperature", ">= 0"},
        RangeCase{R"({"temperature": "hot"})", "temperature", "a number"},
        RangeCase{R"({"top_p": 0})", "top_p", "(0, 1]"},
        RangeCase{R"({"top_p": 1.5})", "top_p", "(0, 1]"},
        RangeCase{R"({"top_k": 0})", "top_k", "-1 (disabled)"},
        RangeCase{R"({"top_k": -5})", "top_k", "-1 (disabled)"},
        RangeCase{R"({"top_k": 2.5})", "top_k", "an integer"},
        RangeCase{R"({"min_p": 1.5})", "min_p", "[0, 1]"},
        RangeCase{R"({"presence_penalty": 2.5})", "presence_penalty",
                  "[-2, 2]"},
        RangeCase{R"({"frequency_penalty": -3})", "frequency_penalty",
                  "[-2, 2]"},
        RangeCase{R"({"repetition_penalty": 0})", "repetition_penalty",
                  "(0, 2]"},
        RangeCase{R"({"n": 0})", "n", "between 1 and 8"},
        RangeCase{R"({"n": 9})", "n", "between 1 and 8"},
        RangeCase{R"({"n": "2"})", "n", "an integer"},
        RangeCase{R"({"max_tokens": 0})", "max_tokens", "at least 1"},
        RangeCase{R"({"max_tokens": "many"})", "max_tokens", "an integer"},
        RangeCase{R"({"seed": 1.5})", "seed", "an integer"},
        RangeCase{R"({"stop_token_ids": [1, "x"]})", "stop_token_ids[1]",
                  "integer token id"},
        RangeCase{R"({"stop_token_ids": 3})", "stop_token_ids", "an array"},
        RangeCase{R"({"ignore_eos": "yes"})", "ignore_eos", "true or false"},
        RangeCase{R"({"logprobs": 21})", "logprobs", "between 0 and 20"},
        RangeCase{R"({"logprobs": true})", "logprobs", "an integer"},
        RangeCase{R"({"echo": 1})", "echo", "true or false"},
        RangeCase{R"({"stream": "true"})", "stream", "true or false"},
        RangeCase{R"({"stream_options": {"include_usage": true}})",
                  "stream_options", "only allowed when 'stream' is true"},
        RangeCase{R"({"stream": true, "stream_options": 1})", "stream_options",
                  "an object"},
        RangeCase{R"({"stream": true,
                      "stream_options": {"include_usage": "y"}})",
                  "stream_options.include_usage", "true or false"},
        RangeCase{R"({"logit_bias": {"abc": 1}})", "logit_bias",
                  "non-negative integers, not \"abc\""},
        RangeCase{R"({"logit_bias": {"-1": 1}})", "logit_bias",
                  "non-negative integers"},
        RangeCase{R"({"logit_bias": {"12x": 1}})", "logit_bias", "not \"12x\""},
        RangeCase{R"({"logit_bias": {" 5": 1}})", "logit_bias", "not \" 5\""},
        RangeCase{R"({"logit_bias": {"99999999999": 1}})", "logit_bias",
                  "non-negative integers"},
        RangeCase{R"({"logit_bias": {"5": 101}})", "logit_bias", "[-100, 100]"},
        RangeCase{R"({"logit_bias": {"5": "big"}})", "logit_bias.5",
                  "a number"},
        RangeCase{R"({"logit_bias": [1]})", "logit_bias", "an object"},
        RangeCase{R"({"best_of": 1, "n": 2})", "best_of", "at least n"}));

struct UnsupportedCase {
  const char* body;
  const char* param;
};

void PrintTo(const UnsupportedCase& c, std::ostream* os) { *os << c.body; }

class UnsupportedTest : public ::testing::TestWithParam<UnsupportedCase> {};

TEST_P(UnsupportedTest, CompletionsRejectClearly) {
  CompletionRequest r;
  MaybeApiError e = Completion(ParseJson(GetParam().body), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->param, GetParam().param);
  EXPECT_EQ(e->code, "unsupported_parameter");
  EXPECT_NE(e->message.find("not supported by Tessera yet"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Known, UnsupportedTest,
    ::testing::Values(
        UnsupportedCase{R"({"suffix": "tail"})", "suffix"},
        UnsupportedCase{R"({"best_of": 4, "n": 2})", "best_of"},
        UnsupportedCase{R"({"functions": [{"name": "f"}]})", "functions"},
        UnsupportedCase{R"({"function_call": "auto"})", "function_call"},
        UnsupportedCase{R"({"audio": {"voice": "x"}})", "audio"},
        UnsupportedCase{R"({"modalities": ["text", "audio"]})", "modalities"},
        UnsupportedCase{R"({"prediction": {"type": "content"}})",
                        "prediction"}));

TEST(CompletionRequestTest, AcceptsHarmlessSpellingsOfUnsupported) {
  CompletionRequest r;
  ASSERT_FALSE(Completion(ParseJson(R"({"response_format": {"type": "text"},
      "suffix": "", "modalities": ["text"], "best_of": 1})"),
                          &r));
  ASSERT_FALSE(Completion(ParseJson(R"({"max_tokens": 16.0})"), &r));
  EXPECT_EQ(*r.sampling.max_tokens, 16);
}

TEST(ChatRequestTest, MessagesAndDefaults) {
  ChatRequest r;
  ASSERT_FALSE(ParseChatRequest(ParseJson(R"({"messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"},
                                   {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "reasoning_content": "hmm",
       "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get", "arguments": "{\"x\":1}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "42"},
      {"role": "developer", "content": "dev"}]})"),
                                {}, &r));
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(*r.messages[0].content, "be brief");
  EXPECT_EQ(*r.messages[1].content, "a\nb");
  EXPECT_FALSE(r.messages[2].content.has_value());
  EXPECT_EQ(*r.messages[2].reasoning_content, "hmm");
  ASSERT_EQ(r.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[2].tool_calls[0].id, "call_1");
  EXPECT_EQ(r.messages[2].tool_calls[0].name, "get");
  EXPECT_EQ(r.messages[2].tool_calls[0].arguments, "{\"x\":1}");
  EXPECT_EQ(*r.messages[3].tool_call_id, "call_1");
  EXPECT_EQ(r.messages[4].role, "system");
  EXPECT_FALSE(r.logprobs);
  EXPECT_TRUE(r.separate_reasoning);
  EXPECT_TRUE(r.tools.is_null());

  Json j = ChatMessagesToJson(r.messages);
  EXPECT_EQ(j[2]["tool_calls"][0]["function"]["name"], "get");
  EXPECT_TRUE(j[2]["content"].is_null());
  EXPECT_EQ(j[3]["tool_call_id"], "call_1");
  EXPECT_EQ(j[1]["content"], "a\nb");
}

TEST(ChatRequestTest, ChatSpecificFields) {
  ChatRequest r;
  ASSERT_FALSE(Chat(ParseJson(R"({"max_completion_tokens": 64,
      "logprobs": true, "top_logprobs": 3,
      "chat_template_kwargs": {"enable_thinking": false},
      "separate_reasoning": false, "temperature": 0,
      "tools": [{"type": "function", "function": {"name": "get",
                 "parameters": {"type": "object"}}}],
      "tool_choice": {"type": "function", "function": {"name": "get"}},
      "parallel_tool_calls": true})"),
                    &r));
  EXPECT_EQ(*r.sampling.max_tokens, 64);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], false);
  EXPECT_FALSE(r.separate_reasoning);
  EXPECT_EQ(r.sampling.temperature, 0.0);
  EXPECT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tool_choice["function"]["name"], "get");

  ASSERT_FALSE(Chat(ParseJson(R"({"max_tokens": 10})"), &r));
  EXPECT_EQ(*r.sampling.max_tokens, 10);
  ASSERT_FALSE(Chat(ParseJson(R"({"tool_choice": "none"})"), &r));
  EXPECT_EQ(r.tool_choice, "none");
}

// Found by fuzz/request_body_fuzzer: a "type" that is not a string threw
// json's type_error (a 500) instead of a 400.
TEST(ChatRequestTest, NonStringToolTypeIs400) {
  ChatRequest r;
  const std::string messages = R"("messages": [{"role": "user", "content": "x"}])";
  ExpectBadParam(Chat(ParseJson("{" + messages +
                            R"(, "tools": [{"type": {"name": "f"}}]})"),
                      &r),
                 "tools[0]", "must be");
  ExpectBadParam(
      Chat(ParseJson("{" + messages +
                 R"(, "tools": [{"type": "function", "function": {"name": "f"}}],
                     "tool_choice": {"type": 7, "function": {"name": "f"}}})"),
           &r),
      "tool_choice", "must be");
}

TEST(ChatRequestTest, Errors) {
  ChatRequest r;
  ExpectBadParam(ParseChatRequest(ParseJson(R"({"model": "m"})"), {}, &r),
                 "messages", "required");
  ExpectBadParam(Chat(ParseJson(R"({"messages": []})"), &r), "messages",
                 "must not be empty");
  ExpectBadParam(Chat(ParseJson(R"({"messages": "hi"})"), &r), "messages",
                 "an array");
  ExpectBadParam(Chat(ParseJson(R"({"messages": [{"content": "x"}]})"), &r),
                 "messages[0].role", "needs a string \"role\"");
  ExpectBadParam(
      Chat(ParseJson(R"({"messages": [{"role": "robot", "content": "x"}]})"), &r),
      "messages[0].role", "expected system, user, assistant or tool");
  ExpectBadParam(Chat(ParseJson(R"({"messages": [{"role": "user"}]})"), &r),
                 "messages[0].content", "needs \"content\"");
  ExpectBadParam(
      Chat(ParseJson(R"({"messages": [{"role": "user", "content": 5}]})"), &r),
      "messages[0].content", "a string or an array of text parts");
  ExpectBadParam(
      Chat(ParseJson(R"({"messages": [{"role": "tool", "content": "x"}]})"), &r),
      "messages[0].tool_call_id", "tool_call_id");
  ExpectBadParam(Chat(ParseJson(R"({"messages": [{"role": "user", "content": "x",
      "tool_calls": []}]})"),
                      &r),
                 "messages[0].tool_calls", "only allowed on assistant");
  ExpectBadParam(Chat(ParseJson(R"({"messages": [{"role": "assistant",
      "tool_calls": [{"id": "a"}]}]})"),
                      &r),
                 "messages[0].tool_calls[0].function", "needs \"function\"");
  ExpectBadParam(Chat(ParseJson(R"({"logprobs": 3})"), &r), "logprobs",
                 "true or false");
  ExpectBadParam(Chat(ParseJson(R"({"logprobs": true, "top_logprobs": 21})"), &r),
                 "top_logprobs", "between 0 and 20");
  ExpectBadParam(Chat(ParseJson(R"({"top_logprobs": 2})"), &r), "top_logprobs",
                 "needs 'logprobs'");
  ExpectBadParam(
      Chat(ParseJson(R"({"max_tokens": 5, "max_completion_tokens": 6})"), &r),
      "max_completion_tokens", "disagree");
  ExpectBadParam(Chat(ParseJson(R"({"max_completion_tokens": 0})"), &r),
                 "max_completion_tokens", "at least 1");
  ExpectBadParam(Chat(ParseJson(R"({"chat_template_kwargs": []})"), &r),
                 "chat_template_kwargs", "an object");
  ExpectBadParam(Chat(ParseJson(R"({"separate_reasoning": "no"})"), &r),
                 "separate_reasoning", "true or false");
  ExpectBadParam(Chat(ParseJson(R"({"tools": {}})"), &r), "tools", "an array");
  ExpectBadParam(Chat(ParseJson(R"({"tools": [{"type": "function",
      "function": {"name": ""}}]})"),
                      &r),
                 "tools[0].function.name", "non-empty");
  ExpectBadParam(Chat(ParseJson(R"({"tool_choice": "auto"})"), &r), "tool_choice",
                 "needs 'tools'");
  ExpectBadParam(Chat(ParseJson(R"({"tool_choice": "sometimes"})"), &r),
                 "tool_choice", "\"sometimes\"");
  ExpectBadParam(Chat(ParseJson(R"({"tools": [{"type": "function",
      "function": {"name": "a"}}], "tool_choice": {"type": "function",
      "function": {"name": "b"}}})"),
                      &r),
                 "tool_choice", "not in 'tools'");
  ExpectBadParam(Chat(ParseJson(R"({"temperature": -1})"), &r), "temperature",
                 ">= 0");
}

TEST(ChatRequestTest, NonTextContentIsUnsupported) {
  ChatRequest r;
  MaybeApiError e = Chat(ParseJson(R"({"messages": [{"role": "user", "content":
      [{"type": "image_url", "image_url": {"url": "x"}}]}]})"),
                         &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "unsupported_parameter");
  EXPECT_EQ(e->param, "messages[0].content[0]");
  EXPECT_NE(e->message.find("image_url"), std::string::npos);
  // json_schema without its schema is malformed, not unsupported.
  e = Chat(ParseJson(R"({"response_format": {"type": "json_schema"}})"), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "response_format.json_schema");
}

// One rule on every route: a field the server does not know is a 400
// naming it; OpenAI's bookkeeping fields are known.
TEST(ChatRequestTest, UnknownFieldsAreRefusedByName) {
  ChatRequest r;
  EXPECT_FALSE(Chat(ParseJson(R"({"user": "u", "store": false,
      "metadata": {"k": "v"}, "service_tier": "auto"})"),
                    &r));
  MaybeApiError e =
      Chat(ParseJson(R"({"some_vendor_extension": {"a": 1}})"), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->param, "some_vendor_extension");
  EXPECT_NE(e->message.find("'some_vendor_extension'"), std::string::npos);
  CompletionRequest c;
  e = ParseCompletionRequest(ParseJson(R"({"prompt": "x", "max_token": 5})"), {},
                             &c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "max_token");
  e = Chat(ParseJson(R"({"store": true})"), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "unsupported_parameter");
}

TEST(ChatRequestTest, SglangExtrasOnV1) {
  ChatRequest r;
  ASSERT_FALSE(Chat(ParseJson(R"({"min_tokens": 30, "max_tokens": 40,
      "skip_special_tokens": false, "spaces_between_special_tokens": false,
      "no_stop_trim": true, "top_k": 5, "min_p": 0.1,
      "repetition_penalty": 1.1, "stop_token_ids": [3], "ignore_eos": true,
      "separate_reasoning": false})"),
                    &r));
  EXPECT_EQ(r.sampling.min_tokens, 30);
  EXPECT_FALSE(r.sampling.skip_special_tokens);
  EXPECT_FALSE(r.sampling.spaces_between_special_tokens);
  EXPECT_TRUE(r.sampling.no_stop_trim);
  // Chat completions keep "up to the context" as the default.
  ASSERT_FALSE(Chat(ParseJson(R"({"min_tokens": 3})"), &r));
  EXPECT_FALSE(r.sampling.max_tokens.has_value());
  MaybeApiError e = Chat(ParseJson(R"({"min_tokens": 50, "max_tokens": 40})"), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "min_tokens");
  e = Chat(ParseJson(R"({"min_tokens": -1})"), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "min_tokens");
  e = Chat(ParseJson(R"({"no_stop_trim": "yes"})"), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "no_stop_trim");
  // Structured output: read here (compiled by the route), one at a time.
  ASSERT_FALSE(Chat(ParseJson(R"({"regex": "[0-9]+"})"), &r));
  ASSERT_TRUE(r.sampling.constraint);
  EXPECT_EQ(r.sampling.constraint->kind, ConstraintSpec::Kind::kRegex);
  ASSERT_FALSE(Chat(ParseJson(R"({"json_schema": {"type": "integer"}})"), &r));
  EXPECT_EQ(r.sampling.constraint->kind, ConstraintSpec::Kind::kJsonSchema);
  EXPECT_EQ(r.sampling.constraint->text, R"({"type":"integer"})");
  ASSERT_FALSE(Chat(ParseJson(R"({"response_format": {"type": "json_schema",
      "json_schema": {"name": "n", "schema": {"type": "object"},
                      "strict": true}}})"),
                    &r));
  EXPECT_EQ(r.sampling.constraint->param, "response_format.json_schema.schema");
  ASSERT_FALSE(Chat(ParseJson(R"({"response_format": {"type": "json_object"}})"), &r));
  EXPECT_EQ(r.sampling.constraint->kind, ConstraintSpec::Kind::kJsonObject);
  ASSERT_FALSE(Chat(ParseJson(R"({"response_format": {"type": "text"}})"), &r));
  EXPECT_FALSE(r.sampling.constraint);
  e = Chat(ParseJson(R"({"regex": "a", "response_format": {"type": "json_object"}})"), &r);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("one structured-output constraint"), std::string::npos);
  e = Chat(ParseJson(R"({"regex": 5})"), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "regex");
  e = Chat(ParseJson(R"({"response_format": {"type": "xml"}})"), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "response_format.type");
}

}  // namespace
}  // namespace tessera::server
