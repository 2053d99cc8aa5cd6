#include "parsers/tool_call_parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "parsers/random_split_testing.h"

namespace tessera::parsers {
namespace {

using testing::IsWholeUtf8;
using testing::RandomSplit;
using testing::RandomText;

std::unique_ptr<ToolCallParser> MakeToolCallParser(std::vector<std::string> tools = {},
                                     std::optional<uint64_t> seed = 7,
                                     std::string_view name = "qwen") {
  auto p = ToolCallParser::Create(name, std::move(tools), seed);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

std::string Block(std::string_view json) {
  return "<tool_call>\n" + std::string(json) + "\n</tool_call>";
}

// Streams `pieces` and assembles the deltas the way an OpenAI client does,
// checking the streaming shape on the way.
ToolCallParseResult StreamAndAssemble(ToolCallParser& p,
                                      const std::vector<std::string>& pieces) {
  ToolCallParseResult r;
  auto take = [&](ToolCallStreamResult s) {
    EXPECT_TRUE(IsWholeUtf8(s.normal_text_delta));
    r.normal_text += s.normal_text_delta;
    for (ToolCallDelta& d : s.deltas) {
      if (d.index == static_cast<int>(r.calls.size())) {  // a new call
        EXPECT_TRUE(d.id.has_value() && d.name.has_value());
        r.calls.push_back({d.index, d.id.value_or(""), d.name.value_or(""),
                           d.arguments_delta});
      } else {
        EXPECT_EQ(d.index, static_cast<int>(r.calls.size()) - 1);
        EXPECT_FALSE(d.id.has_value() || d.name.has_value());
        if (!r.calls.empty()) r.calls.back().arguments += d.arguments_delta;
      }
    }
  };
  for (const std::string& piece : pieces) take(p.Push(piece));
  take(p.Finish());
  return r;
}

void ExpectSameCalls(const std::vector<ParsedToolCall>& a,
                     const std::vector<ParsedToolCall>& b,
                     const std::string& text) {
  ASSERT_EQ(a.size(), b.size()) << "text=" << text;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index) << "text=" << text;
    EXPECT_EQ(a[i].id, b[i].id) << "text=" << text;
    EXPECT_EQ(a[i].name, b[i].name) << "text=" << text;
    EXPECT_EQ(a[i].arguments, b[i].arguments) << "text=" << text;
  }
}

TEST(ToolCallParserTest, NamesAliasesAndUnknownName) {
  EXPECT_EQ(ToolCallParserNames(),
            (std::vector<std::string>{"hermes", "qwen", "qwen25"}));
  for (const std::string& n : ToolCallParserNames()) {
    auto p = ToolCallParser::Create(n, {});
    ASSERT_TRUE(p.ok()) << n;
    EXPECT_EQ((*p)->ParseFull(Block(R"({"name": "f"})")).calls.size(), 1u);
  }
  auto bad = ToolCallParser::Create("llama3", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'llama3'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("hermes, qwen, qwen25"),
            std::string::npos);
}

TEST(ToolCallParserTest, FullSingleCall) {
  auto p = MakeToolCallParser({"get_weather"});
  ToolCallParseResult r = p->ParseFull(Block(
      R"({"name": "get_weather", "arguments": {"city": "Paris", "days": 3}})"));
  EXPECT_EQ(r.normal_text, "");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].index, 0);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_TRUE(std::regex_match(r.calls[0].id, std::regex("call_[0-9a-f]{24}")))
      << r.calls[0].id;
  EXPECT_TRUE(p->has_calls());
}

TEST(ToolCallParserTest, FullMultipleCallsWithTextAround) {
  auto p = MakeToolCallParser({"a", "b"});
  std::string text =
      "Let me check.\n\n" + Block(R"({"name": "a", "arguments": {}})") + "\n" +
      Block(R"({"name": "b", "arguments": {"x": [1, 2]}})") + "\n\nDone.";
  ToolCallParseResult r = p->ParseFull(text);
  EXPECT_EQ(r.normal_text, "Let me check.\n\nDone.");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].index, 0);
  EXPECT_EQ(r.calls[0].name, "a");
  EXPECT_EQ(r.calls[0].arguments, "{}");
  EXPECT_EQ(r.calls[1].index, 1);
  EXPECT_EQ(r.calls[1].name, "b");
  EXPECT_EQ(r.calls[1].arguments, R"({"x":[1,2]})");
  EXPECT_NE(r.calls[0].id, r.calls[1].id);
}

