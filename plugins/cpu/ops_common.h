// Helpers shared by the op families: shape requirements with readable
// messages, and dtype dispatch to templates over float / Bf16 / F16.
// Header-only, pure.
#ifndef TESSERA_PLUGINS_CPU_OPS_COMMON_H_
#define TESSERA_PLUGINS_CPU_OPS_COMMON_H_

#include <cmath>
#include <initializer_list>

#include "half.h"
#include "op_table.h"

namespace tessera::cpu {

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

// Calls fn(T{}) with T the storage type of a float dtype.
template <typename Fn>
Status DispatchFloat(tsr_dtype dtype, Fn&& fn) {
  switch (dtype) {
    case TSR_DTYPE_F32: return fn(float{});
    case TSR_DTYPE_BF16: return fn(Bf16{});
    case TSR_DTYPE_F16: return fn(F16{});
    default: return Internal("dtype ", DTypeName(dtype), " reached a float kernel");
  }
}

// Rows per ParallelFor chunk so that a chunk holds about `target` elements.
inline int64_t RowGrain(int64_t row_elements, int64_t target = 16384) {
  if (row_elements <= 0) return 1 << 20;
  int64_t g = target / row_elements;
  return g < 1 ? 1 : g;
}

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_OPS_COMMON_H_
