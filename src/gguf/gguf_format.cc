#include "gguf/gguf_format.h"

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
  }
  return "unknown";
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
  }
  return FileType::kAllF32;
}

int64_t BlockElements(TensorType type) {
  return type == TensorType::kQ8_0 ? kQ8_0BlockElements : 1;
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
