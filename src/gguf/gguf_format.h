// GGUF v3: the constants of the file format llama.cpp (ggml) reads, and the
// sizes of the tensor types Tessera writes (F32, F16, BF16, Q8_0) and reads
// (those and Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; block_decode.h).
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
// elements as {f16 scale d, int8 q[32]} (34 bytes), element = d * q; the
// other layouts are spelled out in block_decode.h.
//
// Pure constants and functions, thread-safe.
#ifndef TESSERA_GGUF_GGUF_FORMAT_H_
#define TESSERA_GGUF_GGUF_FORMAT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
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

// ggml_type values of the tensor types written or read here.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
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
// Elements per K-quant super-block (ggml's QK_K).
inline constexpr int64_t kSuperBlockElements = 256;

// The split regexes of the byte-level pre-tokenizers llama.cpp names
// "qwen2" and "llama-bpe" (as their tokenizer.json files spell them).
inline constexpr std::string_view kQwen2PreRegex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
inline constexpr std::string_view kLlama3PreRegex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", ...
std::string_view TensorTypeName(TensorType type);
// Inverse of TensorTypeName for the types the writer encodes (f32, f16,
// bf16, q8_0); nullopt for anything else.
std::optional<TensorType> ParseTensorType(std::string_view name);
// The TensorType of a raw ggml_type value when it is one listed above.
std::optional<TensorType> ReadableTensorType(uint32_t ggml_type);
// ggml's name of any ggml_type value ("Q4_K", "IQ2_XXS", ...), for error
// messages; "type N" for a value ggml does not define either.
std::string GgmlTypeName(uint32_t ggml_type);
// The file type whose 2-D tensors are `type`.
FileType FileTypeFor(TensorType type);

// Elements per block (1 for F32/F16/BF16, 32 for Q4_0..Q8_0, 256 for the
// K-quants).
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
