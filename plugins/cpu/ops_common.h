// Helpers shared by the op families: shape requirements with readable
// messages, and dtype dispatch to templates over float / Bf16 / F16.
// Header-only, pure.
#ifndef TESSERA_PLUGINS_CPU_OPS_COMMON_H_
#define TESSERA_PLUGINS_CPU_OPS_COMMON_H_

#include <cmath>
#include <initializer_list>

#include "kit_names.h"

namespace tessera::cpu {

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
