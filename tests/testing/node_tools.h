// For end-to-end tests that run a Node.js script against the server (the
// official OpenAI client, puppeteer-core driving Chromium).
#ifndef TESSERA_TESTS_TESTING_NODE_TOOLS_H_
#define TESSERA_TESTS_TESTING_NODE_TOOLS_H_

#include <cctype>
#include <filesystem>
#include <string>

#include "testing/subprocess.h"

namespace tessera::testing {

// Empty when Node.js >= 20 and the npm `package` pinned in the repository's
// package.json (installed under `repo_dir`/node_modules) are available;
// otherwise what is missing and how to get it.
inline std::string MissingNodePackage(const std::string& repo_dir,
                                      const std::string& package) {
  const auto node = RunShell(
      "node -e 'process.exit(Number(process.versions.node.split(\".\")[0]) "
      ">= 20 ? 0 : 1)'");
  if (node.exit_code != 0) {
    std::string why = node.err;
    while (!why.empty() &&
           std::isspace(static_cast<unsigned char>(why.back()))) {
      why.pop_back();
    }
    return "Node.js >= 20 is not on PATH (`node` failed: " + why +
           "); install nodejs (scripts/setup.sh does)";
  }
  const std::filesystem::path pkg = std::filesystem::path(repo_dir) /
                                    "node_modules" / package / "package.json";
  if (!std::filesystem::exists(pkg)) {
    return pkg.string() + " not found; run `npm ci` in " + repo_dir +
           " to install the pinned " + package;
  }
  return "";
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_NODE_TOOLS_H_
