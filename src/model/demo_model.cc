#include "model/demo_model.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "model/make_model.h"

namespace tessera::model {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStampFile = "tessera_demo_stamp";

// Holds an exclusive flock on a file for its lifetime.
class FileLock {
 public:
  static StatusOr<FileLock> Acquire(const fs::path& path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return InternalError(fmt::format(
          "{}: cannot open the demo model's lock file: {}; make the build "
          "directory writable or pass --model-path",
          path.string(), std::strerror(errno)));
    }
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return InternalError(fmt::format("{}: cannot lock: {}", path.string(),
                                       std::strerror(err)));
    }
    return FileLock(fd);
  }
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
  }

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

bool HoldsDemoModel(const fs::path& dir) {
  std::error_code ec;
  std::string have;
  if (std::ifstream in(dir / kStampFile); in) std::getline(in, have);
  return have == kDemoModelStamp && fs::exists(dir / "config.json", ec) &&
         fs::exists(dir / "tokenizer.json", ec);
}

}  // namespace

StatusOr<std::string> EnsureDemoModel(const std::string& dir_name) {
  const fs::path dir(dir_name);
  std::error_code ec;
  if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
  fs::path lock_path = dir;
  if (!lock_path.has_filename()) lock_path = lock_path.parent_path();
  lock_path += ".lock";
  auto lock = FileLock::Acquire(lock_path);
  if (!lock.ok()) return lock.status();

  if (!HoldsDemoModel(dir)) {
    // A stale stamp goes first, so a write that dies half way never leaves
    // a directory that matches.
    fs::remove(dir / kStampFile, ec);
    MakeModelOptions o;
    o.preset = "tiny";
    o.arch = Architecture::kQwen3;
    o.dtype = TSR_DTYPE_F32;
    o.seed = 0;
    o.out_dir = dir.string();
    o.force = true;
    auto made = MakeModel(o);
    if (!made.ok()) return made.status().WithContext("writing the demo model");
    const fs::path stamp = dir / kStampFile;
    const fs::path partial = stamp.string() + ".partial";
    {
      std::ofstream out(partial, std::ios::trunc);
      out << kDemoModelStamp << "\n";
      out.close();
      if (!out) {
        return InternalError(fmt::format("{}: write failed: {}",
                                         partial.string(),
                                         std::strerror(errno)));
      }
    }
    fs::rename(partial, stamp, ec);
    if (ec) {
      return InternalError(fmt::format("{}: cannot rename into place: {}",
                                       stamp.string(), ec.message()));
    }
  }
  return fs::weakly_canonical(dir).string();
}

}  // namespace tessera::model
