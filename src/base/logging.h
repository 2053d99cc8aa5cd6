// Process-wide logging on top of spdlog.
//
// Log lines go to stderr as "[time] [level] message". The level comes from
// TESSERA_LOG_LEVEL (trace|debug|info|warn|error|off; default info) and can be
// changed with SetLogLevel. Thread-safe.
#ifndef TESSERA_BASE_LOGGING_H_
#define TESSERA_BASE_LOGGING_H_

#include <spdlog/spdlog.h>

#include <string_view>

namespace tessera {

// The shared logger; created on first use.
spdlog::logger& Logger();

// Sets the level by name; returns false for an unknown name.
bool SetLogLevel(std::string_view level);

}  // namespace tessera

#define TSR_LOG_DEBUG(...) ::tessera::Logger().debug(__VA_ARGS__)
#define TSR_LOG_INFO(...) ::tessera::Logger().info(__VA_ARGS__)
#define TSR_LOG_WARN(...) ::tessera::Logger().warn(__VA_ARGS__)
#define TSR_LOG_ERROR(...) ::tessera::Logger().error(__VA_ARGS__)

#endif  // TESSERA_BASE_LOGGING_H_
