// KvStorage: the storage tier of the KV cache (HiCache's L3) — page objects
// (page_object.h) kept by key outside the process, so they outlive it
// (file) or are shared by several servers (redis).
//
// Backends (--hicache-storage-backend):
//   file   a directory of <key>.kvp files (--hicache-storage-dir) with a
//          byte capacity (--hicache-storage-size GB) and LRU eviction;
//          writes go to a temporary file renamed into place, so a crash
//          never leaves a half-written object under a key (file_storage.h);
//   redis  a Redis server (--hicache-storage-redis-url
//          redis://HOST:PORT[/DB]) through hiredis (redis_storage.h).
// Contract: Put overwrites; Get returns NotFound for a missing key and
// another error when the backend fails (Unavailable: unreachable, IO);
// nothing here validates contents (DecodePageObject does). Callers treat
// every error as a miss.
//
// Thread-safety: a backend is used by one thread at a time (the storage
// worker, storage_worker.h); Usage may be called from any thread.
#ifndef TESSERA_KV_KV_STORAGE_H_
#define TESSERA_KV_KV_STORAGE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "kv/page_object.h"

namespace tessera::kv {

struct KvStorageOptions {
  std::string backend;          // "file" | "redis"
  std::string dir;              // file
  uint64_t capacity_bytes = 0;  // file; 0: unlimited
  std::string redis_url;        // redis
  int timeout_ms = 2000;        // redis: connect and command timeout
};

class KvStorage {
 public:
  virtual ~KvStorage() = default;
  virtual const char* name() const = 0;
  virtual Status Put(const PageKey& key, std::span<const uint8_t> object) = 0;
  virtual StatusOr<std::vector<uint8_t>> Get(const PageKey& key) = 0;
  // How many of `keys`, in order, exist (stops at the first missing one).
  virtual StatusOr<size_t> CountPresent(std::span<const PageKey> keys) = 0;
  // Removes every object this backend stored (flush_cache?tier=storage).
  virtual Status Clear() = 0;
  // Objects and bytes held (file: exact; redis: -1 when unknown).
  virtual int64_t objects() const = 0;
  virtual int64_t bytes() const = 0;
  virtual uint64_t capacity_bytes() const { return 0; }
};

// Opens the backend `options.backend` names. InvalidArgument for an
// unknown backend or a bad URL; the file backend creates its directory and
// indexes what is there; the redis backend connects once (Unavailable,
// naming the URL, when it cannot).
StatusOr<std::unique_ptr<KvStorage>> OpenKvStorage(
    const KvStorageOptions& options);

}  // namespace tessera::kv

#endif  // TESSERA_KV_KV_STORAGE_H_
