#include "gguf/gguf_reader.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace tessera::gguf {
namespace {

constexpr uint64_t kMaxStringBytes = uint64_t(64) << 20;
constexpr int kMaxArrayDepth = 4;

// Bounds-checked little-endian reads over the mapped bytes.
class Cursor {
 public:
  Cursor(const std::byte* data, uint64_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  template <typename T>
  Status Read(T* out, std::string_view what) {
    TSR_RETURN_IF_ERROR(Need(sizeof(T), what));
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return OkStatus();
  }

  Status ReadString(std::string* out, std::string_view what) {
    uint64_t n = 0;
    TSR_RETURN_IF_ERROR(Read(&n, what));
    if (n > kMaxStringBytes) {
      return InvalidArgumentError(fmt::format(
          "{}: {} is {} bytes long (at most {} are accepted); the file is "
          "corrupt",
          path_, what, n, kMaxStringBytes));
    }
    TSR_RETURN_IF_ERROR(Need(n, what));
    out->assign(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
    pos_ += n;
    return OkStatus();
  }

  Status Skip(uint64_t n, std::string_view what) {
    TSR_RETURN_IF_ERROR(Need(n, what));
    pos_ += n;
    return OkStatus();
  }

  Status Need(uint64_t n, std::string_view what) const {
    if (n > size_ - pos_) {
      return DataLossError(fmt::format(
          "{}: the file ends inside {} (byte {} of {}); it is truncated, "
          "download it again",
          path_, what, pos_, size_));
    }
    return OkStatus();
  }

 private:
  const std::byte* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& path_;
};

size_t ScalarBytes(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
      return 8;
    default:
      return 0;  // string, array
  }
}

bool KnownType(uint32_t raw) { return raw <= uint32_t(ValueType::kFloat64); }

// One scalar into `v` (its type already set to `type`).
Status ReadScalar(Cursor& c, ValueType type, const std::string& key,
                  const std::string& path, bool* boolean, int64_t* integer,
                  double* real, std::string* string) {
  const std::string what = fmt::format("the value of '{}'", key);
  auto read_int = [&](auto sample) -> Status {
    decltype(sample) x;
    TSR_RETURN_IF_ERROR(c.Read(&x, what));
    if constexpr (std::is_same_v<decltype(sample), uint64_t>) {
      if (x > uint64_t(std::numeric_limits<int64_t>::max())) {
        return InvalidArgumentError(fmt::format(
            "{}: '{}' holds {}, beyond any size Tessera reads", path, key, x));
      }
    }
    *integer = int64_t(x);
    return OkStatus();
  };
  switch (type) {
    case ValueType::kUint8:
      return read_int(uint8_t{});
    case ValueType::kInt8:
      return read_int(int8_t{});
    case ValueType::kUint16:
      return read_int(uint16_t{});
    case ValueType::kInt16:
      return read_int(int16_t{});
    case ValueType::kUint32:
      return read_int(uint32_t{});
    case ValueType::kInt32:
      return read_int(int32_t{});
    case ValueType::kUint64:
      return read_int(uint64_t{});
    case ValueType::kInt64:
      return read_int(int64_t{});
    case ValueType::kFloat32: {
      float f;
      TSR_RETURN_IF_ERROR(c.Read(&f, what));
      *real = f;
      return OkStatus();
    }
    case ValueType::kFloat64:
      return c.Read(real, what);
    case ValueType::kBool: {
      uint8_t b;
      TSR_RETURN_IF_ERROR(c.Read(&b, what));
      if (b > 1) {
        return InvalidArgumentError(fmt::format(
            "{}: '{}' is a bool holding {} (not 0 or 1)", path, key, b));
      }
      *boolean = b == 1;
      return OkStatus();
    }
    case ValueType::kString:
      return c.ReadString(string, what);
    default:
      return InvalidArgumentError(
          fmt::format("{}: '{}' has an array where a scalar belongs", path, key));
  }
}

// Skips an array's elements (nested arrays are not kept).
Status SkipArray(Cursor& c, const std::string& key, const std::string& path,
                 int depth) {
  if (depth > kMaxArrayDepth) {
    return InvalidArgumentError(fmt::format(
        "{}: '{}' nests arrays more than {} deep; the file is corrupt", path,
        key, kMaxArrayDepth));
  }
  uint32_t raw = 0;
  uint64_t n = 0;
  const std::string what = fmt::format("the array '{}'", key);
  TSR_RETURN_IF_ERROR(c.Read(&raw, what));
  TSR_RETURN_IF_ERROR(c.Read(&n, what));
  if (!KnownType(raw)) {
    return InvalidArgumentError(fmt::format(
        "{}: '{}' is an array of unknown value type {}", path, key, raw));
  }
  const ValueType type = ValueType(raw);
  if (size_t bytes = ScalarBytes(type); bytes > 0) {
    if (n > c.remaining() / bytes) return c.Need(c.remaining() + 1, what);
    return c.Skip(n * bytes, what);
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (type == ValueType::kString) {
      uint64_t len = 0;
      TSR_RETURN_IF_ERROR(c.Read(&len, what));
      TSR_RETURN_IF_ERROR(c.Skip(len, what));
    } else {
      TSR_RETURN_IF_ERROR(SkipArray(c, key, path, depth + 1));
    }
  }
  return OkStatus();
}

Status ReadArray(Cursor& c, const std::string& key, const std::string& path,
                 GgufValue* v) {
  uint32_t raw = 0;
  uint64_t n = 0;
  const std::string what = fmt::format("the array '{}'", key);
  TSR_RETURN_IF_ERROR(c.Read(&raw, what));
  TSR_RETURN_IF_ERROR(c.Read(&n, what));
  if (!KnownType(raw)) {
    return InvalidArgumentError(fmt::format(
        "{}: '{}' is an array of unknown value type {}", path, key, raw));
  }
  v->element_type = ValueType(raw);
  v->array_size = n;
  if (v->element_type == ValueType::kArray) {
    // Kept as a key only: its elements are skipped.
    for (uint64_t i = 0; i < n; ++i) {
      TSR_RETURN_IF_ERROR(SkipArray(c, key, path, 2));
    }
    return OkStatus();
  }
  // Each element takes at least one byte (eight for a string's length):
  // a count the rest of the file cannot hold is refused before reserving.
  const uint64_t min_bytes = v->element_type == ValueType::kString
                                 ? 8
                                 : ScalarBytes(v->element_type);
  if (n > c.remaining() / min_bytes) return c.Need(c.remaining() + 1, what);
  for (uint64_t i = 0; i < n; ++i) {
    bool b = false;
    int64_t integer = 0;
    double real = 0.0;
    std::string s;
    TSR_RETURN_IF_ERROR(
        ReadScalar(c, v->element_type, key, path, &b, &integer, &real, &s));
    switch (v->element_type) {
      case ValueType::kString:
        v->string_array.push_back(std::move(s));
        break;
      case ValueType::kFloat32:
      case ValueType::kFloat64:
        v->float_array.push_back(real);
        break;
      case ValueType::kBool:
        v->int_array.push_back(b ? 1 : 0);
        break;
      default:
        v->int_array.push_back(integer);
    }
  }
  return OkStatus();
}

}  // namespace

bool IsGgufFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, kMagic, 4) == 0;
}

