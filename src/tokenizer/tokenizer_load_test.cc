// Load errors: each must say what is wrong and where.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "testing/fixtures.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

using nlohmann::json;

// A small valid tokenizer.json (SentencePiece style).
json MinimalTokenizer() {
  return {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
        {{"id", 1}, {"content", "<s>"}, {"special", true}}}},
      {"normalizer",
       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", "<s> $A"},
        {"special_tokens",
         {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}}},
      {"model",
       {{"type", "BPE"},
        {"unk_token", "<unk>"},
        {"vocab",
         {{"<unk>", 0}, {"<s>", 1}, {"a", 2}, {"b", 3}, {"ab", 4}, {"▁", 5}}},
        {"merges", {"a b"}}}}};
}

Status LoadError(const json& j, std::string_view config = "") {
  auto t = Tokenizer::FromJsonText(j.dump(), config, "tokenizer.json at test");
  return t.ok() ? OkStatus() : t.status();
}

void ExpectMessageHas(const Status& s,
                      std::initializer_list<std::string> parts) {
  ASSERT_FALSE(s.ok());
  for (const std::string& part : parts) {
    EXPECT_NE(s.message().find(part), std::string::npos)
        << "message: " << s.message() << "\nmissing: " << part;
  }
}

TEST(TokenizerLoad, MinimalTokenizerWorks) {
  auto t = Tokenizer::FromJsonText(MinimalTokenizer().dump(), "", "test");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->Encode("ab a", true), (std::vector<int32_t>{1, 4, 5, 2}));
  EXPECT_EQ((*t)->Encode("abc", false), (std::vector<int32_t>{4, 0}));
  EXPECT_EQ((*t)->Decode(std::vector<int32_t>{1, 4, 5, 2}, true), "ab a");
  EXPECT_EQ((*t)->vocab_size(), 6);
}

TEST(TokenizerLoad, ConfigSuppliesBosEosAndFallbackSpecials) {
  json j = MinimalTokenizer();
  j["post_processor"] = {{"type", "ByteLevel"}};
  auto t = Tokenizer::FromJsonText(
      j.dump(),
      R"({"bos_token": {"content": "<s>", "__type": "AddedToken"},
          "eos_token": "<unk>", "add_bos_token": true, "add_eos_token": true,
          "added_tokens_decoder": {"6": {"content": "<extra>", "special": false}}})",
      "test");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->bos_id(), 1);
  EXPECT_EQ((*t)->eos_id(), 0);
  EXPECT_EQ((*t)->Encode("a<extra>", true), (std::vector<int32_t>{1, 2, 6, 0}));
  EXPECT_EQ((*t)->vocab_size(), 7);
  EXPECT_FALSE((*t)->IsSpecial(6));
}

TEST(TokenizerLoad, MalformedAndTruncatedJson) {
  auto bad = Tokenizer::FromJsonText("{\"model\": [1, 2,, 3]}", "",
                                     "tokenizer.json at /x");
  ExpectMessageHas(bad.status(), {"tokenizer.json at /x", "malformed JSON"});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);

  const std::string full = MinimalTokenizer().dump();
  auto cut = Tokenizer::FromJsonText(full.substr(0, full.size() / 2), "",
                                     "tokenizer.json at /x");
  ExpectMessageHas(cut.status(), {"malformed JSON", "truncated"});

  auto empty = Tokenizer::FromJsonText("", "", "tokenizer.json at /x");
  ExpectMessageHas(empty.status(), {"empty"});

  auto not_object = Tokenizer::FromJsonText("[1]", "", "t");
  ExpectMessageHas(not_object.status(), {"top level", "an array"});

  auto bad_config = Tokenizer::FromJsonText(full, "{\"bos_token\": ", "t");
  ExpectMessageHas(bad_config.status(), {"tokenizer_config.json", "malformed"});
}

// tokenizer.json with its normalizer as `depth` nested Sequence normalizers
// around the minimal one's Replace, as text (dump() would recurse).
std::string NestedNormalizerTokenizer(size_t depth) {
  json j = MinimalTokenizer();
  const std::string leaf = j["normalizer"].dump();
  j["normalizer"] = "@N@";
  std::string nested;
  for (size_t i = 0; i < depth; ++i) {
    nested += R"({"type":"Sequence","normalizers":[)";
  }
  nested += leaf;
  for (size_t i = 0; i < depth; ++i) nested += "]}";
  std::string text = j.dump();
  return text.replace(text.find("\"@N@\""), 5, nested);
}

// A deeply nested component is a clear error, not a stack overflow; nesting
// within the limit loads and works.
TEST(TokenizerLoad, DeeplyNestedComponentsAreBounded) {
  auto deep = Tokenizer::FromJsonText(NestedNormalizerTokenizer(100000), "",
                                      "tokenizer.json at /x");
  ExpectMessageHas(deep.status(),
                   {"tokenizer.json at /x", "nested deeper than 512"});
  auto within = Tokenizer::FromJsonText(NestedNormalizerTokenizer(200), "",
                                        "tokenizer.json at /x");
  ASSERT_TRUE(within.ok()) << within.status().ToString();
  EXPECT_EQ((*within)->Encode("ab a", true),
            (std::vector<int32_t>{1, 4, 5, 2}));
}

