// SafetensorsWriter: writes a .safetensors file that SafetensorsFile (and
// Hugging Face's reader) accepts, streaming the data so multi-gigabyte
// checkpoints never sit in memory.
//
// Layout written: u64 little-endian header length N, N bytes of compact
// JSON (keys sorted, padded with spaces so N % 8 == 0 and the data starts
// 8-byte aligned), then each tensor's bytes back to back in the order the
// tensors were declared. "__metadata__" defaults to {"format": "pt"}, which
// Hugging Face's loaders expect.
//
// Data goes to "<path>.partial" through a large stdio buffer; Finish()
// checks that exactly the declared number of bytes arrived, flushes and
// renames it to `path`. A writer destroyed before Finish() (an error, an
// interrupted run) deletes the partial file, so `path` never holds a torn
// file.
//
// Thread-safety: none; one writer is used by one thread.
#ifndef TESSERA_MODEL_SAFETENSORS_WRITER_H_
#define TESSERA_MODEL_SAFETENSORS_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "model/safetensors.h"

namespace tessera::model {

// A tensor to be written: name, dtype (F32, F16 or BF16) and shape.
struct TensorDecl {
  std::string name;
  DType dtype = TSR_DTYPE_F32;
  Shape shape;
};

// The default metadata, {"format": "pt"}.
std::map<std::string, std::string> DefaultSafetensorsMetadata();

// The header bytes (JSON padded to a multiple of 8, without the 8-byte
// length) describing `tensors` laid out back to back in order.
// InvalidArgument for an empty or duplicate name, "__metadata__" as a name,
// an unsupported dtype or a negative dimension.
StatusOr<std::string> BuildSafetensorsHeader(
    std::span<const TensorDecl> tensors,
    const std::map<std::string, std::string>& metadata);

class SafetensorsWriter {
 public:
  // Validates `tensors` (see BuildSafetensorsHeader), creates
  // "<path>.partial" and writes the length and header.
  static StatusOr<std::unique_ptr<SafetensorsWriter>> Create(
      const std::string& path, std::vector<TensorDecl> tensors,
      std::map<std::string, std::string> metadata =
          DefaultSafetensorsMetadata());

  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Appends the next `bytes` of the data buffer (the declared tensors'
  // bytes in order; a call may span tensor boundaries). OutOfRange when it
  // would write more than declared; Internal on an I/O error.
  Status Append(std::span<const std::byte> bytes);
  // Checks that all data arrived (FailedPrecondition naming the first
  // incomplete tensor otherwise), flushes, closes and renames into place.
  Status Finish();

  // Bytes of tensor data declared / appended so far.
  uint64_t data_bytes() const { return data_bytes_; }
  uint64_t bytes_appended() const { return appended_; }

 private:
  SafetensorsWriter() = default;

  std::string path_;
  std::string partial_path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<char[]> buffer_;  // stdio buffer for file_
  std::vector<TensorDecl> tensors_;
  uint64_t data_bytes_ = 0;
  uint64_t appended_ = 0;
  bool finished_ = false;
};

// A tensor held in memory, for WriteSafetensors.
struct TensorBytes {
  TensorDecl decl;
  std::span<const std::byte> bytes;  // NumElements * DTypeSize bytes
};

// Writes a whole file from in-memory tensors (tests, small models).
// InvalidArgument when a tensor's byte count does not match its shape.
Status WriteSafetensors(const std::string& path,
                        std::span<const TensorBytes> tensors,
                        const std::map<std::string, std::string>& metadata =
                            DefaultSafetensorsMetadata());

}  // namespace tessera::model

#endif  // TESSERA_MODEL_SAFETENSORS_WRITER_H_
