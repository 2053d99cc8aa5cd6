// Plugin-local error currency of the plugin kit (plugins/kit): the code the
// in-tree plugins share, itself built only against the ABI header.
//
// A plugin is built only against the ABI header, so it carries its own
// tiny Status (a tsr_status code plus a message a person can act on) and a
// StrCat for building messages. Every C entry turns a failed Status into the
// thread's last_error (see last_error.h). Value types, thread-compatible.
#ifndef TESSERA_PLUGINS_KIT_STATUS_H_
#define TESSERA_PLUGINS_KIT_STATUS_H_

#include <charconv>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tessera/plugin/tessera_plugin.h"

namespace tessera::plugin_kit {

namespace strcat_internal {

// Appends what `out << v` would print: strings and integers directly (a
// launch builds argument labels with StrCat, so this is on the hot path),
// anything else through a stream.
template <typename T>
void Append(std::string& s, const T& v) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    s += std::string_view(v);
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                       !std::is_same_v<T, char> && !std::is_same_v<T, signed char> &&
                       !std::is_same_v<T, unsigned char>) {
    char buf[24];
    const auto end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
    s.append(buf, end);
  } else {
    std::ostringstream out;
    out << v;
    s += out.str();
  }
}

}  // namespace strcat_internal

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string s;
  (strcat_internal::Append(s, args), ...);
  return s;
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
Status DeviceError(const Args&... args) {
  return Status(TSR_ERR_DEVICE, StrCat(args...));
}
template <typename... Args>
Status Internal(const Args&... args) {
  return Status(TSR_ERR_INTERNAL, StrCat(args...));
}

}  // namespace tessera::plugin_kit

#define TSR_KIT_RETURN_IF_ERROR(expr)               \
  do {                                              \
    ::tessera::plugin_kit::Status tsr_kit_status_ = (expr); \
    if (!tsr_kit_status_.ok()) return tsr_kit_status_; \
  } while (0)

#endif  // TESSERA_PLUGINS_KIT_STATUS_H_