std::string_view ValueTypeName(ValueType type) {
  static constexpr std::string_view kNames[] = {
      "u8", "i8", "u16", "i16", "u32", "i32", "f32",
      "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = uint32_t(type);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

bool GgufValue::IsInteger() const {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool GgufValue::IsFloat() const {
  return type == ValueType::kFloat32 || type == ValueType::kFloat64;
}

std::vector<int64_t> GgufTensor::Shape() const {
  return std::vector<int64_t>(dims.rbegin(), dims.rend());
}

int64_t GgufTensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  TSR_ASSIGN_OR_RETURN(file->file_, MappedFile::Open(path));
  TSR_RETURN_IF_ERROR(file->Parse());
  return file;
}

Status GgufFile::Parse() {
  const std::string& p = path();
  Cursor c(file_->data(), file_->size(), p);
  char magic[4] = {};
  if (file_->size() < 4 ||
      (std::memcpy(magic, file_->data(), 4), std::memcmp(magic, kMagic, 4))) {
    return InvalidArgumentError(fmt::format(
        "{}: not a GGUF file (it does not start with \"GGUF\")", p));
  }
  TSR_RETURN_IF_ERROR(c.Skip(4, "the magic"));
  TSR_RETURN_IF_ERROR(c.Read(&version_, "the header"));
  if (version_ != 2 && version_ != 3) {
    return UnimplementedError(fmt::format(
        "{}: GGUF version {}; Tessera reads versions 2 and 3 (convert it "
        "with a current llama.cpp)",
        p, version_));
  }
  uint64_t n_tensors = 0, n_kv = 0;
  TSR_RETURN_IF_ERROR(c.Read(&n_tensors, "the header"));
  TSR_RETURN_IF_ERROR(c.Read(&n_kv, "the header"));
  // A key takes >= 12 bytes (length + type), a tensor info >= 28.
  if (n_kv > c.remaining() / 12 || n_tensors > c.remaining() / 28) {
    return InvalidArgumentError(fmt::format(
        "{}: the header declares {} keys and {} tensors, more than the "
        "file's {} bytes can hold; the file is corrupt",
        p, n_kv, n_tensors, file_->size()));
  }

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    TSR_RETURN_IF_ERROR(c.ReadString(&key, fmt::format("key #{}", i)));
    uint32_t raw = 0;
    TSR_RETURN_IF_ERROR(c.Read(&raw, fmt::format("the type of '{}'", key)));
    if (!KnownType(raw)) {
      return InvalidArgumentError(fmt::format(
          "{}: '{}' has unknown value type {}; the file is corrupt", p, key,
          raw));
    }
    GgufValue v;
    v.type = ValueType(raw);
    if (v.type == ValueType::kArray) {
      TSR_RETURN_IF_ERROR(ReadArray(c, key, p, &v));
    } else {
      TSR_RETURN_IF_ERROR(ReadScalar(c, v.type, key, p, &v.boolean,
                                     &v.integer, &v.real, &v.string));
    }
    if (metadata_.count(key)) {
      return InvalidArgumentError(
          fmt::format("{}: the key '{}' appears twice", p, key));
    }
    metadata_.emplace(std::move(key), std::move(v));
  }

  uint64_t alignment = kDefaultAlignment;
  TSR_ASSIGN_OR_RETURN(auto align, GetInt(kAlignmentKey));
  if (align) {
    if (*align <= 0 || (*align & (*align - 1)) != 0) {
      return InvalidArgumentError(fmt::format(
          "{}: general.alignment is {}, not a power of two", p, *align));
    }
    alignment = uint64_t(*align);
  }

  std::vector<uint64_t> offsets;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    TSR_RETURN_IF_ERROR(c.ReadString(&t.name, fmt::format("tensor #{}", i)));
    const std::string what = fmt::format("the info of tensor '{}'", t.name);
    uint32_t n_dims = 0;
    TSR_RETURN_IF_ERROR(c.Read(&n_dims, what));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return InvalidArgumentError(fmt::format(
          "{}: tensor '{}' has {} dimensions (1 to {} are valid)", p, t.name,
          n_dims, kMaxDims));
    }
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = 0;
      TSR_RETURN_IF_ERROR(c.Read(&dim, what));
      if (dim == 0 || dim > (uint64_t(1) << 40) ||
          elements > (uint64_t(1) << 50) / dim) {
        return InvalidArgumentError(fmt::format(
            "{}: tensor '{}' has dimension {} = {}; the file is corrupt", p,
            t.name, d, dim));
      }
      elements *= dim;
      t.dims.push_back(int64_t(dim));
    }
    uint32_t raw_type = 0;
    uint64_t offset = 0;
    TSR_RETURN_IF_ERROR(c.Read(&raw_type, what));
    TSR_RETURN_IF_ERROR(c.Read(&offset, what));
    auto type = ReadableTensorType(raw_type);
    if (!type) {
      return UnimplementedError(fmt::format(
          "{}: tensor '{}' is {}, a type Tessera cannot read yet; it reads "
          "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K "
          "(llama.cpp's F32/F16/BF16/Q8_0/Q4_0/Q4_K_M/Q5_K_M files)",
          p, t.name, GgmlTypeName(raw_type)));
    }
    t.type = *type;
    auto bytes = TensorBytes(t.type, t.Shape());
    if (!bytes) {
      return InvalidArgumentError(fmt::format(
          "{}: tensor '{}' is {} with rows of {} elements, not whole {}-"
          "element blocks",
          p, t.name, GgmlTypeName(raw_type), t.dims[0],
          BlockElements(t.type)));
    }
    if (offset % alignment != 0) {
      return InvalidArgumentError(fmt::format(
          "{}: tensor '{}' starts at offset {}, not a multiple of the "
          "alignment {}",
          p, t.name, offset, alignment));
    }
    t.size_bytes = *bytes;
    if (tensor_index_.count(t.name)) {
      return InvalidArgumentError(
          fmt::format("{}: the tensor '{}' appears twice", p, t.name));
    }
    tensor_index_.emplace(t.name, tensors_.size());
    offsets.push_back(offset);
    tensors_.push_back(std::move(t));
  }

  const uint64_t data_start = AlignUp(c.pos(), alignment);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    GgufTensor& t = tensors_[i];
    const uint64_t begin = data_start + offsets[i];
    if (offsets[i] > file_->size() || begin > file_->size() ||
        t.size_bytes > file_->size() - begin) {
      return DataLossError(fmt::format(
          "{}: tensor '{}' ({} bytes at offset {}) reaches past the end of "
          "the file ({} bytes); it is truncated, download it again",
          p, t.name, t.size_bytes, begin, file_->size()));
    }
    t.data = file_->data() + begin;
    tensor_bytes_ += t.size_bytes;
  }
  return OkStatus();
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

