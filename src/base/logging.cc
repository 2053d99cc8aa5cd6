#include "base/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace tessera {
namespace {

std::shared_ptr<spdlog::logger> MakeLogger() {
  auto logger = spdlog::stderr_color_mt("tessera");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  logger->set_level(spdlog::level::info);
  if (const char* env = std::getenv("TESSERA_LOG_LEVEL")) {
    auto level = spdlog::level::from_str(env);
    // from_str maps unknown names to "off"; only accept a real name.
    if (level != spdlog::level::off || std::string(env) == "off") {
      logger->set_level(level);
    }
  }
  return logger;
}

}  // namespace

spdlog::logger& Logger() {
  static std::shared_ptr<spdlog::logger> logger = MakeLogger();
  return *logger;
}

bool SetLogLevel(std::string_view level) {
  std::string name(level);
  auto parsed = spdlog::level::from_str(name);
  if (parsed == spdlog::level::off && name != "off") return false;
  Logger().set_level(parsed);
  return true;
}

}  // namespace tessera
