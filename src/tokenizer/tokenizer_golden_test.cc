// End-to-end checks against Hugging Face's output for the shared fixtures:
// the Qwen3 tokenizer (byte-level BPE) and stories260k (SentencePiece-style
// BPE with byte fallback).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <thread>
#include <vector>

#include "testing/cached_tokenizer.h"
#include "testing/fixtures.h"
#include "testing/goldens.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

using nlohmann::json;

std::vector<int32_t> Ids(const json& array) {
  return array.get<std::vector<int32_t>>();
}

TEST(Qwen3Tokenizer, EncodesEveryGoldenCaseExactly) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  auto cases = testing::ReadJsonLines(dir + "/golden_encode.jsonl");
  ASSERT_GE(cases.size(), 10u);
  for (const json& c : cases) {
    const std::string text = c["text"];
    EXPECT_EQ(tok.Encode(text, false), Ids(c["ids"])) << "text: " << text;
  }
}

TEST(Qwen3Tokenizer, DecodesEveryGoldenCaseBackToItsText) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  for (const json& c : testing::ReadJsonLines(dir + "/golden_encode.jsonl")) {
    const std::string text = c["text"];
    const std::vector<int32_t> ids = Ids(c["ids"]);
    // The NFC normalizer composes "e + U+0301" and "A + U+030A"; the golden
    // texts are NFC already except that case.
    std::string expected = text;
    if (text.rfind("Combining", 0) == 0) {
      expected = "Combining: \u00e9 vs \u00e9, \u00c5";
    }
    EXPECT_EQ(tok.Decode(ids, false), expected) << "text: " << text;
  }
}

TEST(Qwen3Tokenizer, EncodesEveryRenderedChatExactly) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  auto cases = testing::ReadJsonLines(dir + "/golden_chat.jsonl");
  ASSERT_GE(cases.size(), 6u);
  for (const json& c : cases) {
    const std::string rendered = c["rendered"];
    EXPECT_EQ(tok.Encode(rendered, false), Ids(c["ids"]))
        << "case: " << c["name"];
    EXPECT_EQ(tok.Decode(Ids(c["ids"]), false), rendered)
        << "case: " << c["name"];
  }
}

TEST(Qwen3Tokenizer, SpecialAndAddedTokens) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  EXPECT_EQ(tok.vocab_size(), 151669);
  EXPECT_EQ(tok.TokenToId("<|im_start|>"), 151644);
  EXPECT_EQ(tok.IdToToken(151644), "<|im_start|>");
  EXPECT_EQ(tok.IdToToken(9707), "Hello");
  EXPECT_TRUE(tok.IsSpecial(151644));
  EXPECT_FALSE(tok.IsSpecial(151667));  // <think>: added, not special
  EXPECT_FALSE(tok.IsSpecial(9707));
  EXPECT_FALSE(tok.bos_id().has_value());
  EXPECT_EQ(tok.eos_id(), 151645);  // <|im_end|> per tokenizer_config.json
  EXPECT_EQ(tok.Encode("<|im_start|>", true), std::vector<int32_t>{151644});

  const std::vector<int32_t> ids = tok.Encode(
      "<|im_start|>assistant\n<think>\nhm\n</think>\n\nok<|im_end|>", false);
  EXPECT_EQ(tok.Decode(ids, true), "assistant\n<think>\nhm\n</think>\n\nok");
  EXPECT_EQ(tok.Decode(ids, false),
            "<|im_start|>assistant\n<think>\nhm\n</think>\n\nok<|im_end|>");
  EXPECT_EQ(tok.Decode(std::vector<int32_t>{9707, 99999999, -5}, false),
            "Hello");
}

TEST(Qwen3Tokenizer, RoundTripsAssortedText) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  for (std::string text :
       {"emoji 😀👍🏽 and 🇫🇷 flags",
        "mixed 中文 English 日本語 한국어", "tabs\t\t and \r\n windows",
        "  multiple   spaces  ", "x<|im_end|>y<|endoftext|>",
        "العربية والفارسی", "ṩ ǅ ﬁ Ⅻ"}) {
    EXPECT_EQ(tok.Decode(tok.Encode(text, false), false), text);
  }
  // Invalid UTF-8 in the input is repaired, not fatal.
  EXPECT_EQ(tok.Decode(tok.Encode("a\xFF"
                                  "b",
                                  false),
                       false),
            "a\xEF\xBF\xBD"
            "b");
}

