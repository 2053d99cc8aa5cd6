#include "conformance/plugin_env.h"

#include <fmt/format.h>

#include <cstring>

namespace tessera::conformance {

std::string TsrStatusName(tsr_status status) {
  switch (status) {
    case TSR_OK:
      return "TSR_OK";
    case TSR_ERR_INVALID_ARGUMENT:
      return "TSR_ERR_INVALID_ARGUMENT";
    case TSR_ERR_INVALID_HANDLE:
      return "TSR_ERR_INVALID_HANDLE";
    case TSR_ERR_OUT_OF_MEMORY:
      return "TSR_ERR_OUT_OF_MEMORY";
    case TSR_ERR_UNSUPPORTED:
      return "TSR_ERR_UNSUPPORTED";
    case TSR_ERR_NOT_FOUND:
      return "TSR_ERR_NOT_FOUND";
    case TSR_ERR_DEVICE:
      return "TSR_ERR_DEVICE";
    case TSR_ERR_NOT_READY:
      return "TSR_ERR_NOT_READY";
    case TSR_ERR_INTERNAL:
      return "TSR_ERR_INTERNAL";
    default:
      return fmt::format("status {}", status);
  }
}

PluginEnv::PluginEnv(const tsr_plugin_api* api, InitOptions options)
    : api_(api), options_(std::move(options)) {}

tsr_status PluginEnv::RawInit(const InitOptions& extra,
                              const std::vector<int32_t>* visible) const {
  std::vector<tsr_option> opts;
  for (const auto& [k, v] : options_) opts.push_back({k.c_str(), v.c_str()});
  for (const auto& [k, v] : extra) opts.push_back({k.c_str(), v.c_str()});
  tsr_init_args args{};
  args.struct_size = sizeof(args);
  args.options = opts.empty() ? nullptr : opts.data();
  args.num_options = opts.size();
  args.visible_devices = visible ? visible->data() : nullptr;
  args.num_visible_devices =
      visible ? static_cast<int32_t>(visible->size()) : -1;
  return api_->init(&args);
}

Status PluginEnv::Init() {
  TSR_RETURN_IF_ERROR(Check(RawInit(), "init(explicit args with --options)"));
  return LoadDevices();
}

void PluginEnv::Shutdown() const { api_->shutdown(); }

Status PluginEnv::LoadDevices() {
  props_.clear();
  int32_t count = -1;
  TSR_RETURN_IF_ERROR(Check(api_->device_count(&count), "device_count"));
  if (count < 1) {
    return FailedPreconditionError(fmt::format(
        "device_count returned {} devices; a plugin that initialised needs at "
        "least one",
        count));
  }
  for (int32_t d = 0; d < count; ++d) {
    tsr_device_properties p{};
    p.struct_size = sizeof(p);
    TSR_RETURN_IF_ERROR(Check(api_->device_properties(d, &p),
                              fmt::format("device_properties({})", d)));
    props_.push_back(p);
  }
  return OkStatus();
}

std::string PluginEnv::LastError() const {
  const char* message = api_->last_error();
  return message ? message : "";
}

Status PluginEnv::Check(tsr_status status, std::string_view what) const {
  if (status == TSR_OK) return OkStatus();
  std::string message = LastError();
  if (message.empty()) message = "(last_error() is empty)";
  return InternalError(
      fmt::format("{} returned {}: {}", what, TsrStatusName(status), message));
}

std::string PluginEnv::ExpectError(tsr_status got,
                                   std::initializer_list<tsr_status> allowed,
                                   std::string_view what) const {
  return ExpectErrorMessage(got, api_->last_error(), allowed, what);
}

std::string PluginEnv::ExpectErrorMessage(
    tsr_status got, const char* raw, std::initializer_list<tsr_status> allowed,
    std::string_view what) {
  std::string message = raw ? raw : "";
  std::vector<std::string> names;
  bool ok = false;
  for (tsr_status s : allowed) {
    names.push_back(TsrStatusName(s));
    ok = ok || s == got;
  }
  if (got == TSR_OK) {
    return fmt::format("{} returned TSR_OK; expected {}", what,
                       fmt::join(names, " or "));
  }
  if (!ok) {
    return fmt::format("{} returned {}; expected {} (last_error: \"{}\")", what,
                       TsrStatusName(got), fmt::join(names, " or "), message);
  }
  if (raw == nullptr) {
    return fmt::format("{} failed as expected but last_error() returned NULL",
                       what);
  }
  if (message.empty()) {
    return fmt::format(
        "{} failed as expected ({}) but last_error() is empty; every failed "
        "call must leave a message",
        what, TsrStatusName(got));
  }
  return "";
}

StatusOr<Buffer> PluginEnv::Alloc(int device, uint64_t size, tsr_mem_kind kind,
                                  uint64_t alignment) const {
  tsr_buffer handle = nullptr;
  TSR_RETURN_IF_ERROR(Check(
      api_->buffer_alloc(device, kind, size, alignment, &handle),
      fmt::format("buffer_alloc(device {}, kind {}, {} bytes, alignment {})",
                  device, kind, size, alignment)));
  if (handle == nullptr) {
    return InternalError("buffer_alloc returned TSR_OK but a NULL handle");
  }
  return Buffer(api_, handle, size);
}

StatusOr<Stream> PluginEnv::NewStream(int device) const {
  tsr_stream handle = nullptr;
  TSR_RETURN_IF_ERROR(Check(api_->stream_create(device, &handle),
                            fmt::format("stream_create({})", device)));
  if (handle == nullptr) {
    return InternalError("stream_create returned TSR_OK but a NULL handle");
  }
  return Stream(api_, handle);
}

StatusOr<Event> PluginEnv::NewEvent(int device) const {
  tsr_event handle = nullptr;
  TSR_RETURN_IF_ERROR(Check(api_->event_create(device, &handle),
                            fmt::format("event_create({})", device)));
  if (handle == nullptr) {
    return InternalError("event_create returned TSR_OK but a NULL handle");
  }
  return Event(api_, handle);
}

Status PluginEnv::Upload(tsr_buffer dst, uint64_t offset, const void* src,
                         uint64_t size) const {
  return Check(api_->copy_host_to_device(nullptr, dst, offset, src, size),
               fmt::format("copy_host_to_device(sync, offset {}, {} bytes)",
                           offset, size));
}

Status PluginEnv::Download(tsr_buffer src, uint64_t offset, void* dst,
                           uint64_t size) const {
  return Check(api_->copy_device_to_host(nullptr, dst, src, offset, size),
               fmt::format("copy_device_to_host(sync, offset {}, {} bytes)",
                           offset, size));
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    Reset();
    api_ = other.api_;
    handle_ = std::exchange(other.handle_, nullptr);
    size_ = other.size_;
  }
  return *this;
}

void Buffer::Reset() {
  if (handle_ != nullptr) api_->buffer_free(handle_);
  handle_ = nullptr;
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Reset();
    api_ = other.api_;
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Stream::Reset() {
  if (handle_ != nullptr) {
    api_->stream_synchronize(handle_);
    api_->stream_destroy(handle_);
  }
  handle_ = nullptr;
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Reset();
    api_ = other.api_;
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Event::Reset() {
  if (handle_ != nullptr) api_->event_destroy(handle_);
  handle_ = nullptr;
}

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Rng::Uniform(double lo, double hi) {
  double unit = static_cast<double>(Next() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * unit;
}

int64_t Rng::Int(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo));
}

void Rng::Bytes(void* out, size_t size) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < size; i += 8) {
    uint64_t v = Next();
    std::memcpy(p + i, &v, std::min<size_t>(8, size - i));
  }
}

uint64_t HashName(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace tessera::conformance
