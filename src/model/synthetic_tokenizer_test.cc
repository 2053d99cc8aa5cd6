#include "model/synthetic_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/make_model.h"
#include "model/test_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tessera::model {
namespace {

using ::tessera::model::testing::ScratchDir;
using ::testing::HasSubstr;

std::unique_ptr<Tokenizer> Load(const SyntheticTokenizer& t) {
  auto tok = Tokenizer::FromJsonText(t.tokenizer_json, t.tokenizer_config_json,
                                     "synthetic");
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(*tok) : nullptr;
}

TEST(SyntheticTokenizerTest, ExactVocabularyEveryIdDecodes) {
  for (int64_t vocab : {259, 512, 1024, 8192}) {
    SCOPED_TRACE(vocab);
    auto made = MakeSyntheticTokenizer(vocab, 2048);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    EXPECT_EQ(made->learned_merges + made->synthetic_merges >= vocab - 259,
              true);
    auto tok = Load(*made);
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(tok->vocab_size(), vocab);
    EXPECT_EQ(made->im_end_id, vocab - 1);
    EXPECT_EQ(tok->TokenToId("<|endoftext|>"), vocab - 3);
    EXPECT_EQ(tok->TokenToId("<|im_start|>"), vocab - 2);
    EXPECT_EQ(tok->TokenToId("<|im_end|>"), vocab - 1);
    EXPECT_EQ(tok->eos_id(), vocab - 1);
    EXPECT_FALSE(tok->bos_id().has_value());
    for (int32_t id = 0; id < vocab; ++id) {
      ASSERT_TRUE(tok->IdToToken(id).has_value()) << id;
      std::vector<int32_t> one = {id};
      ASSERT_FALSE(tok->Decode(one, false).empty()) << id;
      EXPECT_EQ(tok->IsSpecial(id), id >= vocab - 3) << id;
    }
    // Ids of distinct tokens are distinct: the token strings are unique.
    std::set<std::string> spelled;
    for (int32_t id = 0; id < vocab; ++id) {
      spelled.insert(std::string(*tok->IdToToken(id)));
    }
    EXPECT_EQ(int64_t(spelled.size()), vocab);
  }
}

TEST(SyntheticTokenizerTest, RoundTripsEnglishAndUtf8) {
  auto made = MakeSyntheticTokenizer(1024, 2048);
  ASSERT_TRUE(made.ok());
  EXPECT_GT(made->learned_merges, 300);
  auto tok = Load(*made);
  ASSERT_NE(tok, nullptr);
  const std::vector<std::string> texts = {
      "The baker opened his shop at five o'clock, as he did every day.",
      "Hello, world!  Two spaces,\ttabs\nand\r\nnewlines.\n\n",
      "naïve café, résumé — 日本語のテキスト, привет мир, 🙂🚀 "
      "emoji",
      "def add(a, b):\n    return a + b  # 3.14159 and 1,000,000",
      "   leading and trailing spaces   ",
      "<|im_start|>user\nhi<|im_end|>",
      "",
  };
  for (const std::string& text : texts) {
    std::vector<int32_t> ids = tok->Encode(text, false);
    for (int32_t id : ids) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, 1024);
    }
    EXPECT_EQ(tok->Decode(ids, false), text);
  }
  // Learned merges compress English well below one token per byte.
  std::string english = "The children ran outside to play in the puddles.";
  EXPECT_LT(tok->Encode(english, false).size(), english.size() / 2);
  // Special tokens are matched as one token and skipped on request.
  std::vector<int32_t> chat = tok->Encode("<|im_start|>user<|im_end|>", false);
  EXPECT_EQ(chat.front(), 1022);
  EXPECT_EQ(chat.back(), 1023);
  EXPECT_EQ(tok->Decode(chat, true), "user");
}

