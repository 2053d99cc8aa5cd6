#include "model/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/safetensors_writer.h"
#include "model/test_util.h"
#include "testing/fixtures.h"

namespace tessera::model {
namespace {

using ::tessera::model::testing::ReadFile;
using ::tessera::model::testing::ScratchDir;
using ::tessera::model::testing::WriteFile;
using ::testing::HasSubstr;

TEST(CheckpointTest, Stories260kOpensAndValidates) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  auto ckpt = Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  const ModelConfig& c = (*ckpt)->config();
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_TRUE(c.tie_word_embeddings);
  Status valid = (*ckpt)->Validate();
  EXPECT_TRUE(valid.ok()) << valid.ToString();

  // Every expected tensor is there with its shape; lm_head is tied away.
  std::vector<WeightSpec> expected = ExpectedWeights(c);
  size_t required = 0;
  for (const WeightSpec& spec : expected) {
    auto t = (*ckpt)->Find(spec.name);
    if (spec.optional) {
      EXPECT_EQ(spec.name, kLmHeadName);
      EXPECT_FALSE(t.has_value());
      continue;
    }
    ++required;
    ASSERT_TRUE(t.has_value()) << spec.name;
    EXPECT_EQ(t->shape(), spec.shape) << spec.name;
    EXPECT_EQ(t->dtype(), TSR_DTYPE_F32);
    EXPECT_EQ(t->size_bytes(), size_t(NumElements(spec.shape)) * 4);
    EXPECT_THAT(t->path(), HasSubstr("model.safetensors"));
  }
  EXPECT_EQ(required, 47u);
  EXPECT_EQ((*ckpt)->num_tensors(), 47u);
  EXPECT_EQ((*ckpt)->Find("model.layers.0.self_attn.k_proj.weight")->shape(),
            (Shape{32, 64}));

  auto norm = (*ckpt)->Get("model.norm.weight");
  ASSERT_TRUE(norm.ok());
  float first;
  std::memcpy(&first, norm->data(), 4);
  EXPECT_EQ(first, 2.4583089351654053f);  // read with Python's struct
  auto down = (*ckpt)->Get("model.layers.4.mlp.down_proj.weight");
  ASSERT_TRUE(down.ok());
  float last;
  std::memcpy(&last, down->data() + down->size_bytes() - 4, 4);
  EXPECT_EQ(last, -0.0023480223026126623f);

