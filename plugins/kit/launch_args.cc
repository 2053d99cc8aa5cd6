#include "launch_args.h"

#include <cstring>

#include "half.h"

namespace tessera::plugin_kit {
namespace {

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

std::string SignatureString(const tsr_op_signature& sig, const OpDef* def) {
  std::string s = StrCat(def ? def->name : "op", " (id ", sig.op, ") v", sig.version, " (");
  for (uint32_t i = 0; i < sig.num_args && i < TSR_MAX_OP_ARGS; ++i) {
    s += StrCat(i ? ", " : "", DTypeName(sig.dtypes[i]));
  }
  return s + ")";
}

Status FindSignatureForResolve(const tsr_op_signature* signature, const char* plugin,
                               long* index) {
  if (signature->struct_size < sizeof(tsr_op_signature)) {
    return InvalidArgument("signature struct_size ", signature->struct_size,
                           " is smaller than the v1.0 tsr_op_signature (",
                           sizeof(tsr_op_signature), " bytes)");
  }
  const OpDef* def = FindOpDef(signature->op);
  if (def == nullptr) {
    return NotFound("the ", plugin, " plugin has no op with id ", signature->op,
                    " (ops are the v1 ids 1..13 and the fused decoder_layer, ",
                    TSR_OP_DECODER_LAYER, ")");
  }
  if (signature->num_args > TSR_MAX_OP_ARGS) {
    return InvalidArgument("signature num_args ", signature->num_args, " exceeds ",
                           TSR_MAX_OP_ARGS);
  }
  *index = FindOpSignature(*signature);
  if (*index < 0) {
    return NotFound("no kernel for ", SignatureString(*signature, def), "; the ", plugin,
                    " plugin offers: ", OfferedFor(signature->op));
  }
  return OkStatus();
}

Status ResolveTensor(const tsr_tensor* t, const std::string& label,
                     const BufferResolver& resolve, TensorView* view) {
  if (t->struct_size < sizeof(tsr_tensor)) {
    return InvalidArgument(label, ": struct_size ", t->struct_size,
                           " is smaller than the v1.0 tsr_tensor (", sizeof(tsr_tensor),
                           " bytes); set struct_size = sizeof(tsr_tensor)");
  }
  ResolvedBuffer buffer;
  TSR_KIT_RETURN_IF_ERROR(resolve(t->buffer, label, &buffer));
  return MakeTensorView(t, label, buffer.size, buffer.host_base, buffer.object, view);
}

Status BuildOpCall(long index, const tsr_tensor* inputs, size_t num_inputs,
                   const tsr_tensor* outputs, size_t num_outputs, const void* params,
                   size_t params_size, const BufferResolver& resolve, OpCall* call) {
  const OpSignatureInfo& info = OpSignatureInfos()[index];
  const tsr_op_signature& sig = OpSignatures()[index];
  const OpDef& def = *info.def;
  if (num_inputs != info.num_inputs || num_outputs != info.num_outputs) {
    return InvalidArgument(def.name, ": the signature ", SignatureString(sig, &def), " takes ",
                           info.num_inputs, " input(s) and ", info.num_outputs,
                           " output(s), but the launch passes ", num_inputs, " and ",
                           num_outputs);
  }
  if ((num_inputs > 0 && inputs == nullptr) || (num_outputs > 0 && outputs == nullptr)) {
    return InvalidArgument(def.name, ": inputs or outputs is NULL");
  }
  call->op = def.id;
  call->version = def.version;
  call->num_inputs = num_inputs;
  call->num_outputs = num_outputs;
  for (size_t i = 0; i < num_inputs + num_outputs; ++i) {
    const bool is_out = i >= num_inputs;
    const size_t arg = is_out ? i - num_inputs : i;
    const tsr_tensor* t = is_out ? &outputs[arg] : &inputs[arg];
    TensorView* view = is_out ? &call->out[arg] : &call->in[arg];
    bool optional = false;
    const tsr_dtype want =
        def.fused_arg_dtype ? def.fused_arg_dtype(sig, i, &optional) : sig.dtypes[i];
    if (def.fused_arg_dtype != nullptr && t->struct_size >= sizeof(tsr_tensor) &&
        t->dtype == TSR_DTYPE_INVALID) {
      if (optional || want == TSR_DTYPE_INVALID) continue;  // absent: the view stays INVALID
      return InvalidArgument(def.name, ": ", ArgLabel(def, is_out, arg), " is absent but ",
                             SignatureString(sig, &def), " needs it (", DTypeName(want), ")");
    }
    const std::string label = StrCat(def.name, ": ", ArgLabel(def, is_out, arg));
    if (want == TSR_DTYPE_INVALID) {
      return InvalidArgument(label, " must be absent (dtype TSR_DTYPE_INVALID) for ",
                             SignatureString(sig, &def));
    }
    TSR_KIT_RETURN_IF_ERROR(ResolveTensor(t, label, resolve, view));
    if (view->dtype != want) {
      return InvalidArgument(label, " is ", DTypeName(view->dtype), " but the kernel ",
                             SignatureString(sig, &def), " expects ", DTypeName(want));
    }
  }
  TSR_KIT_RETURN_IF_ERROR(CopyParams(def, params, params_size, call));
  Status checked = def.check(*call);
  if (!checked.ok()) return Status(checked.code(), StrCat(def.name, ": ", checked.message()));
  return OkStatus();
}

}  // namespace tessera::plugin_kit
