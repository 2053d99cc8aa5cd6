#include <cstring>
#include <memory>
#include <vector>

#include "entries.h"
#include "entry_guard.h"
#include "half.h"
#include "plugin_state.h"

namespace tessera::cpu::entry {
namespace {

std::string SignatureString(const tsr_op_signature& sig, const OpDef* def) {
  std::string s = StrCat(def ? def->name : "op", " (id ", sig.op, ") v", sig.version, " (");
  for (uint32_t i = 0; i < sig.num_args && i < TSR_MAX_OP_ARGS; ++i) {
    s += StrCat(i ? ", " : "", DTypeName(sig.dtypes[i]));
  }
  return s + ")";
}

// The signatures offered for `op`, for NOT_FOUND messages.
std::string OfferedFor(tsr_op_id op) {
  std::string s;
  for (size_t i = 0; i < NumOpSignatures(); ++i) {
    const tsr_op_signature& sig = OpSignatures()[i];
    if (sig.op != op) continue;
    s += StrCat(s.empty() ? "" : "; ", SignatureString(sig, FindOpDef(op)));
  }
  return s;
}

// Copies the op's params struct after checking its declared sizes.
Status CopyParams(const OpDef& def, const void* params, size_t params_size, OpCall* call) {
  if (def.params_size == 0) return OkStatus();  // params: none; anything passed is ignored
  if (params == nullptr) {
    return InvalidArgument(def.name, " needs its params struct (", def.params_size,
                           " bytes), but params is NULL");
  }
  if (params_size < def.params_size) {
    return InvalidArgument("params_size ", params_size, " is smaller than the v1.0 params of ",
                           def.name, " (", def.params_size, " bytes)");
  }
  uint32_t declared;
  std::memcpy(&declared, params, sizeof(declared));
  if (declared < def.params_size) {
    return InvalidArgument("params.struct_size ", declared,
                           " is smaller than the v1.0 params of ", def.name, " (",
                           def.params_size, " bytes); set struct_size = sizeof(the struct)");
  }
  std::memcpy(&call->params, params, def.params_size);
  return OkStatus();
}

}  // namespace

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
    if (signature->struct_size < sizeof(tsr_op_signature)) {
      return InvalidArgument("signature struct_size ", signature->struct_size,
                             " is smaller than the v1.0 tsr_op_signature (",
                             sizeof(tsr_op_signature), " bytes)");
    }
    TSR_CPU_RETURN_IF_ERROR(CheckDevice(device));
    const OpDef* def = FindOpDef(signature->op);
    if (def == nullptr) {
      return NotFound("the cpu plugin has no op with id ", signature->op,
                      " (it implements the v1 ops 1..13)");
    }
    if (signature->num_args > TSR_MAX_OP_ARGS) {
      return InvalidArgument("signature num_args ", signature->num_args, " exceeds ",
                             TSR_MAX_OP_ARGS);
    }
    long index = FindOpSignature(*signature);
    if (index < 0) {
      return NotFound("no kernel for ", SignatureString(*signature, def),
                      "; the cpu plugin offers: ", OfferedFor(signature->op));
    }
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
    const OpSignatureInfo& info = *kernel->info;
    const tsr_op_signature& sig = OpSignatures()[&info - OpSignatureInfos()];
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
    if (num_inputs != info.num_inputs || num_outputs != info.num_outputs) {
      return InvalidArgument(def.name, ": the signature ", SignatureString(sig, &def), " takes ",
                             info.num_inputs, " input(s) and ", info.num_outputs,
                             " output(s), but the launch passes ", num_inputs, " and ",
                             num_outputs);
    }
    if ((num_inputs > 0 && inputs == nullptr) || (num_outputs > 0 && outputs == nullptr)) {
      return InvalidArgument(def.name, ": inputs or outputs is NULL");
    }
    auto call = std::make_shared<OpCall>();
    call->op = def.id;
    call->num_inputs = num_inputs;
    call->num_outputs = num_outputs;
    std::vector<std::shared_ptr<Buffer>> keep(num_inputs + num_outputs);
    for (size_t i = 0; i < num_inputs + num_outputs; ++i) {
      const bool is_out = i >= num_inputs;
      const size_t index = is_out ? i - num_inputs : i;
      const tsr_tensor* t = is_out ? &outputs[index] : &inputs[index];
      const std::string label = StrCat(def.name, ": ", ArgLabel(def, is_out, index));
      TensorView* view = is_out ? &call->out[index] : &call->in[index];
      TSR_CPU_RETURN_IF_ERROR(MakeTensorView(t, label, view, &keep[i]));
      if (view->dtype != sig.dtypes[i]) {
        return InvalidArgument(label, " is ", DTypeName(view->dtype), " but the kernel ",
                               SignatureString(sig, &def), " expects ",
                               DTypeName(sig.dtypes[i]));
      }
    }
    TSR_CPU_RETURN_IF_ERROR(CopyParams(def, params, params_size, call.get()));
    Status checked = def.check(*call);
    if (!checked.ok()) {
      return Status(checked.code(), StrCat(def.name, ": ", checked.message()));
    }
    OpRunFn run = def.run;
    return stream->Enqueue(def.name, [call, run, keep = std::move(keep)](ExecContext& ctx) {
      return run(*call, ctx);
    });
  });
}

}  // namespace tessera::cpu::entry