  EXPECT_EQ((*ckpt)->EosTokenIds(), std::vector<int32_t>{2});
  EXPECT_EQ((*ckpt)->generation_config().bos_token_id, 1);
  EXPECT_EQ((*ckpt)->Get("lm_head.weight").status().code(),
            StatusCode::kNotFound);
}

// A small Qwen2-shaped config used by the broken-checkpoint tests.
ModelConfig SmallConfig() {
  ModelConfig c;
  c.architecture = Architecture::kQwen2;
  c.hidden_size = 16;
  c.intermediate_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.vocab_size = 50;
  c.max_position_embeddings = 128;
  c.attention_bias = true;
  c.tie_word_embeddings = false;
  c.torch_dtype = "float32";
  c.eos_token_ids = {7};
  return c;
}

// Writes config.json and a model.safetensors of zeros for `specs`.
void WriteCheckpoint(const ScratchDir& dir, const ModelConfig& config,
                     const std::vector<WeightSpec>& specs,
                     const std::string& file = "model.safetensors") {
  WriteFile(dir.File("config.json"), ModelConfigToJson(config));
  std::vector<std::vector<float>> data;
  std::vector<TensorBytes> tensors;
  data.reserve(specs.size());
  for (const WeightSpec& spec : specs) {
    data.emplace_back(size_t(NumElements(spec.shape)), 0.5f);
    tensors.push_back({{spec.name, TSR_DTYPE_F32, spec.shape},
                       std::as_bytes(std::span<const float>(data.back()))});
  }
  ASSERT_TRUE(WriteSafetensors(dir.File(file), tensors).ok());
}

std::vector<WeightSpec> Required(const ModelConfig& c) {
  std::vector<WeightSpec> out;
  for (WeightSpec& s : ExpectedWeights(c)) {
    if (!s.optional) out.push_back(std::move(s));
  }
  return out;
}

// A sentence-transformers export (Qwen3-Embedding's layout) names the base
// model's tensors without "model." and has no lm_head: they are indexed as
// model.*, so the same spec validates and loads them.
TEST(CheckpointTest, BaseModelNamesWithoutThePrefixAreReadAsModelNames) {
  ScratchDir dir;
  ModelConfig c = SmallConfig();
  std::vector<WeightSpec> specs = Required(c);
  for (WeightSpec& s : specs) {
    if (s.name.rfind("model.", 0) == 0) s.name = s.name.substr(6);
  }
  specs.erase(std::remove_if(specs.begin(), specs.end(),
                             [](const WeightSpec& s) { return s.name == kLmHeadName; }),
              specs.end());
  WriteCheckpoint(dir, c, specs);
  auto ckpt = Checkpoint::Open(dir.path().string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  auto embed = (*ckpt)->Get(kEmbedTokensName);
  ASSERT_TRUE(embed.ok()) << embed.status().ToString();
  EXPECT_EQ(embed->name(), kEmbedTokensName);
  EXPECT_TRUE((*ckpt)->Find("model.layers.1.mlp.down_proj.weight").has_value());
  EXPECT_FALSE((*ckpt)->Find("embed_tokens.weight").has_value());
  // Untied and without lm_head: only an embedding runner accepts it.
  Status full = (*ckpt)->Validate();
  ASSERT_FALSE(full.ok());
  EXPECT_THAT(full.message(), HasSubstr("missing tensor lm_head.weight"));
  EXPECT_THAT(full.message(), HasSubstr("--is-embedding"));
  Status headless = (*ckpt)->Validate(ExpectedEmbeddingWeights(c));
  EXPECT_TRUE(headless.ok()) << headless.ToString();
}

TEST(CheckpointTest, ExpectedWeightsPerArchitecture) {
  ModelConfig c = SmallConfig();
  auto names = [](const std::vector<WeightSpec>& specs) {
    std::vector<std::string> out;
    for (const auto& s : specs) out.push_back(s.name);
    return out;
  };
  auto qwen2 = ExpectedWeights(c);
  EXPECT_THAT(names(qwen2),
              ::testing::Contains("model.layers.1.self_attn.k_proj.bias"));
  EXPECT_THAT(names(qwen2), ::testing::Not(::testing::Contains(
                                "model.layers.0.self_attn.o_proj.bias")));
  EXPECT_EQ(qwen2.size(),
            2u + 2 * 12 + 1);  // embed, 12 per layer, norm, lm_head
  c.architecture = Architecture::kQwen3;
  c.attention_bias = false;
  c.tie_word_embeddings = true;
  auto qwen3 = ExpectedWeights(c);
  EXPECT_THAT(names(qwen3),
              ::testing::Contains("model.layers.0.self_attn.q_norm.weight"));
  EXPECT_EQ(qwen3.back().name, "lm_head.weight");
  EXPECT_TRUE(qwen3.back().optional);
  for (const auto& s : qwen3) {
    if (s.name.find("q_norm") != std::string::npos) {
      EXPECT_EQ(s.shape, Shape{4});
    }
    if (s.name.find("o_proj.weight") != std::string::npos) {
      EXPECT_EQ(s.shape, (Shape{16, 16}));
    }
    if (s.name.find("k_proj.weight") != std::string::npos) {
      EXPECT_EQ(s.shape, (Shape{8, 16}));
    }
    if (s.name.find("down_proj") != std::string::npos) {
      EXPECT_EQ(s.shape, (Shape{16, 32}));
    }
  }
  c.architecture = Architecture::kLlama;
  auto llama = ExpectedWeights(c);
  EXPECT_EQ(llama.size(), 2u + 2 * 9 + 1);
}

TEST(CheckpointTest, ValidCheckpointWithIgnoredAndTiedTensors) {
  ScratchDir dir;
  ModelConfig c = SmallConfig();
  c.architecture = Architecture::kLlama;
  c.attention_bias = false;
  c.tie_word_embeddings = true;
  auto specs = Required(c);
  specs.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", {2}});
  specs.push_back({"lm_head.weight", {50, 16}});  // a tied copy is accepted
  WriteCheckpoint(dir, c, specs);
  auto ckpt = Checkpoint::Open(dir.path().string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  Status s = (*ckpt)->Validate();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ((*ckpt)->EosTokenIds(), std::vector<int32_t>{7});
}

// Opens `dir` and validates; expects a failure whose message holds `parts`.
void ExpectInvalid(const ScratchDir& dir, std::vector<std::string> parts,
                   StatusCode code = StatusCode::kInvalidArgument) {
  auto ckpt = Checkpoint::Open(dir.path().string());
  Status s = ckpt.ok() ? (*ckpt)->Validate() : ckpt.status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.ToString();
  for (const std::string& part : parts) {
    EXPECT_THAT(s.message(), HasSubstr(part));
  }
}

TEST(CheckpointTest, MissingTensor) {
  ScratchDir dir;
  ModelConfig c = SmallConfig();
  auto specs = Required(c);
  specs.erase(std::find_if(specs.begin(), specs.end(), [](const auto& s) {
    return s.name == "model.layers.1.mlp.up_proj.weight";
  }));
  WriteCheckpoint(dir, c, specs);
  ExpectInvalid(
      dir, {"1 problem", "missing tensor model.layers.1.mlp.up_proj.weight",
            "expected shape [32, 16]", "Qwen2ForCausalLM"});
}

TEST(CheckpointTest, UnexpectedTensor) {
  ScratchDir dir;
  ModelConfig c = SmallConfig();
  auto specs = Required(c);
  specs.push_back({"model.layers.0.self_attn.o_proj.bias", {16}});
  WriteCheckpoint(dir, c, specs);
  ExpectInvalid(dir, {"unexpected tensor model.layers.0.self_attn.o_proj.bias",
                      "(shape [16])", dir.File("model.safetensors")});
}

TEST(CheckpointTest, WrongShape) {
  ScratchDir dir;
  ModelConfig c = SmallConfig();
  auto specs = Required(c);
  for (auto& s : specs) {
    if (s.name == "model.layers.0.self_attn.k_proj.weight") s.shape = {16, 16};
  }
  WriteCheckpoint(dir, c, specs);
  ExpectInvalid(
      dir,
      {"shape mismatch for model.layers.0.self_attn.k_proj.weight",
       dir.File("model.safetensors"), "expected [8, 16]", "found [16, 16]"});
}

TEST(CheckpointTest, ReportsEveryProblemAtOnce) {
  ScratchDir dir;
  ModelConfig c = SmallConfig();
  ModelConfig other = c;
  other.num_hidden_layers = 3;
  other.vocab_size = 60;
  WriteCheckpoint(dir, c, Required(other));  // config says 2 layers, V 50
  ExpectInvalid(dir, {"unexpected tensor model.layers.2.mlp.down_proj.weight",
                      "shape mismatch for model.embed_tokens.weight",
                      "expected [50, 16], found [60, 16]",
                      "shape mismatch for lm_head.weight"});
}

TEST(CheckpointTest, UnsupportedArchitecture) {
  ScratchDir dir;
  WriteCheckpoint(dir, SmallConfig(), Required(SmallConfig()));
  std::string config = ReadFile(dir.File("config.json"));
  config.replace(config.find("Qwen2ForCausalLM"), 16, "GPT2LMHeadModel");
  WriteFile(dir.File("config.json"), config);
  ExpectInvalid(
      dir, {dir.File("config.json"), "\"GPT2LMHeadModel\"", "Qwen3ForCausalLM"},
      StatusCode::kUnimplemented);
}

TEST(CheckpointTest, MalformedConfig) {
  ScratchDir dir;
  WriteCheckpoint(dir, SmallConfig(), Required(SmallConfig()));
  WriteFile(dir.File("config.json"), "{\"architectures\": [\"Qwen2For");
  ExpectInvalid(dir, {dir.File("config.json"), "malformed JSON"});
  WriteFile(dir.File("generation_config.json"), "{");
  WriteFile(dir.File("config.json"), ModelConfigToJson(SmallConfig()));
  ExpectInvalid(dir, {dir.File("generation_config.json"), "malformed JSON"});
}

TEST(CheckpointTest, TruncatedWeights) {
  ScratchDir dir;
  WriteCheckpoint(dir, SmallConfig(), Required(SmallConfig()));
  std::string bytes = ReadFile(dir.File("model.safetensors"));
  WriteFile(dir.File("model.safetensors"), bytes.substr(0, bytes.size() - 100));
  ExpectInvalid(dir, {dir.File("model.safetensors"), "truncated"},
                StatusCode::kDataLoss);
}

TEST(CheckpointTest, UnsupportedDTypeInCheckpoint) {
  ScratchDir dir;
  WriteFile(dir.File("config.json"), ModelConfigToJson(SmallConfig()));
  WriteFile(
      dir.File("model.safetensors"),
      testing::RawSafetensors(
          R"({"model.embed_tokens.weight":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})",
          "ab"));
  ExpectInvalid(
      dir,
      {dir.File("model.safetensors"), "model.embed_tokens.weight", "dtype I8"},
      StatusCode::kUnimplemented);
}

TEST(CheckpointTest, MissingFiles) {
  ScratchDir dir;
  ExpectInvalid(dir, {"no config.json"}, StatusCode::kNotFound);
  WriteFile(dir.File("config.json"), ModelConfigToJson(SmallConfig()));
  ExpectInvalid(dir, {"no weights", "model.safetensors.index.json"},
                StatusCode::kNotFound);
  WriteFile(dir.File("pytorch_model.bin"), "x");
  ExpectInvalid(dir, {"pytorch_model.bin", "convert it to safetensors"},
                StatusCode::kNotFound);
  auto missing = Checkpoint::Open(dir.File("nothing-here"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// Writes the required tensors of SmallConfig into two shards and an index.
void WriteSharded(const ScratchDir& dir) {
  ModelConfig c = SmallConfig();
  auto specs = Required(c);
  size_t half = specs.size() / 2;
  std::vector<WeightSpec> first(specs.begin(), specs.begin() + half);
  std::vector<WeightSpec> second(specs.begin() + half, specs.end());
  WriteCheckpoint(dir, c, first, "model-00001-of-00002.safetensors");
  WriteCheckpoint(dir, c, second, "model-00002-of-00002.safetensors");
  nlohmann::json map;
  for (const auto& s : first) map[s.name] = "model-00001-of-00002.safetensors";
  for (const auto& s : second) map[s.name] = "model-00002-of-00002.safetensors";
  nlohmann::json index = {{"metadata", {{"total_size", 0}}},
                          {"weight_map", map}};
  WriteFile(dir.File("model.safetensors.index.json"), index.dump(2));
}

TEST(CheckpointTest, ShardedCheckpoint) {
  ScratchDir dir;
  WriteSharded(dir);
  auto ckpt = Checkpoint::Open(dir.path().string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_TRUE((*ckpt)->Validate().ok());
  EXPECT_EQ((*ckpt)->files().size(), 2u);
  EXPECT_THAT((*ckpt)->Find("model.norm.weight")->path(),
              HasSubstr("model-00002-of-00002.safetensors"));
  EXPECT_THAT((*ckpt)->Find("model.embed_tokens.weight")->path(),
              HasSubstr("model-00001-of-00002.safetensors"));
}

TEST(CheckpointTest, MissingShard) {
  ScratchDir dir;
  WriteSharded(dir);
  std::filesystem::remove(dir.File("model-00002-of-00002.safetensors"));
  ExpectInvalid(dir,
                {"model-00002-of-00002.safetensors", "missing",
                 "model.safetensors.index.json"},
                StatusCode::kNotFound);
}

TEST(CheckpointTest, InconsistentIndex) {
  ScratchDir dir;
  WriteSharded(dir);
  auto index =
      nlohmann::json::parse(ReadFile(dir.File("model.safetensors.index.json")));
  index["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";
  WriteFile(dir.File("model.safetensors.index.json"), index.dump());
  ExpectInvalid(dir, {"\"model.norm.weight\"",
                      "model-00001-of-00002.safetensors", "no such tensor"});

  WriteFile(dir.File("model.safetensors.index.json"), "{\"weight_map\": [");
  ExpectInvalid(dir, {"model.safetensors.index.json", "malformed JSON"});
  WriteFile(dir.File("model.safetensors.index.json"),
            R"({"weight_map": {"a": "../escape.safetensors"}})");
  ExpectInvalid(dir, {"weight_map[\"a\"]"});
}

TEST(CheckpointTest, TensorInTwoShards) {
  ScratchDir dir;
  WriteSharded(dir);
  ModelConfig c = SmallConfig();
  // Put model.norm.weight into the first shard as well.
  auto specs = Required(c);
  std::vector<WeightSpec> first(specs.begin(),
                                specs.begin() + specs.size() / 2);
  first.push_back({"model.norm.weight", {16}});
  WriteCheckpoint(dir, c, first, "model-00001-of-00002.safetensors");
  ExpectInvalid(dir, {"\"model.norm.weight\" is in both"});
}

}  // namespace
}  // namespace tessera::model
