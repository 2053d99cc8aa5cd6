#include "parsers/reasoning_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "parsers/random_split_testing.h"

namespace tessera::parsers {
namespace {

using testing::IsWholeUtf8;
using testing::RandomSplit;
using testing::RandomText;

std::unique_ptr<ReasoningParser> MakeReasoningParser(bool force = false,
                                      std::string_view name = "qwen3") {
  auto p = ReasoningParser::Create(name, force);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

TEST(ReasoningParserTest, NamesAndUnknownName) {
  EXPECT_EQ(ReasoningParserNames(),
            (std::vector<std::string>{"deepseek-r1", "qwen3"}));
  auto bad = ReasoningParser::Create("qwen4", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("qwen4"), std::string::npos);
  EXPECT_NE(bad.status().message().find("deepseek-r1, qwen3"),
            std::string::npos);
  EXPECT_FALSE(MakeReasoningParser(false, "qwen3")->force_reasoning());
  EXPECT_TRUE(MakeReasoningParser(false, "deepseek-r1")->force_reasoning());
}

TEST(ReasoningParserTest, FullSplitsThinkBlockAndStripsNewlinesAfterIt) {
  ReasoningParseResult r = MakeReasoningParser()->ParseFull("<think>\nplan\n</think>\n\nHi\n");
  ASSERT_TRUE(r.reasoning.has_value());
  EXPECT_EQ(*r.reasoning, "\nplan\n");
  EXPECT_EQ(r.content, "Hi\n");
}

TEST(ReasoningParserTest, FullLeadingWhitespaceBeforeThinkIsDropped) {
  ReasoningParseResult r = MakeReasoningParser()->ParseFull(" \n\t<think>a</think>  b");
  EXPECT_EQ(r.reasoning, "a");
  EXPECT_EQ(r.content, "  b");  // only newlines are stripped after </think>
}

TEST(ReasoningParserTest, FullWithoutThinkIsAllContent) {
  auto p = MakeReasoningParser();
  ReasoningParseResult r = p->ParseFull("Hi <think>x</think> there");
  EXPECT_FALSE(r.reasoning.has_value());
  EXPECT_EQ(r.content, "Hi <think>x</think> there");
  r = p->ParseFull("  plain\n");
  EXPECT_FALSE(r.reasoning.has_value());
  EXPECT_EQ(r.content, "  plain\n");
  r = p->ParseFull("");
  EXPECT_FALSE(r.reasoning.has_value());
  EXPECT_EQ(r.content, "");
}

TEST(ReasoningParserTest, FullUnclosedBlockIsAllReasoning) {
  ReasoningParseResult r = MakeReasoningParser()->ParseFull("<think>still thinking </thi");
  EXPECT_EQ(r.reasoning, "still thinking </thi");
  EXPECT_EQ(r.content, "");
  r = MakeReasoningParser()->ParseFull("<think>");
  EXPECT_EQ(r.reasoning, "");
  EXPECT_EQ(r.content, "");
}

TEST(ReasoningParserTest, FullForcedReasoningStartsInsideTheBlock) {
  auto p = MakeReasoningParser(/*force=*/true);
  ReasoningParseResult r = p->ParseFull("\nplan</think>\n\nanswer");
  EXPECT_EQ(r.reasoning, "\nplan");
  EXPECT_EQ(r.content, "answer");
  r = p->ParseFull("<think>plan</think>answer");  // explicit tag dropped
  EXPECT_EQ(r.reasoning, "plan");
  EXPECT_EQ(r.content, "answer");
  r = p->ParseFull("no end tag");
  EXPECT_EQ(r.reasoning, "no end tag");
  EXPECT_EQ(r.content, "");
  r = p->ParseFull("");
  EXPECT_EQ(r.reasoning, "");
}

TEST(ReasoningParserTest, FullSecondThinkAfterBlockIsContent) {
  ReasoningParseResult r =
      MakeReasoningParser()->ParseFull("<think>a</think>b<think>c</think>");
  EXPECT_EQ(r.reasoning, "a");
  EXPECT_EQ(r.content, "b<think>c</think>");
}

TEST(ReasoningParserTest, StreamOpenTagArrivingInParts) {
  auto p = MakeReasoningParser();
  ReasoningDelta d = p->Push("<th");
  EXPECT_EQ(d.reasoning_delta, "");
  EXPECT_EQ(d.content_delta, "");
  EXPECT_EQ(p->held_bytes(), 3u);
  EXPECT_FALSE(p->saw_reasoning());
  d = p->Push("ink");
  EXPECT_EQ(d.reasoning_delta + d.content_delta, "");
  d = p->Push(">Let me");
  EXPECT_TRUE(p->saw_reasoning());
  EXPECT_TRUE(p->in_reasoning());
  EXPECT_EQ(d.reasoning_delta, "Let me");
  EXPECT_EQ(p->held_bytes(), 0u);
}

TEST(ReasoningParserTest, StreamCloseTagSplitAcrossThreePieces) {
  auto p = MakeReasoningParser();
  EXPECT_EQ(p->Push("<think>idea </th").reasoning_delta, "idea ");
  EXPECT_EQ(p->held_bytes(), 4u);
  ReasoningDelta d = p->Push("in");
  EXPECT_EQ(d.reasoning_delta, "");
  EXPECT_EQ(p->held_bytes(), 6u);
  d = p->Push("k>\n\nAnswer");
  EXPECT_EQ(d.reasoning_delta, "");
  EXPECT_EQ(d.content_delta, "Answer");
  EXPECT_FALSE(p->in_reasoning());
  d = p->Finish();
  EXPECT_EQ(d.reasoning_delta + d.content_delta, "");
}

TEST(ReasoningParserTest, StreamLookalikeOfOpenTagIsReleasedAsContent) {
  auto p = MakeReasoningParser();
  EXPECT_EQ(p->Push("<thi").content_delta, "");
  ReasoningDelta d = p->Push("s is html");
  EXPECT_EQ(d.content_delta, "<this is html");
  EXPECT_EQ(d.reasoning_delta, "");
  EXPECT_FALSE(p->saw_reasoning());
  // Once decided, later tags are plain content and nothing is held.
  EXPECT_EQ(p->Push("<thin").content_delta, "<thin");
  EXPECT_EQ(p->held_bytes(), 0u);
}

TEST(ReasoningParserTest, StreamLookalikeOfCloseTagIsReleasedAsReasoning) {
  auto p = MakeReasoningParser();
  EXPECT_EQ(p->Push("<think>a </thi").reasoning_delta, "a ");
  EXPECT_EQ(p->Push("s").reasoning_delta, "</this");
  EXPECT_TRUE(p->in_reasoning());
}

TEST(ReasoningParserTest, StreamNewlinesAfterCloseTagDroppedAcrossPieces) {
  auto p = MakeReasoningParser();
  p->Push("<think>x</think>");
  EXPECT_EQ(p->Push("\n").content_delta, "");
  EXPECT_EQ(p->Push("\r\n").content_delta, "");
  EXPECT_EQ(p->Push("\nA\n").content_delta, "A\n");
  EXPECT_EQ(p->Push("\n").content_delta, "\n");
}

TEST(ReasoningParserTest, StreamDelaysNothingElse) {
  auto p = MakeReasoningParser();
  EXPECT_EQ(p->Push("Hello").content_delta, "Hello");
  EXPECT_EQ(p->Push(" <").content_delta, " <");  // decided: no think block
  auto q = MakeReasoningParser();
  q->Push("<think>");
  EXPECT_EQ(q->Push("abc").reasoning_delta, "abc");
  EXPECT_EQ(q->Push("a<b").reasoning_delta, "a<b");  // "<b" cannot be </think>
  EXPECT_EQ(q->Push("<").reasoning_delta, "");
  EXPECT_EQ(q->held_bytes(), 1u);
}

TEST(ReasoningParserTest, StreamFinishFlushesHeldText) {
  auto p = MakeReasoningParser();
  p->Push("  <thin");
  ReasoningDelta d = p->Finish();
  EXPECT_EQ(d.content_delta, "  <thin");
  EXPECT_EQ(d.reasoning_delta, "");
  EXPECT_TRUE(p->finished());
  EXPECT_EQ(p->Push("more").content_delta, "");
  EXPECT_EQ(p->Finish().content_delta, "");

  auto f = MakeReasoningParser(/*force=*/true);
  f->Push("\n<thin");
  EXPECT_EQ(f->Finish().reasoning_delta, "\n<thin");

  auto q = MakeReasoningParser();
  EXPECT_EQ(q->Push("<think>deep</thin").reasoning_delta, "deep");
  EXPECT_EQ(q->Finish().reasoning_delta, "</thin");
}

TEST(ReasoningParserTest, StreamForcedWithoutOpenTag) {
  auto p = MakeReasoningParser(/*force=*/true);
  EXPECT_EQ(p->Push("Okay, ").reasoning_delta, "Okay, ");
  EXPECT_TRUE(p->saw_reasoning());
  ReasoningDelta d = p->Push("so</think>\n\nDone");
  EXPECT_EQ(d.reasoning_delta, "so");
  EXPECT_EQ(d.content_delta, "Done");
}

TEST(ReasoningParserTest, ParseFullDoesNotTouchStreamState) {
  auto p = MakeReasoningParser();
  p->Push("<think>a");
  EXPECT_EQ(p->ParseFull("plain").content, "plain");
  EXPECT_TRUE(p->in_reasoning());
  EXPECT_EQ(p->Push("b").reasoning_delta, "b");
}

// The property: for any split into whole-UTF-8 pieces, the streamed deltas
// concatenate to ParseFull's result, each delta is whole UTF-8, and only a
// partial tag (or leading whitespace before one) is ever held.
TEST(ReasoningParserTest, RandomSplitsMatchParseFull) {
  const std::vector<std::string> fragments = {
      "<think>", "</think>", "<think>", "</think>", "<",  "</",     "<th",
      "<think",  "</think",  "think>",  ">",        "\n", "\n\n",   "\r\n",
      " ",       "\t",       "a",       "hello",    "é",  "日本語", "🙂"};
  std::mt19937 rng(1234);
  int closed_blocks = 0, unclosed_blocks = 0, no_block = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text = RandomText(rng, fragments, 10);
    if (iter % 3 == 0) text = "<think>" + text;
    if (iter % 7 == 0) text = "\n " + text;
    for (bool force : {false, true}) {
      ReasoningParseResult full = MakeReasoningParser(force)->ParseFull(text);
      if (!full.reasoning.has_value()) {
        ++no_block;
      } else if (text.find("</think>") != std::string::npos) {
        ++closed_blocks;
      } else {
        ++unclosed_blocks;
      }
      for (int split = 0; split < 5; ++split) {
        std::vector<std::string> pieces = RandomSplit(rng, text);
        auto p = MakeReasoningParser(force);
        std::string reasoning, content;
        for (const std::string& piece : pieces) {
          ReasoningDelta d = p->Push(piece);
          ASSERT_TRUE(IsWholeUtf8(d.reasoning_delta));
          ASSERT_TRUE(IsWholeUtf8(d.content_delta));
          reasoning += d.reasoning_delta;
          content += d.content_delta;
          if (p->in_reasoning()) {
            ASSERT_LT(p->held_bytes(), std::string_view("</think>").size());
          } else if (p->saw_reasoning()) {
            ASSERT_EQ(p->held_bytes(), 0u);
          }
        }
        ReasoningDelta d = p->Finish();
        reasoning += d.reasoning_delta;
        content += d.content_delta;
        ASSERT_EQ(reasoning, full.reasoning.value_or(""))
            << "text=" << text << " force=" << force;
        ASSERT_EQ(content, full.content) << "text=" << text;
        ASSERT_EQ(p->saw_reasoning(), full.reasoning.has_value())
            << "text=" << text;
      }
    }
  }
  // The corpus exercises every shape of output.
  EXPECT_GT(closed_blocks, 1000);
  EXPECT_GT(unclosed_blocks, 500);
  EXPECT_GT(no_block, 500);
}

}  // namespace
}  // namespace tessera::parsers
