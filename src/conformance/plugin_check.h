// `tessera plugin-check`: the conformance kit run against a binary plugin.
//
// Loads the .so with runtime::PluginLibrary (a load failure is a failed
// check), calls probe() (0 means no hardware: exit 77, nothing else runs),
// then runs every check group of checks.h, each in a forked child, and
// prints one line per check and a summary, or one JSON document.
//
// Exit codes: 0 every check passed (skips allowed), 1 any failed, 77 the
// plugin's hardware is absent.
#ifndef TESSERA_CONFORMANCE_PLUGIN_CHECK_H_
#define TESSERA_CONFORMANCE_PLUGIN_CHECK_H_

#include <cstdio>
#include <string>

#include "base/status.h"
#include "conformance/plugin_env.h"

namespace tessera::conformance {

inline constexpr int kExitAllPassed = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitNoHardware = 77;

// The checks `plugin-check --quick` runs (and `tessera doctor` with it): a
// few seconds that cover the table, devices, allocation and alignment,
// memory_stats, async copies, event and stream ordering, graph replay and
// the rms_norm and add ops — enough to catch each fault the test plugins in
// tests/faulty_plugins inject.
inline constexpr const char* kQuickCheckFilter =
    "^(abi\\.(struct_sizes|manifest|sub_tables)$|devices\\.|"
    "memory\\.(alloc_sizes|alignment_requested|stats|buffer_info_struct_size)|"
    "copies\\.async\\.|"
    "streams\\.(in_order|event_covers_prior_work|cross_stream_wait|"
    "event_query_transition)$|graphs\\.|op\\.(add|rms_norm)\\.)";

struct PluginCheckOptions {
  std::string path;
  bool json = false;
  std::string filter;        // regex on check names; "" = all
  InitOptions init_options;  // passed to init()
  double check_timeout_s = 120;
  bool isolate = true;  // fork per group (false: debug in-process)
};

// Parses "k=v,k2=v2" (spaces trimmed; empty = none).
StatusOr<InitOptions> ParseInitOptions(const std::string& text);

// Runs the kit; prints results to `out` and progress to stderr. Returns the
// exit code.
int RunPluginCheck(const PluginCheckOptions& options, std::FILE* out);

}  // namespace tessera::conformance

#endif  // TESSERA_CONFORMANCE_PLUGIN_CHECK_H_
