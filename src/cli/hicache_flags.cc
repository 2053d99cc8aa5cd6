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
}

}  // namespace tessera::cli
