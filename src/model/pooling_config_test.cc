#include "model/pooling_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "model/test_util.h"

namespace tessera::model {
namespace {

using testing::ScratchDir;
using testing::WriteFile;
using ::testing::HasSubstr;

constexpr const char* kStModules = R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
])";

void WritePooling(const ScratchDir& dir, const std::string& modules,
                  const std::string& pooling) {
  WriteFile(dir.File("modules.json"), modules);
  std::filesystem::create_directories(dir.path() / "1_Pooling");
  WriteFile(dir.File("1_Pooling/config.json"), pooling);
}

TEST(PoolingConfigTest, WithoutModulesJsonIsLastTokenNormalized) {
  ScratchDir dir;
  auto c = LoadPoolingConfig(dir.path().string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->mode, PoolingMode::kLast);
  EXPECT_TRUE(c->normalize);
}

TEST(PoolingConfigTest, ReadsQwen3EmbeddingsLayout) {
  ScratchDir dir;
  WritePooling(dir, kStModules, R"({"word_embedding_dimension": 1024,
      "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": false,
      "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false,
      "pooling_mode_weightedmean_tokens": false, "pooling_mode_lasttoken": true,
      "include_prompt": true})");
  auto c = LoadPoolingConfig(dir.path().string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->mode, PoolingMode::kLast);
  EXPECT_TRUE(c->normalize);
}

TEST(PoolingConfigTest, MeanPoolingWithoutANormalizeModule) {
  ScratchDir dir;
  WritePooling(dir, R"([{"type": "sentence_transformers.models.Transformer"},
                        {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"}])",
               R"({"pooling_mode_mean_tokens": true})");
  auto c = LoadPoolingConfig(dir.path().string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->mode, PoolingMode::kMean);
  EXPECT_FALSE(c->normalize);
}

TEST(PoolingConfigTest, RefusesWhatItCannotRunNamingIt) {
  ScratchDir dir;
  WritePooling(dir, kStModules, R"({"pooling_mode_max_tokens": true})");
  auto c = LoadPoolingConfig(dir.path().string());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("pooling_mode_max_tokens"));

  WritePooling(dir, R"([{"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"},
                        {"type": "sentence_transformers.models.Dense", "path": "2_Dense"}])",
               R"({"pooling_mode_lasttoken": true})");
  c = LoadPoolingConfig(dir.path().string());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("sentence_transformers.models.Dense"));

  WritePooling(dir, kStModules, R"({"pooling_mode_lasttoken": true, "pooling_mode_mean_tokens": true})");
  c = LoadPoolingConfig(dir.path().string());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("exactly one"));

  WriteFile(dir.File("modules.json"), "[{");
  c = LoadPoolingConfig(dir.path().string());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("modules.json: malformed JSON"));
}

TEST(PoolingConfigTest, RowsNeededPerChunk) {
  // A 10-token prompt in chunks [0, 4) and [4, 10).
  EXPECT_EQ(PoolingRows(PoolingMode::kLast, 0, 4, 10).end, 0);
  auto last = PoolingRows(PoolingMode::kLast, 4, 6, 10);
  EXPECT_EQ(last.begin, 5);
  EXPECT_EQ(last.end, 6);
  auto cls = PoolingRows(PoolingMode::kCls, 0, 4, 10);
  EXPECT_EQ(cls.begin, 0);
  EXPECT_EQ(cls.end, 1);
  EXPECT_EQ(PoolingRows(PoolingMode::kCls, 4, 6, 10).end, 0);
  auto mean = PoolingRows(PoolingMode::kMean, 4, 6, 10);
  EXPECT_EQ(mean.begin, 0);
  EXPECT_EQ(mean.end, 6);
}

TEST(PoolingConfigTest, PoolerMeansOverChunksAndNormalizes) {
  HiddenPooler mean({PoolingMode::kMean, false}, 2);
  const float a[] = {1, 2, 3, 4};
  const float b[] = {5, 6};
  mean.Add(a);
  mean.Add(b);
  EXPECT_THAT(mean.Finish(), ::testing::ElementsAre(3.0f, 4.0f));

  HiddenPooler norm({PoolingMode::kMean, true}, 2);
  norm.Add(a);
  norm.Add(b);
  auto v = norm.Finish();
  EXPECT_NEAR(v[0], 0.6, 1e-6);
  EXPECT_NEAR(v[1], 0.8, 1e-6);

  HiddenPooler last({PoolingMode::kLast, false}, 2);
  EXPECT_TRUE(last.Finish().empty());
  last.Add(b);
  EXPECT_THAT(last.Finish(), ::testing::ElementsAre(5.0f, 6.0f));
}

}  // namespace
}  // namespace tessera::model
