#include "gguf/gguf_format.h"

#include <iterator>
#include <string>

namespace tessera::gguf {

std::string_view TensorTypeName(TensorType type) {
  switch (type) {
    case TensorType::kF32:
      return "f32";
    case TensorType::kF16:
      return "f16";
    case TensorType::kQ8_0:
      return "q8_0";
    case TensorType::kBF16:
      return "bf16";
    case TensorType::kQ4_0:
      return "q4_0";
    case TensorType::kQ4_1:
      return "q4_1";
    case TensorType::kQ5_0:
      return "q5_0";
    case TensorType::kQ5_1:
      return "q5_1";
    case TensorType::kQ4_K:
      return "q4_k";
    case TensorType::kQ5_K:
      return "q5_k";
    case TensorType::kQ6_K:
      return "q6_k";
  }
  return "unknown";
}

std::optional<TensorType> ReadableTensorType(uint32_t ggml_type) {
  for (TensorType type :
       {TensorType::kF32, TensorType::kF16, TensorType::kBF16,
        TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1,
        TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ4_K,
        TensorType::kQ5_K, TensorType::kQ6_K}) {
    if (uint32_t(type) == ggml_type) return type;
  }
  return std::nullopt;
}

std::string GgmlTypeName(uint32_t ggml_type) {
  // ggml.h's enum ggml_type (values 4, 5 and 31-33 are retired).
  static constexpr std::string_view kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "type 4", "type 5",
      "Q5_0",    "Q5_1",   "Q8_0",    "Q8_1",  "Q2_K",   "Q3_K",
      "Q4_K",    "Q5_K",   "Q6_K",    "Q8_K",  "IQ2_XXS", "IQ2_XS",
      "IQ3_XXS", "IQ1_S",  "IQ4_NL",  "IQ3_S", "IQ2_S",  "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M",
      "BF16",    "type 31", "type 32", "type 33", "TQ1_0", "TQ2_0",
      "type 36", "type 37", "type 38", "MXFP4"};
  if (ggml_type < std::size(kNames)) return std::string(kNames[ggml_type]);
  return "type " + std::to_string(ggml_type);
}

std::optional<TensorType> ParseTensorType(std::string_view name) {
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kBF16,
                          TensorType::kQ8_0}) {
    if (name == TensorTypeName(type)) return type;
  }
  return std::nullopt;
}

FileType FileTypeFor(TensorType type) {
  switch (type) {
    case TensorType::kF32:
      return FileType::kAllF32;
    case TensorType::kF16:
      return FileType::kMostlyF16;
    case TensorType::kQ8_0:
      return FileType::kMostlyQ8_0;
    case TensorType::kBF16:
      return FileType::kMostlyBF16;
    default:  // the writer encodes only the four types above
      return FileType::kAllF32;
  }
}

int64_t BlockElements(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
      return 1;
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
      return kSuperBlockElements;
    default:
      return 32;
  }
}

size_t BlockBytes(TensorType type) {
  switch (type) {
    case TensorType::kF32:
      return 4;
    case TensorType::kF16:
    case TensorType::kBF16:
      return 2;
    case TensorType::kQ8_0:
      return kQ8_0BlockBytes;
    case TensorType::kQ4_0:
      return 18;  // f16 d, 16 bytes of nibbles
    case TensorType::kQ4_1:
      return 20;  // f16 d, f16 m, 16 bytes of nibbles
    case TensorType::kQ5_0:
      return 22;  // f16 d, u32 high bits, 16 bytes of nibbles
    case TensorType::kQ5_1:
      return 24;  // f16 d, f16 m, u32 high bits, 16 bytes of nibbles
    case TensorType::kQ4_K:
      return 144;  // f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes
    case TensorType::kQ5_K:
      return 176;  // as Q4_K + 32 bytes of high bits
    case TensorType::kQ6_K:
      return 210;  // 128 low-nibble, 64 high-bit, 16 scale bytes, f16 d
  }
  return 0;
}

std::optional<uint64_t> RowBytes(TensorType type, int64_t elements) {
  const int64_t block = BlockElements(type);
  if (elements < 0 || elements % block != 0) return std::nullopt;
  return uint64_t(elements / block) * BlockBytes(type);
}

std::optional<uint64_t> TensorBytes(TensorType type,
                                    std::span<const int64_t> shape) {
  if (shape.empty()) return RowBytes(type, 1);
  auto row = RowBytes(type, shape.back());
  if (!row) return std::nullopt;
  uint64_t bytes = *row;
  for (size_t i = 0; i + 1 < shape.size(); ++i) {
    if (shape[i] < 0) return std::nullopt;
    bytes *= uint64_t(shape[i]);
  }
  return bytes;
}

}  // namespace tessera::gguf
