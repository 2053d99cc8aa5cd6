#include "tokenizer/bpe_model.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace tessera::tok {
namespace {

std::unique_ptr<BpeModel> MakeBpeModel(const Json& model) {
  auto bpe = BpeModel::FromJson(model, "model");
  EXPECT_TRUE(bpe.ok()) << bpe.status().ToString();
  return bpe.ok() ? std::move(bpe).value() : nullptr;
}

std::vector<int32_t> Tokenize(const BpeModel& bpe, std::string_view word) {
  std::vector<int32_t> ids;
  bpe.Tokenize(word, &ids);
  return ids;
}

TEST(BpeModel, AppliesMergesByRank) {
  Json vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}};
  auto bc_first = MakeBpeModel(
      {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"b c", "a b", "a bc"}}});
  EXPECT_EQ(Tokenize(*bc_first, "abc"), std::vector<int32_t>{5});
  EXPECT_EQ(Tokenize(*bc_first, "abcab"), (std::vector<int32_t>{5, 3}));
  auto ab_first = MakeBpeModel({{"type", "BPE"},
                        {"vocab", vocab},
                        {"merges", Json::array({{"a", "b"}, {"b", "c"}})}});
  // "ab" wins, and there is no (ab, c) merge.
  EXPECT_EQ(Tokenize(*ab_first, "abc"), (std::vector<int32_t>{3, 2}));
}

TEST(BpeModel, EqualRanksMergeLeftmostFirst) {
  auto bpe = MakeBpeModel({{"type", "BPE"},
                   {"vocab", {{"a", 0}, {"aa", 1}, {"aaaa", 2}}},
                   {"merges", {"a a", "aa aa"}}});
  EXPECT_EQ(Tokenize(*bpe, "aaa"), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(Tokenize(*bpe, "aaaa"), std::vector<int32_t>{2});
  EXPECT_EQ(Tokenize(*bpe, "aaaaa"), (std::vector<int32_t>{2, 0}));
}

TEST(BpeModel, ByteFallbackAndUnk) {
  Json vocab = {{"<unk>", 0}, {"a", 1}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 2 + b;
  }
  auto fallback = MakeBpeModel({{"type", "BPE"},
                        {"vocab", vocab},
                        {"merges", Json::array()},
                        {"unk_token", "<unk>"},
                        {"byte_fallback", true}});
  // é = C3 A9.
  EXPECT_EQ(Tokenize(*fallback, "aé"),
            (std::vector<int32_t>{1, 2 + 0xC3, 2 + 0xA9}));

  Json small = {{"<unk>", 0}, {"a", 1}};
  auto fused = MakeBpeModel({{"type", "BPE"},
                     {"vocab", small},
                     {"merges", Json::array()},
                     {"unk_token", "<unk>"},
                     {"fuse_unk", true}});
  EXPECT_EQ(Tokenize(*fused, "xyaz"), (std::vector<int32_t>{0, 1, 0}));
  auto unfused = MakeBpeModel({{"type", "BPE"},
                       {"vocab", small},
                       {"merges", Json::array()},
                       {"unk_token", "<unk>"}});
  EXPECT_EQ(Tokenize(*unfused, "xyaz"), (std::vector<int32_t>{0, 0, 1, 0}));
  auto no_unk =
      MakeBpeModel({{"type", "BPE"}, {"vocab", small}, {"merges", Json::array()}});
  EXPECT_EQ(Tokenize(*no_unk, "xay"), std::vector<int32_t>{1});
}

TEST(BpeModel, IgnoreMergesEmitsWholeWords) {
  Json vocab = {{"a", 0}, {"b", 1}, {"ab", 2}, {"abab", 3}, {"ba", 4}};
  Json merges = {"b a", "a b"};
  auto normal = MakeBpeModel({{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}});
  // b-a merges first, so "abab" never becomes the whole-word token.
  EXPECT_EQ(Tokenize(*normal, "abab"), (std::vector<int32_t>{0, 4, 1}));
  auto ignore = MakeBpeModel({{"type", "BPE"},
                      {"vocab", vocab},
                      {"merges", merges},
                      {"ignore_merges", true}});
  EXPECT_EQ(Tokenize(*ignore, "abab"), std::vector<int32_t>{3});
}

TEST(BpeModel, ContinuingSubwordPrefixAndSuffix) {
  Json vocab = {{"a", 0}, {"##b", 1}, {"##c", 2}, {"ab", 3}, {"ab##c", 4}};
  auto bpe = MakeBpeModel({{"type", "BPE"},
                   {"vocab", vocab},
                   {"merges", {"a ##b"}},
                   {"continuing_subword_prefix", "##"}});
  EXPECT_EQ(Tokenize(*bpe, "abc"), (std::vector<int32_t>{3, 2}));

  Json vocab2 = {{"a", 0}, {"b</w>", 1}, {"ab</w>", 2}};
  auto suffix = MakeBpeModel({{"type", "BPE"},
                      {"vocab", vocab2},
                      {"merges", {"a b</w>"}},
                      {"end_of_word_suffix", "</w>"}});
  EXPECT_EQ(Tokenize(*suffix, "ab"), std::vector<int32_t>{2});
}

TEST(BpeModel, RejectsMergesOutsideTheVocab) {
  auto bpe = BpeModel::FromJson(
      {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}}}, {"merges", {"a b"}}},
      "model");
  ASSERT_FALSE(bpe.ok());
  EXPECT_NE(bpe.status().message().find("model.merges[0]"), std::string::npos);
  EXPECT_NE(bpe.status().message().find("\"ab\""), std::string::npos);
  auto bad = BpeModel::FromJson(
      {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", {"ab"}}}, "model");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("two tokens"), std::string::npos);
}

// Reference BPE: repeatedly merge the lowest-ranked adjacent pair, leftmost
// first. Quadratic, but obviously right.
std::vector<std::string> NaiveBpe(
    const std::string& word,
    const std::map<std::pair<std::string, std::string>, int>& ranks) {
  std::vector<std::string> parts;
  for (char c : word) parts.emplace_back(1, c);
  while (true) {
    int best_rank = INT32_MAX;
    size_t best = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = ranks.find({parts[i], parts[i + 1]});
      if (it != ranks.end() && it->second < best_rank) {
        best_rank = it->second;
        best = i;
      }
    }
    if (best_rank == INT32_MAX) return parts;
    parts[best] += parts[best + 1];
    parts.erase(parts.begin() + best + 1);
  }
}

