#include "cli/hicache_flags.h"

#include <fmt/format.h>

namespace tessera::cli {

StatusOr<engine::HiCacheOptions> HiCacheFlags::ToOptions() const {
  engine::HiCacheOptions o;
  o.enabled = enable;
  if (!(ratio > 0)) {
    return InvalidArgumentError(fmt::format(
        "--hicache-ratio {} must be positive (host pages per device page)",
        ratio));
  }
  if (size_gb < 0) {
    return InvalidArgumentError("--hicache-size must be positive (GB)");
  }
  o.ratio = ratio;
  o.size_gb = size_gb;
  TSR_ASSIGN_OR_RETURN(o.layout, kv::ParseHostLayout(mem_layout));
  TSR_ASSIGN_OR_RETURN(o.write_policy, engine::ParseWritePolicy(write_policy));
  TSR_ASSIGN_OR_RETURN(o.prefetch_policy,
                       engine::ParsePrefetchPolicy(prefetch_policy));
  if (!(prefetch_timeout_s >= 0)) {
    return InvalidArgumentError(
        "--hicache-storage-prefetch-timeout must be >= 0 seconds");
  }
  o.prefetch_timeout_s = prefetch_timeout_s;
  if (!storage_backend.empty()) {
    if (!enable) {
      return InvalidArgumentError(
          "--hicache-storage-backend needs --enable-hierarchical-cache (the "
          "storage tier sits below the host tier)");
    }
    if (storage_backend != "file" && storage_backend != "redis") {
      return InvalidArgumentError(fmt::format(
          "unknown --hicache-storage-backend '{}'; use file or redis",
          storage_backend));
    }
    if (storage_backend == "file" && storage_dir.empty()) {
      return InvalidArgumentError(
          "--hicache-storage-backend file needs --hicache-storage-dir DIR");
    }
    if (storage_backend == "redis" && storage_redis_url.empty()) {
      return InvalidArgumentError(
          "--hicache-storage-backend redis needs --hicache-storage-redis-url "
          "redis://HOST:PORT[/DB]");
    }
    if (storage_size_gb < 0) {
      return InvalidArgumentError("--hicache-storage-size must be >= 0 (GB)");
    }
  }
  o.storage.backend = storage_backend;
  o.storage.dir = storage_dir;
  o.storage.capacity_bytes = static_cast<uint64_t>(storage_size_gb * 1e9);
  o.storage.redis_url = storage_redis_url;
  return o;
}

void AddHiCacheFlags(CLI::App* app, HiCacheFlags* flags) {
  app->add_flag("--enable-hierarchical-cache", flags->enable,
                "keep KV pages evicted from the device in a host-memory tier "
                "and load them back on a prefix hit (HiCache)");
  app->add_option("--hicache-ratio", flags->ratio,
                  "host tier size as a multiple of the device KV pool")
      ->capture_default_str();
  app->add_option("--hicache-size", flags->size_gb,
                  "host tier size in GB (overrides --hicache-ratio)");
  app->add_option("--hicache-mem-layout", flags->mem_layout,
                  "host page layout: page_first or layer_first")
      ->capture_default_str();
  app->add_option("--hicache-write-policy", flags->write_policy,
                  "when pages get their host copy: write_through, "
                  "write_through_selective (2nd hit) or write_back (at "
                  "eviction)")
      ->capture_default_str();
  app->add_option("--hicache-storage-backend", flags->storage_backend,
                  "a storage tier below the host tier: file or redis");
  app->add_option("--hicache-storage-dir", flags->storage_dir,
                  "file storage: the directory of page files (kept across "
                  "restarts)");
  app->add_option("--hicache-storage-size", flags->storage_size_gb,
                  "file storage: capacity in GB, least recently used pages "
                  "go beyond it (0: unlimited)");
  app->add_option("--hicache-storage-redis-url", flags->storage_redis_url,
                  "redis storage: redis://HOST:PORT[/DB]");
  app->add_option("--hicache-storage-prefetch-policy", flags->prefetch_policy,
                  "whether a request waits for pages prefetched from "
                  "storage: best_effort, wait_complete or timeout")
      ->capture_default_str();
  app->add_option("--hicache-storage-prefetch-timeout",
                  flags->prefetch_timeout_s,
                  "timeout policy: the longest wait in seconds")
      ->capture_default_str();
}

}  // namespace tessera::cli
