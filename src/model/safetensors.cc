#include "model/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "base/bounded_json.h"

namespace tessera::model {
namespace {

using Json = nlohmann::json;

// Hugging Face's reader refuses headers above 100 MB; so do we, so that a
// corrupt length cannot make us parse gigabytes of weights as JSON.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

// Safetensors dtypes Tessera recognises but does not load.
constexpr std::string_view kOtherDTypes[] = {
    "F64",     "I64",     "I32",     "I16",  "I8",      "U64",
    "U32",     "U16",     "U8",      "BOOL", "F8_E4M3", "F8_E5M2",
    "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",   "C64"};

std::string DescribeType(const Json& j) { return std::string(j.type_name()); }

// Reads a non-negative integer that fits in int64/size_t.
std::optional<uint64_t> AsUnsigned(const Json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v >= 0) return static_cast<uint64_t>(v);
  }
  return std::nullopt;
}

}  // namespace

std::string FormatShape(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t NumElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string_view SafetensorsDTypeName(DType dtype) {
  switch (dtype) {
    case TSR_DTYPE_F32:
      return "F32";
    case TSR_DTYPE_F16:
      return "F16";
    case TSR_DTYPE_BF16:
      return "BF16";
    default:
      return "INVALID";
  }
}

std::optional<DType> ParseSafetensorsDType(std::string_view name) {
  if (name == "F32") return TSR_DTYPE_F32;
  if (name == "F16") return TSR_DTYPE_F16;
  if (name == "BF16") return TSR_DTYPE_BF16;
  return std::nullopt;
}

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(
    const std::string& path) {
  std::unique_ptr<SafetensorsFile> st(new SafetensorsFile());
  TSR_ASSIGN_OR_RETURN(st->file_, MappedFile::Open(path));
  TSR_RETURN_IF_ERROR(st->Parse());
  return st;
}

const TensorInfo* SafetensorsFile::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Status SafetensorsFile::Parse() {
  const std::string& path = file_->path();
  const size_t file_size = file_->size();
  if (file_size < 8) {
    return DataLossError(fmt::format(
        "{}: the file is {} bytes, shorter than the 8-byte header length "
        "that starts every safetensors file (truncated, or not a "
        "safetensors file)",
        path, file_size));
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) {
    header_len =
        (header_len << 8) | std::to_integer<uint64_t>(file_->data()[i]);
  }
  if (header_len > kMaxHeaderBytes) {
    return InvalidArgumentError(fmt::format(
        "{}: corrupt header length {} in the first 8 bytes (the limit is "
        "{} bytes; the file is {} bytes): not a safetensors file or a "
        "damaged one",
        path, header_len, kMaxHeaderBytes, file_size));
  }
  if (header_len > file_size - 8) {
    return DataLossError(fmt::format(
        "{}: header length {} (first 8 bytes) runs past the end of the "
        "file ({} bytes): the file is truncated or its header length is "
        "corrupt",
        path, header_len, file_size));
  }
  const char* header_begin = reinterpret_cast<const char*>(file_->data()) + 8;
  std::string_view header(header_begin, header_len);
  if (header.empty() || header.front() != '{') {
    return InvalidArgumentError(fmt::format(
        "{}: malformed header: the {}-byte JSON header does not start with "
        "'{{'",
        path, header_len));
  }

  // Parse within depth limits, refusing duplicate keys (nlohmann would keep
  // the last, silently dropping a tensor).
  JsonLimits limits;
  limits.reject_duplicate_keys = true;
  auto parsed = ParseBoundedJson(header, limits);
  if (!parsed.ok()) {
    return InvalidArgumentError(
        fmt::format("{}: malformed header JSON ({} bytes): {}", path,
                    header_len, parsed.status().message()));
  }
  Json root = std::move(*parsed);
  if (!root.is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: malformed header: expected a JSON object, found {}",
                    path, DescribeType(root)));
  }

  const size_t data_start = 8 + header_len;
  const uint64_t data_size = file_size - data_start;
  tensors_.reserve(root.size());
  for (const auto& item : root.items()) {
    // Named references, not a structured binding: lambdas below capture
    // them (clang 14, used for the fuzz build, cannot capture bindings).
    const std::string& name = item.key();
    const Json& entry = item.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) {
        return InvalidArgumentError(fmt::format(
            "{}: malformed header: __metadata__ must be an object of "
            "strings, found {}",
            path, DescribeType(entry)));
      }
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return InvalidArgumentError(fmt::format(
              "{}: malformed header: __metadata__.{} must be a string, "
              "found {}",
              path, key, DescribeType(value)));
        }
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    auto bad = [&](std::string_view what) {
      return InvalidArgumentError(
          fmt::format("{}: malformed header entry for tensor \"{}\": {}", path,
                      name, what));
    };
    if (!entry.is_object()) {
      return bad(
          fmt::format("expected an object, found {}", DescribeType(entry)));
    }
    auto dtype_it = entry.find("dtype");
    auto shape_it = entry.find("shape");
    auto offsets_it = entry.find("data_offsets");
    if (dtype_it == entry.end() || !dtype_it->is_string()) {
      return bad("\"dtype\" is missing or not a string");
    }
    if (shape_it == entry.end() || !shape_it->is_array()) {
      return bad("\"shape\" is missing or not an array");
    }
    if (offsets_it == entry.end() || !offsets_it->is_array() ||
        offsets_it->size() != 2) {
      return bad(
          "\"data_offsets\" is missing or not an array of two "
          "integers");
    }
    const std::string dtype_name = dtype_it->get<std::string>();
    std::optional<DType> dtype = ParseSafetensorsDType(dtype_name);
    if (!dtype) {
      bool known = std::find(std::begin(kOtherDTypes), std::end(kOtherDTypes),
                             dtype_name) != std::end(kOtherDTypes);
      if (known) {
        return UnimplementedError(fmt::format(
            "{}: tensor \"{}\" has dtype {}, which Tessera does not load "
            "(supported: F32, F16, BF16); convert the checkpoint to one of "
            "those",
            path, name, dtype_name));
      }
      return bad(fmt::format("unknown dtype \"{}\"", dtype_name));
    }
    TensorInfo info;
    info.name = name;
    info.dtype = *dtype;
    // Element count, checked for overflow against the file size.
    uint64_t elements = 1;
    bool overflow = false;
    for (const Json& dim : *shape_it) {
      std::optional<uint64_t> d = AsUnsigned(dim);
      if (!d || *d > uint64_t(std::numeric_limits<int64_t>::max())) {
        return bad(
            fmt::format("shape {} has an entry that is not a "
                        "non-negative integer",
                        shape_it->dump()));
      }
      info.shape.push_back(static_cast<int64_t>(*d));
      if (*d != 0 && elements > std::numeric_limits<uint64_t>::max() / *d) {
        overflow = true;
      }
      elements *= *d;
    }
    std::optional<uint64_t> begin = AsUnsigned((*offsets_it)[0]);
    std::optional<uint64_t> end = AsUnsigned((*offsets_it)[1]);
    if (!begin || !end) {
      return bad(fmt::format("data_offsets {} are not non-negative integers",
                             offsets_it->dump()));
    }
    if (*end < *begin) {
      return bad(fmt::format("data_offsets [{}, {}] end before they begin",
                             *begin, *end));
    }
    const uint64_t elem_size = DTypeSize(info.dtype);
    if (overflow ||
        elements > std::numeric_limits<uint64_t>::max() / elem_size ||
        elements * elem_size != *end - *begin) {
      return InvalidArgumentError(fmt::format(
          "{}: tensor \"{}\": data_offsets [{}, {}] span {} bytes but shape "
          "{} of {} needs {} bytes",
          path, name, *begin, *end, *end - *begin, FormatShape(info.shape),
          dtype_name,
          overflow ? std::string("more than 2^64")
                   : fmt::format("{}", elements * elem_size)));
    }
    info.file_offset = static_cast<size_t>(data_start + *begin);
    info.size_bytes = static_cast<size_t>(*end - *begin);
    tensors_.push_back(std::move(info));
  }

  std::sort(tensors_.begin(), tensors_.end(),
            [](const TensorInfo& a, const TensorInfo& b) {
              if (a.file_offset != b.file_offset) {
                return a.file_offset < b.file_offset;
              }
              return a.size_bytes < b.size_bytes;  // empty ones first
            });
  uint64_t expected_begin = 0;  // relative to the data buffer
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& t : tensors_) {
    uint64_t begin = t.file_offset - data_start;
    uint64_t end = begin + t.size_bytes;
    if (begin < expected_begin) {
      return InvalidArgumentError(fmt::format(
          "{}: tensors \"{}\" (data bytes [{}, {})) and \"{}\" (data bytes "
          "[{}, {})) overlap: the header's data_offsets are inconsistent",
          path, previous->name, previous->file_offset - data_start,
          expected_begin, t.name, begin, end));
    }
    if (begin > expected_begin) {
      return InvalidArgumentError(fmt::format(
          "{}: {} data bytes [{}, {}) before tensor \"{}\" belong to no "
          "tensor: the header's data_offsets are inconsistent",
          path, begin - expected_begin, expected_begin, begin, t.name));
    }
    if (end > data_size) {
      return DataLossError(fmt::format(
          "{}: tensor \"{}\" ends at data byte {} but the file holds only "
          "{} data bytes after its {}-byte header (file size {}): the file "
          "is truncated; download or copy it again",
          path, t.name, end, data_size, header_len, file_size));
    }
    expected_begin = end;
    previous = &t;
  }
  if (expected_begin != data_size) {
    return InvalidArgumentError(fmt::format(
        "{}: {} bytes after the last tensor's data (data bytes [{}, {})) "
        "belong to no tensor: the header does not describe the whole file",
        path, data_size - expected_begin, expected_begin, data_size));
  }
  by_name_.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    by_name_.emplace(tensors_[i].name, i);
  }
  return OkStatus();
}

}  // namespace tessera::model