TEST(ToolCallParserTest, FullNestedJsonWithBracesAndTagsInStrings) {
  auto p = MakeToolCallParser();
  std::string args =
      R"({"code":"if (x) { return \"}\"; } // </tool_call>","n":{"m":{"k":"}}"}}})";
  ToolCallParseResult r = p->ParseFull(
      Block(R"({"name": "run", "arguments": )" + args + "}") + "after");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, args);
  EXPECT_EQ(r.normal_text, "after");
}

TEST(ToolCallParserTest, FullArgumentKeyOrderAndUnicodeKept) {
  auto p = MakeToolCallParser();
  ToolCallParseResult r = p->ParseFull(Block(
      R"({"name": "say", "arguments": {"z": "日本語 🙂", "a": "\u00e9\n", "m": null}})"));
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments,
            "{\"z\":\"日本語 🙂\",\"a\":\"é\\n\",\"m\":null}");
}

TEST(ToolCallParserTest, FullArgumentsGivenAsJsonString) {
  auto p = MakeToolCallParser();
  ToolCallParseResult r =
      p->ParseFull(Block(R"({"name": "f", "arguments": "{\"q\": \"x\"}"})") +
                   Block(R"({"name": "g", "arguments": null})"));
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, R"({"q":"x"})");
  EXPECT_EQ(r.calls[1].arguments, "{}");
}

TEST(ToolCallParserTest, FullInvalidBlocksStayVerbatim) {
  auto p = MakeToolCallParser({"f"});
  const std::vector<std::string> bad = {
      Block(R"({"name": "f", "arguments": {"a": 1})"),  // missing brace
      Block(R"({"arguments": {"a": 1}})"),              // no name
      Block(R"({"name": 3})"),                          // name not a string
      Block(R"({"name": ""})"),                         // empty name
      Block(R"({"name": "rm_rf", "arguments": {}})"),   // unknown tool
      Block(R"({"name": "f", "arguments": [1]})"),      // args not an object
      Block(R"({"name": "f", "arguments": "nope"})"),   // args string not JSON
      Block(R"(["f"])"),                                // not an object
      Block(R"({"name": "f"} trailing)"),               // junk after JSON
      "<tool_call></tool_call>",                        // empty
      Block("{\"name\": \"f\", \"arguments\": {\"a\": \"x}"),  // bad quote
  };
  for (const std::string& b : bad) {
    std::string text = "A " + b + "\n B";
    ToolCallParseResult r = p->ParseFull(text);
    EXPECT_TRUE(r.calls.empty()) << b;
    EXPECT_EQ(r.normal_text, text) << b;  // newlines after kept too
  }
  EXPECT_FALSE(p->has_calls());
  // A bad block does not stop the next good one; numbering counts calls only.
  ToolCallParseResult r = p->ParseFull(bad[4] + Block(R"({"name": "f"})"));
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].index, 0);
  EXPECT_EQ(r.normal_text, bad[4]);
}

TEST(ToolCallParserTest, FullUnclosedBlockIsNormalText) {
  auto p = MakeToolCallParser();
  std::string text = std::string("x") + Block(R"({"name": "f"})") +
                     "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"a\"";
  ToolCallParseResult r = p->ParseFull(text);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.normal_text,
            "x<tool_call>\n{\"name\": \"g\", \"arguments\": {\"a\"");
  // A stray quote cannot hide the closing tag past a newline.
  r = p->ParseFull(
      "<tool_call>\n{\"name\": \"f\", \"a\": \"oops\n</tool_call>z");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.normal_text,
            "<tool_call>\n{\"name\": \"f\", \"a\": \"oops\n</tool_call>z");
}

