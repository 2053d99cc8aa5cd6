#include <memory>
#include <vector>

#include "entries.h"
#include "plugin_state.h"

namespace tessera::opencl::entry {

tsr_status ListOps(const tsr_op_signature** ops_out, size_t* count_out) {
  return Guard("list_ops", [&]() -> Status {
    if (ops_out == nullptr || count_out == nullptr) {
      return InvalidArgument("ops_out and count_out must not be NULL");
    }
    *ops_out = OpSignatures();
    *count_out = NumOpSignatures();
    return OkStatus();
  });
}

tsr_status ResolveOp(int32_t device, const tsr_op_signature* signature, tsr_kernel* out) {
  return Guard("resolve_op", [&]() -> Status {
    if (signature == nullptr || out == nullptr) {
      return InvalidArgument("signature and out must not be NULL");
    }
    TSR_CL_RETURN_IF_ERROR(CheckDevice(device));
    long index = -1;
    TSR_CL_RETURN_IF_ERROR(FindSignatureForResolve(signature, "opencl", &index));
    *out = ToHandle<tsr_kernel>(
        State()->kernel_handles[static_cast<size_t>(device) * NumOpSignatures() + index]);
    return OkStatus();
  });
}

tsr_status Launch(tsr_kernel kernel_handle, tsr_stream stream_handle, const tsr_tensor* inputs,
                  size_t num_inputs, const tsr_tensor* outputs, size_t num_outputs,
                  const void* params, size_t params_size) {
  return Guard("launch", [&]() -> Status {
    TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
    PluginState* state = State();
    std::shared_ptr<Kernel> kernel = state->kernels.Find(kernel_handle);
    if (kernel == nullptr) {
      return InvalidHandle("kernel ", static_cast<const void*>(kernel_handle),
                           " is not a kernel resolve_op returned (since the last init)");
    }
    const OpDef& def = *kernel->def;
    std::shared_ptr<Stream> stream = state->streams.Find(stream_handle);
    if (stream == nullptr) {
      return InvalidHandle(def.name, ": stream ", static_cast<const void*>(stream_handle),
                           " is not a live stream of this plugin (NULL, destroyed, or never "
                           "created here)");
    }
    Device& device = *state->devices[kernel->device];
    if (&stream->device() != &device) {
      return InvalidArgument(def.name, ": the kernel was resolved for device ", kernel->device,
                             " but the stream is on device ", stream->device().ordinal,
                             "; resolve the op on the stream's device");
    }
    OpCall call;
    TSR_CL_RETURN_IF_ERROR(BuildOpCall(
        kernel->signature, inputs, num_inputs, outputs, num_outputs, params, params_size,
        [&device](tsr_buffer handle, const std::string& label, ResolvedBuffer* out) -> Status {
          TSR_CL_RETURN_IF_ERROR(ResolveTensorBuffer(handle, label, out, nullptr));
          const auto* buffer = static_cast<const Buffer*>(out->object);
          if (buffer->device->context != device.context) {
            return InvalidArgument(label, ": the buffer lives on '", buffer->device->name,
                                   "', another OpenCL platform than the stream's '",
                                   device.name, "'");
          }
          return OkStatus();
        },
        &call));
    // OpenCL keeps every cl_mem a queued kernel uses alive until it ran, so
    // nothing needs holding here.
    LaunchContext ctx(device, *stream);
    return kernel->enqueue(call, ctx);
  });
}

}  // namespace tessera::opencl::entry
