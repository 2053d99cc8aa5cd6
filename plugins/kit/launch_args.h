// The parts of resolve_op and launch that every in-tree plugin does the same
// way: matching a signature against the shared op table, and turning a
// launch's tensors and params into a checked OpCall. What differs per plugin
// — how a buffer handle resolves — comes in as a BufferResolver.
// Thread-safe (no state).
#ifndef TESSERA_PLUGINS_KIT_LAUNCH_ARGS_H_
#define TESSERA_PLUGINS_KIT_LAUNCH_ARGS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "op_table.h"

namespace tessera::plugin_kit {

// "linear (id 4) v1 (f32, f16, f32)".
std::string SignatureString(const tsr_op_signature& sig, const OpDef* def);

// resolve_op's checks: `signature` non-NULL with a v1.0 struct_size, a known
// op, num_args in range and listed. On success *index is its position in
// OpSignatures(). `plugin` names the plugin in NOT_FOUND messages.
Status FindSignatureForResolve(const tsr_op_signature* signature, const char* plugin,
                               long* index);

// One buffer as the plugin resolved it.
struct ResolvedBuffer {
  uint64_t size = 0;            // bytes requested at allocation
  char* host_base = nullptr;    // host address, or NULL for device memory
  const void* object = nullptr; // the plugin's buffer object
};
// Resolves a live handle, or returns an error (UnknownBufferHandle words it).
using BufferResolver =
    std::function<Status(tsr_buffer handle, const std::string& label, ResolvedBuffer* out)>;

// Validates one tensor argument `t` (named `label`): its struct_size, its
// buffer handle through `resolve`, then MakeTensorView.
Status ResolveTensor(const tsr_tensor* t, const std::string& label,
                     const BufferResolver& resolve, TensorView* view);

// launch's checks for the signature at `index`: argument counts, every
// tensor (MakeTensorView) with the signature's dtype, the params struct
// (copied after its declared size is checked), then the op's own check.
// Messages are prefixed with the op's name.
Status BuildOpCall(long index, const tsr_tensor* inputs, size_t num_inputs,
                   const tsr_tensor* outputs, size_t num_outputs, const void* params,
                   size_t params_size, const BufferResolver& resolve, OpCall* call);

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_LAUNCH_ARGS_H_
