#include "model/model_config.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "testing/fixtures.h"

namespace tessera::model {
namespace {

using ::testing::HasSubstr;

TEST(ModelConfigTest, Stories260k) {
  TSR_REQUIRE_SHARED_FIXTURE(path, "models/stories260k/config.json");
  auto config = LoadModelConfig(path);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const ModelConfig& c = *config;
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kDefault);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.has_qk_norm());
  EXPECT_EQ(c.torch_dtype, "float32");
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{2});
  EXPECT_EQ(c.hidden_act, "silu");
}

constexpr std::string_view kMinimal = R"({
  "architectures": ["%s"], "hidden_size": 256, "intermediate_size": 512,
  "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1000 %s})";

std::string Minimal(std::string_view arch, std::string_view extra = "") {
  std::string out(kMinimal);
  out.replace(out.find("%s"), 2, arch);
  out.replace(out.find("%s"), 2, extra);
  return out;
}

TEST(ModelConfigTest, HuggingFaceDefaults) {
  auto llama = ParseModelConfig(Minimal("LlamaForCausalLM"), "config.json");
  ASSERT_TRUE(llama.ok()) << llama.status().ToString();
  EXPECT_EQ(llama->num_key_value_heads, 8);
  EXPECT_EQ(llama->head_dim, 32);
  EXPECT_EQ(llama->max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(llama->rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(llama->rope_theta, 10000.0);
  EXPECT_FALSE(llama->tie_word_embeddings);
  EXPECT_FALSE(llama->attention_bias);
  EXPECT_FALSE(llama->bos_token_id.has_value());
  EXPECT_TRUE(llama->eos_token_ids.empty());

  auto qwen2 = ParseModelConfig(Minimal("Qwen2ForCausalLM"), "config.json");
  ASSERT_TRUE(qwen2.ok());
  EXPECT_TRUE(qwen2->attention_bias);
  EXPECT_TRUE(qwen2->has_qkv_bias());
  EXPECT_FALSE(qwen2->has_o_bias());
  EXPECT_EQ(qwen2->max_position_embeddings, 32768);

  auto qwen3 = ParseModelConfig(Minimal("Qwen3ForCausalLM"), "config.json");
  ASSERT_TRUE(qwen3.ok());
  EXPECT_FALSE(qwen3->attention_bias);
  EXPECT_TRUE(qwen3->has_qk_norm());
  EXPECT_EQ(qwen3->head_dim, 128);  // Qwen3Config's default

  auto biased = ParseModelConfig(
      Minimal("LlamaForCausalLM", R"(, "attention_bias": true)"), "c");
  ASSERT_TRUE(biased.ok());
  EXPECT_TRUE(biased->has_o_bias());

  // No "architectures": model_type decides.
  auto by_type = ParseModelConfig(
      R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 64,
          "num_hidden_layers": 1, "num_attention_heads": 4,
          "vocab_size": 300})",
      "c");
  ASSERT_TRUE(by_type.ok()) << by_type.status().ToString();
  EXPECT_EQ(by_type->architecture, Architecture::kQwen2);
}

TEST(ModelConfigTest, EosMayBeAList) {
  auto c = ParseModelConfig(
      Minimal("Qwen3ForCausalLM",
              R"(, "eos_token_id": [151645, 151643], "bos_token_id": null,
                 "torch_dtype": "bfloat16", "num_key_value_heads": 2,
                 "head_dim": 64, "tie_word_embeddings": true,
                 "rope_theta": 1000000)"),
      "c");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  EXPECT_FALSE(c->bos_token_id.has_value());
  EXPECT_EQ(c->torch_dtype, "bfloat16");
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
}

