// tessera: the command-line entry point. Dispatches to one subcommand.
#include <CLI/CLI.hpp>

#include <vector>

#include "base/logging.h"
#include "cli/command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "Tessera: an LLM inference server with run-time device plugins.\n"
      "Start with `tessera doctor` to see which devices and plugins work."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera " TESSERA_VERSION);
  std::string log_level;
  app.add_option("--log-level", log_level,
                 "trace|debug|info|warn|error|off (or TESSERA_LOG_LEVEL)");

  std::vector<tessera::cli::Command> commands = {
      tessera::cli::AddDoctorCommand(app),
      tessera::cli::AddPluginCheckCommand(app),
      tessera::cli::AddMakeModelCommand(app),
      tessera::cli::AddTokenizeCommand(app),
      tessera::cli::AddDetokenizeCommand(app),
      tessera::cli::AddGenerateCommand(app),
      tessera::cli::AddBenchCommand(app),
      tessera::cli::AddServeCommand(app),
      tessera::cli::AddConvertGgufCommand(app),
      tessera::cli::AddBenchCommCommand(app),
      tessera::cli::AddTpWorkerCommand(app),
      tessera::cli::AddRouterCommand(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error (a missing or
    // malformed flag) exits 2, the code the subcommands use for bad input.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!log_level.empty() && !tessera::SetLogLevel(log_level)) {
    fmt::print(stderr, "error: unknown --log-level '{}'\n", log_level);
    return 2;
  }
  for (auto& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return 2;
}
