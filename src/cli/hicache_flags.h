// The hierarchical KV cache's serve flags (SGLang's spelling):
//   --enable-hierarchical-cache
//   --hicache-ratio R            host pages per device page (default 2)
//   --hicache-size GB            host tier size in GB (overrides the ratio)
//   --hicache-mem-layout page_first|layer_first
//   --hicache-write-policy write_through|write_through_selective|write_back
//   --hicache-storage-backend file|redis      the storage tier (L3)
//   --hicache-storage-dir DIR                 file: where pages go
//   --hicache-storage-size GB                 file: capacity (LRU beyond)
//   --hicache-storage-redis-url redis://HOST:PORT[/DB]
//   --hicache-storage-prefetch-policy best_effort|wait_complete|timeout
//   --hicache-storage-prefetch-timeout S      timeout: the longest wait
// ToOptions validates them into engine::HiCacheOptions (the model identity
// of storage keys is the caller's to fill).
#ifndef TESSERA_CLI_HICACHE_FLAGS_H_
#define TESSERA_CLI_HICACHE_FLAGS_H_

#include <CLI/CLI.hpp>

#include <string>

#include "base/status.h"
#include "engine/hicache.h"

namespace tessera::cli {

struct HiCacheFlags {
  bool enable = false;
  double ratio = 2.0;
  double size_gb = 0;
  std::string mem_layout = "page_first";
  std::string write_policy = "write_through";
  std::string storage_backend;
  std::string storage_dir;
  double storage_size_gb = 0;
  std::string storage_redis_url;
  std::string prefetch_policy = "best_effort";
  double prefetch_timeout_s = 1.0;

  // InvalidArgument naming the flag for a bad value.
  StatusOr<engine::HiCacheOptions> ToOptions() const;
};

void AddHiCacheFlags(CLI::App* app, HiCacheFlags* flags);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_HICACHE_FLAGS_H_