TEST(SyntheticTokenizerTest, Qwen3SizedVocabulary) {
  auto made = MakeSyntheticTokenizer(151936, 40960);
  ASSERT_TRUE(made.ok());
  auto tok = Load(*made);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 151936);
  EXPECT_EQ(tok->TokenToId("<|im_end|>"), 151935);
  std::string text = "Why is the sky blue? Because the air scatters light.";
  EXPECT_EQ(tok->Decode(tok->Encode(text, false), false), text);
  for (int32_t id : {0, 255, 256, 151932, 151933}) {
    std::vector<int32_t> one = {id};
    EXPECT_FALSE(tok->Decode(one, false).empty()) << id;
  }
}

TEST(SyntheticTokenizerTest, DeterministicAndWellFormed) {
  auto a = MakeSyntheticTokenizer(600, 512);
  auto b = MakeSyntheticTokenizer(600, 512);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->tokenizer_json, b->tokenizer_json);
  EXPECT_EQ(a->tokenizer_config_json, b->tokenizer_config_json);
  auto json = nlohmann::json::parse(a->tokenizer_json);
  EXPECT_EQ(json["model"]["vocab"].size(), 597u);
  EXPECT_EQ(json["added_tokens"].size(), 3u);
  EXPECT_EQ(json["pre_tokenizer"]["pretokenizers"][0]["type"], "Split");
  EXPECT_EQ(json["decoder"]["type"], "ByteLevel");
  auto config = nlohmann::json::parse(a->tokenizer_config_json);
  EXPECT_EQ(config["eos_token"], "<|im_end|>");
  EXPECT_EQ(config["model_max_length"], 512);
  EXPECT_THAT(config["chat_template"].get<std::string>(),
              HasSubstr("<|im_start|>"));

  auto small = MakeSyntheticTokenizer(258, 512);
  ASSERT_FALSE(small.ok());
  EXPECT_THAT(small.status().message(), HasSubstr("at least 259"));
}

TEST(SyntheticTokenizerTest, MakeModelDirectoryTokenizerAndChatTemplate) {
  ScratchDir dir;
  MakeModelOptions options;
  options.preset = "tiny";
  options.out_dir = dir.path().string();
  ASSERT_TRUE(MakeModel(options).ok());
  auto tokenizer = Tokenizer::Load(dir.path().string());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  EXPECT_EQ((*tokenizer)->vocab_size(), 1024);
  EXPECT_EQ((*tokenizer)->eos_id(), 1023);
  auto chat =
      ChatTemplate::FromTokenizerConfig(dir.File("tokenizer_config.json"));
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  nlohmann::ordered_json messages = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": "Be brief."},
          {"role": "user", "content": "Hi!"}])");
  auto text = chat->Render(messages, nullptr, true, nullptr);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
  std::vector<int32_t> ids = (*tokenizer)->Encode(*text, false);
  EXPECT_EQ(ids.front(), 1022);  // <|im_start|>
  EXPECT_EQ((*tokenizer)->Decode(ids, false), *text);

  // Tools, an assistant turn with a call and null content, tool results.
  nlohmann::ordered_json tools = nlohmann::ordered_json::parse(
      R"([{"type": "function", "function": {"name": "get_weather",
           "parameters": {"type": "object"}}}])");
  nlohmann::ordered_json turns = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": "Weather?"},
          {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function":
              {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
          {"role": "tool", "tool_call_id": "c1", "content": "-3 C"},
          {"role": "tool", "tool_call_id": "c2", "content": "snow"}])");
  auto with_tools = chat->Render(turns, tools, true, nullptr);
  ASSERT_TRUE(with_tools.ok()) << with_tools.status().ToString();
  EXPECT_EQ(*with_tools,
            "<|im_start|>system\n# Tools\n\nThese functions are available; "
            "their signatures are inside <tools></tools>:\n<tools>\n"
            "{\"type\": \"function\", \"function\": {\"name\": "
            "\"get_weather\", \"parameters\": {\"type\": \"object\"}}}\n"
            "</tools>\n\nTo call functions, reply with one JSON object per "
            "call, each inside <tool_call></tool_call> tags:\n<tool_call>\n"
            "{\"name\": <function name>, \"arguments\": <arguments as a "
            "JSON object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nWeather?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", "
            "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n-3 C\n</tool_response>\n"
            "<tool_response>\nsnow\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

}  // namespace
}  // namespace tessera::model