TEST(ToolCallParserTest, FullNoToolNamesAcceptsAnyName) {
  ToolCallParseResult r = MakeToolCallParser({})->ParseFull(Block(R"({"name": "anything"})"));
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "anything");
}

TEST(ToolCallParserTest, IdsAreSeededOrRandom) {
  auto a = MakeToolCallParser({}, 42);
  auto b = MakeToolCallParser({}, 42);
  std::string text = Block(R"({"name": "f"})");
  EXPECT_EQ(a->ParseFull(text).calls[0].id, b->ParseFull(text).calls[0].id);
  std::set<std::string> ids;
  for (int i = 0; i < 50; ++i) {
    ids.insert(MakeToolCallParser({}, std::nullopt)->ParseFull(text).calls[0].id);
  }
  EXPECT_EQ(ids.size(), 50u);
}

TEST(ToolCallParserTest, StreamHoldsPartialOpenTagThenReleasesLookalike) {
  auto p = MakeToolCallParser();
  ToolCallStreamResult s = p->Push("Hi <tool");
  EXPECT_EQ(s.normal_text_delta, "Hi ");
  EXPECT_EQ(p->held_bytes(), 5u);
  s = p->Push("s>");
  EXPECT_EQ(s.normal_text_delta, "<tools>");
  EXPECT_TRUE(s.deltas.empty());
  EXPECT_EQ(p->held_bytes(), 0u);
  EXPECT_EQ(p->Push("plain").normal_text_delta, "plain");
}

TEST(ToolCallParserTest, StreamEmitsCallWhenBlockCloses) {
  auto p = MakeToolCallParser({"get_weather"});
  EXPECT_EQ(p->Push("Sure.\n<tool_").normal_text_delta, "Sure.\n");
  ToolCallStreamResult s = p->Push("call>\n{\"name\": \"get_weather\", ");
  EXPECT_EQ(s.normal_text_delta, "");
  EXPECT_TRUE(s.deltas.empty());
  s = p->Push("\"arguments\": {\"city\": \"Oslo\"}}\n</tool");
  EXPECT_TRUE(s.deltas.empty());
  EXPECT_FALSE(p->has_calls());
  s = p->Push("_call>\n\n");
  ASSERT_EQ(s.deltas.size(), 1u);
  EXPECT_EQ(s.deltas[0].index, 0);
  EXPECT_EQ(s.deltas[0].name, "get_weather");
  ASSERT_TRUE(s.deltas[0].id.has_value());
  EXPECT_EQ(s.deltas[0].id->size(), 29u);
  EXPECT_EQ(s.deltas[0].arguments_delta, R"({"city":"Oslo"})");
  EXPECT_EQ(s.normal_text_delta, "");  // separator newlines dropped
  EXPECT_TRUE(p->has_calls());
  s = p->Push("\n<tool_call>{\"name\": \"get_weather\"}</tool_call>tail");
  ASSERT_EQ(s.deltas.size(), 1u);
  EXPECT_EQ(s.deltas[0].index, 1);
  EXPECT_EQ(s.deltas[0].arguments_delta, "{}");
  EXPECT_EQ(s.normal_text_delta, "tail");
}

TEST(ToolCallParserTest, StreamCloseTagInsideStringDoesNotClose) {
  auto p = MakeToolCallParser();
  ToolCallStreamResult s = p->Push(
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"</tool_call>");
  EXPECT_TRUE(s.deltas.empty());
  s = p->Push("\\\"}\"}}</tool_call>");
  ASSERT_EQ(s.deltas.size(), 1u);
  EXPECT_EQ(s.deltas[0].arguments_delta, R"({"s":"</tool_call>\"}"})");
}

TEST(ToolCallParserTest, StreamInvalidBlockReleasedVerbatimOnClose) {
  auto p = MakeToolCallParser({"f"});
  p->Push("<tool_call>{\"name\": \"nope\"}");
  ToolCallStreamResult s = p->Push("</tool_call>\nx");
  EXPECT_TRUE(s.deltas.empty());
  EXPECT_EQ(s.normal_text_delta,
            "<tool_call>{\"name\": \"nope\"}</tool_call>\nx");
  EXPECT_FALSE(p->has_calls());
}

