#include "base/file_checks.h"

#include <sstream>

#include <fstream>

#include <filesystem>

#include <fmt/format.h>
#include <sys/stat.h>

namespace tessera {

Status CheckRegularFile(const std::string& path, size_t max_bytes,
                        std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return OkStatus();
  if (S_ISDIR(st.st_mode)) return OkStatus();
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return InvalidArgumentError(
        fmt::format("{} {} is {}; give a regular file", what, path, kind));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return InvalidArgumentError(fmt::format(
        "{} {} is {} bytes, more than the {} MiB such a file may hold; is it "
        "the right file?",
        what, path, static_cast<uint64_t>(st.st_size), max_bytes >> 20));
  }
  return OkStatus();
}

StatusOr<std::string> ReadTextFile(const std::string& path,
                                    const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgumentError(
        fmt::format("{} {} is a directory; give a file", what, path));
  }
  TSR_RETURN_IF_ERROR(CheckRegularFile(path, kMaxTextFileBytes, what));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFoundError(
        fmt::format("cannot open {} {}; check the path", what, path));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    return InternalError(fmt::format("error reading {} {}", what, path));
  }
  return ss.str();
}

}  // namespace tessera
