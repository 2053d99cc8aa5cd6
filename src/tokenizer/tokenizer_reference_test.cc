// Replays testdata/hf_reference.jsonl: encode and decode results computed by
// Hugging Face's tokenizers library (see testdata/make_hf_reference.js) for
// the shared tokenizers and for variants of them that switch in other
// normalizers, pre-tokenizers, decoders, post-processors and added-token
// flags. Every case must match exactly, and streaming must equal decoding.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "testing/fixtures.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

using nlohmann::json;

std::vector<json> ReadReference() {
  std::vector<json> lines;
  std::ifstream in(std::string(TESSERA_TOKENIZER_TESTDATA) +
                   "/hf_reference.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(json::parse(line));
  }
  return lines;
}

class HfReference : public ::testing::TestWithParam<std::string> {};

TEST_P(HfReference, MatchesEveryCase) {
  TSR_REQUIRE_SHARED_FIXTURE(shared_qwen, "tokenizers/qwen3/tokenizer.json");
  TSR_REQUIRE_SHARED_FIXTURE(shared_stories,
                             "models/stories260k/tokenizer.json");
  const std::vector<json> lines = ReadReference();
  ASSERT_FALSE(lines.empty()) << "testdata/hf_reference.jsonl is missing";

  const json* spec = nullptr;
  for (const json& l : lines) {
    if (l["kind"] == "variant" && l["name"] == GetParam()) spec = &l;
  }
  ASSERT_NE(spec, nullptr) << "no variant " << GetParam();

  // Build the variant's tokenizer.json from the shared one.
  std::ifstream in(testing::SharedDir() + "/" +
                   (*spec)["base"].get<std::string>());
  std::stringstream buffer;
  buffer << in.rdbuf();
  json config = json::parse(buffer.str());
  for (const auto& [pointer, value] : (*spec)["set"].items()) {
    config[json::json_pointer(pointer)] = value;
  }
  for (const json& token : (*spec)["append_added_tokens"]) {
    config["added_tokens"].push_back(token);
  }
  auto loaded = Tokenizer::FromJsonText(config.dump(), "", GetParam());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const Tokenizer& tok = **loaded;

  int cases = 0, failures = 0;
  for (const json& l : lines) {
    if (l.value("variant", "") != GetParam() || failures > 20) continue;
    ++cases;
    if (l["kind"] == "encode") {
      const std::string text = l["text"];
      const auto ids = tok.Encode(text, l["add"].get<bool>());
      if (ids != l["ids"].get<std::vector<int32_t>>()) ++failures;
      EXPECT_EQ(json(ids), l["ids"])
          << "encode " << json(text).dump() << " add=" << l["add"];
    } else {
      const auto ids = l["ids"].get<std::vector<int32_t>>();
      const bool skip = l["skip"];
      const std::string text = tok.Decode(ids, skip);
      if (text != l["text"].get<std::string>()) ++failures;
      EXPECT_EQ(text, l["text"].get<std::string>())
          << "decode " << l["ids"].dump() << " skip=" << skip;
      IncrementalDetokenizer detok(tok, skip);
      std::string streamed;
      for (int32_t id : ids) streamed += detok.Add(id);
      streamed += detok.Flush();
      EXPECT_EQ(streamed, text) << "stream " << l["ids"].dump();
    }
  }
  EXPECT_GT(cases, 50);
}

INSTANTIATE_TEST_SUITE_P(Variants, HfReference,
                         ::testing::Values("qwen3", "stories260k",
                                           "stories_metaspace_first",
                                           "stories_metaspace_always_bos_eos",
                                           "stories_nfkc_lowercase_unk",
                                           "qwen_ignore_merges_template",
                                           "qwen_gpt2_bytelevel",
                                           "qwen_split_behaviours"));

}  // namespace
}  // namespace tessera
