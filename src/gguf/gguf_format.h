// GGUF v3: the constants of the file format llama.cpp (ggml) reads, and the
// sizes of the tensor types Tessera writes.
//
// File layout (all integers little-endian):
//   u32 magic "GGUF" | u32 version (3) | u64 tensor count | u64 kv count
//   kv count x { string key | u32 value type | value }
//   tensor count x { string name | u32 n_dims | u64 dims[n_dims]
//                    | u32 tensor type | u64 offset }
//   padding to `general.alignment` (default 32)
//   tensor data; each tensor starts at data_start + offset, offset a
//   multiple of the alignment.
// A string is u64 byte length + UTF-8 bytes (no NUL). An array value is
// u32 element type + u64 count + the elements. dims run innermost first:
// a row-major [rows, cols] matrix has dims {cols, rows}.
//
// Block-quantized types pack the innermost dimension in blocks: Q8_0 is 32
// elements as {f16 scale d, int8 q[32]} (34 bytes), element = d * q.
//
// Pure constants and functions, thread-safe.
#ifndef TESSERA_GGUF_GGUF_FORMAT_H_
#define TESSERA_GGUF_GGUF_FORMAT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tessera::gguf {

inline constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kVersion = 3;
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr std::string_view kAlignmentKey = "general.alignment";
// ggml's GGML_MAX_NAME is 64 including the terminating NUL.
inline constexpr size_t kMaxTensorNameBytes = 63;
inline constexpr uint32_t kMaxDims = 4;

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// ggml_type values of the tensor types written here.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ8_0 = 8,
  kBF16 = 30,
};

// llama.cpp's llama_ftype ("general.file_type"): what most 2-D tensors are.
enum class FileType : uint32_t {
  kAllF32 = 0,
  kMostlyF16 = 1,
  kMostlyQ8_0 = 7,
  kMostlyBF16 = 32,
};

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

inline constexpr int64_t kQ8_0BlockElements = 32;
inline constexpr size_t kQ8_0BlockBytes = 34;  // f16 d + int8 q[32]

// "f32", "f16", "bf16", "q8_0".
std::string_view TensorTypeName(TensorType type);
// Inverse of TensorTypeName; nullopt for anything else.
std::optional<TensorType> ParseTensorType(std::string_view name);
// The file type whose 2-D tensors are `type`.
FileType FileTypeFor(TensorType type);

// Elements per block (1 for F32/F16/BF16, 32 for Q8_0).
int64_t BlockElements(TensorType type);
// Bytes per block.
size_t BlockBytes(TensorType type);
// Bytes of a row of `elements` innermost elements; nullopt when `elements`
// is not a multiple of BlockElements(type).
std::optional<uint64_t> RowBytes(TensorType type, int64_t elements);
// Bytes of a tensor of row-major `shape` (outermost first); nullopt when
// the innermost dimension does not fill whole blocks. A scalar ([]) is one
// element.
std::optional<uint64_t> TensorBytes(TensorType type,
                                    std::span<const int64_t> shape);

// `value` rounded up to a multiple of `alignment` (> 0).
inline uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace tessera::gguf

#endif  // TESSERA_GGUF_GGUF_FORMAT_H_
