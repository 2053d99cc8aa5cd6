#include "last_error.h"

#include <cstring>

namespace tessera::plugin_kit {
namespace {

constexpr size_t kMaxMessage = 4096;
thread_local char t_message[kMaxMessage] = "";

}  // namespace

tsr_status Report(const char* entry, const Status& status) {
  if (status.ok()) return TSR_OK;
  std::string text = StrCat(entry, ": ", status.message());
  size_t n = text.size() < kMaxMessage - 1 ? text.size() : kMaxMessage - 1;
  std::memcpy(t_message, text.data(), n);
  t_message[n] = '\0';
  return status.code();
}

const char* LastErrorMessage() { return t_message; }

}  // namespace tessera::plugin_kit
