// HandleRegistry<T>: the set of live handles of one kind (buffers, streams,
// events, kernels, comms) the plugin has handed out.
//
// A handle value is an opaque number drawn from one process-wide counter,
// never an object address and never reused, so a freed handle, a handle of
// another kind or any value the plugin never returned (NULL, 0x1234) is
// simply absent: Find() answers nullptr without dereferencing anything.
// Objects are shared_ptr-owned so a lookup stays valid even if another
// thread frees the handle meanwhile (a host bug, but not a crash).
// Thread-safe: every member takes the registry's mutex.
#ifndef TESSERA_PLUGINS_KIT_REGISTRY_H_
#define TESSERA_PLUGINS_KIT_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tessera::plugin_kit {

// The next never-used handle value. Spaced by 16 and started high so values
// look like nothing a caller would invent.
inline uintptr_t NextHandleValue() {
  static std::atomic<uintptr_t> next{0x7e55e7a000010ull};
  return next.fetch_add(16);
}

template <typename T>
class HandleRegistry {
 public:
  // Registers `object` and returns its new handle value.
  uintptr_t Add(std::shared_ptr<T> object) {
    uintptr_t value = NextHandleValue();
    std::lock_guard<std::mutex> lock(mu_);
    map_.emplace(value, std::move(object));
    return value;
  }

  // The object behind `value`, or nullptr when it is not a live handle.
  std::shared_ptr<T> Find(const void* value) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(reinterpret_cast<uintptr_t>(value));
    return it == map_.end() ? nullptr : it->second;
  }

  // Unregisters `value` and returns its object (nullptr if not live).
  std::shared_ptr<T> Remove(const void* value) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(reinterpret_cast<uintptr_t>(value));
    if (it == map_.end()) return nullptr;
    std::shared_ptr<T> object = std::move(it->second);
    map_.erase(it);
    return object;
  }

  // Unregisters everything (shutdown) and returns the objects.
  std::vector<std::shared_ptr<T>> RemoveAll() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::shared_ptr<T>> out;
    out.reserve(map_.size());
    for (auto& [value, object] : map_) out.push_back(std::move(object));
    map_.clear();
    return out;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.size();
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<uintptr_t, std::shared_ptr<T>> map_;
};

template <typename Handle>
Handle ToHandle(uintptr_t value) {
  return reinterpret_cast<Handle>(value);
}

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_REGISTRY_H_
