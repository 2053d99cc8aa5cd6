#include <cstring>
#include <memory>
#include <vector>

#include "collectives.h"
#include "entries.h"
#include "kit_names.h"
#include "plugin_state.h"

namespace tessera::cpu::entry {

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
    TSR_CPU_RETURN_IF_ERROR(CheckDevice(device));
    long index = -1;
    TSR_CPU_RETURN_IF_ERROR(FindSignatureForResolve(signature, "cpu", &index));
    const PluginState* state = State();
    *out = ToHandle<tsr_kernel>(
        state->kernel_handles[static_cast<size_t>(device) * NumOpSignatures() + index]);
    return OkStatus();
  });
}

tsr_status Launch(tsr_kernel kernel_handle, tsr_stream stream_handle, const tsr_tensor* inputs,
                  size_t num_inputs, const tsr_tensor* outputs, size_t num_outputs,
                  const void* params, size_t params_size) {
  return Guard("launch", [&]() -> Status {
    TSR_CPU_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
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
    if (stream->device() != kernel->device) {
      return InvalidArgument(def.name, ": the kernel was resolved for device ", kernel->device,
                             " but the stream is on device ", stream->device(),
                             "; resolve the op on the stream's device");
    }
    auto call = std::make_shared<OpCall>();
    std::vector<std::shared_ptr<Buffer>> keep;
    TSR_CPU_RETURN_IF_ERROR(BuildOpCall(
        kernel->signature, inputs, num_inputs, outputs, num_outputs, params, params_size,
        [&keep](tsr_buffer handle, const std::string& label, ResolvedBuffer* out) {
          return ResolveTensorBuffer(handle, label, out, &keep);
        },
        call.get()));
    if (def.id == TSR_OP_DECODER_LAYER && def.version >= 2 &&
        call->params.decoder_layer.comm != nullptr) {
      TSR_CPU_RETURN_IF_ERROR(CheckLayerComm(call->params.decoder_layer.comm, kernel->device));
    }
    OpRunFn run = kernel->run;
    return stream->Enqueue(def.name, [call, run, keep = std::move(keep)](ExecContext& ctx) {
      return run(*call, ctx);
    });
  });
}

}  // namespace tessera::cpu::entry
