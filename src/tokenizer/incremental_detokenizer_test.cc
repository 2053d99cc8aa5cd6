#include "tokenizer/incremental_detokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "testing/cached_tokenizer.h"
#include "testing/fixtures.h"
#include "testing/goldens.h"
#include "tokenizer/utf8.h"

namespace tessera {
namespace {

using nlohmann::json;

// Streams `ids` one at a time; checks every piece is whole UTF-8 and that the
// pieces add up to the full decode. Returns the number of Add calls that
// returned nothing (held back).
int ExpectStreamEqualsDecode(const Tokenizer& tok,
                             const std::vector<int32_t>& ids, bool skip,
                             const std::string& label) {
  IncrementalDetokenizer detok(tok, skip);
  std::string streamed;
  int held = 0;
  for (int32_t id : ids) {
    std::string piece = detok.Add(id);
    EXPECT_TRUE(tok::IsValidUtf8(piece)) << label;
    if (piece.empty()) ++held;
    streamed += piece;
  }
  std::string rest = detok.Flush();
  EXPECT_TRUE(tok::IsValidUtf8(rest)) << label;
  streamed += rest;
  EXPECT_EQ(streamed, tok.Decode(ids, skip)) << label;
  EXPECT_EQ(detok.Flush(), "");
  return held;
}

TEST(IncrementalDetokenizer, Qwen3GoldensStreamLikeFullDecode) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  for (const json& c : testing::ReadJsonLines(dir + "/golden_encode.jsonl")) {
    for (bool skip : {false, true}) {
      ExpectStreamEqualsDecode(tok, c["ids"].get<std::vector<int32_t>>(), skip,
                               c["text"]);
    }
  }
  for (const json& c : testing::ReadJsonLines(dir + "/golden_chat.jsonl")) {
    for (bool skip : {false, true}) {
      ExpectStreamEqualsDecode(tok, c["ids"].get<std::vector<int32_t>>(), skip,
                               c["name"]);
    }
  }
}

TEST(IncrementalDetokenizer, Qwen3HoldsBackSplitCharacters) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  const std::string text = "I 🫠 love 𝒳 and 龘龘 and 👩‍👩‍👧";
  const std::vector<int32_t> ids = tok.Encode(text, false);
  // Some of these characters span several byte-level tokens, so some Add
  // calls must hold their bytes back.
  EXPECT_GT(ExpectStreamEqualsDecode(tok, ids, false, text), 0);
  EXPECT_EQ(tok.Decode(ids, false), text);

  // A stream cut inside a character: held until Flush, which then decodes
  // the partial bytes like the full decode (U+FFFD).
  const std::vector<int32_t> emoji = tok.Encode("🫠", false);
  ASSERT_GT(emoji.size(), 1u);
  std::vector<int32_t> cut(emoji.begin(), emoji.end() - 1);
  IncrementalDetokenizer detok(tok, false);
  for (int32_t id : cut) EXPECT_EQ(detok.Add(id), "");
  EXPECT_EQ(detok.Flush(), tok.Decode(cut, false));
  EXPECT_EQ(tok.Decode(cut, false), tok::kReplacementChar);
}

TEST(IncrementalDetokenizer, Stories260kGoldensStreamLikeFullDecode) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  for (const json& c : testing::ReadJsonLines(dir + "/golden_greedy.jsonl")) {
    std::vector<int32_t> ids = c["prompt_ids"].get<std::vector<int32_t>>();
    for (int32_t id : c["greedy_output_ids"].get<std::vector<int32_t>>()) {
      ids.push_back(id);
    }
    ExpectStreamEqualsDecode(tok, ids, true, c["prompt"]);
    ExpectStreamEqualsDecode(tok, ids, false, c["prompt"]);
  }
}

TEST(IncrementalDetokenizer, Stories260kByteFallbackRuns) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  const std::string text = "A 🐶 and 你好 friend 😀.";
  const std::vector<int32_t> ids = tok.Encode(text, true);
  EXPECT_GT(ExpectStreamEqualsDecode(tok, ids, true, text), 0);
  EXPECT_EQ(tok.Decode(ids, true), text);

  // An invalid run (a lead byte then an ordinary token) decodes to U+FFFD in
  // both paths.
  const std::vector<int32_t> bad = {*tok.TokenToId("<0xF0>"),
                                    *tok.TokenToId("<0x9F>"),
                                    *tok.TokenToId("▁the")};
  ExpectStreamEqualsDecode(tok, bad, true, "invalid run");
  EXPECT_EQ(tok.Decode(bad, true), "\xEF\xBF\xBD\xEF\xBF\xBD the");
}

TEST(IncrementalDetokenizer, PrimedWithPromptContinuesWithItsSpaces) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const Tokenizer& tok = testing::CachedTokenizer(dir);
  for (const json& c : testing::ReadJsonLines(dir + "/golden_greedy.jsonl")) {
    const auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
    const auto output = c["greedy_output_ids"].get<std::vector<int32_t>>();
    IncrementalDetokenizer detok(tok, true);
    detok.Prime(prompt);
    std::string streamed;
    for (int32_t id : output) streamed += detok.Add(id);
    streamed += detok.Flush();
    const std::string full = c["full_text"];
    const std::string prompt_text = tok.Decode(prompt, true);
    ASSERT_EQ(full.substr(0, prompt_text.size()), prompt_text);
    EXPECT_EQ(streamed, full.substr(prompt_text.size()));
  }
}

}  // namespace
}  // namespace tessera