TEST(BpeModel, MatchesNaiveReferenceOnRandomWords) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 20; ++trial) {
    // Random merges over alphabet {a,b,c}; each merge adds its result.
    std::vector<std::string> tokens = {"a", "b", "c"};
    Json vocab = {{"a", 0}, {"b", 1}, {"c", 2}};
    Json merges = Json::array();
    std::map<std::pair<std::string, std::string>, int> ranks;
    for (int m = 0; m < 40; ++m) {
      const std::string& l = tokens[rng() % tokens.size()];
      const std::string& r = tokens[rng() % tokens.size()];
      if (ranks.count({l, r}) || l.size() + r.size() > 8) continue;
      const std::string merged = l + r;
      ranks[{l, r}] = static_cast<int>(merges.size());
      merges.push_back(Json::array({l, r}));
      if (!vocab.contains(merged)) {
        vocab[merged] = static_cast<int>(vocab.size());
        tokens.push_back(merged);
      }
    }
    auto bpe = MakeBpeModel({{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}});
    for (int w = 0; w < 50; ++w) {
      std::string word;
      const int len = 1 + static_cast<int>(rng() % 60);
      for (int i = 0; i < len; ++i) word.push_back("abc"[rng() % 3]);
      std::vector<int32_t> expected;
      for (const std::string& part : NaiveBpe(word, ranks)) {
        expected.push_back(vocab[part].get<int32_t>());
      }
      ASSERT_EQ(Tokenize(*bpe, word), expected) << word;
    }
  }
}

TEST(BpeModel, LongWordsMergeInNearLinearTime) {
  Json vocab = {{"a", 0}, {"b", 1}, {"ab", 2}, {"abab", 3}};
  auto bpe =
      MakeBpeModel({{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b", "ab ab"}}});
  std::string word;
  for (int i = 0; i < 200000; ++i) word += "ab";  // 400,000 characters
  const auto start = std::chrono::steady_clock::now();
  std::vector<int32_t> ids = Tokenize(*bpe, word);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_EQ(ids.size(), 100000u);
  for (int32_t id : ids) ASSERT_EQ(id, 3);
  // A quadratic merge would take minutes here.
  EXPECT_LT(seconds, 5.0);
}

TEST(BpeModel, CachesShortWords) {
  auto bpe = MakeBpeModel({{"type", "BPE"},
                   {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}},
                   {"merges", {"a b"}}});
  EXPECT_EQ(bpe->cache().size(), 0u);
  EXPECT_EQ(Tokenize(*bpe, "abab"), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(bpe->cache().size(), 1u);
  EXPECT_EQ(Tokenize(*bpe, "abab"), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(bpe->cache().size(), 1u);
  EXPECT_EQ(Tokenize(*bpe, std::string(1000, 'a')).size(), 1000u);
  EXPECT_EQ(bpe->cache().size(), 1u);  // too long to cache
}

}  // namespace
}  // namespace tessera::tok
