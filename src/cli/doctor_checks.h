// The smoke tests `tessera doctor` runs on a live Runtime: a copy round trip
// with bandwidth, a few ops checked against host arithmetic, and an
// all-reduce over every device. Each is small (a few MiB, a few elements)
// so doctor stays well under a second on a working machine. They report
// failures in their result instead of returning errors, so one failing
// check never hides the others. Not thread-safe; run them one at a time.
#ifndef TESSERA_CLI_DOCTOR_CHECKS_H_
#define TESSERA_CLI_DOCTOR_CHECKS_H_

#include <vector>

#include "cli/doctor_report.h"
#include "runtime/runtime.h"

namespace tessera::cli {

// H2D then D2H of `bytes` (best of a few repetitions) on `device`, with the
// data compared after the round trip.
CopyCheck RunCopyCheck(runtime::Device& device, uint64_t bytes);

// add, rms_norm and linear (f32) on device 0 through the dispatcher, so a
// fallback route is exercised too; each compared with a host computation.
std::vector<OpCheck> RunOpChecks(runtime::Runtime& runtime);

// A sum all-reduce over all devices of the selected plugin, one thread per
// rank; "skipped" when the plugin has no collectives.
AllReduceCheck RunAllReduceCheck(runtime::Runtime& runtime);

// The quick conformance subset (`tessera plugin-check PATH --quick --json`,
// a few seconds) on the plugin at `path` with init `options`, run as a child
// process of this binary so the kit's forks never copy this process's
// threads. "skipped" when the plugin reports no hardware to the kit.
QuickConformance RunQuickConformance(
    const std::string& path, const std::vector<runtime::PluginOption>& options);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_DOCTOR_CHECKS_H_
