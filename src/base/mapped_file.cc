#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace tessera {

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(
    const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (the fstat below
  // then refuses it); it changes nothing for a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) {
      return NotFoundError(fmt::format("{}: file not found", path));
    }
    return InternalError(
        fmt::format("{}: cannot open: {}", path, std::strerror(err)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return InternalError(
        fmt::format("{}: cannot stat: {}", path, std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError(fmt::format("{}: not a regular file", path));
  }
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* addr = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return InternalError(fmt::format("{}: cannot mmap {} bytes: {}", path,
                                       file->size_, std::strerror(err)));
    }
    file->data_ = static_cast<const std::byte*>(addr);
  }
  ::close(fd);  // the mapping keeps its own reference to the file
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) {
    ::munmap(const_cast<std::byte*>(data_), size_);
  }
}

}  // namespace tessera