TEST(Qwen3Tokenizer, ConcurrentEncodeAndDecodeAgree) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  auto cases = testing::ReadJsonLines(dir + "/golden_encode.jsonl");
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 50; ++round) {
        for (const json& c : cases) {
          const std::vector<int32_t> ids =
              tok.Encode(c["text"].get<std::string>(), false);
          if (ids != Ids(c["ids"])) ++mismatches;
          if (tok.Decode(ids, false).size() <
              c["text"].get<std::string>().size() / 2) {
            ++mismatches;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GT(tok.cached_words(), 0u);
}

TEST(Stories260kTokenizer, EncodesEveryPromptWithBos) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  EXPECT_EQ(tok.vocab_size(), 512);
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  auto cases = testing::ReadJsonLines(dir + "/golden_greedy.jsonl");
  ASSERT_GE(cases.size(), 5u);
  for (const json& c : cases) {
    const std::string prompt = c["prompt"];
    const std::vector<int32_t> expected = Ids(c["prompt_ids"]);
    EXPECT_EQ(tok.Encode(prompt, true), expected) << "prompt: " << prompt;
    std::vector<int32_t> without_bos(expected.begin() + 1, expected.end());
    EXPECT_EQ(tok.Encode(prompt, false), without_bos) << "prompt: " << prompt;
  }
}

TEST(Stories260kTokenizer, DecodesPromptAndContinuationToFullText) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  for (const json& c : testing::ReadJsonLines(dir + "/golden_greedy.jsonl")) {
    std::vector<int32_t> ids = Ids(c["prompt_ids"]);
    const std::vector<int32_t> output = Ids(c["greedy_output_ids"]);
    ids.insert(ids.end(), output.begin(), output.end());
    EXPECT_EQ(tok.Decode(ids, true), c["full_text"].get<std::string>());
    // Without skipping, BOS shows as its text (and the leading space then
    // survives the Strip decoder, as in Hugging Face).
    EXPECT_EQ(tok.Decode(ids, false),
              "<s> " + c["full_text"].get<std::string>());
  }
}

TEST(Stories260kTokenizer, ByteFallbackRoundTrips) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  const std::string text = "Lily saw a 🐶 in the café. 你好!\nThe end.";
  const std::vector<int32_t> ids = tok.Encode(text, false);
  // 🐶 is four bytes, none of them in the 512-token vocabulary as text.
  const auto first_byte = tok.TokenToId("<0xF0>");
  ASSERT_TRUE(first_byte.has_value());
  EXPECT_NE(std::find(ids.begin(), ids.end(), *first_byte), ids.end());
  EXPECT_EQ(tok.Decode(ids, true), text);
  // Special token text inside the input is matched as the token.
  EXPECT_EQ(tok.Encode("</s>", false), std::vector<int32_t>{2});
  EXPECT_EQ(tok.Encode("", true), std::vector<int32_t>{1});
  EXPECT_TRUE(tok.Encode("", false).empty());
}

TEST(Stories260kTokenizer, LongSingleWordMatchesPieceWiseEncoding) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  // No pre-tokenizer: the whole text is one BPE word. Merges never cross
  // "▁" boundaries in this vocabulary except at a word start, so encoding
  // sentence by sentence must give the same ids as encoding all at once.
  const std::string sentence = "Once upon a time, there was a little dog.";
  std::string text;
  for (int i = 0; i < 2000; ++i) text += (i > 0 ? " " : "") + sentence;
  std::vector<int32_t> all = tok.Encode(text, false);
  std::vector<int32_t> one = tok.Encode(sentence, false);
  ASSERT_FALSE(one.empty());
  ASSERT_EQ(all.size() % one.size(), 0u);
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(all[i], one[i % one.size()]) << "at " << i;
  }
  EXPECT_EQ(tok.Decode(all, true), text);
}

}  // namespace
}  // namespace tessera
