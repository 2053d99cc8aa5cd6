#include "server/openai_response.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::server {
namespace {

const ResponseMeta kMeta{"chatcmpl-1", 1700000000, "tiny", "fp_0123456789"};

TEST(OpenAiResponseTest, UsageShape) {
  EXPECT_EQ(DumpCompact(UsageJson(Usage{10, 5, 4})),
            R"({"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,)"
            R"("prompt_tokens_details":{"cached_tokens":4}})");
}

TEST(OpenAiResponseTest, ChatResponse) {
  ChatChoice c;
  c.index = 0;
  c.content = "Hello";
  c.finish_reason = "stop";
  ChatChoice t;
  t.index = 1;
  t.tool_calls.push_back(ToolCall{"call_0", "function", "get", "{}"});
  t.reasoning_content = "think";
  t.finish_reason = "tool_calls";
  Json j = ChatResponseJson(kMeta, {c, t}, Usage{3, 2, 0});
  EXPECT_EQ(j["id"], "chatcmpl-1");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(DumpCompact(j["choices"][0]),
            R"({"index":0,"message":{"role":"assistant","content":"Hello",)"
            R"("reasoning_content":null},"logprobs":null,)"
            R"("finish_reason":"stop","matched_stop":null})");
  EXPECT_EQ(j["system_fingerprint"], "fp_0123456789");
  EXPECT_TRUE(j["choices"][1]["message"]["content"].is_null());
  EXPECT_EQ(j["choices"][1]["message"]["reasoning_content"], "think");
  EXPECT_EQ(DumpCompact(j["choices"][1]["message"]["tool_calls"]),
            R"([{"id":"call_0","type":"function",)"
            R"("function":{"name":"get","arguments":"{}"}}])");
  EXPECT_EQ(j["usage"]["total_tokens"], 5);
}

TEST(OpenAiResponseTest, CompletionResponseWithLogprobs) {
  CompletionChoice c;
  c.text = "ab";
  c.finish_reason = "length";
  c.logprobs = CompletionLogprobsJson(
      {TokenLogprob{"a", -0.5, {{"a", -0.5}, {"b", -1.5}}},
       TokenLogprob{"b", -0.25, {{"b", -0.25}}}},
      3);
  Json j = CompletionResponseJson({"cmpl-9", 5, "tiny"}, {c}, Usage{1, 2, 1});
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "ab");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(DumpCompact(j["choices"][0]["logprobs"]),
            R"({"tokens":["a","b"],"token_logprobs":[-0.5,-0.25],)"
            R"("top_logprobs":[{"a":-0.5,"b":-1.5},{"b":-0.25}],)"
            R"("text_offset":[3,4]})");
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
  // Offsets count characters, not bytes.
  Json multi = CompletionLogprobsJson(
      {TokenLogprob{"\xC3\xA9t\xC3\xA9", -1.0, {}}, TokenLogprob{"!", -1.0, {}}},
      0);
  EXPECT_EQ(DumpCompact(multi["text_offset"]), "[0,3]");
}

TEST(OpenAiResponseTest, ChatLogprobsShape) {
  Json j = ChatLogprobsJson({TokenLogprob{"Hi", -0.1, {{"Hi", -0.1}}}});
  EXPECT_EQ(DumpCompact(j),
            R"({"content":[{"token":"Hi","logprob":-0.1,"bytes":[72,105],)"
            R"("top_logprobs":[{"token":"Hi","logprob":-0.1,)"
            R"("bytes":[72,105]}]}]})");
}

