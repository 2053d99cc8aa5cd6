// GgufFile: a memory-mapped, validated GGUF file (reader). Versions 2 and
// 3 (the layout in gguf_format.h; v2 is the same bytes).
//
// Open() maps the file and checks everything before returning, so no
// caller sees a length or offset that reaches outside the file:
//   - magic, a supported version, tensor and key counts the file can hold;
//   - every string and array length fits in the remaining bytes (a key or
//     a string value at most 64 MiB); arrays nest at most 4 deep (values of
//     nested arrays are skipped, their keys kept with ValueType kArray);
//   - no duplicate key, no duplicate tensor name; general.alignment, when
//     present, is a power of two;
//   - each tensor has 1..4 dimensions, each > 0, whose element count does
//     not overflow; a type gguf_format.h reads (any other is Unimplemented
//     naming the tensor and ggml's name of the type, e.g. IQ2_XXS); an
//     innermost dimension that fills whole blocks; an aligned offset; and
//     its bytes lie inside the file (otherwise DataLoss: truncated).
// Every error message starts with the path. Codes: NotFound (no file),
// DataLoss (truncated), Unimplemented (version, tensor type),
// InvalidArgument (anything else malformed).
//
// Tensor data points into the mapping (valid while the GgufFile lives);
// data may be unaligned, so read with memcpy.
//
// Thread-safety: immutable after Open(); any number of readers.
#ifndef TESSERA_GGUF_GGUF_READER_H_
#define TESSERA_GGUF_GGUF_READER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "gguf/gguf_format.h"

namespace tessera::gguf {

// One metadata value. Scalars fill the field of their kind; arrays of
// scalars fill the vector of their element kind (integers and bools as
// int_array, floats as float_array, strings as string_array).
struct GgufValue {
  ValueType type = ValueType::kUint8;
  ValueType element_type = ValueType::kUint8;  // arrays only
  uint64_t array_size = 0;                     // arrays only

  bool IsInteger() const;  // any integer type (not bool)
  bool IsFloat() const;    // f32 or f64

  // Scalars (meaningful per type): integers in `integer` (uint64 values
  // above INT64_MAX are refused at parse time), floats in `real`.
  int64_t integer = 0;
  double real = 0.0;
  bool boolean = false;
  std::string string;
  std::vector<int64_t> int_array;
  std::vector<double> float_array;
  std::vector<std::string> string_array;
};

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // innermost first, as stored
  TensorType type = TensorType::kF32;
  const std::byte* data = nullptr;  // into the mapping
  uint64_t size_bytes = 0;

  // Row-major shape, outermost first (dims reversed).
  std::vector<int64_t> Shape() const;
  int64_t num_elements() const;
};

class GgufFile {
 public:
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  uint64_t file_bytes() const { return file_->size(); }
  // Sum of all tensors' bytes.
  uint64_t tensor_bytes() const { return tensor_bytes_; }

  // nullptr when absent.
  const GgufValue* Find(std::string_view key) const;
  // Typed reads: nullopt when absent, InvalidArgument naming the key and
  // both types when present with another type.
  StatusOr<std::optional<std::string>> GetString(std::string_view key) const;
  // Any integer type (a float is refused).
  StatusOr<std::optional<int64_t>> GetInt(std::string_view key) const;
  // f32, f64, or an integer.
  StatusOr<std::optional<double>> GetFloat(std::string_view key) const;
  StatusOr<std::optional<bool>> GetBool(std::string_view key) const;
  // Arrays; nullptr when absent, InvalidArgument when not an array of that
  // kind.
  StatusOr<const std::vector<std::string>*> GetStringArray(
      std::string_view key) const;
  StatusOr<const std::vector<int64_t>*> GetIntArray(std::string_view key) const;
  StatusOr<const std::vector<double>*> GetFloatArray(
      std::string_view key) const;

  // All tensors, in file order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* FindTensor(std::string_view name) const;

 private:
  GgufFile() = default;
  Status Parse();

  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t tensor_bytes_ = 0;
  std::map<std::string, GgufValue, std::less<>> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Whether `path` is a regular file starting with the GGUF magic (so
// --model-path may name one instead of a model directory).
bool IsGgufFile(const std::string& path);

// "u32", "string", "array", ... for messages.
std::string_view ValueTypeName(ValueType type);

}  // namespace tessera::gguf

#endif  // TESSERA_GGUF_GGUF_READER_H_
