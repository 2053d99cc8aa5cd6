// GgufFile on files GgufWriter writes (metadata of every kind, tensors of
// every type the writer encodes) and on broken ones: truncated, wrong
// magic or version, a tensor type Tessera cannot read, absurd counts,
// misaligned offsets, duplicate keys. Every broken file must give a clear
// error, never a crash or an out-of-bounds read.
#include "gguf/gguf_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gguf/gguf_writer.h"

namespace tessera::gguf {
namespace {

namespace fs = std::filesystem;

class GgufReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera_gguf_reader_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) { return (dir_ / name).string(); }

  // A small valid file: metadata of several types, an F32 [2, 3] tensor
  // and a Q8_0 [1, 32] one.
  std::string WriteSample() {
    GgufWriter w;
    w.SetString("general.architecture", "llama");
    w.SetU32("llama.block_count", 5);
    w.SetF32("llama.rope.freq_base", 10000.0f);
    w.SetBool("tokenizer.ggml.add_bos_token", true);
    w.SetStringArray("tokenizer.ggml.tokens", {"a", "b", "c"});
    w.SetI32Array("tokenizer.ggml.token_type", {1, 3, 6});
    w.SetF32Array("tokenizer.ggml.scores", {0.0f, -1.5f, -2.0f});
    const std::vector<float> m = {1, 2, 3, 4, 5, 6};
    EXPECT_TRUE(w.AddTensor("m.weight", {2, 3}, TensorType::kF32,
                            [m](const GgufWriter::ByteSink& sink) {
                              return sink(std::as_bytes(std::span(m)));
                            })
                    .ok());
    std::vector<std::byte> q(34, std::byte{0});
    EXPECT_TRUE(w.AddTensor("q.weight", {1, 32}, TensorType::kQ8_0,
                            [q](const GgufWriter::ByteSink& sink) {
                              return sink(std::span<const std::byte>(q));
                            })
                    .ok());
    const std::string path = Path("sample.gguf");
    EXPECT_TRUE(w.WriteFile(path).ok());
    return path;
  }

  std::string Bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string WriteBytes(const std::string& name, const std::string& bytes) {
    const std::string path = Path(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  fs::path dir_;
};

TEST_F(GgufReaderTest, ReadsWhatTheWriterWrote) {
  auto file = GgufFile::Open(WriteSample());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const GgufFile& f = **file;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.GetString("general.architecture")->value(), "llama");
  EXPECT_EQ(f.GetInt("llama.block_count")->value(), 5);
  EXPECT_DOUBLE_EQ(f.GetFloat("llama.rope.freq_base")->value(), 10000.0);
  EXPECT_EQ(f.GetBool("tokenizer.ggml.add_bos_token")->value(), true);
  EXPECT_FALSE(f.GetString("absent.key")->has_value());
  const auto* tokens = *f.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(*tokens, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(**f.GetIntArray("tokenizer.ggml.token_type"),
            (std::vector<int64_t>{1, 3, 6}));
  EXPECT_EQ(**f.GetFloatArray("tokenizer.ggml.scores"),
            (std::vector<double>{0.0, -1.5, -2.0}));

  // Asking for another type names the key and both types.
  auto wrong = f.GetInt("general.architecture");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("general.architecture"),
            std::string::npos);
  EXPECT_NE(wrong.status().message().find("string"), std::string::npos);

  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensor* m = f.FindTensor("m.weight");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->dims, (std::vector<int64_t>{3, 2}));  // innermost first
  EXPECT_EQ(m->Shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m->type, TensorType::kF32);
  ASSERT_EQ(m->size_bytes, 24u);
  float values[6];
  std::memcpy(values, m->data, 24);
  EXPECT_EQ(values[5], 6.0f);
  const GgufTensor* q = f.FindTensor("q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, TensorType::kQ8_0);
  EXPECT_EQ(q->size_bytes, 34u);
  EXPECT_EQ(f.tensor_bytes(), 58u);
  EXPECT_TRUE(IsGgufFile(f.path()));
}

TEST_F(GgufReaderTest, EveryTruncationIsACleanError) {
  const std::string whole = Bytes(WriteSample());
  // Cut at every byte of the header and a few inside the data (the last
  // tensor ends at most 31 bytes of padding before the end of the file).
  const size_t data_end = whole.size() - 31;
  for (size_t cut = 0; cut < data_end; cut += cut < 400 ? 1 : 7) {
    const std::string path = WriteBytes("cut.gguf", whole.substr(0, cut));
    auto file = GgufFile::Open(path);
    ASSERT_FALSE(file.ok()) << "cut at " << cut;
    EXPECT_NE(file.status().message().find(path), std::string::npos);
  }
  auto file = GgufFile::Open(WriteBytes("cut.gguf", whole.substr(0, data_end - 1)));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(file.status().message().find("truncated"), std::string::npos);
}

TEST_F(GgufReaderTest, RefusesWrongMagicAndVersion) {
  std::string bytes = Bytes(WriteSample());
  std::string not_gguf = bytes;
  not_gguf[0] = 'X';
  auto a = GgufFile::Open(WriteBytes("magic.gguf", not_gguf));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("not a GGUF file"), std::string::npos);
  EXPECT_FALSE(IsGgufFile(Path("magic.gguf")));

  std::string v1 = bytes;
  v1[4] = 1;
  auto b = GgufFile::Open(WriteBytes("v1.gguf", v1));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(b.status().message().find("version 1"), std::string::npos);
}

TEST_F(GgufReaderTest, NamesATensorTypeItCannotRead) {
  std::string bytes = Bytes(WriteSample());
  // The F32 tensor's type field: after its name, n_dims and two dims.
  const size_t name = bytes.find("m.weight");
  ASSERT_NE(name, std::string::npos);
  const size_t type_at = name + 8 + 4 + 16;
  uint32_t type = 0;
  std::memcpy(&type, bytes.data() + type_at, 4);
  ASSERT_EQ(type, 0u);
  type = 16;  // IQ2_XXS
  std::memcpy(bytes.data() + type_at, &type, 4);
  auto file = GgufFile::Open(WriteBytes("iq2.gguf", bytes));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(file.status().message().find("IQ2_XXS"), std::string::npos);
  EXPECT_NE(file.status().message().find("m.weight"), std::string::npos);
}

TEST_F(GgufReaderTest, RefusesAbsurdCountsAndDuplicates) {
  std::string bytes = Bytes(WriteSample());
  std::string many = bytes;
  const uint64_t huge = uint64_t(1) << 60;
  std::memcpy(many.data() + 16, &huge, 8);  // the key count
  auto a = GgufFile::Open(WriteBytes("many.gguf", many));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);

  // A key renamed to an earlier key of the same length.
  std::string dup = bytes;
  const size_t scores = dup.find("tokenizer.ggml.scores");
  const size_t tokens = dup.find("tokenizer.ggml.tokens");
  ASSERT_NE(scores, std::string::npos);
  ASSERT_NE(tokens, std::string::npos);
  dup.replace(scores, 21, "tokenizer.ggml.tokens");
  auto b = GgufFile::Open(WriteBytes("dup.gguf", dup));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("appears twice"), std::string::npos);
}

TEST_F(GgufReaderTest, RefusesAStringLongerThanTheFile) {
  std::string bytes = Bytes(WriteSample());
  // The first key's length: right after the 24-byte header.
  const uint64_t huge = uint64_t(1) << 40;
  std::memcpy(bytes.data() + 24, &huge, 8);
  auto file = GgufFile::Open(WriteBytes("long.gguf", bytes));
  ASSERT_FALSE(file.ok());
}

}  // namespace
}  // namespace tessera::gguf
