#include "model/safetensors_writer.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

namespace tessera::model {
namespace {

constexpr size_t kStdioBufferBytes = 8 << 20;

uint64_t DeclBytes(const TensorDecl& t) {
  return uint64_t(NumElements(t.shape)) * DTypeSize(t.dtype);
}

}  // namespace

std::map<std::string, std::string> DefaultSafetensorsMetadata() {
  return {{"format", "pt"}};
}

StatusOr<std::string> BuildSafetensorsHeader(
    std::span<const TensorDecl> tensors,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) {
    nlohmann::json meta = nlohmann::json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header["__metadata__"] = std::move(meta);
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorDecl& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") {
      return InvalidArgumentError(fmt::format(
          "safetensors writer: invalid tensor name \"{}\"", t.name));
    }
    if (!names.insert(t.name).second) {
      return InvalidArgumentError(fmt::format(
          "safetensors writer: tensor \"{}\" declared twice", t.name));
    }
    if (SafetensorsDTypeName(t.dtype) == "INVALID") {
      return InvalidArgumentError(fmt::format(
          "safetensors writer: tensor \"{}\" has dtype {}; only f32, f16 "
          "and bf16 are written",
          t.name, DTypeName(t.dtype)));
    }
    for (int64_t d : t.shape) {
      if (d < 0) {
        return InvalidArgumentError(fmt::format(
            "safetensors writer: tensor \"{}\" has a negative dimension in "
            "{}",
            t.name, FormatShape(t.shape)));
      }
    }
    uint64_t bytes = DeclBytes(t);
    header[t.name] = {{"dtype", SafetensorsDTypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

StatusOr<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::Create(
    const std::string& path, std::vector<TensorDecl> tensors,
    std::map<std::string, std::string> metadata) {
  TSR_ASSIGN_OR_RETURN(std::string header,
                       BuildSafetensorsHeader(tensors, metadata));
  std::unique_ptr<SafetensorsWriter> w(new SafetensorsWriter());
  w->path_ = path;
  w->partial_path_ = path + ".partial";
  w->tensors_ = std::move(tensors);
  for (const TensorDecl& t : w->tensors_) w->data_bytes_ += DeclBytes(t);
  w->file_ = std::fopen(w->partial_path_.c_str(), "wb");
  if (w->file_ == nullptr) {
    return InternalError(fmt::format("{}: cannot create: {}", w->partial_path_,
                                     std::strerror(errno)));
  }
  w->buffer_.reset(new char[kStdioBufferBytes]);
  std::setvbuf(w->file_, w->buffer_.get(), _IOFBF, kStdioBufferBytes);
  unsigned char length[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(n >> (8 * i));
  if (std::fwrite(length, 1, 8, w->file_) != 8 ||
      std::fwrite(header.data(), 1, header.size(), w->file_) != header.size()) {
    return InternalError(fmt::format("{}: write failed: {}", w->partial_path_,
                                     std::strerror(errno)));
  }
  return w;
}

SafetensorsWriter::~SafetensorsWriter() {
  if (file_ != nullptr) std::fclose(file_);
  if (!finished_ && !partial_path_.empty()) {
    std::remove(partial_path_.c_str());
  }
}

Status SafetensorsWriter::Append(std::span<const std::byte> bytes) {
  if (file_ == nullptr) {
    return FailedPreconditionError(
        fmt::format("{}: Append after Finish or a failed write", path_));
  }
  if (bytes.size() > data_bytes_ - appended_) {
    return OutOfRangeError(fmt::format(
        "{}: appending {} bytes exceeds the {} declared data bytes ({} "
        "already written)",
        path_, bytes.size(), data_bytes_, appended_));
  }
  if (bytes.empty()) return OkStatus();
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    Status error = InternalError(
        fmt::format("{}: write failed after {} bytes: {} (is the disk full?)",
                    partial_path_, appended_, std::strerror(errno)));
    std::fclose(file_);
    file_ = nullptr;
    return error;
  }
  appended_ += bytes.size();
  return OkStatus();
}

Status SafetensorsWriter::Finish() {
  if (file_ == nullptr) {
    return FailedPreconditionError(
        fmt::format("{}: Finish after Finish or a failed write", path_));
  }
  if (appended_ != data_bytes_) {
    uint64_t offset = 0;
    std::string incomplete;
    for (const TensorDecl& t : tensors_) {
      offset += DeclBytes(t);
      if (offset > appended_) {
        incomplete = t.name;
        break;
      }
    }
    return FailedPreconditionError(fmt::format(
        "{}: only {} of {} data bytes were written (tensor \"{}\" is "
        "incomplete)",
        path_, appended_, data_bytes_, incomplete));
  }
  bool ok = std::fflush(file_) == 0;
  int err = errno;
  ok = (std::fclose(file_) == 0) && ok;
  if (!ok) err = errno;
  file_ = nullptr;
  if (!ok) {
    return InternalError(fmt::format("{}: flush/close failed: {}",
                                     partial_path_, std::strerror(err)));
  }
  if (std::rename(partial_path_.c_str(), path_.c_str()) != 0) {
    return InternalError(fmt::format("{}: cannot rename {} into place: {}",
                                     path_, partial_path_,
                                     std::strerror(errno)));
  }
  finished_ = true;
  return OkStatus();
}

Status WriteSafetensors(const std::string& path,
                        std::span<const TensorBytes> tensors,
                        const std::map<std::string, std::string>& metadata) {
  std::vector<TensorDecl> decls;
  decls.reserve(tensors.size());
  for (const TensorBytes& t : tensors) {
    if (t.bytes.size() != DeclBytes(t.decl)) {
      return InvalidArgumentError(fmt::format(
          "{}: tensor \"{}\" has {} bytes but shape {} of {} needs {}", path,
          t.decl.name, t.bytes.size(), FormatShape(t.decl.shape),
          DTypeName(t.decl.dtype), DeclBytes(t.decl)));
    }
    decls.push_back(t.decl);
  }
  TSR_ASSIGN_OR_RETURN(
      auto writer, SafetensorsWriter::Create(path, std::move(decls), metadata));
  for (const TensorBytes& t : tensors) {
    TSR_RETURN_IF_ERROR(writer->Append(t.bytes));
  }
  return writer->Finish();
}

}  // namespace tessera::model
