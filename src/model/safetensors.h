// SafetensorsFile: a memory-mapped, validated .safetensors file (reader).
//
// Format (https://huggingface.co/docs/safetensors): 8 bytes little-endian
// u64 N, then N bytes of JSON header, then the data buffer. The header maps
// each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the start of the data buffer) and may hold a
// "__metadata__" object of string -> string.
//
// Open() maps the file and checks everything before returning, so a caller
// never sees a pointer that reaches outside the file:
//   - the file holds at least the 8-byte length, and the header length fits
//     inside the file (and under 100 MiB);
//   - the header is a JSON object with no duplicate tensor names, every
//     entry has a string dtype, a shape of non-negative integers and two
//     ordered data offsets;
//   - dtype is F32, F16 or BF16 (any other safetensors dtype, e.g. I8 or
//     F64, is Unimplemented and the message names the tensor and dtype);
//   - end - begin == prod(shape) * dtype size;
//   - sorted by offset, the tensors tile the data buffer exactly: no
//     overlap, no gap, nothing after the last one, and the last one ends
//     inside the file (otherwise the file is truncated: DataLoss).
// Every error message starts with the file path and names the tensor
// involved. Codes: NotFound (no file), DataLoss (truncated), Unimplemented
// (dtype), InvalidArgument (anything else malformed).
//
// Tensor data pointers point into the mapping. A file written by Hugging
// Face (or SafetensorsWriter) pads the header so data starts 8-byte aligned;
// other writers may not, so read elements with memcpy, not by casting.
//
// Thread-safety: immutable after Open(); any number of readers.
#ifndef TESSERA_MODEL_SAFETENSORS_H_
#define TESSERA_MODEL_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "base/mapped_file.h"

namespace tessera::model {

// A tensor shape, outermost dimension first (row-major). [] is a scalar.
using Shape = std::vector<int64_t>;

// "[1024, 64]"; "[]" for a scalar.
std::string FormatShape(std::span<const int64_t> shape);
// Product of the dimensions (1 for a scalar). Callers pass validated shapes.
int64_t NumElements(std::span<const int64_t> shape);

// Safetensors dtype names: F32, F16, BF16 <-> TSR_DTYPE_*.
std::string_view SafetensorsDTypeName(DType dtype);
std::optional<DType> ParseSafetensorsDType(std::string_view name);

// One tensor of a file, as its header describes it.
struct TensorInfo {
  std::string name;
  DType dtype = TSR_DTYPE_INVALID;  // F32, F16 or BF16
  Shape shape;
  size_t file_offset = 0;  // byte offset of the first element in the file
  size_t size_bytes = 0;   // NumElements(shape) * DTypeSize(dtype)
};

class SafetensorsFile {
 public:
  // Maps and validates `path` (see the file comment for the checks).
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(
      const std::string& path);

  const std::string& path() const { return file_->path(); }
  // All tensors, in the order of their data in the file.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr when the file has no tensor of that name.
  const TensorInfo* Find(std::string_view name) const;
  // The first byte of `tensor`'s data inside the mapping (info must come
  // from this file). Valid while this object lives.
  const std::byte* Data(const TensorInfo& tensor) const {
    return file_->data() + tensor.file_offset;
  }
  // The "__metadata__" entries (empty when absent).
  const std::map<std::string, std::string>& metadata() const {
    return metadata_;
  }
  // Size of the whole file in bytes.
  size_t file_size() const { return file_->size(); }

 private:
  SafetensorsFile() = default;
  Status Parse();

  std::unique_ptr<MappedFile> file_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> by_name_;  // name -> index
  std::map<std::string, std::string> metadata_;
};

}  // namespace tessera::model

#endif  // TESSERA_MODEL_SAFETENSORS_H_
