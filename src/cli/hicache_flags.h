// The hierarchical KV cache's serve flags (SGLang's spelling):
//   --enable-hierarchical-cache
//   --hicache-ratio R            host pages per device page (default 2)
//   --hicache-size GB            host tier size in GB (overrides the ratio)
//   --hicache-mem-layout page_first|layer_first
//   --hicache-write-policy write_through|write_through_selective|write_back
// ToOptions validates them into engine::HiCacheOptions.
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

  // InvalidArgument naming the flag for a bad value.
  StatusOr<engine::HiCacheOptions> ToOptions() const;
};

void AddHiCacheFlags(CLI::App* app, HiCacheFlags* flags);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_HICACHE_FLAGS_H_
