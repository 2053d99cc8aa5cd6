// The tokenizer a GGUF carries, rebuilt by TokenizerFilesFromGguf, against
// the Hugging Face original it was written from (gguf_vocab.h writes the
// metadata the way llama.cpp's converter does): the real Qwen3 tokenizer
// (byte-level "gpt2", pre "qwen2") on its golden encodings and chat
// renderings — the chat template taken from the GGUF — and the real
// stories260k tokenizer (SentencePiece "llama", merges rebuilt from
// scores) on its golden prompts and on text that needs byte fallback.
#include "gguf/gguf_tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_vocab.h"
#include "gguf/gguf_writer.h"
#include "testing/fixtures.h"
#include "testing/goldens.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tessera::gguf {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

struct Rebuilt {
  std::unique_ptr<Tokenizer> tokenizer;
  GgufTokenizerFiles files;
};

// Writes `model_dir`'s tokenizer into a metadata-only GGUF and rebuilds it.
Rebuilt ThroughGguf(const std::string& model_dir, const VocabOptions& options) {
  const std::string path =
      (fs::temp_directory_path() /
       ("tessera_gguf_tok_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  GgufWriter writer;
  writer.SetString("general.architecture", "llama");
  auto summary = AddTokenizerMetadata(model_dir, options, writer);
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(writer.WriteFile(path).ok());
  auto file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  Rebuilt out;
  auto files = TokenizerFilesFromGguf(**file);
  EXPECT_TRUE(files.ok()) << files.status().ToString();
  fs::remove(path);
  if (!files.ok()) return out;
  out.files = std::move(*files);
  auto tok = Tokenizer::FromJsonText(out.files.tokenizer_json,
                                     out.files.tokenizer_config_json, "gguf");
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  if (tok.ok()) out.tokenizer = std::move(*tok);
  return out;
}

std::vector<int32_t> Ids(const Json& j) { return j.get<std::vector<int32_t>>(); }

TEST(GgufTokenizerTest, Qwen3SurvivesTheRoundTrip) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  VocabOptions options;
  options.vocab_size = 151936;  // Qwen3's embedding rows: PAD holes at the end
  options.eos_token_id = 151645;
  Rebuilt r = ThroughGguf(dir, options);
  ASSERT_NE(r.tokenizer, nullptr);
  EXPECT_EQ(r.files.model, "gpt2");
  EXPECT_EQ(r.files.pre, "qwen2");
  const Tokenizer& tok = *r.tokenizer;
  EXPECT_EQ(tok.eos_id(), 151645);
  EXPECT_FALSE(tok.bos_id().has_value());
  EXPECT_TRUE(tok.IsSpecial(151644));    // <|im_start|>: CONTROL
  EXPECT_FALSE(tok.IsSpecial(151667));   // <think>: USER_DEFINED
  for (const Json& c : tessera::testing::ReadJsonLines<Json>(dir + "/golden_encode.jsonl")) {
    const std::string text = c["text"];
    EXPECT_EQ(tok.Encode(text, false), Ids(c["ids"])) << text;
  }
  ASSERT_TRUE(r.files.chat_template.has_value());
  auto chat = ChatTemplate::FromString(*r.files.chat_template, "",
                                       tok.eos_token());
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  for (const Json& c : tessera::testing::ReadJsonLines<Json>(dir + "/golden_chat.jsonl")) {
    Json kwargs = Json::object();
    if (c.contains("enable_thinking")) kwargs["enable_thinking"] = c["enable_thinking"];
    auto rendered = chat->Render(c["messages"], c.value("tools", Json()),
                                 c.value("add_generation_prompt", true), kwargs);
    ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
    EXPECT_EQ(*rendered, c["rendered"]) << c["name"];
    EXPECT_EQ(tok.Encode(*rendered, false), Ids(c["ids"])) << c["name"];
    EXPECT_EQ(tok.Decode(Ids(c["ids"]), false), c["rendered"]) << c["name"];
  }
}

TEST(GgufTokenizerTest, Stories260kSurvivesTheRoundTrip) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  VocabOptions options;
  options.vocab_size = 512;
  options.bos_token_id = 1;
  options.eos_token_id = 2;
  Rebuilt r = ThroughGguf(dir, options);
  ASSERT_NE(r.tokenizer, nullptr);
  EXPECT_EQ(r.files.model, "llama");
  auto original = Tokenizer::Load(dir);
  ASSERT_TRUE(original.ok());
  const Tokenizer& tok = *r.tokenizer;
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  for (const Json& c : tessera::testing::ReadJsonLines<Json>(dir + "/golden_greedy.jsonl")) {
    EXPECT_EQ(tok.Encode(c["prompt"].get<std::string>(), true),
              Ids(c["prompt_ids"]));
    Json all = c["prompt_ids"];
    for (const Json& id : c["greedy_output_ids"]) all.push_back(id);
    EXPECT_EQ(tok.Decode(Ids(all), true), (*original)->Decode(Ids(all), true));
  }
  // Byte fallback, multi-byte characters, runs of spaces, newlines.
  for (const std::string text :
       {"Once upon a time, Lily and Ben went to the park.",
        "  two  spaces\nand a newline", "caf\u00e9 \u732b \U0001F600 !?",
        "the theatre thereafter"}) {
    EXPECT_EQ(tok.Encode(text, true), (*original)->Encode(text, true)) << text;
    EXPECT_EQ(tok.Decode(tok.Encode(text, false), false), text);
  }
}

}  // namespace
}  // namespace tessera::gguf
