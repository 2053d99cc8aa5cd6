// Placeholder until its owner lands the real command.
#include "cli/command.h"

namespace tessera::cli {

Command AddPluginCheckCommand(CLI::App& root) {
  Command command;
  command.app = root.add_subcommand("plugin-check", "(not built yet)");
  command.run = [] { return 2; };
  return command;
}

}  // namespace tessera::cli
