// OpDispatcher: runs ops on the selected plugin, or on the cpu plugin when
// the selected plugin lacks them.
//
// Resolution happens once per (device, op, version, dtypes) and is cached:
// Resolve() returns a stable ResolvedOp that later launches reuse without a
// lookup. An op is native when the selected plugin lists the signature, it
// is not disabled (TESSERA_DISABLE_OPS) and resolve_op succeeds. Otherwise
// it falls back to the cpu plugin: the launch synchronises the stream,
// copies the bytes every tensor addresses (offset and strides honoured;
// tensors sharing a buffer share one copy, so aliasing is preserved)
// device -> host -> cpu buffers, runs the cpu kernel, and copies the output
// spans back. The first fallback of each op logs one warning naming the op,
// the plugin and the reason; every fallback launch is counted per (op,
// plugin): Counters() feeds tessera:op_fallback_total{op,plugin}. When the
// selected plugin is the cpu plugin, a disabled op still counts as a
// fallback but runs on the same device without copies. TESSERA_LOG_OPS=1
// logs every resolution.
//
// Thread-safety: Resolve/Launch/Counters may be called from any thread. The
// cache and warning set are guarded by mu_; launch counters are atomics;
// fallback execution is serialised by fallback_mu_ (one cpu stream). As with
// any stream, one stream must not be launched on from two threads at once.
#ifndef TESSERA_RUNTIME_OP_DISPATCHER_H_
#define TESSERA_RUNTIME_OP_DISPATCHER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "runtime/device.h"
#include "runtime/plugin.h"
#include "runtime/stream.h"

namespace tessera::runtime {

enum class OpRoute {
  kNative,       // the selected plugin runs it
  kFallback,     // the cpu plugin runs it
  kUnavailable,  // nobody implements it
};
// "native", "fallback", "unavailable".
std::string_view OpRouteName(OpRoute route);

// A cached resolution. Stable for the dispatcher's lifetime.
struct ResolvedOp {
  tsr_op_signature signature{};
  int32_t device = 0;  // the selected plugin's device
  OpRoute route = OpRoute::kNative;
  Plugin* runner = nullptr;   // the plugin whose kernel runs
  int32_t runner_device = 0;  // the device `kernel` was resolved on
  tsr_kernel kernel = nullptr;
  std::string reason;  // why it falls back ("" when native)
  mutable std::atomic<uint64_t> launches{0};
};

// Launch counts per op and plugin. `launches` counts launches run by
// `plugin`; `fallbacks` counts launches `plugin` (the selected one) handed
// to the cpu plugin.
struct OpCounter {
  std::string op;
  std::string plugin;
  uint64_t launches = 0;
  uint64_t fallbacks = 0;
};

struct OpDispatcherOptions {
  std::set<tsr_op_id> disabled_ops;  // hidden from the selected plugin
  bool log_ops = false;              // log every resolution
};

class OpDispatcher {
 public:
  // `primary`: the selected plugin. `cpu`: the cpu plugin (may be the same
  // object). `cpu_device`: the cpu device fallbacks run on (nullptr when
  // cpu == primary or when it has no device: then only same-plugin fallback
  // works). All must outlive the dispatcher.
  OpDispatcher(Plugin& primary, Plugin& cpu, Device* cpu_device,
               OpDispatcherOptions options);
  ~OpDispatcher();
  OpDispatcher(const OpDispatcher&) = delete;
  OpDispatcher& operator=(const OpDispatcher&) = delete;

  // Resolves a fused op (ids >= TSR_OP_FUSED_BASE; its signature lists
  // dtype classes) on the primary plugin only: a fused op never falls back
  // to the cpu plugin — the caller runs the op sequence it stands for
  // instead. NotFound, naming the reason (not listed, disabled by
  // TESSERA_DISABLE_OPS, resolve_op failed), when it is not native.
  // Successes are cached like Resolve's and counted in Counters().
  StatusOr<const ResolvedOp*> ResolveFused(int32_t device,
                                           const tsr_op_signature& signature)
      TSR_EXCLUDES(mu_);

  // Resolves (once; cached) `signature` for `device` of the primary plugin.
  // Unimplemented when neither plugin has it.
  StatusOr<const ResolvedOp*> Resolve(int32_t device,
                                      const tsr_op_signature& signature)
      TSR_EXCLUDES(mu_);

  // Enqueues `op` on `stream` (a stream of the primary plugin on op.device).
  // Tensors list inputs then outputs as in the op's contract (a fused op's
  // count is its spec's, checked by the plugin); `params` is
  // the op's parameter struct (or nullptr). A fallback launch returns after
  // the outputs are back on the device.
  Status Launch(const ResolvedOp& op, Stream& stream,
                std::span<const tsr_tensor> inputs,
                std::span<const tsr_tensor> outputs,
                const void* params = nullptr, size_t params_size = 0);
  // Resolve + Launch with the signature taken from the tensors' dtypes.
  Status Launch(Stream& stream, tsr_op_id op,
                std::span<const tsr_tensor> inputs,
                std::span<const tsr_tensor> outputs,
                const void* params = nullptr, size_t params_size = 0,
                uint32_t version = 1);

  // Where `op` runs with any signature: native when the primary lists it and
  // it is not disabled, else fallback when the cpu plugin lists it.
  OpRoute Coverage(tsr_op_id op) const;
  bool IsDisabled(tsr_op_id op) const {
    return options_.disabled_ops.count(op) > 0;
  }

  // Counters aggregated per (op, plugin), sorted by op then plugin.
  std::vector<OpCounter> Counters() const TSR_EXCLUDES(mu_);
  // Fallback launches of `op` from the primary plugin so far.
  uint64_t FallbackCount(tsr_op_id op) const TSR_EXCLUDES(mu_);

  Plugin& primary() const { return primary_; }
  Plugin& cpu() const { return cpu_; }

 private:
  using Key = std::tuple<int32_t, tsr_op_id, uint32_t, std::vector<tsr_dtype>>;

  static Key KeyOf(int32_t device, const tsr_op_signature& signature);
  // The cached resolution of `key`, or nullptr.
  const ResolvedOp* FindCached(const Key& key) TSR_EXCLUDES(mu_);
  StatusOr<std::unique_ptr<ResolvedOp>> ResolveUncached(
      int32_t device, const tsr_op_signature& signature);
  Status RunFallback(const ResolvedOp& op, Stream& stream,
                     std::span<const tsr_tensor> inputs,
                     std::span<const tsr_tensor> outputs, const void* params,
                     size_t params_size) TSR_EXCLUDES(fallback_mu_);

  Plugin& primary_;
  Plugin& cpu_;
  Device* const cpu_device_;
  const OpDispatcherOptions options_;

  mutable Mutex mu_;
  std::map<Key, std::unique_ptr<ResolvedOp>> cache_ TSR_GUARDED_BY(mu_);
  std::set<tsr_op_id> warned_ TSR_GUARDED_BY(mu_);

  // Serialises fallback execution on the one cpu stream.
  Mutex fallback_mu_;
  StreamPtr fallback_stream_ TSR_GUARDED_BY(fallback_mu_);
};

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_OP_DISPATCHER_H_