TEST(TokenizerLoad, UnsupportedComponentsAreNamed) {
  json j = MinimalTokenizer();
  j["model"]["type"] = "Unigram";
  Status s = LoadError(j);
  ExpectMessageHas(s, {"model.type", "\"Unigram\"", "BPE"});
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);

  j = MinimalTokenizer();
  j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "x"}};
  ExpectMessageHas(LoadError(j), {"normalizer", "\"Precompiled\""});

  j = MinimalTokenizer();
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  ExpectMessageHas(LoadError(j), {"pre_tokenizer", "\"BertPreTokenizer\""});

  j = MinimalTokenizer();
  j["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "CTC"}}}}};
  ExpectMessageHas(LoadError(j), {"decoder.decoders[0]", "\"CTC\""});

  j = MinimalTokenizer();
  j["post_processor"] = {{"type", "Fancy"}};
  ExpectMessageHas(LoadError(j), {"post_processor", "\"Fancy\""});

  j = MinimalTokenizer();
  j["model"]["dropout"] = 0.1;
  ExpectMessageHas(LoadError(j), {"model.dropout"});
}

TEST(TokenizerLoad, MissingAndMistypedFields) {
  json j = MinimalTokenizer();
  j.erase("model");
  ExpectMessageHas(LoadError(j), {"model", "missing"});

  j = MinimalTokenizer();
  j["model"].erase("vocab");
  ExpectMessageHas(LoadError(j), {"model.vocab", "missing"});

  j = MinimalTokenizer();
  j["model"].erase("merges");
  ExpectMessageHas(LoadError(j), {"model.merges", "missing"});

  j = MinimalTokenizer();
  j["model"]["vocab"]["a"] = "two";
  ExpectMessageHas(LoadError(j), {"model.vocab[\"a\"]", "token id"});

  j = MinimalTokenizer();
  j["model"]["merges"] = {"a zz"};
  ExpectMessageHas(LoadError(j), {"model.merges[0]", "\"zz\""});

  j = MinimalTokenizer();
  j["model"]["unk_token"] = "<nope>";
  ExpectMessageHas(LoadError(j), {"model.unk_token", "<nope>"});

  j = MinimalTokenizer();
  j["added_tokens"][1].erase("content");
  ExpectMessageHas(LoadError(j), {"added_tokens[1].content", "missing"});

  j = MinimalTokenizer();
  j["post_processor"]["single"] = "<t> $A";
  ExpectMessageHas(LoadError(j), {"post_processor", "\"<t>\""});

  j = MinimalTokenizer();
  j["pre_tokenizer"] = {{"type", "Split"},
                        {"pattern", {{"Regex", "a"}}},
                        {"behavior", "Sideways"}};
  ExpectMessageHas(LoadError(j), {"pre_tokenizer.behavior", "Sideways"});
}

TEST(TokenizerLoad, PathsAndFiles) {
  auto missing = Tokenizer::Load("/nonexistent/tessera/model");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("tessera_tok_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto no_json = Tokenizer::Load(dir.string());
  ASSERT_FALSE(no_json.ok());
  EXPECT_NE(no_json.status().message().find("no tokenizer.json"),
            std::string::npos);

  {
    std::ofstream out(dir / "tokenizer.json");
    const std::string text = MinimalTokenizer().dump();
    out << text.substr(0, text.size() - 10);
  }
  auto truncated = Tokenizer::Load(dir.string());
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(
      truncated.status().message().find((dir / "tokenizer.json").string()),
      std::string::npos);
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos);

  {
    std::ofstream out(dir / "tokenizer.json");
    out << MinimalTokenizer().dump();
  }
  auto by_dir = Tokenizer::Load(dir.string());
  ASSERT_TRUE(by_dir.ok()) << by_dir.status().ToString();
  auto by_file = Tokenizer::Load((dir / "tokenizer.json").string());
  ASSERT_TRUE(by_file.ok()) << by_file.status().ToString();
  fs::remove_all(dir);
}

TEST(TokenizerLoad, SharedFileByPathReadsConfigBesideIt) {
  TSR_REQUIRE_SHARED_FIXTURE(file, "models/stories260k/tokenizer.json");
  auto t = Tokenizer::Load(file);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->bos_id(), 1);
  EXPECT_EQ((*t)->eos_id(), 2);
  EXPECT_EQ((*t)->bos_token(), "<s>");
}

TEST(TokenizerLoad, TruncatedQwenFileIsReported) {
  TSR_REQUIRE_SHARED_FIXTURE(file, "tokenizers/qwen3/tokenizer.json");
  std::ifstream in(file);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  auto t = Tokenizer::FromJsonText(text.substr(0, text.size() * 2 / 3), "",
                                   "tokenizer.json at " + file);
  ExpectMessageHas(t.status(), {file, "malformed JSON", "truncated"});
}

}  // namespace
}  // namespace tessera
