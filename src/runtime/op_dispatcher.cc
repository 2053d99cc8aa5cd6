#include "runtime/op_dispatcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "base/logging.h"
#include "runtime/op_names.h"
#include "runtime/tensor.h"

namespace tessera::runtime {
namespace {

// The bytes of one source buffer that a fallback carries to the cpu plugin:
// the union of the spans of every tensor on it, and of the output tensors.
struct Region {
  tsr_buffer source = nullptr;
  ByteSpan span;
  bool has_output = false;
  ByteSpan output;
  BufferPtr cpu;  // the cpu copy of `span`
};

ByteSpan Union(const ByteSpan& a, const ByteSpan& b) {
  return {std::min(a.begin, b.begin), std::max(a.end, b.end)};
}

}  // namespace

std::string_view OpRouteName(OpRoute route) {
  switch (route) {
    case OpRoute::kNative:
      return "native";
    case OpRoute::kFallback:
      return "fallback";
    case OpRoute::kUnavailable:
      return "unavailable";
  }
  return "unavailable";
}

OpDispatcher::OpDispatcher(Plugin& primary, Plugin& cpu, Device* cpu_device,
                           OpDispatcherOptions options)
    : primary_(primary),
      cpu_(cpu),
      cpu_device_(cpu_device),
      options_(std::move(options)) {}

OpDispatcher::~OpDispatcher() {
  MutexLock lock(&fallback_mu_);
  fallback_stream_.reset();
}

OpRoute OpDispatcher::Coverage(tsr_op_id op) const {
  if (!IsDisabled(op) && primary_.ListsOp(op)) return OpRoute::kNative;
  if (cpu_.ListsOp(op)) return OpRoute::kFallback;
  return OpRoute::kUnavailable;
}

StatusOr<std::unique_ptr<ResolvedOp>> OpDispatcher::ResolveUncached(
    int32_t device, const tsr_op_signature& signature) {
  auto resolved = std::make_unique<ResolvedOp>();
  resolved->signature = signature;
  resolved->device = device;
  const std::string sig_text = SignatureToString(signature);

  // 1. Native on the selected plugin.
  if (IsDisabled(signature.op)) {
    resolved->reason = "disabled by TESSERA_DISABLE_OPS";
  } else if (!primary_.ListsSignature(signature)) {
    resolved->reason = primary_.ListsOp(signature.op)
                           ? "not implemented for these dtypes"
                           : "not implemented";
  } else {
    auto kernel = primary_.ResolveOp(device, signature);
    if (kernel.ok()) {
      resolved->route = OpRoute::kNative;
      resolved->runner = &primary_;
      resolved->runner_device = device;
      resolved->kernel = *kernel;
      return resolved;
    }
    StatusCode code = kernel.status().code();
    if (code != StatusCode::kNotFound && code != StatusCode::kUnimplemented) {
      return kernel.status();
    }
    resolved->reason =
        fmt::format("resolve_op failed: {}", kernel.status().message());
  }

  // 2. The cpu plugin: on the same device when it is the selected plugin,
  // else on the fallback cpu device.
  resolved->route = OpRoute::kFallback;
  resolved->runner = &cpu_;
  const bool same_plugin = &cpu_ == &primary_;
  if (!same_plugin && cpu_device_ == nullptr) {
    return UnimplementedError(fmt::format(
        "op {} is not available on plugin {} ({}) and the cpu plugin has no "
        "device to fall back to",
        sig_text, primary_.name(), resolved->reason));
  }
  resolved->runner_device = same_plugin ? device : cpu_device_->ordinal();
  if (!cpu_.ListsSignature(signature)) {
    return UnimplementedError(fmt::format(
        "op {} is implemented neither by plugin {} ({}) nor by the cpu "
        "fallback plugin; use dtypes the op contract lists",
        sig_text, primary_.name(), resolved->reason));
  }
  auto kernel = cpu_.ResolveOp(resolved->runner_device, signature);
  if (!kernel.ok()) {
    return Status(kernel.status().code(),
                  fmt::format("op {} falls back to the cpu plugin, which "
                              "cannot run it: {}",
                              sig_text, kernel.status().message()));
  }
  resolved->kernel = *kernel;
  return resolved;
}

OpDispatcher::Key OpDispatcher::KeyOf(int32_t device,
                                     const tsr_op_signature& signature) {
  return Key{device, signature.op, signature.version,
             std::vector<tsr_dtype>(
                 signature.dtypes,
                 signature.dtypes +
                     std::min<uint32_t>(signature.num_args, TSR_MAX_OP_ARGS))};
}

const ResolvedOp* OpDispatcher::FindCached(const Key& key) {
  MutexLock lock(&mu_);
  auto it = cache_.find(key);
  return it == cache_.end() ? nullptr : it->second.get();
}

StatusOr<const ResolvedOp*> OpDispatcher::ResolveFused(
    int32_t device, const tsr_op_signature& signature) {
  Key key = KeyOf(device, signature);
  if (const ResolvedOp* cached = FindCached(key)) return cached;
  const std::string sig_text = SignatureToString(signature);
  std::string reason;
  if (IsDisabled(signature.op)) {
    reason = "disabled by TESSERA_DISABLE_OPS";
  } else if (!primary_.ListsSignature(signature)) {
    reason = primary_.ListsOp(signature.op) ? "not offered for these dtypes"
                                            : "not offered";
  } else {
    auto kernel = primary_.ResolveOp(device, signature);
    if (kernel.ok()) {
      auto resolved = std::make_unique<ResolvedOp>();
      resolved->signature = signature;
      resolved->device = device;
      resolved->route = OpRoute::kNative;
      resolved->runner = &primary_;
      resolved->runner_device = device;
      resolved->kernel = *kernel;
      MutexLock lock(&mu_);
      auto [it, inserted] = cache_.emplace(std::move(key), std::move(resolved));
      if (inserted && options_.log_ops) {
        TSR_LOG_INFO("op {} on {} device {}: native", sig_text,
                     primary_.name(), device);
      }
      return it->second.get();
    }
    reason = fmt::format("resolve_op failed: {}", kernel.status().message());
  }
  if (options_.log_ops) {
    TSR_LOG_INFO("op {} on {} device {}: not used ({})", sig_text,
                 primary_.name(), device, reason);
  }
  return NotFoundError(fmt::format("fused op {} is not native on plugin {}: {}",
                                   sig_text, primary_.name(), reason));
}

StatusOr<const ResolvedOp*> OpDispatcher::Resolve(
    int32_t device, const tsr_op_signature& signature) {
  Key key = KeyOf(device, signature);
  if (const ResolvedOp* cached = FindCached(key)) return cached;
  // Resolve outside the lock: resolve_op may be slow (kernel compilation).
  TSR_ASSIGN_OR_RETURN(auto resolved, ResolveUncached(device, signature));
  const std::string sig_text = SignatureToString(signature);
  MutexLock lock(&mu_);
  auto [it, inserted] = cache_.emplace(std::move(key), std::move(resolved));
  const ResolvedOp& op = *it->second;
  if (!inserted) return &op;  // another thread resolved it meanwhile
  if (options_.log_ops) {
    TSR_LOG_INFO(
        "op {} on {} device {}: {}{}", sig_text, primary_.name(), device,
        OpRouteName(op.route),
        op.route == OpRoute::kFallback
            ? fmt::format(" to cpu device {} ({})", op.runner_device, op.reason)
            : "");
  }
  if (op.route == OpRoute::kFallback && warned_.insert(signature.op).second) {
    TSR_LOG_WARN(
        "op {} falls back from plugin {} to the cpu plugin ({}); it runs "
        "through host memory and is slow. Counted in "
        "tessera:op_fallback_total{{op=\"{}\",plugin=\"{}\"}}",
        OpName(signature.op), primary_.name(), op.reason, OpName(signature.op),
        primary_.name());
  }
  return &op;
}

Status OpDispatcher::Launch(const ResolvedOp& op, Stream& stream,
                            std::span<const tsr_tensor> inputs,
                            std::span<const tsr_tensor> outputs,
                            const void* params, size_t params_size) {
  if (&stream.plugin() != &primary_ || stream.device() != op.device) {
    return InvalidArgumentError(fmt::format(
        "op {} was resolved for {} device {} but launched on a stream of {} "
        "device {}",
        OpName(op.signature.op), primary_.name(), op.device,
        stream.plugin().name(), stream.device()));
  }
  if (!IsFusedOp(op.signature.op) &&
      inputs.size() + outputs.size() != op.signature.num_args) {
    return InvalidArgumentError(fmt::format(
        "op {}: {} inputs and {} outputs given, but the signature has {} "
        "arguments",
        SignatureToString(op.signature), inputs.size(), outputs.size(),
        op.signature.num_args));
  }
  op.launches.fetch_add(1, std::memory_order_relaxed);
  if (op.route == OpRoute::kNative || op.runner == &primary_) {
    return op.runner->Launch(op.kernel, stream.handle(), inputs, outputs,
                             params, params_size);
  }
  return RunFallback(op, stream, inputs, outputs, params, params_size);
}

Status OpDispatcher::Launch(Stream& stream, tsr_op_id op,
                            std::span<const tsr_tensor> inputs,
                            std::span<const tsr_tensor> outputs,
                            const void* params, size_t params_size,
                            uint32_t version) {
  if (inputs.size() + outputs.size() > TSR_MAX_OP_ARGS) {
    return InvalidArgumentError(fmt::format(
        "op {}: {} arguments, more than TSR_MAX_OP_ARGS ({})", OpName(op),
        inputs.size() + outputs.size(), TSR_MAX_OP_ARGS));
  }
  std::vector<tsr_dtype> dtypes;
  for (const auto& t : inputs) dtypes.push_back(t.dtype);
  for (const auto& t : outputs) dtypes.push_back(t.dtype);
  TSR_ASSIGN_OR_RETURN(
      const ResolvedOp* resolved,
      Resolve(stream.device(), MakeSignature(op, version, dtypes)));
  return Launch(*resolved, stream, inputs, outputs, params, params_size);
}

Status OpDispatcher::RunFallback(const ResolvedOp& op, Stream& stream,
                                 std::span<const tsr_tensor> inputs,
                                 std::span<const tsr_tensor> outputs,
                                 const void* params, size_t params_size) {
  const std::string name = OpName(op.signature.op);
  // Everything queued before this op must have produced its data.
  TSR_RETURN_IF_ERROR(stream.Synchronize().WithContext(
      fmt::format("before the cpu fallback of {}", name)));

  std::vector<tsr_tensor> in(inputs.begin(), inputs.end());
  std::vector<tsr_tensor> out(outputs.begin(), outputs.end());
  std::vector<Region> regions;
  std::vector<size_t> in_region(in.size()), out_region(out.size());
  auto add = [&](const tsr_tensor& t, bool is_output,
                 const std::string& what) -> StatusOr<size_t> {
    TSR_ASSIGN_OR_RETURN(ByteSpan span, TensorByteSpan(t, what));
    for (size_t r = 0; r < regions.size(); ++r) {
      if (regions[r].source != t.buffer) continue;
      regions[r].span = Union(regions[r].span, span);
      if (is_output) {
        regions[r].output =
            regions[r].has_output ? Union(regions[r].output, span) : span;
        regions[r].has_output = true;
      }
      return r;
    }
    Region region;
    region.source = t.buffer;
    region.span = span;
    region.has_output = is_output;
    region.output = span;
    regions.push_back(std::move(region));
    return regions.size() - 1;
  };
  for (size_t i = 0; i < in.size(); ++i) {
    TSR_ASSIGN_OR_RETURN(
        in_region[i],
        add(in[i], false, fmt::format("input {} of {}", i, name)));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    TSR_ASSIGN_OR_RETURN(
        out_region[i],
        add(out[i], true, fmt::format("output {} of {}", i, name)));
  }

  MutexLock lock(&fallback_mu_);
  if (fallback_stream_ == nullptr) {
    TSR_ASSIGN_OR_RETURN(fallback_stream_, cpu_device_->CreateStream());
  }
  std::vector<unsigned char> staging;
  // Device -> host -> cpu buffer, one copy per source buffer.
  for (Region& r : regions) {
    TSR_ASSIGN_OR_RETURN(r.cpu, cpu_device_->Allocate(r.span.size()));
    if (r.span.size() == 0) continue;
    void* host = r.cpu->host_pointer();
    if (host == nullptr) {
      staging.resize(r.span.size());
      host = staging.data();
    }
    TSR_RETURN_IF_ERROR(primary_.CopyDeviceToHost(nullptr, host, r.source,
                                                  r.span.begin, r.span.size()));
    if (host != r.cpu->host_pointer()) {
      TSR_RETURN_IF_ERROR(r.cpu->CopyFromHost(0, host, r.span.size()));
    }
  }
  auto remap = [&](tsr_tensor& t, const Region& r) {
    t.buffer = r.cpu->handle();
    t.offset -= r.span.begin;
  };
  for (size_t i = 0; i < in.size(); ++i) remap(in[i], regions[in_region[i]]);
  for (size_t i = 0; i < out.size(); ++i) remap(out[i], regions[out_region[i]]);

  Status ran = cpu_.Launch(op.kernel, fallback_stream_->handle(), in, out,
                           params, params_size);
  if (ran.ok()) ran = fallback_stream_->Synchronize();
  if (!ran.ok()) {
    // A failure may leave a sticky error on the stream: start afresh next
    // time so one bad launch does not poison every later fallback.
    fallback_stream_.reset();
    return ran.WithContext(fmt::format("cpu fallback of {}", name));
  }

  // cpu buffer -> host -> device, only the output spans.
  for (Region& r : regions) {
    if (!r.has_output || r.output.size() == 0) continue;
    const uint64_t rel = r.output.begin - r.span.begin;
    const unsigned char* host =
        static_cast<const unsigned char*>(r.cpu->host_pointer());
    if (host == nullptr) {
      staging.resize(r.output.size());
      TSR_RETURN_IF_ERROR(
          r.cpu->CopyToHost(staging.data(), rel, r.output.size()));
      host = staging.data();
    } else {
      host += rel;
    }
    TSR_RETURN_IF_ERROR(primary_.CopyHostToDevice(
        nullptr, r.source, r.output.begin, host, r.output.size()));
  }
  return OkStatus();
}

std::vector<OpCounter> OpDispatcher::Counters() const {
  std::map<std::pair<std::string, std::string>, OpCounter> merged;
  MutexLock lock(&mu_);
  for (const auto& [key, op] : cache_) {
    const uint64_t n = op->launches.load(std::memory_order_relaxed);
    const std::string name = OpName(op->signature.op);
    OpCounter& runner = merged[{name, op->runner->name()}];
    runner.op = name;
    runner.plugin = op->runner->name();
    runner.launches += n;
    if (op->route == OpRoute::kFallback) {
      OpCounter& from = merged[{name, primary_.name()}];
      from.op = name;
      from.plugin = primary_.name();
      from.fallbacks += n;
    }
  }
  std::vector<OpCounter> out;
  for (auto& [key, counter] : merged) out.push_back(counter);
  return out;
}

uint64_t OpDispatcher::FallbackCount(tsr_op_id op) const {
  uint64_t n = 0;
  MutexLock lock(&mu_);
  for (const auto& [key, resolved] : cache_) {
    if (resolved->signature.op == op && resolved->route == OpRoute::kFallback) {
      n += resolved->launches.load(std::memory_order_relaxed);
    }
  }
  return n;
}

}  // namespace tessera::runtime
