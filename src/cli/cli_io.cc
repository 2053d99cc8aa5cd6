#include "cli/cli_io.h"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <iterator>

#include "base/bounded_json.h"
#include "base/file_checks.h"

namespace tessera::cli {

using Json = nlohmann::ordered_json;

int ReportError(const Status& status, int exit_code) {
  std::string message = status.message();
  std::string line;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message[i] == '\n') {
      while (!line.empty() && line.back() == ' ') line.pop_back();
      if (i + 1 < message.size()) line += "; ";
    } else {
      line += message[i];
    }
  }
  std::fflush(stdout);
  fmt::print(stderr, "error: {}\n", line);
  std::fflush(stderr);
  return exit_code;
}

StatusOr<std::string> ReadRequestArgument(const std::string& argument) {
  if (argument.empty() || argument[0] != '@') return argument;
  const std::string path = argument.substr(1);
  if (path.empty()) {
    return InvalidArgumentError(
        "--request '@' needs a file name after '@' (or '@-' for stdin)");
  }
  if (path == "-") {
    std::string text{std::istreambuf_iterator<char>(std::cin),
                     std::istreambuf_iterator<char>()};
    return text;
  }
  return ReadTextFile(path, "request file");
}

StatusOr<Json> ParseJsonText(const std::string& text, const std::string& what) {
  auto parsed = ParseBoundedOrderedJson(text);
  if (parsed.ok()) return std::move(*parsed);
  {
    // Syntax errors read "[json.exception.parse_error.101] parse error at".
    std::string detail = parsed.status().message();
    if (auto pos = detail.find("] "); pos != std::string::npos) {
      detail = detail.substr(pos + 2);
    }
    return InvalidArgumentError(
        fmt::format("{} is not valid JSON: {}", what, detail));
  }
}

std::string DumpJson(const Json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false,
                    Json::error_handler_t::replace);
}

}  // namespace tessera::cli
