#include "cli/runtime_start.h"

namespace tessera::cli {

StatusOr<std::unique_ptr<runtime::Runtime>> StartUsableRuntime(
    const runtime::RuntimeFlags& flags) {
  TSR_ASSIGN_OR_RETURN(runtime::RuntimeConfig config,
                       runtime::RuntimeConfig::FromEnvironment(flags));
  auto rt = runtime::Runtime::Create(config);
  if (!rt.ok()) {
    return rt.status().WithContext(
        "choosing a device plugin (run `tessera doctor` for details)");
  }
  TSR_RETURN_IF_ERROR((*rt)->CheckUsable());
  return std::move(rt).value();
}

}  // namespace tessera::cli