TEST(ModelConfigTest, UnsupportedArchitectureListsTheSupportedOnes) {
  auto c = ParseModelConfig(Minimal("MistralForCausalLM"), "/m/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(c.status().message(), HasSubstr("/m/config.json"));
  EXPECT_THAT(c.status().message(), HasSubstr("\"MistralForCausalLM\""));
  EXPECT_THAT(c.status().message(),
              HasSubstr("LlamaForCausalLM, Qwen2ForCausalLM, "
                        "Qwen3ForCausalLM"));
}

TEST(ModelConfigTest, MalformedConfigs) {
  struct Case {
    std::string json;
    StatusCode code;
    std::string part;
  };
  const std::vector<Case> cases = {
      {R"({"architectures": ["LlamaForCausalLM"], )",
       StatusCode::kInvalidArgument, "malformed JSON"},
      {"[1]", StatusCode::kInvalidArgument, "expected a JSON object"},
      {R"({"architectures": ["LlamaForCausalLM"], "intermediate_size": 1,
           "num_hidden_layers": 1, "num_attention_heads": 1,
           "vocab_size": 1})",
       StatusCode::kInvalidArgument, "\"hidden_size\" is missing"},
      {Minimal("LlamaForCausalLM", R"(, "hidden_size": "big")"),
       StatusCode::kInvalidArgument, "\"hidden_size\" must be an integer"},
      {Minimal("LlamaForCausalLM", R"(, "num_key_value_heads": 3)"),
       StatusCode::kInvalidArgument, "\"num_key_value_heads\""},
      {Minimal("LlamaForCausalLM", R"(, "head_dim": 7)"),
       StatusCode::kInvalidArgument, "\"head_dim\""},
      {Minimal("LlamaForCausalLM", R"(, "hidden_act": "gelu")"),
       StatusCode::kUnimplemented, "hidden_act \"gelu\""},
      {Minimal("LlamaForCausalLM", R"(, "tie_word_embeddings": "yes")"),
       StatusCode::kInvalidArgument, "\"tie_word_embeddings\""},
      {Minimal("LlamaForCausalLM", R"(, "mlp_bias": true)"),
       StatusCode::kUnimplemented, "mlp_bias"},
      {Minimal("Qwen2ForCausalLM", R"(, "use_sliding_window": true)"),
       StatusCode::kUnimplemented, "use_sliding_window"},
      {Minimal("LlamaForCausalLM", R"(, "quantization_config": {"bits": 4})"),
       StatusCode::kUnimplemented, "quantization_config"},
      {Minimal("LlamaForCausalLM",
               R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4})"),
       StatusCode::kUnimplemented, "\"yarn\""},
      {Minimal("LlamaForCausalLM",
               R"(, "rope_scaling": {"type": "linear", "factor": 4})"),
       StatusCode::kUnimplemented, "\"linear\""},
      {Minimal("LlamaForCausalLM",
               R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8})"),
       StatusCode::kInvalidArgument, "low_freq_factor"},
      {Minimal("LlamaForCausalLM", R"(, "rope_scaling": 3)"),
       StatusCode::kInvalidArgument, "rope_scaling"},
      {R"({"architectures": [], "hidden_size": 1})",
       StatusCode::kInvalidArgument, "architectures"},
      // Sizes no real model has: refused before anything is allocated.
      {Minimal("LlamaForCausalLM", R"(, "num_hidden_layers": 10000000)"),
       StatusCode::kInvalidArgument, "beyond any real model"},
      {Minimal("LlamaForCausalLM", R"(, "vocab_size": 1000000000000)"),
       StatusCode::kInvalidArgument, "\"vocab_size\" is 1000000000000"},
      {Minimal("LlamaForCausalLM", R"(, "head_dim": 1000000)"),
       StatusCode::kInvalidArgument, "\"head_dim\""},
      {std::string(100000, '[') + std::string(100000, ']'),
       StatusCode::kInvalidArgument, "nested deeper than 512"},
  };
  for (const Case& c : cases) {
    auto config = ParseModelConfig(c.json, "/x/config.json");
    ASSERT_FALSE(config.ok()) << c.json;
    EXPECT_EQ(config.status().code(), c.code) << config.status().ToString();
    EXPECT_THAT(config.status().message(), HasSubstr("/x/config.json"));
    EXPECT_THAT(config.status().message(), HasSubstr(c.part)) << c.json;
  }
}

TEST(ModelConfigTest, RopeScalingTypes) {
  auto plain = ParseModelConfig(
      Minimal("LlamaForCausalLM", R"(, "rope_scaling": {"type": "default"})"),
      "c");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->rope_scaling.type, RopeScaling::Type::kDefault);

  auto llama3 =
      ParseModelConfig(Minimal("LlamaForCausalLM",
                               R"(, "rope_theta": 500000.0, "rope_scaling": {
                 "factor": 8.0, "low_freq_factor": 1.0,
                 "high_freq_factor": 4.0,
                 "original_max_position_embeddings": 8192,
                 "rope_type": "llama3"})"),
                       "c");
  ASSERT_TRUE(llama3.ok()) << llama3.status().ToString();
  const RopeScaling& r = llama3->rope_scaling;
  EXPECT_EQ(r.type, RopeScaling::Type::kLlama3);
  EXPECT_DOUBLE_EQ(r.factor, 8.0);
  EXPECT_DOUBLE_EQ(r.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(r.high_freq_factor, 4.0);
  EXPECT_EQ(r.original_max_position_embeddings, 8192);

  // Newer transformers files: rope_parameters with rope_theta inside.
  auto params =
      ParseModelConfig(Minimal("Qwen3ForCausalLM",
                               R"(, "rope_parameters": {"rope_type": "default",
                                       "rope_theta": 1000000})"),
                       "c");
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  EXPECT_DOUBLE_EQ(params->rope_theta, 1e6);
}

