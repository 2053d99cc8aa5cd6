// Checkpoint::OpenGguf on files convert-gguf writes from make-model
// checkpoints of every architecture: the config rebuilt from the metadata
// equals the folder's, every tensor reads back under its Hugging Face name
// with the same values (Llama's interleaved q/k rows put back in order,
// Qwen2's biases, Qwen3's q/k norms, tied heads), Llama 3 rope scaling
// survives as rope_freqs.weight, and a Q8_0 file reads back within Q8_0's
// rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "gguf/convert.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "model/model_config.h"
#include "model/test_util.h"

namespace tessera::gguf {
namespace {

using model::Architecture;
using model::testing::ScratchDir;

std::string MakeTiny(const ScratchDir& dir, Architecture arch) {
  model::MakeModelOptions options;
  options.preset = "tiny";
  options.arch = arch;
  options.out_dir = dir.File("model");
  options.dtype = TSR_DTYPE_F32;
  auto made = model::MakeModel(options);
  EXPECT_TRUE(made.ok()) << made.status().message();
  return options.out_dir;
}

std::vector<float> All(const model::TensorRef& t) {
  const int64_t rows = t.shape().empty() ? 1 : t.shape()[0];
  const int64_t width = t.num_elements() / rows;
  std::vector<float> out(size_t(t.num_elements()));
  t.ReadRows(0, rows, 0, width, TSR_DTYPE_F32, out.data());
  return out;
}

void ExpectSameConfig(const model::ModelConfig& a, const model::ModelConfig& b) {
  EXPECT_EQ(a.architecture, b.architecture);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.intermediate_size, b.intermediate_size);
  EXPECT_EQ(a.num_hidden_layers, b.num_hidden_layers);
  EXPECT_EQ(a.num_attention_heads, b.num_attention_heads);
  EXPECT_EQ(a.num_key_value_heads, b.num_key_value_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
  EXPECT_FLOAT_EQ(float(a.rms_norm_eps), float(b.rms_norm_eps));
  EXPECT_FLOAT_EQ(float(a.rope_theta), float(b.rope_theta));
  EXPECT_EQ(a.tie_word_embeddings, b.tie_word_embeddings);
  EXPECT_EQ(a.has_qkv_bias(), b.has_qkv_bias());
  EXPECT_EQ(a.rope_scaling.type, b.rope_scaling.type);
  EXPECT_NEAR(a.rope_scaling.factor, b.rope_scaling.factor, 1e-5);
  EXPECT_EQ(a.rope_scaling.original_max_position_embeddings,
            b.rope_scaling.original_max_position_embeddings);
}

class GgufCheckpointTest : public ::testing::TestWithParam<Architecture> {};

TEST_P(GgufCheckpointTest, F32FileReadsBackAsTheFolder) {
  ScratchDir dir;
  const std::string folder = MakeTiny(dir, GetParam());
  const std::string file = dir.File("model.gguf");
  ASSERT_TRUE(ConvertCheckpointToGguf(folder, file, TensorType::kF32).ok());
  auto original = model::Checkpoint::Open(folder);
  auto gguf = model::Checkpoint::Open(file);
  ASSERT_TRUE(original.ok());
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  EXPECT_TRUE((*gguf)->is_gguf());
  ExpectSameConfig((*gguf)->config(), (*original)->config());
  EXPECT_TRUE((*gguf)->Validate().ok()) << (*gguf)->Validate().ToString();
  EXPECT_TRUE((*gguf)->QuantizedLinearTypes().empty());
  EXPECT_EQ((*gguf)->EosTokenIds().front(), (*original)->EosTokenIds().front());
  size_t compared = 0;
  for (const model::TensorRef& t : (*original)->tensors()) {
    if (t.name() == model::kLmHeadName && (*original)->config().tie_word_embeddings) {
      continue;
    }
    auto g = (*gguf)->Get(t.name());
    ASSERT_TRUE(g.ok()) << t.name();
    EXPECT_EQ(g->shape(), t.shape()) << t.name();
    EXPECT_EQ(All(*g), All(t)) << t.name();
    ++compared;
  }
  EXPECT_EQ(compared, (*gguf)->num_tensors());
}

TEST_P(GgufCheckpointTest, Q8_0FileReadsBackWithinItsRounding) {
  ScratchDir dir;
  const std::string folder = MakeTiny(dir, GetParam());
  const std::string file = dir.File("model.gguf");
  ASSERT_TRUE(ConvertCheckpointToGguf(folder, file, TensorType::kQ8_0).ok());
  auto original = model::Checkpoint::Open(folder);
  auto gguf = model::Checkpoint::Open(file);
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  EXPECT_EQ((*gguf)->QuantizedLinearTypes(), std::vector<std::string>{"q8_0"});
  for (const model::TensorRef& t : (*gguf)->tensors()) {
    const std::vector<float> got = All(t);
    const std::vector<float> want = All(*(*original)->Get(t.name()));
    // Within half a step of each 32-block's scale (max |x| / 127), plus the
    // scale's own rounding to f16 (2^-11 relative, times |q| <= 127).
    const int64_t width = t.shape().size() == 2 ? t.shape()[1] : 1;
    for (size_t i = 0; i < got.size(); i += 32) {
      float amax = 0;
      for (size_t j = i; j < i + 32 && j < got.size(); ++j) {
        amax = std::max(amax, std::fabs(want[j]));
      }
      for (size_t j = i; j < i + 32 && j < got.size(); ++j) {
        EXPECT_NEAR(got[j], want[j], amax / 127 * 0.5 + amax / 1024 + 1e-7)
            << t.name() << " element " << j << " (width " << width << ")";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, GgufCheckpointTest,
                         ::testing::Values(Architecture::kLlama,
                                           Architecture::kQwen2,
                                           Architecture::kQwen3),
                         [](const auto& info) {
                           return std::string(
                               model::ArchitectureModelType(info.param));
                         });

TEST(GgufCheckpointLlama3Test, RopeScalingSurvivesAsRopeFreqs) {
  ScratchDir dir;
  const std::string folder = MakeTiny(dir, Architecture::kLlama);
  auto config = model::LoadModelConfig(folder + "/config.json");
  ASSERT_TRUE(config.ok());
  config->rope_scaling.type = model::RopeScaling::Type::kLlama3;
  config->rope_scaling.factor = 8.0;
  config->rope_scaling.low_freq_factor = 1.0;
  config->rope_scaling.high_freq_factor = 4.0;
  config->rope_scaling.original_max_position_embeddings = 8192;
  config->rope_theta = 500000.0;
  std::ofstream(folder + "/config.json") << model::ModelConfigToJson(*config);
  const std::string file = dir.File("llama3.gguf");
  ASSERT_TRUE(ConvertCheckpointToGguf(folder, file, TensorType::kF32).ok());
  auto gguf = model::Checkpoint::Open(file);
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  ExpectSameConfig((*gguf)->config(), *config);
  EXPECT_TRUE((*gguf)->Validate().ok());  // rope_freqs is not a weight
}

}  // namespace
}  // namespace tessera::gguf
