// FileKvStorage: the `file` storage backend — one file per page object,
// <dir>/<32 hex digits of the key>.kvp.
//
// Durability: Put writes <name>.tmp-<pid>-<n> and renames it over the
// final name, so readers (and a restarted server) see whole objects or
// none; stale temporaries are deleted when the directory is opened.
// Capacity: when the objects' bytes exceed capacity_bytes (> 0), the least
// recently used ones (by an in-memory tick seeded from the files' mtimes
// at open; Get refreshes it) are deleted. A restarted server re-indexes
// the directory, so it finds what an earlier run stored.
//
// Thread-safety: one user thread (the storage worker); objects()/bytes()
// read atomics.
#ifndef TESSERA_KV_FILE_STORAGE_H_
#define TESSERA_KV_FILE_STORAGE_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "kv/kv_storage.h"

namespace tessera::kv {

class FileKvStorage : public KvStorage {
 public:
  static StatusOr<std::unique_ptr<FileKvStorage>> Open(const std::string& dir,
                                                       uint64_t capacity_bytes);

  const char* name() const override { return "file"; }
  Status Put(const PageKey& key, std::span<const uint8_t> object) override;
  StatusOr<std::vector<uint8_t>> Get(const PageKey& key) override;
  StatusOr<size_t> CountPresent(std::span<const PageKey> keys) override;
  Status Clear() override;
  int64_t objects() const override { return objects_.load(); }
  int64_t bytes() const override { return bytes_.load(); }
  uint64_t capacity_bytes() const override { return capacity_bytes_; }

 private:
  struct Entry {
    uint64_t bytes = 0;
    uint64_t tick = 0;
  };
  FileKvStorage(std::string dir, uint64_t capacity_bytes)
      : dir_(std::move(dir)), capacity_bytes_(capacity_bytes) {}
  std::string PathOf(const std::string& hex) const;
  void Remove(std::map<std::string, Entry>::iterator it);
  void EvictToCapacity();
  void Publish();

  const std::string dir_;
  const uint64_t capacity_bytes_;
  std::map<std::string, Entry> index_;  // hex key -> entry
  uint64_t clock_ = 0;
  uint64_t total_bytes_ = 0;
  uint64_t temp_counter_ = 0;
  std::atomic<int64_t> objects_{0};
  std::atomic<int64_t> bytes_{0};
};

}  // namespace tessera::kv

#endif  // TESSERA_KV_FILE_STORAGE_H_
