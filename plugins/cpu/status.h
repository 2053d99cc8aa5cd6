// Plugin-local error currency of the cpu plugin.
//
// The plugin is built only against the ABI header, so it carries its own
// tiny Status (a tsr_status code plus a message a person can act on) and a
// StrCat for building messages. Every C entry turns a failed Status into the
// thread's last_error (see last_error.h). Value types, thread-compatible.
#ifndef TESSERA_PLUGINS_CPU_STATUS_H_
#define TESSERA_PLUGINS_CPU_STATUS_H_

#include <sstream>
#include <string>
#include <utility>

#include "tessera/plugin/tessera_plugin.h"

namespace tessera::cpu {

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(tsr_status code, std::string message)
      : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == TSR_OK; }
  tsr_status code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  tsr_status code_ = TSR_OK;
  std::string message_;
};

inline Status OkStatus() { return Status(); }

template <typename... Args>
Status InvalidArgument(const Args&... args) {
  return Status(TSR_ERR_INVALID_ARGUMENT, StrCat(args...));
}
template <typename... Args>
Status InvalidHandle(const Args&... args) {
  return Status(TSR_ERR_INVALID_HANDLE, StrCat(args...));
}
template <typename... Args>
Status OutOfMemory(const Args&... args) {
  return Status(TSR_ERR_OUT_OF_MEMORY, StrCat(args...));
}
template <typename... Args>
Status Unsupported(const Args&... args) {
  return Status(TSR_ERR_UNSUPPORTED, StrCat(args...));
}
template <typename... Args>
Status NotFound(const Args&... args) {
  return Status(TSR_ERR_NOT_FOUND, StrCat(args...));
}
template <typename... Args>
Status Internal(const Args&... args) {
  return Status(TSR_ERR_INTERNAL, StrCat(args...));
}

}  // namespace tessera::cpu

#define TSR_CPU_RETURN_IF_ERROR(expr)               \
  do {                                              \
    ::tessera::cpu::Status tsr_cpu_status_ = (expr); \
    if (!tsr_cpu_status_.ok()) return tsr_cpu_status_; \
  } while (0)

#endif  // TESSERA_PLUGINS_CPU_STATUS_H_
