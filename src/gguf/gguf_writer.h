// GgufWriter: builds a GGUF v3 file (gguf_format.h) from metadata key/values
// and tensors whose bytes are produced on demand, so converting a
// multi-gigabyte checkpoint keeps one chunk in memory at a time.
//
// Usage: set metadata (Set*), declare tensors (AddTensor) with a source
// that streams exactly TensorBytes(type, shape) bytes, then WriteFile().
// Metadata keeps the order keys were first set in; setting a key again
// replaces its value in place. "general.alignment" (u32) is always the
// first key; tensor offsets and the data section are aligned to it.
//
// WriteFile writes "<path>.partial" and renames it to `path` only when
// every tensor delivered exactly its declared size; on any error the
// partial file is removed and `path` is left untouched.
//
// Thread-safety: none; one writer is used by one thread.
#ifndef TESSERA_GGUF_GGUF_WRITER_H_
#define TESSERA_GGUF_GGUF_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_format.h"

namespace tessera::gguf {

// One metadata value: a scalar or an array of strings / i32 / f32.
using MetadataValue = std::variant<std::string, uint32_t, int32_t, float, bool,
                                   uint64_t, std::vector<std::string>,
                                   std::vector<int32_t>, std::vector<float>>;

class GgufWriter {
 public:
  // Receives the next chunk of a tensor's bytes.
  using ByteSink = std::function<Status(std::span<const std::byte>)>;
  // Streams a tensor's bytes, in order, through the sink (any chunking).
  using TensorSource = std::function<Status(const ByteSink&)>;
  // (tensor bytes written so far, total tensor bytes).
  using Progress = std::function<void(uint64_t, uint64_t)>;

  // `alignment` must be a power of two (32 is what llama.cpp expects when
  // the key is absent; it is written either way).
  explicit GgufWriter(uint32_t alignment = uint32_t(kDefaultAlignment));

  void SetString(std::string_view key, std::string value);
  void SetU32(std::string_view key, uint32_t value);
  void SetI32(std::string_view key, int32_t value);
  void SetU64(std::string_view key, uint64_t value);
  void SetF32(std::string_view key, float value);
  void SetBool(std::string_view key, bool value);
  void SetStringArray(std::string_view key, std::vector<std::string> value);
  void SetI32Array(std::string_view key, std::vector<int32_t> value);
  void SetF32Array(std::string_view key, std::vector<float> value);

  // Declares a tensor of row-major `shape` (outermost first, 1 to 4
  // dimensions). InvalidArgument for an empty, too long (> 63 bytes) or
  // duplicate name, a bad rank, a negative dimension, or an innermost
  // dimension that does not fill whole blocks of `type`.
  Status AddTensor(std::string name, std::vector<int64_t> shape,
                   TensorType type, TensorSource source);

  uint32_t alignment() const { return alignment_; }
  size_t num_tensors() const { return tensors_.size(); }
  // Sum of the tensors' data bytes (without alignment padding).
  uint64_t tensor_data_bytes() const;

  // Writes the file (see the file comment). Errors name the path and, for
  // a source that failed or delivered the wrong size, the tensor.
  Status WriteFile(const std::string& path, const Progress& progress = {});

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;  // row-major, outermost first
    TensorType type;
    uint64_t bytes = 0;
    uint64_t offset = 0;  // from the start of the data section
    TensorSource source;
  };

  void Set(std::string_view key, MetadataValue value);
  // Everything before the data section, padded to the alignment.
  std::string SerializeHeader() const;

  uint32_t alignment_;
  std::vector<std::pair<std::string, MetadataValue>> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace tessera::gguf

#endif  // TESSERA_GGUF_GGUF_WRITER_H_
