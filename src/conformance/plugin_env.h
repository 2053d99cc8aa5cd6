// PluginEnv: what every conformance check group uses to talk to the plugin
// under test through its RAW function table (the kit tests the table, so
// it never goes through runtime/'s wrappers), plus RAII holders for the
// handles a check creates and macros that turn failed calls into failed
// checks with the plugin's last_error() in the message.
//
// Thread-safety: a PluginEnv is immutable after LoadDevices(); the handle
// holders are move-only and not shared between threads.
#ifndef TESSERA_CONFORMANCE_PLUGIN_ENV_H_
#define TESSERA_CONFORMANCE_PLUGIN_ENV_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "conformance/check_context.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::conformance {

// "TSR_ERR_INVALID_ARGUMENT"; "status 42" for an unknown value.
std::string TsrStatusName(tsr_status status);

using InitOptions = std::vector<std::pair<std::string, std::string>>;

class Buffer;
class Stream;
class Event;

class PluginEnv {
 public:
  PluginEnv(const tsr_plugin_api* api, InitOptions options);

  const tsr_plugin_api& api() const { return *api_; }
  const tsr_plugin_manifest& manifest() const { return *api_->manifest; }
  bool HasCap(uint64_t cap) const {
    return (api_->manifest->capabilities & cap) != 0;
  }
  const InitOptions& options() const { return options_; }

  // init() with explicit args carrying the --options (plus `extra`).
  tsr_status RawInit(const InitOptions& extra = {},
                     const std::vector<int32_t>* visible = nullptr) const;
  // init() as a Status, then LoadDevices().
  Status Init();
  void Shutdown() const;

  // Reads device_count and every device's properties.
  Status LoadDevices();
  int device_count() const { return static_cast<int>(props_.size()); }
  const tsr_device_properties& props(int device) const {
    return props_[device];
  }

  // last_error() as a string ("" when NULL or empty).
  std::string LastError() const;
  // OK for TSR_OK; otherwise "<what> returned TSR_ERR_X: <last_error>".
  Status Check(tsr_status status, std::string_view what) const;
  // For a call that must fail: "" when `got` is one of `allowed` and
  // last_error() is non-empty; otherwise what is wrong.
  std::string ExpectError(tsr_status got,
                          std::initializer_list<tsr_status> allowed,
                          std::string_view what) const;
  // The same with the message read right after the call (for when other
  // calls had to run before the check).
  static std::string ExpectErrorMessage(
      tsr_status got, const char* message,
      std::initializer_list<tsr_status> allowed, std::string_view what);

  StatusOr<Buffer> Alloc(int device, uint64_t size,
                         tsr_mem_kind kind = TSR_MEM_DEVICE,
                         uint64_t alignment = 0) const;
  StatusOr<Stream> NewStream(int device = 0) const;
  StatusOr<Event> NewEvent(int device = 0) const;
  // Synchronous copies (stream NULL).
  Status Upload(tsr_buffer dst, uint64_t offset, const void* src,
                uint64_t size) const;
  Status Download(tsr_buffer src, uint64_t offset, void* dst,
                  uint64_t size) const;

 private:
  const tsr_plugin_api* api_;
  InitOptions options_;
  std::vector<tsr_device_properties> props_;
};

// Owns a tsr_buffer; frees it on destruction.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const tsr_plugin_api* api, tsr_buffer handle, uint64_t size)
      : api_(api), handle_(handle), size_(size) {}
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  ~Buffer() { Reset(); }
  tsr_buffer get() const { return handle_; }
  uint64_t size() const { return size_; }
  void Reset();

 private:
  const tsr_plugin_api* api_ = nullptr;
  tsr_buffer handle_ = nullptr;
  uint64_t size_ = 0;
};

// Owns a tsr_stream; synchronises and destroys it on destruction.
class Stream {
 public:
  Stream() = default;
  Stream(const tsr_plugin_api* api, tsr_stream handle)
      : api_(api), handle_(handle) {}
  Stream(Stream&& other) noexcept { *this = std::move(other); }
  Stream& operator=(Stream&& other) noexcept;
  ~Stream() { Reset(); }
  tsr_stream get() const { return handle_; }
  void Reset();

 private:
  const tsr_plugin_api* api_ = nullptr;
  tsr_stream handle_ = nullptr;
};

// Owns a tsr_event; destroys it on destruction.
class Event {
 public:
  Event() = default;
  Event(const tsr_plugin_api* api, tsr_event handle)
      : api_(api), handle_(handle) {}
  Event(Event&& other) noexcept { *this = std::move(other); }
  Event& operator=(Event&& other) noexcept;
  ~Event() { Reset(); }
  tsr_event get() const { return handle_; }
  void Reset();

 private:
  const tsr_plugin_api* api_ = nullptr;
  tsr_event handle_ = nullptr;
};

// A deterministic random generator (splitmix64), identical on every
// platform, for check inputs.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform(double lo, double hi);  // [lo, hi)
  int64_t Int(int64_t lo, int64_t hi);   // [lo, hi)
  void Bytes(void* out, size_t size);

 private:
  uint64_t state_;
};

// FNV-1a of a string, for per-check seeds.
uint64_t HashName(std::string_view name);

}  // namespace tessera::conformance

// In a function returning Outcome: fail the check on a non-OK Status.
#define KIT_RETURN_IF_ERROR(expr)                                 \
  do {                                                            \
    ::tessera::Status kit_status_ = (expr);                       \
    if (!kit_status_.ok())                                        \
      return ::tessera::conformance::Fail(kit_status_.message()); \
  } while (0)

#define KIT_ASSIGN_OR_FAIL(lhs, expr) \
  KIT_ASSIGN_OR_FAIL_IMPL(TSR_STATUS_CONCAT(kit_statusor_, __LINE__), lhs, expr)
#define KIT_ASSIGN_OR_FAIL_IMPL(tmp, lhs, expr)                               \
  auto tmp = (expr);                                                          \
  if (!tmp.ok()) return ::tessera::conformance::Fail(tmp.status().message()); \
  lhs = std::move(tmp).value()

// Fail the check unless the plugin call returns TSR_OK.
#define KIT_CHECK_CALL(env, call, what) \
  KIT_RETURN_IF_ERROR((env).Check((call), (what)))

// Fail the check unless the plugin call fails with one of the listed codes
// and sets last_error: KIT_EXPECT_ERROR(env, "what", call, TSR_ERR_X, ...).
#define KIT_EXPECT_ERROR(env, what, call, ...)                                 \
  do {                                                                         \
    tsr_status kit_got_ = (call);                                              \
    std::string kit_msg_ = (env).ExpectError(kit_got_, {__VA_ARGS__}, (what)); \
    if (!kit_msg_.empty()) return ::tessera::conformance::Fail(kit_msg_);      \
  } while (0)

#endif  // TESSERA_CONFORMANCE_PLUGIN_ENV_H_
