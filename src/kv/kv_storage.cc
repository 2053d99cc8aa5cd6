#include "kv/kv_storage.h"

#include <fmt/format.h>

#include "kv/file_storage.h"
#include "kv/redis_storage.h"

namespace tessera::kv {

StatusOr<std::unique_ptr<KvStorage>> OpenKvStorage(
    const KvStorageOptions& options) {
  if (options.backend == "file") {
    TSR_ASSIGN_OR_RETURN(auto s,
                         FileKvStorage::Open(options.dir, options.capacity_bytes));
    return std::unique_ptr<KvStorage>(std::move(s));
  }
  if (options.backend == "redis") {
    if (options.redis_url.empty()) {
      return InvalidArgumentError(
          "the redis storage tier needs --hicache-storage-redis-url "
          "redis://HOST:PORT[/DB]");
    }
    TSR_ASSIGN_OR_RETURN(auto s, RedisKvStorage::Open(options.redis_url,
                                                      options.timeout_ms));
    return std::unique_ptr<KvStorage>(std::move(s));
  }
  return InvalidArgumentError(fmt::format(
      "unknown --hicache-storage-backend '{}'; use file or redis",
      options.backend));
}

}  // namespace tessera::kv
