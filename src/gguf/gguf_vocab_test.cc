#include "gguf/gguf_vocab.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gguf/gguf_test_reader.h"
#include "model/make_model.h"
#include "model/test_util.h"
#include "testing/fixtures.h"

namespace tessera::gguf {
namespace {

using nlohmann::json;
using ::tessera::gguf::testing::ReadFile;
using ::tessera::gguf::testing::ReadGguf;
using ::tessera::model::testing::ScratchDir;
using ::tessera::model::testing::WriteFile;

VocabOptions Options(int64_t vocab_size,
                     std::optional<int32_t> bos = std::nullopt,
                     std::optional<int32_t> eos = std::nullopt) {
  VocabOptions options;
  options.vocab_size = vocab_size;
  options.bos_token_id = bos;
  options.eos_token_id = eos;
  return options;
}

// Writes only the tokenizer metadata into a GGUF file and reads it back.
StatusOr<ReadFile> VocabOnly(const std::string& model_dir,
                             const VocabOptions& options,
                             const std::string& out, VocabSummary* summary) {
  GgufWriter writer;
  TSR_ASSIGN_OR_RETURN(*summary,
                       AddTokenizerMetadata(model_dir, options, writer));
  TSR_RETURN_IF_ERROR(writer.WriteFile(out));
  return ReadGguf(out);
}

TEST(GgufVocabTest, Stories260kIsSentencePieceStyle) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  ScratchDir scratch;
  VocabSummary summary;
  auto f = VocabOnly(dir, Options(512, 1, 2), scratch.File("v.gguf"), &summary);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(summary.model, "llama");
  EXPECT_EQ(summary.num_padding, 0);
  EXPECT_EQ(f->Value("tokenizer.ggml.model"), "llama");
  const json& tokens = f->Value("tokenizer.ggml.tokens");
  const json& types = f->Value("tokenizer.ggml.token_type");
  const json& scores = f->Value("tokenizer.ggml.scores");
  ASSERT_EQ(tokens.size(), 512u);
  ASSERT_EQ(types.size(), 512u);
  ASSERT_EQ(scores.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(types[0], int(TokenType::kUnknown));
  EXPECT_EQ(types[1], int(TokenType::kControl));
  EXPECT_EQ(types[2], int(TokenType::kControl));
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(types[3], int(TokenType::kByte));
  EXPECT_EQ(types[258], int(TokenType::kByte));
  // "▁t" comes from merge 0, "he" from merge 1, "▁the" from a later one.
  EXPECT_EQ(tokens[259], "\xE2\x96\x81t");
  EXPECT_EQ(types[259], int(TokenType::kNormal));
  EXPECT_EQ(scores[259].get<float>(), 0.0f);
  EXPECT_EQ(scores[260].get<float>(), -1.0f);
  EXPECT_LT(scores[265].get<float>(), scores[260].get<float>());
  // A single character no merge makes scores below every merge.
  EXPECT_EQ(tokens[504], "<");
  EXPECT_LT(scores[504].get<float>(), -165.0f);
  EXPECT_EQ(f->Value("tokenizer.ggml.add_space_prefix"), true);
  EXPECT_EQ(f->Value("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(f->Value("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f->Value("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(f->Value("tokenizer.ggml.unknown_token_id"), 0);
  EXPECT_EQ(f->kv.count("tokenizer.ggml.merges"), 0u);
}

TEST(GgufVocabTest, SyntheticByteLevelTokenizerIsGpt2WithQwen2Split) {
  ScratchDir scratch;
  model::MakeModelOptions options;
  options.preset = "tiny";
  options.out_dir = scratch.File("m");
  options.dtype = TSR_DTYPE_F32;
  auto made = model::MakeModel(options);
  ASSERT_TRUE(made.ok()) << made.status().message();
  const int64_t v = made->config.vocab_size;
  VocabSummary summary;
  auto f = VocabOnly(options.out_dir, Options(v, std::nullopt, int32_t(v - 1)),
                     scratch.File("v.gguf"), &summary);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(summary.model, "gpt2");
  EXPECT_EQ(summary.pre, "qwen2");
  EXPECT_TRUE(summary.notes.empty());
  EXPECT_EQ(f->Value("tokenizer.ggml.pre"), "qwen2");
  const json& tokens = f->Value("tokenizer.ggml.tokens");
  const json& types = f->Value("tokenizer.ggml.token_type");
  ASSERT_EQ(int64_t(tokens.size()), v);
  EXPECT_EQ(tokens[v - 1], "<|im_end|>");
  EXPECT_EQ(types[v - 1], int(TokenType::kControl));
  EXPECT_EQ(types[v - 3], int(TokenType::kControl));
  EXPECT_EQ(types[0], int(TokenType::kNormal));
  EXPECT_EQ(tokens[32], "\xC4\xA0");  // byte 0x20 in the GPT-2 alphabet: "Ġ"

  json tok = json::parse(
      model::testing::ReadFile(options.out_dir + "/tokenizer.json"));
  const json& merges = f->Value("tokenizer.ggml.merges");
  ASSERT_EQ(merges.size(), tok["model"]["merges"].size());
  const json& first = tok["model"]["merges"][0];
  std::string expected = first.is_string() ? first.get<std::string>()
                                           : first[0].get<std::string>() + " " +
                                                 first[1].get<std::string>();
  EXPECT_EQ(merges[0], expected);
  EXPECT_EQ(f->Value("tokenizer.ggml.add_bos_token"), false);
  EXPECT_EQ(f->Value("tokenizer.ggml.eos_token_id"), v - 1);
  EXPECT_TRUE(f->kv.count("tokenizer.chat_template"));
}

TEST(GgufVocabTest, PadsMissingIdsAndRejectsOutOfRangeOnes) {
  ScratchDir scratch;
  json tok = {
      {"model",
       {{"type", "BPE"},
        {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}},
        {"merges", json::array({"a b"})}}},
      {"added_tokens",
       json::array({{{"id", 4}, {"content", "<x>"}, {"special", false}}})},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"use_regex", true}}},
  };
  WriteFile(scratch.File("tokenizer.json"), tok.dump());
  VocabSummary summary;
  auto f = VocabOnly(scratch.path().string(), Options(6),
                     scratch.File("v.gguf"), &summary);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(summary.pre, "gpt-2");
  EXPECT_EQ(summary.num_padding, 2);
  const json& tokens = f->Value("tokenizer.ggml.tokens");
  const json& types = f->Value("tokenizer.ggml.token_type");
  EXPECT_EQ(tokens[3], "[PAD3]");
  EXPECT_EQ(types[3], int(TokenType::kUnused));
  EXPECT_EQ(types[4], int(TokenType::kUserDefined));
  EXPECT_EQ(tokens[5], "[PAD5]");

  GgufWriter w;
  auto small = AddTokenizerMetadata(scratch.path().string(), Options(4), w);
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.status().message().find("outside the model's vocab_size 4"),
            std::string::npos);
}

TEST(GgufVocabTest, OtherTokenizerKindsAreUnimplemented) {
  ScratchDir scratch;
  json tok = {{"model", {{"type", "Unigram"}, {"vocab", json::array()}}}};
  WriteFile(scratch.File("tokenizer.json"), tok.dump());
  GgufWriter w;
  auto r = AddTokenizerMetadata(scratch.path().string(), Options(4), w);
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  auto missing = AddTokenizerMetadata(scratch.File("nowhere"), Options(4), w);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera::gguf
