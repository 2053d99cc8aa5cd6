#include "base/env.h"

#include <fmt/format.h>

#include <cstdlib>

namespace tessera {

std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

StatusOr<std::optional<long long>> GetEnvInt(const char* name) {
  auto value = GetEnv(name);
  if (!value) return std::optional<long long>();
  char* end = nullptr;
  long long parsed = std::strtoll(value->c_str(), &end, 10);
  if (value->empty() || *end != '\0' || parsed < 0) {
    return InvalidArgumentError(fmt::format(
        "{}='{}' is not a non-negative integer; set it to a number such as 2 "
        "or unset it",
        name, *value));
  }
  return std::optional<long long>(parsed);
}

std::vector<std::string> SplitList(const std::string& text, char sep) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    size_t b = item.find_first_not_of(" \t");
    size_t e = item.find_last_not_of(" \t");
    if (b != std::string::npos) items.push_back(item.substr(b, e - b + 1));
    start = end + 1;
  }
  return items;
}

}  // namespace tessera
