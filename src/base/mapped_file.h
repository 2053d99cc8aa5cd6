// MappedFile: a read-only memory map of a whole file (POSIX mmap).
//
// The mapping lives as long as the object; pointers obtained from data()
// are valid until it is destroyed. Pages are loaded lazily by the kernel, so
// opening a multi-gigabyte checkpoint costs nothing until its bytes are read.
// An empty file maps to data() == nullptr, size() == 0.
//
// Thread-safety: immutable after Open(); data() may be read from any thread.
#ifndef TESSERA_BASE_MAPPED_FILE_H_
#define TESSERA_BASE_MAPPED_FILE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "base/status.h"

namespace tessera {

class MappedFile {
 public:
  // Maps `path` read-only. NotFound when it does not exist; InvalidArgument
  // when it is not a regular file; Internal when open/mmap fail (the message
  // carries strerror). Messages start with the path.
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;

  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace tessera

#endif  // TESSERA_BASE_MAPPED_FILE_H_
