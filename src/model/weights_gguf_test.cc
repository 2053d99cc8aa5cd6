// Quantized GGUF tensors loaded into int8 and 4-bit device weights: a Q8_0
// file's blocks under int8 with groups of 32 (what `--quantization auto`
// picks for such a file) land on the device as the same numbers — every
// weight's q x scale equals the file's decoded value exactly — for the
// tensors stored in row order (Qwen3) and for Llama's, whose q/k rows GGUF
// stores permuted (those take the decoding path). Runs on the real cpu
// plugin.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gguf/convert.h"
#include "model/arch_registry.h"
#include "model/model_runner.h"
#include "model/weights.h"
#include "model/runner_test_util.h"
#include "model/test_util.h"

namespace tessera::model {
namespace {

using testing::ScratchDir;

// q x scale of every element of an int8 device weight, row-major [N, K].
std::vector<float> Dequantized(const DeviceWeight& w) {
  const int64_t n = w.shape[0], k = w.shape[1], groups = k / w.group_size;
  std::vector<int8_t> q(size_t(n * k));
  std::vector<float> s(size_t(n * groups));
  EXPECT_TRUE(w.buffer->CopyToHost(q.data(), 0, q.size()).ok());
  EXPECT_TRUE(w.scale->CopyToHost(s.data(), 0, s.size() * sizeof(float)).ok());
  std::vector<float> out(q.size());
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      out[r * k + c] = float(q[r * k + c]) * s[r * groups + c / w.group_size];
    }
  }
  return out;
}

std::vector<float> Decoded(const Checkpoint& checkpoint, const std::string& name) {
  TensorRef t = *checkpoint.Get(name);
  const int64_t rows = t.shape()[0], width = t.shape()[1];
  std::vector<float> out(size_t(rows * width));
  t.ReadRows(0, rows, 0, width, TSR_DTYPE_F32, out.data());
  return out;
}

class Q8_0WeightsTest : public ::testing::TestWithParam<Architecture> {};

TEST_P(Q8_0WeightsTest, Int8Group32HoldsTheFilesNumbers) {
  ScratchDir dir;
  auto folder = testing::MakeCheckpoint(dir.File("model"), GetParam(), TSR_DTYPE_F32);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  const std::string file = dir.File("model.gguf");
  ASSERT_TRUE(gguf::ConvertCheckpointToGguf(dir.File("model"), file,
                                            gguf::TensorType::kQ8_0).ok());
  auto checkpoint = Checkpoint::Open(file);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  auto rt = testing::CreateRuntime();
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();

  ModelRunnerOptions options;
  options.kv_capacity_tokens = 16;
  options.max_batch_tokens = 16;
  options.quantization = WeightQuantization::kInt8;
  options.int8_group_size = 32;
  options.int8_activations = true;
  options.show_progress = false;
  auto runner = ModelRunner::Create(**rt, **checkpoint, options);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();

  const LayerWeights& l0 = (*runner)->weights().layer(0);
  ASSERT_EQ(l0.gate_up.dtype, TSR_DTYPE_I8);
  ASSERT_EQ(l0.gate_up.group_size, 32);
  // gate and up stacked; down alone; q, k and v stacked (Llama's q and k
  // rows put back in Hugging Face order by the decoding path).
  std::vector<float> gate_up = Decoded(**checkpoint, LayerTensorName(0, "mlp.gate_proj.weight"));
  const std::vector<float> up = Decoded(**checkpoint, LayerTensorName(0, "mlp.up_proj.weight"));
  gate_up.insert(gate_up.end(), up.begin(), up.end());
  EXPECT_EQ(Dequantized(l0.gate_up), gate_up);
  EXPECT_EQ(Dequantized(l0.down), Decoded(**checkpoint, LayerTensorName(0, "mlp.down_proj.weight")));
  std::vector<float> qkv;
  for (const char* part : {"self_attn.q_proj.weight", "self_attn.k_proj.weight",
                           "self_attn.v_proj.weight"}) {
    const std::vector<float> rows = Decoded(**checkpoint, LayerTensorName(0, part));
    qkv.insert(qkv.end(), rows.begin(), rows.end());
  }
  EXPECT_EQ(Dequantized(l0.qkv), qkv);
}

// Quantised weights are uploaded in blocks gathered across their stacked
// parts (q, k and v; gate and up). Whatever the block size — one that cuts
// inside a part, across parts, or holds the whole weight — the device
// holds the same bytes, on every quantised path: GGUF Q8_0 blocks as they
// are, and F32 rows quantised to int8 and to 4 bits.
TEST(QuantizedUploadTest, BlockSizeChangesNoByte) {
  ScratchDir dir;
  auto folder = testing::MakeCheckpoint(dir.File("model"), Architecture::kQwen3, TSR_DTYPE_F32);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  const std::string file = dir.File("model.gguf");
  ASSERT_TRUE(gguf::ConvertCheckpointToGguf(dir.File("model"), file,
                                            gguf::TensorType::kQ8_0).ok());
  auto rt = testing::CreateRuntime();
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  runtime::Device& device = (*rt)->device(0);
  // Every byte of a weight's values and scales.
  auto bytes_of = [](const DeviceWeight& w) {
    std::vector<uint8_t> out(w.buffer->size() + w.scale->size());
    EXPECT_TRUE(w.buffer->CopyToHost(out.data(), 0, w.buffer->size()).ok());
    EXPECT_TRUE(w.scale->CopyToHost(out.data() + w.buffer->size(), 0, w.scale->size()).ok());
    return out;
  };
  struct Case {
    std::string path;
    WeightQuantization quantization;
  };
  for (const Case& c : {Case{file, WeightQuantization::kInt8},
                        Case{dir.File("model"), WeightQuantization::kInt8},
                        Case{dir.File("model"), WeightQuantization::kInt4}}) {
    auto checkpoint = Checkpoint::Open(c.path);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
    auto arch = ArchitectureForConfig((*checkpoint)->config());
    ASSERT_TRUE(arch.ok());
    std::vector<std::vector<uint8_t>> reference;
    for (int64_t block : {int64_t{8} << 20, int64_t{1}, int64_t{100}, int64_t{1000}}) {
      WeightLoadOptions o;
      o.quantization = c.quantization;
      o.int8_group_size = 32;
      o.upload_block_bytes = block;
      auto w = ModelWeights::Load(device, **checkpoint, **arch, o);
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      const LayerWeights& l0 = (*w)->layer(0);
      std::vector<std::vector<uint8_t>> got;
      for (const DeviceWeight* dw : {&l0.qkv, &l0.o_proj, &l0.gate_up, &l0.down,
                                     &(*w)->lm_head()}) {
        ASSERT_TRUE(dw->quantized()) << c.path;
        got.push_back(bytes_of(*dw));
      }
      if (reference.empty()) {
        reference = got;
      } else {
        EXPECT_EQ(got, reference) << c.path << " with blocks of " << block << " bytes";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, Q8_0WeightsTest,
                         ::testing::Values(Architecture::kLlama, Architecture::kQwen3),
                         [](const auto& info) {
                           return std::string(ArchitectureModelType(info.param));
                         });

}  // namespace
}  // namespace tessera::model
