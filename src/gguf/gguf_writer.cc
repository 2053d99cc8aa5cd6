#include "gguf/gguf_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <type_traits>

namespace tessera::gguf {
namespace {

// Appends little-endian scalars and GGUF strings to a byte string.
class Encoder {
 public:
  explicit Encoder(std::string& out) : out_(out) {}

  template <typename T>
  void Scalar(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.append(bytes, sizeof(T));
  }
  void String(std::string_view s) {
    Scalar<uint64_t>(s.size());
    out_.append(s);
  }
  void Type(ValueType type) { Scalar<uint32_t>(uint32_t(type)); }

  void Value(const MetadataValue& value) {
    std::visit([this](const auto& v) { Typed(v); }, value);
  }

 private:
  void Typed(const std::string& v) {
    Type(ValueType::kString);
    String(v);
  }
  void Typed(uint32_t v) {
    Type(ValueType::kUint32);
    Scalar(v);
  }
  void Typed(int32_t v) {
    Type(ValueType::kInt32);
    Scalar(v);
  }
  void Typed(uint64_t v) {
    Type(ValueType::kUint64);
    Scalar(v);
  }
  void Typed(float v) {
    Type(ValueType::kFloat32);
    Scalar(v);
  }
  void Typed(bool v) {
    Type(ValueType::kBool);
    Scalar<uint8_t>(v ? 1 : 0);
  }
  void Typed(const std::vector<std::string>& v) {
    Type(ValueType::kArray);
    Type(ValueType::kString);
    Scalar<uint64_t>(v.size());
    for (const auto& s : v) String(s);
  }
  void Typed(const std::vector<int32_t>& v) {
    Type(ValueType::kArray);
    Type(ValueType::kInt32);
    Scalar<uint64_t>(v.size());
    for (int32_t x : v) Scalar(x);
  }
  void Typed(const std::vector<float>& v) {
    Type(ValueType::kArray);
    Type(ValueType::kFloat32);
    Scalar<uint64_t>(v.size());
    for (float x : v) Scalar(x);
  }

  std::string& out_;
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  SetU32(kAlignmentKey, alignment);
}

void GgufWriter::Set(std::string_view key, MetadataValue value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::string(key), std::move(value));
}

void GgufWriter::SetString(std::string_view key, std::string value) {
  Set(key, std::move(value));
}
void GgufWriter::SetU32(std::string_view key, uint32_t value) {
  Set(key, value);
}
void GgufWriter::SetI32(std::string_view key, int32_t value) {
  Set(key, value);
}
void GgufWriter::SetU64(std::string_view key, uint64_t value) {
  Set(key, value);
}
void GgufWriter::SetF32(std::string_view key, float value) { Set(key, value); }
void GgufWriter::SetBool(std::string_view key, bool value) { Set(key, value); }
void GgufWriter::SetStringArray(std::string_view key,
                                std::vector<std::string> value) {
  Set(key, std::move(value));
}
void GgufWriter::SetI32Array(std::string_view key, std::vector<int32_t> value) {
  Set(key, std::move(value));
}
void GgufWriter::SetF32Array(std::string_view key, std::vector<float> value) {
  Set(key, std::move(value));
}

Status GgufWriter::AddTensor(std::string name, std::vector<int64_t> shape,
                             TensorType type, TensorSource source) {
  if (name.empty() || name.size() > kMaxTensorNameBytes) {
    return InvalidArgumentError(
        fmt::format("GGUF tensor name '{}' must be 1 to {} bytes long", name,
                    kMaxTensorNameBytes));
  }
  for (const Tensor& t : tensors_) {
    if (t.name == name) {
      return InvalidArgumentError(
          fmt::format("GGUF tensor '{}' is declared twice", name));
    }
  }
  if (shape.empty() || shape.size() > kMaxDims) {
    return InvalidArgumentError(
        fmt::format("GGUF tensor '{}' has {} dimensions; GGUF holds 1 to {}",
                    name, shape.size(), kMaxDims));
  }
  for (int64_t d : shape) {
    if (d < 0) {
      return InvalidArgumentError(
          fmt::format("GGUF tensor '{}' has a negative dimension", name));
    }
  }
  auto bytes = TensorBytes(type, shape);
  if (!bytes) {
    return InvalidArgumentError(fmt::format(
        "GGUF tensor '{}': its innermost dimension {} is not a multiple of "
        "{}'s block of {} elements; store it as f16 or f32",
        name, shape.back(), TensorTypeName(type), BlockElements(type)));
  }
  uint64_t offset = 0;
  if (!tensors_.empty()) {
    const Tensor& last = tensors_.back();
    offset = AlignUp(last.offset + last.bytes, alignment_);
  }
  tensors_.push_back({std::move(name), std::move(shape), type, *bytes, offset,
                      std::move(source)});
  return OkStatus();
}

uint64_t GgufWriter::tensor_data_bytes() const {
  uint64_t total = 0;
  for (const Tensor& t : tensors_) total += t.bytes;
  return total;
}

std::string GgufWriter::SerializeHeader() const {
  std::string out;
  Encoder e(out);
  out.append(kMagic, sizeof(kMagic));
  e.Scalar<uint32_t>(kVersion);
  e.Scalar<uint64_t>(tensors_.size());
  e.Scalar<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    e.String(key);
    e.Value(value);
  }
  for (const Tensor& t : tensors_) {
    e.String(t.name);
    e.Scalar<uint32_t>(uint32_t(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) {
      e.Scalar<uint64_t>(uint64_t(*it));  // innermost first
    }
    e.Scalar<uint32_t>(uint32_t(t.type));
    e.Scalar<uint64_t>(t.offset);
  }
  out.resize(AlignUp(out.size(), alignment_), '\0');
  return out;
}

Status GgufWriter::WriteFile(const std::string& path,
                             const Progress& progress) {
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0) {
    return InvalidArgumentError(
        fmt::format("GGUF alignment {} is not a power of two", alignment_));
  }
  const std::string partial = path + ".partial";
  // Declared before the file: stdio uses it until fclose.
  std::vector<char> buffer(8 << 20);
  std::unique_ptr<std::FILE, FileCloser> file(
      std::fopen(partial.c_str(), "wb"));
  if (!file) {
    return InternalError(
        fmt::format("cannot create {}: {}; check that the "
                    "folder exists and is writable",
                    partial, std::strerror(errno)));
  }
  std::setvbuf(file.get(), buffer.data(), _IOFBF, buffer.size());

