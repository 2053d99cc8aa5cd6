#include "model/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "model/safetensors_writer.h"
#include "model/test_util.h"
#include "testing/fixtures.h"

namespace tessera::model {
namespace {

using ::tessera::model::testing::RawSafetensors;
using ::tessera::model::testing::ReadFile;
using ::tessera::model::testing::ScratchDir;
using ::tessera::model::testing::WriteFile;
using ::testing::HasSubstr;

template <typename T>
std::span<const std::byte> AsBytes(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

TEST(SafetensorsTest, WriterOutputReadsBack) {
  ScratchDir dir;
  std::vector<float> a = {1.0f, -2.5f, 3.25f, 0.0f, 7.0f, 8.0f};
  std::vector<uint16_t> b = {FloatToBf16(1.5f), FloatToBf16(-0.25f)};
  std::vector<uint16_t> c = {FloatToF16(0.5f)};
  std::vector<float> scalar = {42.0f};
  std::vector<float> empty;
  std::vector<TensorBytes> tensors = {
      {{"a", TSR_DTYPE_F32, {2, 3}}, AsBytes(a)},
      {{"b", TSR_DTYPE_BF16, {2}}, AsBytes(b)},
      {{"c", TSR_DTYPE_F16, {1, 1}}, AsBytes(c)},
      {{"scalar", TSR_DTYPE_F32, {}}, AsBytes(scalar)},
      {{"empty", TSR_DTYPE_F32, {0, 4}}, AsBytes(empty)},
  };
  const std::string path = dir.File("x.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, tensors).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));

  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->tensors().size(), 5u);
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  const TensorInfo* info = (*file)->Find("a");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->dtype, TSR_DTYPE_F32);
  EXPECT_EQ(info->shape, (Shape{2, 3}));
  EXPECT_EQ(info->size_bytes, 24u);
  EXPECT_EQ(info->file_offset % 8, 0u) << "data must start 8-byte aligned";
  std::vector<float> read(6);
  std::memcpy(read.data(), (*file)->Data(*info), 24);
  EXPECT_EQ(read, a);
  info = (*file)->Find("b");
  ASSERT_NE(info, nullptr);
  uint16_t bits;
  std::memcpy(&bits, (*file)->Data(*info) + 2, 2);
  EXPECT_EQ(Bf16ToFloat(bits), -0.25f);
  EXPECT_EQ((*file)->Find("c")->dtype, TSR_DTYPE_F16);
  EXPECT_EQ((*file)->Find("scalar")->shape, Shape{});
  EXPECT_EQ((*file)->Find("empty")->size_bytes, 0u);
  EXPECT_EQ((*file)->Find("missing"), nullptr);

  // The header length is a multiple of 8 and padded with spaces.
  std::string raw = ReadFile(path);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_NE(raw.substr(8, n).find("\"__metadata__\":{\"format\":\"pt\"}"),
            std::string::npos);
}

TEST(SafetensorsTest, WriterChecksWhatItIsGiven) {
  ScratchDir dir;
  std::vector<float> two = {1, 2};
  std::vector<TensorBytes> wrong_size = {
      {{"t", TSR_DTYPE_F32, {3}}, AsBytes(two)}};
  Status s = WriteSafetensors(dir.File("a.safetensors"), wrong_size);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"t\""));

  auto dup = SafetensorsWriter::Create(
      dir.File("b.safetensors"),
      {{"t", TSR_DTYPE_F32, {1}}, {"t", TSR_DTYPE_F32, {1}}});
  EXPECT_FALSE(dup.ok());
  EXPECT_THAT(dup.status().message(), HasSubstr("declared twice"));

  auto i32 = SafetensorsWriter::Create(dir.File("c.safetensors"),
                                       {{"t", TSR_DTYPE_I32, {1}}});
  EXPECT_FALSE(i32.ok());

  // Too much data, and Finish with too little.
  auto writer = SafetensorsWriter::Create(
      dir.File("d.safetensors"),
      {{"t", TSR_DTYPE_F32, {1}}, {"u", TSR_DTYPE_F32, {2}}});
  ASSERT_TRUE(writer.ok());
  std::vector<float> four = {1, 2, 3, 4};
  EXPECT_EQ((*writer)->Append(AsBytes(four)).code(), StatusCode::kOutOfRange);
  ASSERT_TRUE((*writer)->Append(AsBytes(two)).ok());
  Status finish = (*writer)->Finish();
  EXPECT_EQ(finish.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(finish.message(), HasSubstr("\"u\" is incomplete"));
  writer->reset();
  EXPECT_FALSE(std::filesystem::exists(dir.File("d.safetensors")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("d.safetensors.partial")));
}

TEST(SafetensorsTest, OpensStories260k) {
  TSR_REQUIRE_SHARED_FIXTURE(path, "models/stories260k/model.safetensors");
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->tensors().size(), 47u);
  const TensorInfo* embed = (*file)->Find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->shape, (Shape{512, 64}));
  EXPECT_EQ(embed->dtype, TSR_DTYPE_F32);
  float v[2];
  std::memcpy(&v[0], (*file)->Data(*embed), 4);
  std::memcpy(&v[1], (*file)->Data(*embed) + 4 * (64 + 5), 4);
  // Values read independently with Python's struct module.
  EXPECT_EQ(v[0], -0.29129287600517273f);
  EXPECT_EQ(v[1], -0.019095731899142265f);
}

// Writes `bytes` as a file and expects Open to fail with `code` and a
// message naming the file and containing every piece of `parts`.
void ExpectBroken(const ScratchDir& dir, std::string_view bytes,
                  StatusCode code, std::vector<std::string> parts) {
  const std::string path = dir.File("broken.safetensors");
  WriteFile(path, bytes);
  auto file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok()) << "opened a broken file";
  EXPECT_EQ(file.status().code(), code) << file.status().ToString();
  EXPECT_THAT(file.status().message(), HasSubstr(path));
  for (const std::string& part : parts) {
    EXPECT_THAT(file.status().message(), HasSubstr(part));
  }
}

