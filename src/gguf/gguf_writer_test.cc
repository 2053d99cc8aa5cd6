#include "gguf/gguf_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_test_reader.h"
#include "gguf/tensor_encode.h"
#include "model/test_util.h"

namespace tessera::gguf {
namespace {

using ::tessera::gguf::testing::ReadGguf;
using ::tessera::model::testing::ScratchDir;

// A source delivering `bytes` in chunks of `chunk` bytes.
GgufWriter::TensorSource BytesSource(std::string bytes, size_t chunk = 3) {
  auto data = std::make_shared<std::string>(std::move(bytes));
  return [data, chunk](const GgufWriter::ByteSink& sink) -> Status {
    for (size_t at = 0; at < data->size(); at += chunk) {
      size_t n = std::min(chunk, data->size() - at);
      TSR_RETURN_IF_ERROR(
          sink(std::as_bytes(std::span<const char>(data->data() + at, n))));
    }
    return OkStatus();
  };
}

std::string FloatBytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

TEST(GgufWriterTest, RoundTripsMetadataAndTensors) {
  ScratchDir dir;
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetU32("llama.block_count", 7);
  w.SetI32("test.i32", -5);
  w.SetF32("test.f32", 0.125f);
  w.SetBool("test.bool", true);
  w.SetU64("test.u64", uint64_t(1) << 40);
  w.SetStringArray("test.strings", {"a", "",
                                    "\xE2\x96\x81"
                                    "b"});
  w.SetI32Array("test.i32s", {1, -2, 3});
  w.SetF32Array("test.f32s", {0.5f, -1.5f});
  w.SetU32("llama.block_count", 8);  // replaces, keeps its position

  const std::vector<float> m = {1, 2, 3, 4, 5, 6};  // [2, 3]
  ASSERT_TRUE(
      w.AddTensor("m", {2, 3}, TensorType::kF32, BytesSource(FloatBytes(m)))
          .ok());
  std::string f16(8, '\0');
  for (int i = 0; i < 4; ++i) {
    uint16_t h = FloatToF16(float(i));
    std::memcpy(f16.data() + 2 * i, &h, 2);
  }
  ASSERT_TRUE(w.AddTensor("v", {4}, TensorType::kF16, BytesSource(f16)).ok());
  std::vector<float> q(2 * 64);
  for (size_t i = 0; i < q.size(); ++i) q[i] = float(i) - 60.0f;
  std::string q8(2 * 2 * kQ8_0BlockBytes, '\0');
  ASSERT_TRUE(
      EncodeRow(q, TensorType::kQ8_0,
                std::as_writable_bytes(std::span<char>(q8.data(), q8.size())))
          .ok());
  ASSERT_TRUE(
      w.AddTensor("q", {2, 64}, TensorType::kQ8_0, BytesSource(q8, 1000)).ok());
  std::string bf(2 * 2 * 2, '\x11');
  ASSERT_TRUE(
      w.AddTensor("b", {2, 1, 2}, TensorType::kBF16, BytesSource(bf)).ok());
  EXPECT_EQ(w.tensor_data_bytes(), 24u + 8u + q8.size() + 8u);

  const std::string path = dir.File("t.gguf");
  ASSERT_TRUE(w.WriteFile(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));

  auto f = ReadGguf(path);
  EXPECT_EQ(f.version, 3u);
  EXPECT_EQ(f.alignment, 32u);
  ASSERT_EQ(f.key_order.size(), 10u);
  EXPECT_EQ(f.key_order[0], "general.alignment");
  EXPECT_EQ(f.key_order[2], "llama.block_count");
  EXPECT_EQ(f.kv["general.alignment"].first, 4u);  // u32
  EXPECT_EQ(f.Value("general.architecture"), "llama");
  EXPECT_EQ(f.kv["llama.block_count"].first, 4u);
  EXPECT_EQ(f.Value("llama.block_count"), 8);
  EXPECT_EQ(f.kv["test.i32"].first, 5u);
  EXPECT_EQ(f.Value("test.i32"), -5);
  EXPECT_EQ(f.kv["test.f32"].first, 6u);
  EXPECT_EQ(f.Value("test.f32").get<float>(), 0.125f);
  EXPECT_EQ(f.kv["test.bool"].first, 7u);
  EXPECT_EQ(f.Value("test.bool"), true);
  EXPECT_EQ(f.kv["test.u64"].first, 10u);
  EXPECT_EQ(f.Value("test.u64").get<uint64_t>(), uint64_t(1) << 40);
  EXPECT_EQ(f.kv["test.strings"].first, 9u);
  EXPECT_EQ(f.array_types["test.strings"], 8u);
  EXPECT_EQ(f.Value("test.strings"), nlohmann::json::array({"a", "",
                                                            "\xE2\x96\x81"
                                                            "b"}));
  EXPECT_EQ(f.array_types["test.i32s"], 5u);
  EXPECT_EQ(f.Value("test.i32s"), nlohmann::json::array({1, -2, 3}));
  EXPECT_EQ(f.array_types["test.f32s"], 6u);
  EXPECT_EQ(f.Value("test.f32s")[1].get<float>(), -1.5f);

  ASSERT_EQ(f.tensors.size(), 4u);
  EXPECT_EQ(f.data_start % 32, 0u);
  const auto* tm = f.Find("m");
  ASSERT_NE(tm, nullptr);
  EXPECT_EQ(tm->dims, (std::vector<uint64_t>{3, 2}));  // innermost first
  EXPECT_EQ(tm->type, 0u);
  EXPECT_EQ(tm->offset, 0u);
  EXPECT_EQ(tm->data.substr(0, 24), FloatBytes(m));
  const auto* tv = f.Find("v");
  EXPECT_EQ(tv->type, 1u);
  EXPECT_EQ(tv->offset, 32u);  // 24 bytes padded to 32
  EXPECT_EQ(tv->data.substr(0, 8), f16);
  const auto* tq = f.Find("q");
  EXPECT_EQ(tq->type, 8u);
  EXPECT_EQ(tq->dims, (std::vector<uint64_t>{64, 2}));
  EXPECT_EQ(tq->offset, 64u);
  EXPECT_EQ(tq->data.substr(0, q8.size()), q8);
  std::vector<float> back(q.size());
  DecodeQ8_0(std::as_bytes(std::span<const char>(tq->data.data(), q8.size())),
             back);
  // Half a step plus the f16 rounding of d (|q| <= 127); d <= 67 / 127.
  for (size_t i = 0; i < q.size(); ++i) {
    EXPECT_NEAR(back[i], q[i], 0.57f * 67.0f / 127.0f);
  }
  const auto* tb = f.Find("b");
  EXPECT_EQ(tb->type, 30u);
  EXPECT_EQ(tb->dims, (std::vector<uint64_t>{2, 1, 2}));
  EXPECT_EQ(tb->offset % 32, 0u);
  EXPECT_EQ(tb->data.substr(0, 8), bf);
  EXPECT_EQ(std::filesystem::file_size(path) % 32, 0u);
}

TEST(GgufWriterTest, RejectsBadTensorDeclarations) {
  GgufWriter w;
  auto src = BytesSource("");
  EXPECT_EQ(w.AddTensor("", {1}, TensorType::kF32, src).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      w.AddTensor(std::string(64, 'x'), {1}, TensorType::kF32, src).code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(w.AddTensor("r", {1, 1, 1, 1, 1}, TensorType::kF32, src).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(w.AddTensor("n", {2, -1}, TensorType::kF32, src).code(),
            StatusCode::kInvalidArgument);
  Status partial = w.AddTensor("q", {4, 40}, TensorType::kQ8_0, src);
  EXPECT_EQ(partial.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(partial.message().find("store it as f16"), std::string::npos);
  EXPECT_TRUE(w.AddTensor("ok", {1}, TensorType::kF32, src).ok());
  EXPECT_EQ(w.AddTensor("ok", {1}, TensorType::kF32, src).code(),
            StatusCode::kInvalidArgument);
}

TEST(GgufWriterTest, ShortOrFailingSourceLeavesNoFile) {
  ScratchDir dir;
  const std::string path = dir.File("bad.gguf");
  {
    GgufWriter w;
    ASSERT_TRUE(
        w.AddTensor("t", {4}, TensorType::kF32, BytesSource("abc")).ok());
    Status s = w.WriteFile(path);
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find("produced 3 of its 16 bytes"), std::string::npos)
        << s.message();
  }
  {
    GgufWriter w;
    ASSERT_TRUE(
        w.AddTensor("t", {1}, TensorType::kF32, BytesSource("toolong")).ok());
    EXPECT_FALSE(w.WriteFile(path).ok());
  }
  {
    GgufWriter w;
    ASSERT_TRUE(w.AddTensor("t", {1}, TensorType::kF32,
                            [](const GgufWriter::ByteSink&) {
                              return DataLossError("source broke");
                            })
                    .ok());
    Status s = w.WriteFile(path);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("tensor 't'"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(GgufWriterTest, ReportsProgress) {
  ScratchDir dir;
  GgufWriter w;
  ASSERT_TRUE(w.AddTensor("a", {5}, TensorType::kF32,
                          BytesSource(std::string(20, 'a'), 7))
                  .ok());
  uint64_t last_done = 0, last_total = 0;
  int calls = 0;
  ASSERT_TRUE(w.WriteFile(dir.File("p.gguf"), [&](uint64_t d, uint64_t t) {
                 last_done = d;
                 last_total = t;
                 ++calls;
               }).ok());
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(last_done, 20u);
  EXPECT_EQ(last_total, 20u);
}

}  // namespace
}  // namespace tessera::gguf
