// Starting the runtime for a command that runs a model (generate, bench).
//
// Reads the plugin choice from `flags` and the environment, creates the
// Runtime and checks that its selected plugin has a device. Every failure
// is the user's choice of plugin or environment, so callers report it as
// bad input (exit 2).
#ifndef TESSERA_CLI_RUNTIME_START_H_
#define TESSERA_CLI_RUNTIME_START_H_

#include <memory>

#include "base/status.h"
#include "runtime/runtime.h"
#include "runtime/runtime_config.h"

namespace tessera::cli {

StatusOr<std::unique_ptr<runtime::Runtime>> StartUsableRuntime(
    const runtime::RuntimeFlags& flags);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_RUNTIME_START_H_
