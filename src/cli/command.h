// A `tessera` subcommand: each lives in its own file and registers itself
// with the root CLI11 app through one Add*Command function listed here.
//
// Run() is called after parsing when the subcommand was chosen; it returns
// the process exit code. Commands print results to stdout and progress and
// logs to stderr.
#ifndef TESSERA_CLI_COMMAND_H_
#define TESSERA_CLI_COMMAND_H_

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace tessera::cli {

struct Command {
  CLI::App* app = nullptr;      // the parsed subcommand
  std::function<int()> run;     // its action
};

Command AddDoctorCommand(CLI::App& root);
Command AddPluginCheckCommand(CLI::App& root);
Command AddMakeModelCommand(CLI::App& root);
Command AddTokenizeCommand(CLI::App& root);
Command AddDetokenizeCommand(CLI::App& root);
Command AddGenerateCommand(CLI::App& root);
Command AddBenchCommand(CLI::App& root);
Command AddServeCommand(CLI::App& root);
Command AddConvertGgufCommand(CLI::App& root);
Command AddBenchCommCommand(CLI::App& root);
Command AddTpWorkerCommand(CLI::App& root);
Command AddRouterCommand(CLI::App& root);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_COMMAND_H_
