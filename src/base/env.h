// Typed access to environment variables. Thread-safe as long as nobody
// calls setenv concurrently.
#ifndef TESSERA_BASE_ENV_H_
#define TESSERA_BASE_ENV_H_

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera {

// The variable's value, or nullopt when unset (set-but-empty is "").
std::optional<std::string> GetEnv(const char* name);

// Parses a non-negative integer variable; nullopt when unset; an error
// naming the variable when it is not a number.
StatusOr<std::optional<long long>> GetEnvInt(const char* name);

// Splits "a,b,,c" into {"a","b","c"} (empty items dropped, spaces trimmed).
std::vector<std::string> SplitList(const std::string& text, char sep = ',');

}  // namespace tessera

#endif  // TESSERA_BASE_ENV_H_
