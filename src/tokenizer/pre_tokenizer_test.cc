#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/normalizer.h"

namespace tessera::tok {
namespace {

using Ranges = std::vector<std::pair<size_t, size_t>>;

std::vector<std::string> Cut(std::string_view text, const Ranges& ranges) {
  std::vector<std::string> out;
  for (auto [b, e] : ranges) out.emplace_back(text.substr(b, e - b));
  return out;
}

using Words = std::vector<std::string>;

TEST(SplitByMatches, FollowsEachBehaviour) {
  // "a-b--c" split on each "-".
  const std::string text = "a-b--c";
  const Ranges dashes = {{1, 2}, {3, 4}, {4, 5}};
  EXPECT_EQ(
      Cut(text, SplitByMatches(6, dashes, SplitBehavior::kRemoved, false)),
      (Words{"a", "b", "c"}));
  EXPECT_EQ(
      Cut(text, SplitByMatches(6, dashes, SplitBehavior::kIsolated, false)),
      (Words{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(
      Cut(text,
          SplitByMatches(6, dashes, SplitBehavior::kMergedWithPrevious, false)),
      (Words{"a-", "b-", "-", "c"}));
  EXPECT_EQ(Cut(text, SplitByMatches(6, dashes, SplitBehavior::kMergedWithNext,
                                     false)),
            (Words{"a", "-b", "-", "-c"}));
  EXPECT_EQ(
      Cut(text, SplitByMatches(6, dashes, SplitBehavior::kContiguous, false)),
      (Words{"a", "-", "b", "--", "c"}));
  // Inverted: the matches are the content, the rest is the delimiter.
  EXPECT_EQ(Cut(text, SplitByMatches(6, dashes, SplitBehavior::kRemoved, true)),
            (Words{"-", "-", "-"}));
}

std::unique_ptr<PreTokenizer> MakePreTokenizer(const Json& config) {
  auto pre = PreTokenizer::FromJson(config, "pre_tokenizer");
  EXPECT_TRUE(pre.ok()) << pre.status().ToString();
  return pre.ok() ? std::move(pre).value() : nullptr;
}

Words PreTok(const PreTokenizer& pre, std::string_view text,
             bool at_origin = true) {
  Words words;
  pre.PreTokenize(text, at_origin, &words);
  return words;
}

// The Qwen2/Qwen3 pattern.
constexpr const char* kQwenPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

TEST(PreTokenizer, SplitWithUnicodeRegex) {
  auto pre = MakePreTokenizer({{"type", "Split"},
                   {"pattern", {{"Regex", kQwenPattern}}},
                   {"behavior", "Isolated"},
                   {"invert", false}});
  EXPECT_EQ(PreTok(*pre, "I'M here, aren't   we?\n\n 42"),
            (Words{"I", "'M", " here", ",", " aren", "'t", "  ", " we", "?\n\n",
                   " ", "4", "2"}));
  EXPECT_EQ(PreTok(*pre, "naïve 中文"), (Words{"naïve", " 中文"}));
}

TEST(PreTokenizer, ByteLevelMapsBytesAndOptionallySplits) {
  auto plain = MakePreTokenizer({{"type", "ByteLevel"},
                     {"add_prefix_space", false},
                     {"use_regex", false}});
  EXPECT_EQ(PreTok(*plain, "a b\n"), Words{"aĠbĊ"});
  auto gpt2 = MakePreTokenizer(
      {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}});
  EXPECT_EQ(PreTok(*gpt2, "Hello world's"), (Words{"ĠHello", "Ġworld", "'s"}));
  EXPECT_EQ(PreTok(*gpt2, "é"), Words{"ĠÃ©"});
}

TEST(PreTokenizer, MetaspacePrependSchemes) {
  auto always = MakePreTokenizer({{"type", "Metaspace"},
                      {"replacement", "▁"},
                      {"prepend_scheme", "always"},
                      {"split", true}});
  EXPECT_EQ(PreTok(*always, "Hey friend"), (Words{"▁Hey", "▁friend"}));
  EXPECT_EQ(PreTok(*always, "Hey", false), Words{"▁Hey"});
  auto first = MakePreTokenizer({{"type", "Metaspace"},
                     {"replacement", "▁"},
                     {"prepend_scheme", "first"},
                     {"split", false}});
  EXPECT_EQ(PreTok(*first, "Hey friend"), Words{"▁Hey▁friend"});
  EXPECT_EQ(PreTok(*first, "Hey friend", false), Words{"Hey▁friend"});
  auto legacy = MakePreTokenizer({{"type", "Metaspace"},
                      {"replacement", "▁"},
                      {"add_prefix_space", false}});
  EXPECT_EQ(PreTok(*legacy, "a  b"), (Words{"a", "▁", "▁b"}));
}

TEST(PreTokenizer, SequenceAppliesInOrder) {
  auto seq = MakePreTokenizer({{"type", "Sequence"},
                   {"pretokenizers",
                    {{{"type", "Split"},
                      {"pattern", {{"String", " "}}},
                      {"behavior", "Removed"}},
                     {{"type", "ByteLevel"},
                      {"add_prefix_space", false},
                      {"use_regex", false}}}}});
  EXPECT_EQ(PreTok(*seq, "ab  cd"), (Words{"ab", "cd"}));
}

TEST(PreTokenizer, UnsupportedTypeIsNamed) {
  auto pre = PreTokenizer::FromJson(
      {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Whitespace"}}}}},
      "pre_tokenizer");
  ASSERT_FALSE(pre.ok());
  EXPECT_EQ(pre.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(pre.status().message().find("pre_tokenizer.pretokenizers[0]"),
            std::string::npos);
  EXPECT_NE(pre.status().message().find("\"Whitespace\""), std::string::npos);
  auto bad_regex =
      PreTokenizer::FromJson({{"type", "Split"},
                              {"pattern", {{"Regex", "(unclosed"}}},
                              {"behavior", "Isolated"}},
                             "pre_tokenizer");
  ASSERT_FALSE(bad_regex.ok());
  EXPECT_NE(bad_regex.status().message().find("pre_tokenizer.pattern"),
            std::string::npos);
}

TEST(Normalizer, SequenceOfPrependReplaceAndNfc) {
  auto n = Normalizer::FromJson({{"type", "Sequence"},
                                 {"normalizers",
                                  {{{"type", "NFC"}},
                                   {{"type", "Prepend"}, {"prepend", "▁"}},
                                   {{"type", "Replace"},
                                    {"pattern", {{"String", " "}}},
                                    {"content", "▁"}}}}},
                                "normalizer");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ((*n)->Normalize("e\xCC\x81 x"), "▁é▁x");  // e + U+0301 -> é
  EXPECT_EQ((*n)->Normalize(""), "");  // Prepend leaves empty text alone
  auto lower = Normalizer::FromJson(
      {{"type", "Sequence"},
       {"normalizers",
        {{{"type", "Lowercase"}},
         {{"type", "Replace"},
          {"pattern", {{"Regex", "\\s+"}}},
          {"content", " "}},
         {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}}}},
      "normalizer");
  ASSERT_TRUE(lower.ok()) << lower.status().ToString();
  EXPECT_EQ((*lower)->Normalize("  ÀB\t\tC  "), "àb c");
  auto unsupported =
      Normalizer::FromJson({{"type", "Precompiled"}}, "normalizer");
  ASSERT_FALSE(unsupported.ok());
  EXPECT_NE(unsupported.status().message().find("\"Precompiled\""),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::tok
