#include "kv/file_storage.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace tessera::kv {
namespace {

namespace fs = std::filesystem;
constexpr const char* kSuffix = ".kvp";

bool IsHexKey(const std::string& s) {
  return s.size() == 32 &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

StatusOr<std::unique_ptr<FileKvStorage>> FileKvStorage::Open(
    const std::string& dir, uint64_t capacity_bytes) {
  if (dir.empty()) {
    return InvalidArgumentError(
        "the file storage tier needs a directory: pass --hicache-storage-dir");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return InvalidArgumentError(fmt::format(
        "cannot use --hicache-storage-dir {}: {}", dir,
        ec ? ec.message() : std::string("not a directory")));
  }
  std::unique_ptr<FileKvStorage> s(new FileKvStorage(dir, capacity_bytes));
  // Index what an earlier run left, oldest first; drop temporaries.
  std::vector<std::pair<fs::file_time_type, std::pair<std::string, uint64_t>>>
      found;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp-") != std::string::npos) {
      fs::remove(e.path(), ec);
      continue;
    }
    if (e.path().extension() != kSuffix) continue;
    const std::string hex = e.path().stem().string();
    if (!IsHexKey(hex)) continue;
    found.push_back({e.last_write_time(ec), {hex, e.file_size(ec)}});
  }
  std::sort(found.begin(), found.end());
  for (const auto& [time, entry] : found) {
    s->index_[entry.first] = Entry{entry.second, ++s->clock_};
    s->total_bytes_ += entry.second;
  }
  s->EvictToCapacity();
  s->Publish();
  return s;
}

std::string FileKvStorage::PathOf(const std::string& hex) const {
  return (fs::path(dir_) / (hex + kSuffix)).string();
}

void FileKvStorage::Publish() {
  objects_.store(static_cast<int64_t>(index_.size()));
  bytes_.store(static_cast<int64_t>(total_bytes_));
}

void FileKvStorage::Remove(std::map<std::string, Entry>::iterator it) {
  std::error_code ec;
  fs::remove(PathOf(it->first), ec);
  total_bytes_ -= it->second.bytes;
  index_.erase(it);
}

void FileKvStorage::EvictToCapacity() {
  while (capacity_bytes_ > 0 && total_bytes_ > capacity_bytes_ &&
         !index_.empty()) {
    auto oldest = std::min_element(
        index_.begin(), index_.end(),
        [](const auto& a, const auto& b) { return a.second.tick < b.second.tick; });
    Remove(oldest);
  }
}

Status FileKvStorage::Put(const PageKey& key, std::span<const uint8_t> object) {
  const std::string hex = key.Hex();
  const std::string final_path = PathOf(hex);
  const std::string temp =
      fmt::format("{}.tmp-{}-{}", final_path, ::getpid(), ++temp_counter_);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(object.data()),
              static_cast<std::streamsize>(object.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(temp, ec);
      return UnavailableError(fmt::format("writing {}: {}", temp,
                                          std::strerror(errno)));
    }
  }
  std::error_code ec;
  fs::rename(temp, final_path, ec);
  if (ec) {
    fs::remove(temp, ec);
    return UnavailableError(
        fmt::format("renaming {} into place: {}", temp, ec.message()));
  }
  auto it = index_.find(hex);
  if (it != index_.end()) total_bytes_ -= it->second.bytes;
  index_[hex] = Entry{object.size(), ++clock_};
  total_bytes_ += object.size();
  EvictToCapacity();
  Publish();
  return OkStatus();
}

StatusOr<std::vector<uint8_t>> FileKvStorage::Get(const PageKey& key) {
  const std::string hex = key.Hex();
  auto it = index_.find(hex);
  if (it == index_.end()) return NotFoundError("no such page");
  std::ifstream in(PathOf(hex), std::ios::binary);
  if (!in) {
    Remove(it);  // deleted behind our back
    Publish();
    return NotFoundError("page file is gone");
  }
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
  it->second.tick = ++clock_;
  return data;
}

StatusOr<size_t> FileKvStorage::CountPresent(std::span<const PageKey> keys) {
  size_t n = 0;
  while (n < keys.size() && index_.count(keys[n].Hex()) != 0) ++n;
  return n;
}

Status FileKvStorage::Clear() {
  while (!index_.empty()) Remove(index_.begin());
  Publish();
  return OkStatus();
}

}  // namespace tessera::kv