namespace {
Status WrongType(const std::string& path, std::string_view key,
                 const GgufValue& v, std::string_view wanted) {
  std::string got(ValueTypeName(v.type));
  if (v.type == ValueType::kArray) {
    got = fmt::format("array of {}", ValueTypeName(v.element_type));
  }
  return InvalidArgumentError(fmt::format(
      "{}: '{}' is {} where {} belongs; the file was written by a broken "
      "converter",
      path, key, got, wanted));
}
}  // namespace

StatusOr<std::optional<std::string>> GgufFile::GetString(
    std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return std::optional<std::string>();
  if (v->type != ValueType::kString) return WrongType(path(), key, *v, "a string");
  return std::optional<std::string>(v->string);
}

StatusOr<std::optional<int64_t>> GgufFile::GetInt(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return std::optional<int64_t>();
  if (!v->IsInteger()) return WrongType(path(), key, *v, "an integer");
  return std::optional<int64_t>(v->integer);
}

StatusOr<std::optional<double>> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return std::optional<double>();
  if (v->IsFloat()) return std::optional<double>(v->real);
  if (v->IsInteger()) return std::optional<double>(double(v->integer));
  return WrongType(path(), key, *v, "a number");
}

StatusOr<std::optional<bool>> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return std::optional<bool>();
  if (v->type != ValueType::kBool) return WrongType(path(), key, *v, "a bool");
  return std::optional<bool>(v->boolean);
}

StatusOr<const std::vector<std::string>*> GgufFile::GetStringArray(
    std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return static_cast<const std::vector<std::string>*>(nullptr);
  if (v->type != ValueType::kArray || v->element_type != ValueType::kString) {
    return WrongType(path(), key, *v, "an array of strings");
  }
  return &v->string_array;
}

StatusOr<const std::vector<int64_t>*> GgufFile::GetIntArray(
    std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return static_cast<const std::vector<int64_t>*>(nullptr);
  const bool ok = v->type == ValueType::kArray &&
                  v->element_type != ValueType::kString &&
                  v->element_type != ValueType::kArray &&
                  v->element_type != ValueType::kFloat32 &&
                  v->element_type != ValueType::kFloat64;
  if (!ok) return WrongType(path(), key, *v, "an array of integers");
  return &v->int_array;
}

StatusOr<const std::vector<double>*> GgufFile::GetFloatArray(
    std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return static_cast<const std::vector<double>*>(nullptr);
  if (v->type != ValueType::kArray || (v->element_type != ValueType::kFloat32 &&
                                       v->element_type != ValueType::kFloat64)) {
    return WrongType(path(), key, *v, "an array of floats");
  }
  return &v->float_array;
}

const GgufTensor* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace tessera::gguf
