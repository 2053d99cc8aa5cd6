// The parts of init's argument handling every in-tree plugin shares: the
// tsr_init_args struct checks, key=value options, integer option values and
// the visible-device filter (ABI: tsr_init_args). Pure functions.
#ifndef TESSERA_PLUGINS_KIT_INIT_ARGS_H_
#define TESSERA_PLUGINS_KIT_INIT_ARGS_H_

#include <string>
#include <utility>
#include <vector>

#include "status.h"

namespace tessera::plugin_kit {

struct InitArgs {
  std::vector<std::pair<std::string, std::string>> options;  // in order
  int num_visible = -1;  // -1: all devices
  std::vector<int> visible;  // as listed (num_visible entries)
};

// Checks and copies `args` (NULL: defaults).
Status ReadInitArgs(const tsr_init_args* args, InitArgs* out);

// The physical indices to expose, in order: all of 0..num_physical-1 when
// num_visible == -1, else the listed ones that exist (each once).
std::vector<int> VisibleDevices(const InitArgs& args, int num_physical);

// Parses option `key`'s `value` as an integer in [lo, hi].
Status ParseIntOption(const std::string& key, const std::string& value, int lo, int hi,
                      int* out);

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_INIT_ARGS_H_