TEST(OpenAiResponseTest, ChatChunkShapes) {
  ChatDelta first;
  first.role = true;
  first.content = "";
  EXPECT_EQ(DumpCompact(ChatChunkJson(kMeta, first)),
            R"({"id":"chatcmpl-1","object":"chat.completion.chunk",)"
            R"("created":1700000000,"model":"tiny",)"
            R"("system_fingerprint":"fp_0123456789","choices":[{"index":0,)"
            R"("delta":{"role":"assistant","content":""},"logprobs":null,)"
            R"("finish_reason":null,"matched_stop":null}]})");
  ChatDelta tool;
  tool.index = 2;
  tool.tool_calls.push_back(ToolCall{"c1", "function", "f", "{\"a\""});
  Json j = ChatChunkJson(kMeta, tool);
  EXPECT_EQ(j["choices"][0]["index"], 2);
  EXPECT_EQ(j["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["delta"]["tool_calls"][0]["function"]["name"], "f");
  ChatDelta last;
  last.finish_reason = "stop";
  last.matched_stop = "\n\n";
  EXPECT_EQ(DumpCompact(ChatChunkJson(kMeta, last)["choices"][0]),
            R"({"index":0,"delta":{},"logprobs":null,)"
            R"("finish_reason":"stop","matched_stop":"\n\n"})");
}

TEST(OpenAiResponseTest, CompletionChunkShape) {
  CompletionChoice c;
  c.index = 1;
  c.text = " world";
  EXPECT_EQ(DumpCompact(CompletionChunkJson({"cmpl-2", 7, "tiny"}, c)),
            R"({"id":"cmpl-2","object":"text_completion","created":7,)"
            R"("model":"tiny","system_fingerprint":null,)"
            R"("choices":[{"index":1,"text":" world",)"
            R"("logprobs":null,"finish_reason":null,"matched_stop":null}]})");
}

// A whole chat stream: role + "Hel", "lo", finish; usage; [DONE].
TEST(OpenAiResponseTest, SseStreamIsByteExact) {
  ChatDelta d1;
  d1.role = true;
  d1.content = "Hel";
  ChatDelta d2;
  d2.content = "lo";
  ChatDelta d3;
  d3.finish_reason = "stop";
  d3.matched_stop = 2;
  std::string stream =
      SseEvent(ChatChunkJson(kMeta, d1)) + SseEvent(ChatChunkJson(kMeta, d2)) +
      SseEvent(ChatChunkJson(kMeta, d3)) +
      SseEvent(UsageChunkJson(kMeta, "chat.completion.chunk", Usage{4, 2, 0})) +
      SseDone();
  const std::string head =
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk",)"
      R"("created":1700000000,"model":"tiny",)"
      R"("system_fingerprint":"fp_0123456789",)";
  const std::string expected =
      "data: " + head +
      R"("choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},)"
      R"("logprobs":null,"finish_reason":null,"matched_stop":null}]})"
      "\n\n"
      "data: " +
      head +
      R"("choices":[{"index":0,"delta":{"content":"lo"},"logprobs":null,)"
      R"("finish_reason":null,"matched_stop":null}]})"
      "\n\n"
      "data: " +
      head +
      R"("choices":[{"index":0,"delta":{},"logprobs":null,)"
      R"("finish_reason":"stop","matched_stop":2}]})"
      "\n\n"
      "data: " +
      head +
      R"("choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,)"
      R"("total_tokens":6,"prompt_tokens_details":{"cached_tokens":0}}})"
      "\n\n"
      "data: [DONE]\n\n";
  EXPECT_EQ(stream, expected);
}

TEST(OpenAiResponseTest, SseErrorAndUtf8) {
  EXPECT_EQ(SseError(BadRequest("bad", "n")),
            "data: {\"error\":{\"message\":\"bad\",\"type\":"
            "\"invalid_request_error\",\"param\":\"n\",\"code\":null}}\n\n");
  ChatDelta d;
  d.content = "caf\xc3\xa9 \xe2\x9c\x93";
  const std::string event = SseEvent(ChatChunkJson(kMeta, d));
  EXPECT_NE(event.find("caf\xc3\xa9 \xe2\x9c\x93"), std::string::npos);
  d.content = std::string("half \xe2\x9c");  // cut mid-character
  EXPECT_NO_THROW((void)SseEvent(ChatChunkJson(kMeta, d)));
}

TEST(OpenAiResponseTest, ModelList) {
  Json j = ModelListJson({ModelCard{"tiny", "/models/tiny", 42, 2048},
                          ModelCard{"other", "", 1, 0}});
  EXPECT_EQ(DumpCompact(j),
            R"({"object":"list","data":[{"id":"tiny","object":"model",)"
            R"("created":42,"owned_by":"tessera","root":"/models/tiny",)"
            R"("max_model_len":2048},{"id":"other","object":"model",)"
            R"("created":1,"owned_by":"tessera","root":"other"}]})");
}

}  // namespace
}  // namespace tessera::server