TEST(ModelConfigTest, JsonRoundTrip) {
  for (Architecture arch :
       {Architecture::kLlama, Architecture::kQwen2, Architecture::kQwen3}) {
    ModelConfig c;
    c.architecture = arch;
    c.hidden_size = 96;
    c.intermediate_size = 200;
    c.num_hidden_layers = 3;
    c.num_attention_heads = 6;
    c.num_key_value_heads = 2;
    c.head_dim = 24;
    c.vocab_size = 777;
    c.max_position_embeddings = 1234;
    c.rms_norm_eps = 1e-5;
    c.rope_theta = 500000;
    c.tie_word_embeddings = arch == Architecture::kQwen3;
    c.attention_bias = arch == Architecture::kQwen2;
    c.torch_dtype = "bfloat16";
    c.bos_token_id = 3;
    c.eos_token_ids = {5, 6};
    if (arch == Architecture::kLlama) {
      c.rope_scaling.type = RopeScaling::Type::kLlama3;
      c.rope_scaling.factor = 32;
      c.rope_scaling.low_freq_factor = 1;
      c.rope_scaling.high_freq_factor = 4;
      c.rope_scaling.original_max_position_embeddings = 8192;
    }
    std::string json = ModelConfigToJson(c);
    auto back = ParseModelConfig(json, "roundtrip");
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << json;
    EXPECT_EQ(back->architecture, c.architecture);
    EXPECT_EQ(back->hidden_size, c.hidden_size);
    EXPECT_EQ(back->intermediate_size, c.intermediate_size);
    EXPECT_EQ(back->num_hidden_layers, c.num_hidden_layers);
    EXPECT_EQ(back->num_attention_heads, c.num_attention_heads);
    EXPECT_EQ(back->num_key_value_heads, c.num_key_value_heads);
    EXPECT_EQ(back->head_dim, c.head_dim);
    EXPECT_EQ(back->vocab_size, c.vocab_size);
    EXPECT_EQ(back->max_position_embeddings, c.max_position_embeddings);
    EXPECT_DOUBLE_EQ(back->rms_norm_eps, c.rms_norm_eps);
    EXPECT_DOUBLE_EQ(back->rope_theta, c.rope_theta);
    EXPECT_EQ(back->rope_scaling.type, c.rope_scaling.type);
    EXPECT_DOUBLE_EQ(back->rope_scaling.factor, c.rope_scaling.factor);
    EXPECT_EQ(back->tie_word_embeddings, c.tie_word_embeddings);
    EXPECT_EQ(back->attention_bias, c.attention_bias);
    EXPECT_EQ(back->torch_dtype, c.torch_dtype);
    EXPECT_EQ(back->bos_token_id, c.bos_token_id);
    EXPECT_EQ(back->eos_token_ids, c.eos_token_ids);
    EXPECT_THAT(json, HasSubstr(fmt::format("\"model_type\": \"{}\"",
                                            ArchitectureModelType(arch))));
  }
}

// A FIFO or a device in place of config.json is refused without opening
// it (opening a FIFO blocks until a writer comes; /dev/zero never ends).
TEST(ModelConfigTest, OnlyRegularFilesAreRead) {
  const std::string fifo =
      (std::filesystem::temp_directory_path() /
       ("tessera_config_fifo_" + std::to_string(::getpid())))
          .string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = LoadModelConfig(fifo);
  std::filesystem::remove(fifo);
  ASSERT_FALSE(from_fifo.ok());
  EXPECT_THAT(from_fifo.status().message(), HasSubstr("is a FIFO"));
  auto from_device = LoadModelConfig("/dev/zero");
  ASSERT_FALSE(from_device.ok());
  EXPECT_THAT(from_device.status().message(), HasSubstr("character device"));
}

TEST(ModelConfigTest, MissingFile) {
  auto c = LoadModelConfig("/nonexistent/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/config.json"));
}

}  // namespace
}  // namespace tessera::model
