// `tessera plugin-check PLUGIN.so`: the conformance kit (src/conformance/).
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "conformance/plugin_check.h"

namespace tessera::cli {

Command AddPluginCheckCommand(CLI::App& root) {
  struct Args {
    std::string path;
    bool json = false;
    std::string filter;
    std::string options;
    double timeout_s = 120;
    bool no_fork = false;
    bool quick = false;
  };
  auto args = std::make_shared<Args>();
  Command command;
  command.app = root.add_subcommand(
      "plugin-check",
      "Check a device plugin (.so) against the ABI contract: ABI rules, error "
      "paths, streams and events, every op it lists against the reference.\n"
      "Exit code: 0 all passed, 1 a check failed, 77 the plugin's hardware is "
      "absent (probe() returned 0).");
  command.app
      ->add_option("plugin", args->path, "path of the plugin shared library")
      ->required();
  command.app->add_flag("--json", args->json,
                        "print one JSON object instead of one line per check");
  command.app->add_option("--filter", args->filter,
                          "run only checks whose name matches this regex "
                          "(e.g. '^op\\.rms_norm')");
  command.app->add_flag("--quick", args->quick,
                        "run only the quick subset `tessera doctor` runs (a "
                        "few seconds; not with --filter)");
  command.app->add_option("--options", args->options,
                          "init options for the plugin, key=value,... "
                          "(e.g. threads=4,devices=2)");
  command.app
      ->add_option("--timeout", args->timeout_s,
                   "seconds one check may run before it counts as hung")
      ->capture_default_str();
  command.app->add_flag("--no-fork", args->no_fork,
                        "run checks in this process (for a debugger; a crash "
                        "then ends the run)");
  command.run = [args]() -> int {
    auto init_options = conformance::ParseInitOptions(args->options);
    if (!init_options.ok()) {
      fmt::print(stderr, "error: {}\n", init_options.status().message());
      return conformance::kExitFailed;
    }
    conformance::PluginCheckOptions options;
    options.path = args->path;
    options.json = args->json;
    options.filter = args->filter;
    if (args->quick) {
      if (!args->filter.empty()) {
        fmt::print(stderr, "error: give --quick or --filter, not both\n");
        return conformance::kExitFailed;
      }
      options.filter = conformance::kQuickCheckFilter;
    }
    options.init_options = *init_options;
    options.check_timeout_s = args->timeout_s;
    options.isolate = !args->no_fork;
    return conformance::RunPluginCheck(options, stdout);
  };
  return command;
}

}  // namespace tessera::cli
