#include "model/make_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/test_util.h"

namespace tessera::model {
namespace {

using ::tessera::model::testing::ReadFile;
using ::tessera::model::testing::ScratchDir;
using ::tessera::model::testing::WriteFile;
using ::testing::HasSubstr;

constexpr Architecture kArchs[] = {Architecture::kQwen3, Architecture::kQwen2,
                                   Architecture::kLlama};

StatusOr<MakeModelResult> Make(const std::string& dir, Architecture arch,
                               uint64_t seed, DType dtype = TSR_DTYPE_F32) {
  MakeModelOptions options;
  options.preset = "tiny";
  options.arch = arch;
  options.out_dir = dir;
  options.seed = seed;
  options.dtype = dtype;
  return MakeModel(options);
}

std::vector<float> ReadFloats(const TensorRef& t) {
  std::vector<float> out(size_t(t.num_elements()));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = float(LoadAsDouble(t.data(), t.dtype(), int64_t(i)));
  }
  return out;
}

TEST(MakeModelTest, TinyCheckpointsOpenAndValidate) {
  for (Architecture arch : kArchs) {
    for (DType dtype : {TSR_DTYPE_F32, TSR_DTYPE_BF16}) {
      SCOPED_TRACE(std::string(ArchitectureClassName(arch)) + " " +
                   std::string(DTypeName(dtype)));
      ScratchDir dir;
      const std::string out = (dir.path() / "model").string();
      auto made = Make(out, arch, 7, dtype);
      ASSERT_TRUE(made.ok()) << made.status().ToString();
      auto ckpt = Checkpoint::Open(out);
      ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
      Status valid = (*ckpt)->Validate();
      EXPECT_TRUE(valid.ok()) << valid.ToString();

      const ModelConfig& c = (*ckpt)->config();
      EXPECT_EQ(c.architecture, arch);
      EXPECT_EQ(c.hidden_size, 64);
      EXPECT_EQ(c.num_hidden_layers, 2);
      EXPECT_EQ(c.num_attention_heads, 4);
      EXPECT_EQ(c.num_key_value_heads, 2);
      EXPECT_EQ(c.head_dim, 16);
      EXPECT_EQ(c.intermediate_size, 128);
      EXPECT_EQ(c.vocab_size, 1024);
      EXPECT_FALSE(c.tie_word_embeddings);
      EXPECT_EQ(c.torch_dtype, dtype == TSR_DTYPE_F32 ? "float32" : "bfloat16");
      EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{1023});
      EXPECT_EQ(c.bos_token_id, 1021);
      EXPECT_EQ((*ckpt)->EosTokenIds(), (std::vector<int32_t>{1023, 1021}));
      EXPECT_TRUE((*ckpt)->generation_config().do_sample);
      EXPECT_DOUBLE_EQ((*ckpt)->generation_config().temperature, 0.6);

      bool has_qk_norm =
          (*ckpt)->Find("model.layers.1.self_attn.q_norm.weight").has_value();
      bool has_bias =
          (*ckpt)->Find("model.layers.1.self_attn.q_proj.bias").has_value();
      EXPECT_EQ(has_qk_norm, arch == Architecture::kQwen3);
      EXPECT_EQ(has_bias, arch == Architecture::kQwen2);
      EXPECT_FALSE((*ckpt)->Find("model.layers.1.self_attn.o_proj.bias"));
      EXPECT_TRUE((*ckpt)->Find("lm_head.weight").has_value());
      for (const TensorRef& t : (*ckpt)->tensors()) {
        EXPECT_EQ(t.dtype(), dtype) << t.name();
      }
      EXPECT_EQ(made->num_parameters,
                int64_t((*ckpt)->total_tensor_bytes() / DTypeSize(dtype)));

      // Weights look like N(0, 0.02); norms sit near 1; all finite.
      std::vector<float> embed =
          ReadFloats(*(*ckpt)->Find("model.embed_tokens.weight"));
      double sum = 0, sq = 0;
      for (float v : embed) {
        ASSERT_TRUE(std::isfinite(v));
        sum += v;
        sq += double(v) * v;
      }
      double mean = sum / embed.size();
      double stddev = std::sqrt(sq / embed.size() - mean * mean);
      EXPECT_NEAR(mean, 0.0, 0.002);
      EXPECT_NEAR(stddev, 0.02, 0.001);
      for (float v : ReadFloats(*(*ckpt)->Find("model.norm.weight"))) {
        EXPECT_NEAR(v, 1.0f, 0.08f);
      }
    }
  }
}