  uint64_t position = 0;  // bytes written to the data section so far
  auto write = [&](const void* data, size_t size) -> Status {
    if (size != 0 && std::fwrite(data, 1, size, file.get()) != size) {
      return InternalError(fmt::format("writing {} failed: {} (disk full?)",
                                       partial, std::strerror(errno)));
    }
    return OkStatus();
  };
  static const char kZeros[64] = {};
  auto pad = [&](uint64_t count) -> Status {
    while (count > 0) {
      const size_t n = size_t(std::min<uint64_t>(count, sizeof(kZeros)));
      TSR_RETURN_IF_ERROR(write(kZeros, n));
      count -= n;
    }
    return OkStatus();
  };
  auto fail = [&](Status status) {
    file.reset();
    std::remove(partial.c_str());
    return status;
  };

  const std::string header = SerializeHeader();
  if (Status s = write(header.data(), header.size()); !s.ok()) return fail(s);

  const uint64_t total = tensor_data_bytes();
  uint64_t done = 0;
  for (const Tensor& t : tensors_) {
    if (position < t.offset) {
      if (Status s = pad(t.offset - position); !s.ok()) {
        return fail(s);
      }
      position = t.offset;
    }
    uint64_t delivered = 0;
    ByteSink sink = [&](std::span<const std::byte> chunk) -> Status {
      if (delivered + chunk.size() > t.bytes) {
        return InternalError(
            fmt::format("GGUF tensor '{}' produced more than its {} bytes",
                        t.name, t.bytes));
      }
      TSR_RETURN_IF_ERROR(write(chunk.data(), chunk.size()));
      delivered += chunk.size();
      done += chunk.size();
      if (progress) progress(done, total);
      return OkStatus();
    };
    Status s = t.source ? t.source(sink)
                        : InternalError(fmt::format(
                              "GGUF tensor '{}' has no data source", t.name));
    if (!s.ok()) return fail(s.WithContext(fmt::format("tensor '{}'", t.name)));
    if (delivered != t.bytes) {
      return fail(InternalError(
          fmt::format("GGUF tensor '{}' produced {} of its {} bytes", t.name,
                      delivered, t.bytes)));
    }
    position += t.bytes;
  }
  // Pad the last tensor too, so the file ends on an aligned boundary.
  const uint64_t end = AlignUp(position, alignment_);
  if (Status s = pad(end - position); !s.ok()) return fail(s);

  if (std::fflush(file.get()) != 0 || std::fclose(file.release()) != 0) {
    return fail(InternalError(
        fmt::format("writing {} failed: {}", partial, std::strerror(errno))));
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    Status s = InternalError(fmt::format("cannot rename {} to {}: {}", partial,
                                         path, std::strerror(errno)));
    std::remove(partial.c_str());
    return s;
  }
  return OkStatus();
}

}  // namespace tessera::gguf
