// RedisKvStorage: the `redis` storage backend — page objects as Redis
// strings "tessera:kv:<32 hex digits>" on a Redis server several Tessera
// servers share (the remote-DRAM tier: server B hits prefixes server A
// computed). hiredis (Debian libhiredis-dev) is the client.
//
// URL: redis://HOST:PORT[/DB] (DB selected with SELECT after connecting).
// Failures: every command has a timeout (KvStorageOptions::timeout_ms); a
// broken connection is dropped and Unavailable returned; the next call
// after at least a second reconnects, so a Redis that goes away costs
// misses (recompute), never a stuck scheduler or wrong tokens.
//
// Thread-safety: one user thread (the storage worker).
#ifndef TESSERA_KV_REDIS_STORAGE_H_
#define TESSERA_KV_REDIS_STORAGE_H_

#include <chrono>
#include <memory>
#include <string>

#include "kv/kv_storage.h"

struct redisContext;

namespace tessera::kv {

struct RedisUrl {
  std::string host;
  int port = 6379;
  int db = 0;
};
// InvalidArgument naming the expected form for anything else.
StatusOr<RedisUrl> ParseRedisUrl(const std::string& url);

class RedisKvStorage : public KvStorage {
 public:
  static StatusOr<std::unique_ptr<RedisKvStorage>> Open(const std::string& url,
                                                        int timeout_ms);
  ~RedisKvStorage() override;

  const char* name() const override { return "redis"; }
  Status Put(const PageKey& key, std::span<const uint8_t> object) override;
  StatusOr<std::vector<uint8_t>> Get(const PageKey& key) override;
  StatusOr<size_t> CountPresent(std::span<const PageKey> keys) override;
  Status Clear() override;
  int64_t objects() const override { return -1; }
  int64_t bytes() const override { return -1; }

 private:
  RedisKvStorage(std::string url, RedisUrl parsed, int timeout_ms)
      : url_(std::move(url)), parsed_(std::move(parsed)),
        timeout_ms_(timeout_ms) {}
  // A live connection, reconnecting (at most once a second) when needed.
  Status Connect();
  // Drops the connection after an error; returns Unavailable naming it.
  Status Broken(const std::string& what);

  const std::string url_;
  const RedisUrl parsed_;
  const int timeout_ms_;
  redisContext* ctx_ = nullptr;
  std::chrono::steady_clock::time_point last_attempt_{};
};

}  // namespace tessera::kv

#endif  // TESSERA_KV_REDIS_STORAGE_H_