TEST(MakeModelTest, SameSeedSameBytesOtherSeedOtherWeights) {
  ScratchDir dir;
  const std::string a = (dir.path() / "a").string();
  const std::string b = (dir.path() / "b").string();
  const std::string c = (dir.path() / "c").string();
  ASSERT_TRUE(Make(a, Architecture::kQwen3, 1234, TSR_DTYPE_BF16).ok());
  ASSERT_TRUE(Make(b, Architecture::kQwen3, 1234, TSR_DTYPE_BF16).ok());
  ASSERT_TRUE(Make(c, Architecture::kQwen3, 1235, TSR_DTYPE_BF16).ok());
  for (const char* name :
       {"config.json", "generation_config.json", "tokenizer.json",
        "tokenizer_config.json", "model.safetensors"}) {
    std::string bytes_a = ReadFile(a + "/" + name);
    EXPECT_FALSE(bytes_a.empty()) << name;
    EXPECT_EQ(bytes_a, ReadFile(b + "/" + name)) << name;
  }
  std::string weights_a = ReadFile(a + "/model.safetensors");
  std::string weights_c = ReadFile(c + "/model.safetensors");
  ASSERT_EQ(weights_a.size(), weights_c.size());
  EXPECT_NE(weights_a, weights_c);
  // Every tensor differs, not only some bytes.
  auto ca = Checkpoint::Open(a);
  auto cc = Checkpoint::Open(c);
  ASSERT_TRUE(ca.ok() && cc.ok());
  for (const TensorRef& t : (*ca)->tensors()) {
    auto other = (*cc)->Find(t.name());
    ASSERT_TRUE(other.has_value());
    EXPECT_NE(std::memcmp(t.data(), other->data(), t.size_bytes()), 0)
        << t.name();
  }
  EXPECT_EQ(ReadFile(a + "/tokenizer.json"), ReadFile(c + "/tokenizer.json"));
}

TEST(MakeModelTest, RefusesNonEmptyDirectoryWithoutForce) {
  ScratchDir dir;
  WriteFile(dir.File("notes.txt"), "keep me");
  auto refused = Make(dir.path().string(), Architecture::kLlama, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("--force"));
  EXPECT_THAT(refused.status().message(), HasSubstr(dir.path().string()));

  // With force: stale weights go, other files stay.
  WriteFile(dir.File("model.safetensors.index.json"), "{}");
  WriteFile(dir.File("model-00001-of-00003.safetensors"), "old");
  MakeModelOptions options;
  options.preset = "tiny";
  options.arch = Architecture::kLlama;
  options.out_dir = dir.path().string();
  options.force = true;
  auto made = MakeModel(options);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(ReadFile(dir.File("notes.txt")), "keep me");
  EXPECT_FALSE(
      std::filesystem::exists(dir.File("model.safetensors.index.json")));
  EXPECT_FALSE(
      std::filesystem::exists(dir.File("model-00001-of-00003.safetensors")));
  auto ckpt = Checkpoint::Open(dir.path().string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_TRUE((*ckpt)->Validate().ok());
}

TEST(MakeModelTest, ShardedOutput) {
  ScratchDir dir;
  MakeModelOptions options;
  options.preset = "tiny";
  options.arch = Architecture::kQwen2;
  options.out_dir = dir.path().string();
  options.dtype = TSR_DTYPE_F32;
  options.max_shard_bytes = 100 << 10;
  uint64_t last_done = 0, total = 0;
  options.progress = [&](uint64_t done, uint64_t all) {
    EXPECT_GE(done, last_done);
    last_done = done;
    total = all;
  };
  auto made = MakeModel(options);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(last_done, total);
  EXPECT_EQ(total, made->weight_bytes);
  EXPECT_FALSE(std::filesystem::exists(dir.File("model.safetensors")));
  auto ckpt = Checkpoint::Open(dir.path().string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_GT((*ckpt)->files().size(), 2u);
  Status valid = (*ckpt)->Validate();
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  // Same seed, sharded or not: the same values.
  ScratchDir single;
  ASSERT_TRUE(Make(single.path().string(), Architecture::kQwen2, 0).ok());
  auto one = Checkpoint::Open(single.path().string());
  ASSERT_TRUE(one.ok());
  for (const TensorRef& t : (*one)->tensors()) {
    auto other = (*ckpt)->Find(t.name());
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(std::memcmp(t.data(), other->data(), t.size_bytes()), 0);
  }
}

TEST(MakeModelTest, Qwen3SixHundredMillionPresetShape) {
  auto c =
      MakeModelPresetConfig("qwen3-0.6b", Architecture::kQwen3, TSR_DTYPE_BF16);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->hidden_size, 1024);
  EXPECT_EQ(c->num_hidden_layers, 28);
  EXPECT_EQ(c->num_attention_heads, 16);
  EXPECT_EQ(c->num_key_value_heads, 8);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->intermediate_size, 3072);
  EXPECT_EQ(c->vocab_size, 151936);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_EQ(c->max_position_embeddings, 40960);
  EXPECT_FALSE(c->attention_bias);
  int64_t params = 0;
  for (const WeightSpec& s : ExpectedWeights(*c)) {
    if (!s.optional) params += NumElements(s.shape);
  }
  EXPECT_EQ(params, 596049920);  // Qwen3-0.6B's parameter count
  // The JSON is what Hugging Face would read back.
  auto back = ParseModelConfig(ModelConfigToJson(*c), "c");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->head_dim, 128);

  auto unknown =
      MakeModelPresetConfig("huge", Architecture::kQwen3, TSR_DTYPE_BF16);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("tiny, small, qwen3-0.6b"));
}

}  // namespace
}  // namespace tessera::model