constexpr std::string_view kGoodHeader =
    R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

TEST(SafetensorsTest, RejectsTruncatedFiles) {
  ScratchDir dir;
  ExpectBroken(dir, "", StatusCode::kDataLoss, {"shorter than the 8-byte"});
  ExpectBroken(dir, std::string("\x10\x00\x00", 3), StatusCode::kDataLoss,
               {"3 bytes"});
  // Header cut short.
  std::string good = RawSafetensors(kGoodHeader, std::string(8, '\0'));
  ExpectBroken(dir, good.substr(0, 20), StatusCode::kDataLoss,
               {"runs past the end of the file", "truncated"});
  // Data cut short.
  ExpectBroken(dir, good.substr(0, good.size() - 3), StatusCode::kDataLoss,
               {"tensor \"w\"", "truncated"});
}

TEST(SafetensorsTest, RejectsCorruptHeaderLength) {
  ScratchDir dir;
  std::string bytes = RawSafetensors(kGoodHeader, std::string(8, '\0'));
  bytes[7] = '\x7f';  // a length near 2^63
  ExpectBroken(dir, bytes, StatusCode::kInvalidArgument,
               {"corrupt header length"});
}

TEST(SafetensorsTest, RejectsMalformedHeaderJson) {
  ScratchDir dir;
  ExpectBroken(dir, RawSafetensors(R"({"w": {"dtype": "F32",)", ""),
               StatusCode::kInvalidArgument, {"malformed header JSON"});
  ExpectBroken(dir, RawSafetensors("[1, 2]", ""), StatusCode::kInvalidArgument,
               {"malformed header"});
  ExpectBroken(dir, RawSafetensors(R"({"w": 3})", ""),
               StatusCode::kInvalidArgument, {"\"w\"", "expected an object"});
  ExpectBroken(dir,
               RawSafetensors(R"({"w":{"dtype":"F32","shape":[2]}})",
                              std::string(8, '\0')),
               StatusCode::kInvalidArgument, {"\"w\"", "data_offsets"});
  ExpectBroken(dir,
               RawSafetensors(
                   R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
                   std::string(8, '\0')),
               StatusCode::kInvalidArgument, {"\"w\"", "non-negative"});
  ExpectBroken(
      dir,
      RawSafetensors(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                     R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                     std::string(8, '\0')),
      StatusCode::kInvalidArgument, {"\"w\" appears twice"});
  ExpectBroken(dir, RawSafetensors(R"({"__metadata__":{"format":3}})", ""),
               StatusCode::kInvalidArgument, {"__metadata__.format"});
}

TEST(SafetensorsTest, RejectsUnsupportedDTypes) {
  ScratchDir dir;
  ExpectBroken(
      dir,
      RawSafetensors(R"({"q":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}})",
                     std::string(4, '\0')),
      StatusCode::kUnimplemented, {"tensor \"q\"", "dtype I8"});
  ExpectBroken(dir,
               RawSafetensors(
                   R"({"d":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                   std::string(8, '\0')),
               StatusCode::kUnimplemented, {"tensor \"d\"", "dtype F64"});
  ExpectBroken(
      dir,
      RawSafetensors(R"({"z":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})",
                     std::string(1, '\0')),
      StatusCode::kInvalidArgument, {"\"z\"", "unknown dtype \"Q4\""});
}

TEST(SafetensorsTest, RejectsInconsistentOffsets) {
  ScratchDir dir;
  // Size does not match the shape.
  ExpectBroken(dir,
               RawSafetensors(
                   R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                   std::string(8, '\0')),
               StatusCode::kInvalidArgument,
               {"\"w\"", "span 8 bytes", "needs 12"});
  // Overlap.
  ExpectBroken(dir,
               RawSafetensors(
                   R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                   R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                   std::string(12, '\0')),
               StatusCode::kInvalidArgument, {"\"a\"", "\"b\"", "overlap"});
  // Gap.
  ExpectBroken(dir,
               RawSafetensors(
                   R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                   std::string(12, '\0')),
               StatusCode::kInvalidArgument, {"\"b\"", "belong to no tensor"});
  // Trailing bytes.
  ExpectBroken(dir, RawSafetensors(kGoodHeader, std::string(12, '\0')),
               StatusCode::kInvalidArgument, {"4 bytes after the last"});
  // Offsets far outside the file.
  ExpectBroken(
      dir,
      RawSafetensors(
          R"({"w":{"dtype":"F32","shape":[1000000],"data_offsets":[0,4000000]}})",
          std::string(8, '\0')),
      StatusCode::kDataLoss, {"\"w\"", "truncated"});
  // end < begin.
  ExpectBroken(dir,
               RawSafetensors(
                   R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})",
                   std::string(8, '\0')),
               StatusCode::kInvalidArgument,
               {"\"w\"", "end before they begin"});
}

TEST(SafetensorsTest, MissingFileIsNotFound) {
  ScratchDir dir;
  auto file = SafetensorsFile::Open(dir.File("nope.safetensors"));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(), HasSubstr("nope.safetensors"));
}

TEST(SafetensorsTest, FormatShape) {
  EXPECT_EQ(FormatShape(Shape{}), "[]");
  EXPECT_EQ(FormatShape(Shape{3, 4}), "[3, 4]");
  EXPECT_EQ(NumElements(Shape{}), 1);
  EXPECT_EQ(NumElements(Shape{3, 0}), 0);
}

}  // namespace
}  // namespace tessera::model