TEST(ToolCallParserTest, StreamFinishReturnsUnclosedBlockAsText) {
  auto p = MakeToolCallParser();
  p->Push("a<tool_call>\n{\"name\": \"f\", \"argu");
  ToolCallStreamResult s = p->Finish();
  EXPECT_EQ(s.normal_text_delta, "<tool_call>\n{\"name\": \"f\", \"argu");
  EXPECT_TRUE(s.deltas.empty());
  EXPECT_FALSE(p->has_calls());
  EXPECT_TRUE(p->finished());
  EXPECT_EQ(p->Push("<tool_call>").normal_text_delta, "");
  EXPECT_EQ(p->Finish().normal_text_delta, "");

  auto q = MakeToolCallParser();
  q->Push("x<tool_ca");
  EXPECT_EQ(q->Finish().normal_text_delta, "<tool_ca");
}

// The property: for any split into whole-UTF-8 pieces, the streamed normal
// text concatenates to ParseFull's, and the deltas assemble to its calls (ids
// too, since both parsers draw ids from the same seed in the same order).
TEST(ToolCallParserTest, RandomSplitsMatchParseFull) {
  const std::vector<std::string> fragments = {
      Block(R"({"name": "get_weather", "arguments": {"city": "Zürich"}})"),
      Block(
          R"({"name": "search", "arguments": {"q": "a}b\"c</tool_call>", "n": [1, {"k": 2}]}})"),
      "<tool_call>{\"name\":\"search\"}</tool_call>",
      Block(R"({"name": "unknown_fn", "arguments": {}})"),
      Block(R"({"name": "search", "arguments": {"q": )"),
      "<tool_call>",
      "</tool_call>",
      "<tool",
      "</tool",
      "<",
      "\"",
      "\\",
      "{",
      "}",
      "\n",
      "\n\n",
      " ",
      "text",
      "日本語",
      "🙂",
      "é"};
  std::mt19937 rng(99);
  int with_calls = 0, with_two_calls = 0, with_kept_block = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text = RandomText(rng, fragments, 8);
    for (const std::vector<std::string>& tools :
         {std::vector<std::string>{}, {"get_weather", "search"}}) {
      uint64_t seed = rng();
      ToolCallParseResult full = MakeToolCallParser(tools, seed)->ParseFull(text);
      with_calls += !full.calls.empty();
      with_two_calls += full.calls.size() >= 2;
      with_kept_block +=
          full.normal_text.find("</tool_call>") != std::string::npos;
      for (int split = 0; split < 4; ++split) {
        auto p = MakeToolCallParser(tools, seed);
        ToolCallParseResult streamed =
            StreamAndAssemble(*p, RandomSplit(rng, text));
        ASSERT_EQ(streamed.normal_text, full.normal_text) << "text=" << text;
        ExpectSameCalls(streamed.calls, full.calls, text);
        ASSERT_EQ(p->has_calls(), !full.calls.empty());
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  // The corpus really exercises calls, several calls and kept blocks.
  EXPECT_GT(with_calls, 1000);
  EXPECT_GT(with_two_calls, 300);
  EXPECT_GT(with_kept_block, 1000);
}

// Every call the parser returns has arguments that parse as a JSON object.
TEST(ToolCallParserTest, ArgumentsAreAlwaysJsonObjects) {
  auto p = MakeToolCallParser();
  ToolCallParseResult r = p->ParseFull(Block(
      R"({"name": "f", "arguments": {"a": "\ud83d\ude00", "b": 1.5e3}})"));
  ASSERT_EQ(r.calls.size(), 1u);
  nlohmann::json j = nlohmann::json::parse(r.calls[0].arguments);
  EXPECT_TRUE(j.is_object());
  EXPECT_EQ(j["a"], "😀");
}

}  // namespace
}  // namespace tessera::parsers
