#include "conformance/plugin_check.h"

#include <fmt/format.h>

#include <regex>

#include "conformance/checks.h"
#include "conformance/report.h"
#include "conformance/runner.h"
#include "runtime/plugin_library.h"
#include "runtime/runtime_config.h"

namespace tessera::conformance {

StatusOr<InitOptions> ParseInitOptions(const std::string& text) {
  // The host's own format (TESSERA_PLUGIN_OPTIONS), escapes included.
  TSR_ASSIGN_OR_RETURN(std::vector<runtime::PluginOption> parsed,
                       runtime::ParsePluginOptions(text, "--options"));
  InitOptions out;
  for (runtime::PluginOption& o : parsed) {
    out.emplace_back(std::move(o.key), std::move(o.value));
  }
  return out;
}

std::vector<GroupSpec> PluginCheckGroups(PluginEnv* env) {
  auto initialised = [env](const std::string& name,
                           void (*fn)(CheckContext&, PluginEnv&)) {
    GroupSpec g;
    g.name = name;
    g.setup = [env]() -> Outcome {
      Status s = env->Init();
      return s.ok() ? Pass() : Fail(s.message());
    };
    g.run = [env, fn](CheckContext& ctx) { fn(ctx, *env); };
    g.teardown = [env] { env->Shutdown(); };
    return g;
  };
  GroupSpec abi;
  abi.name = "abi";
  abi.run = [env](CheckContext& ctx) { AbiChecks(ctx, *env); };
  GroupSpec collectives_mp;
  collectives_mp.name = "collectives_mp";
  collectives_mp.run = [env](CheckContext& ctx) {
    CollectiveMpChecks(ctx, *env);
  };
  return {abi,
          initialised("devices", DeviceChecks),
          initialised("errors", ErrorChecks),
          initialised("memory", MemoryChecks),
          initialised("copies", CopyChecks),
          initialised("streams", StreamChecks),
          initialised("ops", OpChecks),
          initialised("collectives", CollectiveChecks),
          collectives_mp,
          initialised("graphs", GraphChecks)};
}

int RunPluginCheck(const PluginCheckOptions& options, std::FILE* out) {
  std::vector<CheckResult> results;
  auto finish = [&](const std::string& plugin) {
    Counts counts = CountResults(results);
    if (options.json) {
      fmt::print(out, "{}\n", FormatJson(plugin, options.path, results));
    } else {
      fmt::print(out, "{}\n", FormatSummary(counts));
    }
    std::fflush(out);
    return counts.failed > 0 ? kExitFailed : kExitAllPassed;
  };
  auto emit = [&](const CheckResult& r) {
    results.push_back(r);
    if (!options.json) {
      fmt::print(out, "{}\n", FormatResultLine(r));
      std::fflush(out);
    }
  };

  std::optional<std::regex> filter;
  if (!options.filter.empty()) {
    try {
      filter.emplace(options.filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      fmt::print(stderr, "error: --filter '{}' is not a valid regex: {}\n",
                 options.filter, e.what());
      return kExitFailed;
    }
  }

  auto lib = runtime::PluginLibrary::Open(options.path);
  if (!lib.ok()) {
    emit({"load", CheckStatus::kFail, lib.status().message()});
    return finish(options.path);
  }
  const tsr_plugin_api& api = (*lib)->api();
  const std::string name = (*lib)->name();
  emit({"load", CheckStatus::kPass,
        fmt::format("{} (ABI {})", name, (*lib)->AbiVersion())});

  // probe() runs in a child: a driver it initialises here would not
  // survive the fork of every check group.
  auto probe = [&api] { return static_cast<int>(api.probe()); };
  StatusOr<int> probed = options.isolate
                             ? RunIsolated(probe, options.check_timeout_s)
                             : StatusOr<int>(probe());
  if (!probed.ok()) {
    emit({"probe", CheckStatus::kFail, "probe() " + probed.status().message()});
    return finish(name);
  }
  const int32_t score = *probed;
  if (score <= 0) {
    const char* req = api.manifest->requirements;
    std::string why = fmt::format(
        "probe() returned {}: the hardware this plugin drives is absent "
        "here{}; "
        "nothing else was checked",
        score, req && req[0] ? fmt::format(" (it needs: {})", req) : "");
    fmt::print(stderr, "{}\n", why);
    emit({"probe", CheckStatus::kSkip, why});
    finish(name);
    return kExitNoHardware;
  }

  PluginEnv env(&api, options.init_options);
  RunnerOptions runner;
  runner.filter = filter;
  runner.check_timeout_s = options.check_timeout_s;
  runner.isolate = options.isolate;
  std::vector<GroupSpec> groups = PluginCheckGroups(&env);
  for (const GroupSpec& g : groups) {
    fmt::print(stderr, "plugin-check: running group {}\n", g.name);
    RunGroups({g}, runner, emit);
  }
  return finish(name);
}

}  // namespace tessera::conformance
