#include "gguf/convert.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "gguf/gguf_test_reader.h"
#include "gguf/tensor_encode.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "model/test_util.h"
#include "testing/fixtures.h"

namespace tessera::gguf {
namespace {

using ::tessera::gguf::testing::ReadGguf;
using ::tessera::gguf::testing::ReadTensor;
using ::tessera::model::testing::ScratchDir;

std::string MakeTiny(const ScratchDir& dir, model::Architecture arch,
                     DType dtype) {
  model::MakeModelOptions options;
  options.preset = "tiny";
  options.arch = arch;
  options.out_dir = dir.File("model");
  options.dtype = dtype;
  auto made = model::MakeModel(options);
  EXPECT_TRUE(made.ok()) << made.status().message();
  return options.out_dir;
}

// All elements of a checkpoint tensor as floats, row-major.
std::vector<float> Floats(const model::TensorRef& t) {
  std::vector<float> out(size_t(t.num_elements()));
  DecodeToFloat(t.data(), t.dtype(), out);
  return out;
}

std::vector<float> F32Data(const ReadTensor& t, size_t n) {
  std::vector<float> out(n);
  std::memcpy(out.data(), t.data.data(), n * 4);
  return out;
}

TEST(GgufNamesTest, MapsHuggingFaceNames) {
  EXPECT_EQ(GgufTensorName("model.embed_tokens.weight"), "token_embd.weight");
  EXPECT_EQ(GgufTensorName("model.norm.weight"), "output_norm.weight");
  EXPECT_EQ(GgufTensorName("lm_head.weight"), "output.weight");
  EXPECT_EQ(GgufTensorName("model.layers.3.input_layernorm.weight"),
            "blk.3.attn_norm.weight");
  EXPECT_EQ(GgufTensorName("model.layers.12.self_attn.q_proj.bias"),
            "blk.12.attn_q.bias");
  EXPECT_EQ(GgufTensorName("model.layers.0.self_attn.o_proj.weight"),
            "blk.0.attn_output.weight");
  EXPECT_EQ(GgufTensorName("model.layers.0.self_attn.k_norm.weight"),
            "blk.0.attn_k_norm.weight");
  EXPECT_EQ(GgufTensorName("model.layers.1.post_attention_layernorm.weight"),
            "blk.1.ffn_norm.weight");
  EXPECT_EQ(GgufTensorName("model.layers.1.mlp.down_proj.weight"),
            "blk.1.ffn_down.weight");
  EXPECT_FALSE(GgufTensorName("model.layers.0.self_attn.rotary_emb.inv_freq"));
  EXPECT_FALSE(GgufTensorName("model.layers.x.mlp.up_proj.weight"));
}

TEST(GgufNamesTest, InterleavedRopeRowsPairHalves) {
  // One head of 4: GGUF rows (0, 1, 2, 3) take HF rows (0, 2, 1, 3), i.e.
  // HF's pair (i, i + D/2) becomes GGUF's (2i, 2i + 1).
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < 8; ++r)
    rows.push_back(InterleavedRopeSourceRow(r, 4));
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  // A permutation for a bigger head too.
  std::set<int64_t> seen;
  for (int64_t r = 0; r < 3 * 16; ++r)
    seen.insert(InterleavedRopeSourceRow(r, 16));
  EXPECT_EQ(seen.size(), 48u);
  EXPECT_EQ(InterleavedRopeSourceRow(1, 16), 8);
  EXPECT_EQ(InterleavedRopeSourceRow(17, 16), 24);
}

TEST(ConvertTest, LlamaF32MetadataAndPermutedQk) {
  ScratchDir dir;
  const std::string model_dir =
      MakeTiny(dir, model::Architecture::kLlama, TSR_DTYPE_F32);
  const std::string out = dir.File("llama.gguf");
  auto result = ConvertCheckpointToGguf(model_dir, out, TensorType::kF32);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->architecture, "llama");
  EXPECT_TRUE(result->notes.empty());

