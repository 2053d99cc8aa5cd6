#include "model/generation_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tessera::model {
namespace {

using ::testing::HasSubstr;

TEST(GenerationConfigTest, AbsentFileGivesDefaults) {
  auto g = LoadGenerationConfig("/nonexistent/generation_config.json");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_FALSE(g->do_sample);
  EXPECT_DOUBLE_EQ(g->temperature, 1.0);
  EXPECT_DOUBLE_EQ(g->top_p, 1.0);
  EXPECT_EQ(g->top_k, 50);
  EXPECT_DOUBLE_EQ(g->min_p, 0.0);
  EXPECT_DOUBLE_EQ(g->repetition_penalty, 1.0);
  EXPECT_EQ(g->max_new_tokens, 0);
  EXPECT_TRUE(g->eos_token_ids.empty());
  EXPECT_TRUE(g->present.empty());
}

TEST(GenerationConfigTest, Stories260k) {
  TSR_REQUIRE_SHARED_FIXTURE(path, "models/stories260k/generation_config.json");
  auto g = LoadGenerationConfig(path);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->eos_token_ids, std::vector<int32_t>{2});
  EXPECT_EQ(g->bos_token_id, 1);
  EXPECT_TRUE(g->Has("eos_token_id"));
  EXPECT_FALSE(g->Has("temperature"));
}

TEST(GenerationConfigTest, ParsesQwenStyleFile) {
  auto g = ParseGenerationConfig(R"({
      "bos_token_id": 151643, "do_sample": true,
      "eos_token_id": [151645, 151643], "pad_token_id": 151643,
      "temperature": 0.6, "top_k": 20, "top_p": 0.95, "min_p": 0.05,
      "repetition_penalty": 1.1, "max_new_tokens": 512,
      "transformers_version": "4.51.0"})",
                                 "g.json");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(g->do_sample);
  EXPECT_DOUBLE_EQ(g->temperature, 0.6);
  EXPECT_EQ(g->top_k, 20);
  EXPECT_DOUBLE_EQ(g->top_p, 0.95);
  EXPECT_DOUBLE_EQ(g->min_p, 0.05);
  EXPECT_DOUBLE_EQ(g->repetition_penalty, 1.1);
  EXPECT_EQ(g->max_new_tokens, 512);
  EXPECT_EQ(g->eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  EXPECT_EQ(g->pad_token_id, 151643);
  EXPECT_TRUE(g->Has("min_p"));
  EXPECT_FALSE(g->Has("transformers_version"));

  auto back = ParseGenerationConfig(GenerationConfigToJson(*g), "back");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->present, g->present);
  EXPECT_DOUBLE_EQ(back->temperature, 0.6);
  EXPECT_EQ(back->eos_token_ids, g->eos_token_ids);
}

TEST(GenerationConfigTest, RejectsBadValues) {
  for (std::string_view json :
       {R"({"temperature": "hot"})", R"({"temperature": -1})",
        R"({"top_p": 0})", R"({"top_p": 1.5})", R"({"top_k": -3})",
        R"({"min_p": 2})", R"({"repetition_penalty": 0})",
        R"({"do_sample": 1})", R"({"eos_token_id": "x"})", R"({"a": )",
        // A whole float far past int64 (found by fuzz/model_files_fuzzer:
        // converting it was undefined behaviour).
        R"({"eos_token_id": [1, 2.5e100]})", R"({"top_k": -1e300})"}) {
    auto g = ParseGenerationConfig(json, "/m/generation_config.json");
    ASSERT_FALSE(g.ok()) << json;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(g.status().message(), HasSubstr("/m/generation_config.json"));
  }
}

}  // namespace
}  // namespace tessera::model
