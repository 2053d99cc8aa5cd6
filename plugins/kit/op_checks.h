// The synchronous checks of every v1 op (shapes, ranks, params), shared by
// the in-tree plugins so each rejects the same launches with the same
// messages. Each Check<Op> runs inside launch after the kit validated the
// argument count, dtypes, handles and extents against the signature
// (launch_args.h); a failure is returned by launch, nothing is enqueued.
// Contracts: include/tessera/plugin/tessera_plugin.h. Pure functions.
#ifndef TESSERA_PLUGINS_KIT_OP_CHECKS_H_
#define TESSERA_PLUGINS_KIT_OP_CHECKS_H_

#include "op_call.h"

namespace tessera::plugin_kit {

inline Status RequireRank(const TensorView& t, const char* name, int ndim) {
  if (t.ndim != ndim) {
    return InvalidArgument(name, " must have rank ", ndim, " but has shape ", ShapeString(t));
  }
  return OkStatus();
}

inline Status RequireMinRank(const TensorView& t, const char* name, int ndim) {
  if (t.ndim < ndim) {
    return InvalidArgument(name, " must have rank >= ", ndim, " but has shape ", ShapeString(t));
  }
  return OkStatus();
}

// Requires dimension `i` of `t` to equal `value` (named `what` in messages).
inline Status RequireDim(const TensorView& t, const char* name, int i, int64_t value,
                         const char* what) {
  if (t.dim(i) != value) {
    return InvalidArgument(name, " has shape ", ShapeString(t), " but its dimension ",
                           i < 0 ? t.ndim + i : i, " must equal ", what, " = ", value);
  }
  return OkStatus();
}

inline Status RequireSameShape(const TensorView& a, const char* a_name, const TensorView& b,
                               const char* b_name) {
  if (!SameShape(a, b)) {
    return InvalidArgument(b_name, " has shape ", ShapeString(b), " but must have the shape of ",
                           a_name, " ", ShapeString(a));
  }
  return OkStatus();
}

#define TSR_KIT_DECLARE_CHECK(Name) Status Check##Name(const OpCall& call);
TSR_KIT_DECLARE_CHECK(Embedding)
TSR_KIT_DECLARE_CHECK(RmsNorm)
TSR_KIT_DECLARE_CHECK(AddRmsNorm)
TSR_KIT_DECLARE_CHECK(Linear)
TSR_KIT_DECLARE_CHECK(Rope)
TSR_KIT_DECLARE_CHECK(KvStore)
TSR_KIT_DECLARE_CHECK(PagedAttention)
TSR_KIT_DECLARE_CHECK(SiluAndMul)
TSR_KIT_DECLARE_CHECK(Add)
TSR_KIT_DECLARE_CHECK(Cast)
TSR_KIT_DECLARE_CHECK(Argmax)
TSR_KIT_DECLARE_CHECK(Sample)
TSR_KIT_DECLARE_CHECK(Logprobs)
TSR_KIT_DECLARE_CHECK(LinearW8)  // linear v2 (ABI 1.1)
TSR_KIT_DECLARE_CHECK(EmbeddingShard)  // embedding v2 (ABI 1.4)
#undef TSR_KIT_DECLARE_CHECK

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_OP_CHECKS_H_