  auto checkpoint = model::Checkpoint::Open(model_dir);
  ASSERT_TRUE(checkpoint.ok());
  const model::ModelConfig& c = (*checkpoint)->config();
  auto f = ReadGguf(out);
  EXPECT_EQ(f.Value("general.architecture"), "llama");
  EXPECT_EQ(f.Value("general.file_type"), 0);
  EXPECT_EQ(f.Value("llama.block_count"), c.num_hidden_layers);
  EXPECT_EQ(f.Value("llama.embedding_length"), c.hidden_size);
  EXPECT_EQ(f.Value("llama.feed_forward_length"), c.intermediate_size);
  EXPECT_EQ(f.Value("llama.attention.head_count"), c.num_attention_heads);
  EXPECT_EQ(f.Value("llama.attention.head_count_kv"), c.num_key_value_heads);
  EXPECT_EQ(f.Value("llama.attention.key_length"), c.head_dim);
  EXPECT_EQ(f.Value("llama.context_length"), c.max_position_embeddings);
  EXPECT_EQ(f.Value("llama.rope.freq_base").get<float>(), float(c.rope_theta));
  EXPECT_EQ(f.Value("llama.attention.layer_norm_rms_epsilon").get<float>(),
            float(c.rms_norm_eps));
  EXPECT_EQ(f.Value("tokenizer.ggml.model"), "gpt2");

  // tiny is untied: token_embd, output_norm, output + 9 per layer.
  EXPECT_EQ(f.tensors.size(), size_t(3 + 9 * c.num_hidden_layers));
  EXPECT_EQ(result->num_tensors, f.tensors.size());
  ASSERT_NE(f.Find("output.weight"), nullptr);
  const ReadTensor* q = f.Find("blk.1.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, 0u);
  EXPECT_EQ(q->dims, (std::vector<uint64_t>{
                         uint64_t(c.hidden_size),
                         uint64_t(c.num_attention_heads * c.head_dim)}));
  for (const char* name : {"q_proj", "k_proj", "v_proj"}) {
    auto hf =
        (*checkpoint)
            ->Get(fmt::format("model.layers.1.self_attn.{}.weight", name));
    ASSERT_TRUE(hf.ok());
    const std::string gguf_name =
        fmt::format("blk.1.attn_{}.weight", std::string(1, name[0]));
    const ReadTensor* t = f.Find(gguf_name);
    ASSERT_NE(t, nullptr) << gguf_name;
    const int64_t rows = hf->shape()[0];
    const int64_t cols = hf->shape()[1];
    std::vector<float> src = Floats(*hf);
    std::vector<float> got = F32Data(*t, size_t(rows * cols));
    const bool permuted = name[0] != 'v';
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t from =
          permuted ? InterleavedRopeSourceRow(r, c.head_dim) : r;
      for (int64_t k = 0; k < cols; ++k) {
        ASSERT_EQ(got[size_t(r * cols + k)], src[size_t(from * cols + k)])
            << gguf_name << " row " << r;
      }
    }
  }
  auto down = (*checkpoint)->Get("model.layers.0.mlp.down_proj.weight");
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(
      F32Data(*f.Find("blk.0.ffn_down.weight"), size_t(down->num_elements())),
      Floats(*down));
}

TEST(ConvertTest, Qwen3Bf16ToF16KeepsRowOrderAndNormsF32) {
  ScratchDir dir;
  const std::string model_dir =
      MakeTiny(dir, model::Architecture::kQwen3, TSR_DTYPE_BF16);
  const std::string out = dir.File("qwen3.gguf");
  auto result = ConvertCheckpointToGguf(model_dir, out, TensorType::kF16);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->architecture, "qwen3");
  auto checkpoint = model::Checkpoint::Open(model_dir);
  ASSERT_TRUE(checkpoint.ok());
  auto f = ReadGguf(out);
  EXPECT_EQ(f.Value("general.architecture"), "qwen3");
  EXPECT_EQ(f.Value("general.file_type"), 1);
  EXPECT_EQ(f.Value("qwen3.attention.key_length"), 16);
  const ReadTensor* qn = f.Find("blk.0.attn_q_norm.weight");
  ASSERT_NE(qn, nullptr);
  EXPECT_EQ(qn->type, 0u);  // 1-D stays F32
  EXPECT_EQ(qn->dims, (std::vector<uint64_t>{16}));
  auto hf_qn = (*checkpoint)->Get("model.layers.0.self_attn.q_norm.weight");
  EXPECT_EQ(F32Data(*qn, 16), Floats(*hf_qn));
  ASSERT_NE(f.Find("blk.0.attn_k_norm.weight"), nullptr);

  // q_proj: no permutation; bf16 values are exact in f16 only approximately.
  auto hf_q = (*checkpoint)->Get("model.layers.0.self_attn.q_proj.weight");
  const ReadTensor* q = f.Find("blk.0.attn_q.weight");
  ASSERT_EQ(q->type, 1u);
  std::vector<float> src = Floats(*hf_q);
  for (size_t i = 0; i < src.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, q->data.data() + 2 * i, 2);
    ASSERT_EQ(h, FloatToF16(src[i])) << "element " << i;
  }
}

