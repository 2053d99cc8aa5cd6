// A minimal GGUF v3 reader for the tests of this folder only: parses a
// whole file into its header, metadata (as JSON values with their GGUF
// type) and tensor infos with their data, checking every length against the
// file so a malformed file fails the test instead of crashing it. Written
// independently of GgufWriter (byte offsets are recomputed here from the
// format, not shared with the writer).
//
// Thread-safety: plain value types.
#ifndef TESSERA_GGUF_GGUF_TEST_READER_H_
#define TESSERA_GGUF_GGUF_TEST_READER_H_

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::gguf::testing {

struct ReadTensor {
  std::string name;
  std::vector<uint64_t> dims;  // innermost first, as stored
  uint32_t type = 0;
  uint64_t offset = 0;  // from the data section
  std::string data;     // the bytes up to the next tensor / the end
};

struct ReadFile {
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_start = 0;
  // key -> (value type, value); arrays are JSON arrays, the element type in
  // array_types.
  std::map<std::string, std::pair<uint32_t, nlohmann::json>> kv;
  std::map<std::string, uint32_t> array_types;
  std::vector<std::string> key_order;
  std::vector<ReadTensor> tensors;

  const ReadTensor* Find(const std::string& name) const {
    for (const auto& t : tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }
  const nlohmann::json& Value(const std::string& key) const {
    return kv.at(key).second;
  }
};

class Cursor {
 public:
  explicit Cursor(const std::string& bytes) : b_(bytes) {}
  template <typename T>
  T Get() {
    Need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string String() {
    uint64_t n = Get<uint64_t>();
    Need(n);
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  size_t pos() const { return pos_; }

 private:
  void Need(uint64_t n) {
    if (pos_ + n > b_.size()) throw std::runtime_error("GGUF file truncated");
  }
  const std::string& b_;
  size_t pos_ = 0;
};

inline nlohmann::json ReadScalar(Cursor& c, uint32_t type) {
  switch (type) {
    case 0:
      return c.Get<uint8_t>();
    case 1:
      return c.Get<int8_t>();
    case 2:
      return c.Get<uint16_t>();
    case 3:
      return c.Get<int16_t>();
    case 4:
      return c.Get<uint32_t>();
    case 5:
      return c.Get<int32_t>();
    case 6:
      return c.Get<float>();
    case 7: {
      uint8_t b = c.Get<uint8_t>();
      if (b > 1) throw std::runtime_error("GGUF bool is not 0 or 1");
      return b == 1;
    }
    case 8:
      return c.String();
    case 10:
      return c.Get<uint64_t>();
    case 11:
      return c.Get<int64_t>();
    case 12:
      return c.Get<double>();
  }
  throw std::runtime_error("unknown GGUF value type " + std::to_string(type));
}

// Throws std::runtime_error on a malformed file.
inline ReadFile ReadGguf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  Cursor c(bytes);
  ReadFile file;
  if (bytes.size() < 4 || bytes.compare(0, 4, "GGUF") != 0) {
    throw std::runtime_error("no GGUF magic");
  }
  c.Get<uint32_t>();
  file.version = c.Get<uint32_t>();
  const uint64_t n_tensors = c.Get<uint64_t>();
  const uint64_t n_kv = c.Get<uint64_t>();
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.String();
    uint32_t type = c.Get<uint32_t>();
    nlohmann::json value;
    if (type == 9) {
      uint32_t elem = c.Get<uint32_t>();
      uint64_t n = c.Get<uint64_t>();
      value = nlohmann::json::array();
      for (uint64_t j = 0; j < n; ++j) value.push_back(ReadScalar(c, elem));
      file.array_types[key] = elem;
    } else {
      value = ReadScalar(c, type);
    }
    if (file.kv.count(key)) throw std::runtime_error("duplicate key " + key);
    file.key_order.push_back(key);
    file.kv[key] = {type, value};
  }
  if (file.kv.count("general.alignment")) {
    file.alignment = file.Value("general.alignment").get<uint64_t>();
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    ReadTensor t;
    t.name = c.String();
    uint32_t n_dims = c.Get<uint32_t>();
    for (uint32_t d = 0; d < n_dims; ++d) t.dims.push_back(c.Get<uint64_t>());
    t.type = c.Get<uint32_t>();
    t.offset = c.Get<uint64_t>();
    if (t.offset % file.alignment != 0) {
      throw std::runtime_error("unaligned tensor " + t.name);
    }
    file.tensors.push_back(std::move(t));
  }
  file.data_start =
      (c.pos() + file.alignment - 1) / file.alignment * file.alignment;
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    ReadTensor& t = file.tensors[i];
    uint64_t begin = file.data_start + t.offset;
    uint64_t end = i + 1 < file.tensors.size()
                       ? file.data_start + file.tensors[i + 1].offset
                       : bytes.size();
    if (begin > end || end > bytes.size()) {
      throw std::runtime_error("tensor data outside the file: " + t.name);
    }
    t.data = bytes.substr(begin, end - begin);
  }
  return file;
}

}  // namespace tessera::gguf::testing

#endif  // TESSERA_GGUF_GGUF_TEST_READER_H_
