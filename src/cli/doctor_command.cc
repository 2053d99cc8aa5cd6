// Placeholder until its owner lands the real command.
#include "cli/command.h"

namespace tessera::cli {

Command AddDoctorCommand(CLI::App& root) {
  Command command;
  command.app = root.add_subcommand("doctor", "(not built yet)");
  command.run = [] { return 2; };
  return command;
}

}  // namespace tessera::cli