TEST(ConvertTest, Q8_0AllWeightsAndQwen2Biases) {
  ScratchDir dir;
  const std::string model_dir =
      MakeTiny(dir, model::Architecture::kQwen2, TSR_DTYPE_BF16);
  const std::string out = dir.File("qwen2.gguf");
  auto result = ConvertCheckpointToGguf(model_dir, out, TensorType::kQ8_0);
  ASSERT_TRUE(result.ok()) << result.status().message();
  auto checkpoint = model::Checkpoint::Open(model_dir);
  ASSERT_TRUE(checkpoint.ok());
  auto f = ReadGguf(out);
  EXPECT_EQ(f.Value("general.file_type"), 7);
  for (const auto& t : f.tensors) {
    EXPECT_EQ(t.type, t.dims.size() == 2 ? 8u : 0u) << t.name;
  }
  const ReadTensor* bias = f.Find("blk.1.attn_k.bias");
  ASSERT_NE(bias, nullptr);
  auto hf_bias = (*checkpoint)->Get("model.layers.1.self_attn.k_proj.bias");
  EXPECT_EQ(F32Data(*bias, size_t(hf_bias->num_elements())), Floats(*hf_bias));

  auto hf_up = (*checkpoint)->Get("model.layers.1.mlp.up_proj.weight");
  std::vector<float> src = Floats(*hf_up);
  std::vector<float> back(src.size());
  DecodeQ8_0(
      std::as_bytes(std::span<const char>(f.Find("blk.1.ffn_up.weight")->data)),
      back);
  for (size_t i = 0; i < src.size(); i += 32) {
    float amax = 0;
    for (size_t k = i; k < i + 32; ++k)
      amax = std::max(amax, std::fabs(src[k]));
    for (size_t k = i; k < i + 32; ++k) {
      // Half a step plus the f16 rounding of d times |q| <= 127.
      ASSERT_NEAR(back[k], src[k], amax / 127.0f * 0.57f) << k;
    }
  }
}

TEST(ConvertTest, Stories260kTiedWithF16FallbackForPartialBlocks) {
  TSR_REQUIRE_SHARED_FIXTURE(model_dir, "models/stories260k");
  ScratchDir dir;
  const std::string out = dir.File("s.gguf");
  auto result = ConvertCheckpointToGguf(model_dir, out, TensorType::kQ8_0);
  ASSERT_TRUE(result.ok()) << result.status().message();
  auto f = ReadGguf(out);
  EXPECT_EQ(f.Find("output.weight"), nullptr);  // tied
  EXPECT_EQ(f.Value("tokenizer.ggml.model"), "llama");
  // intermediate 172 is not a multiple of 32: ffn_down rows stay f16.
  EXPECT_EQ(f.Find("blk.0.ffn_down.weight")->type, 1u);
  EXPECT_EQ(f.Find("blk.0.ffn_up.weight")->type, 8u);
  ASSERT_EQ(result->notes.size(), 5u);  // one per layer's ffn_down
  EXPECT_NE(result->notes[0].find("blk.0.ffn_down.weight"), std::string::npos);
}

TEST(ConvertTest, MissingDirectoryIsNotFound) {
  ScratchDir dir;
  auto result = ConvertCheckpointToGguf(dir.File("absent"), dir.File("x.gguf"),
                                        TensorType::kF16);
  EXPECT_EQ(result.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir.File("x.gguf")));
}

}  // namespace
}  // namespace tessera::gguf
