// TensorView: a validated tsr_tensor with its buffer resolved by the
// plugin, plus the shape helpers ops share.
//
// MakeTensorView() checks everything a launch must reject synchronously
// (the caller checked struct_size, see ResolveTensor): dtype, rank, non-negative shape and strides, an offset
// aligned to the element size and an addressed extent (offset + the
// furthest element) inside the buffer, whose size the plugin passes after
// resolving the handle (UnknownBufferHandle() words a failed lookup).
// Element (i0..in-1) lives at byte offset + (sum ik * strides[k]) * element
// size of the buffer; `data` is that address when the buffer is
// host-addressable (the cpu plugin) and NULL otherwise (device memory, e.g.
// an OpenCL cl_mem, which the plugin keeps in `buffer`). Plain value type.
#ifndef TESSERA_PLUGINS_KIT_TENSOR_H_
#define TESSERA_PLUGINS_KIT_TENSOR_H_

#include <cstdint>
#include <string>

#include "status.h"

namespace tessera::plugin_kit {

struct TensorView {
  char* data = nullptr;          // host address of the first element, or NULL
  const void* buffer = nullptr;  // the plugin's buffer object (opaque here)
  uint64_t offset = 0;           // bytes from the start of the buffer
  tsr_dtype dtype = TSR_DTYPE_INVALID;
  int ndim = 0;
  int64_t shape[TSR_MAX_DIMS] = {};
  int64_t strides[TSR_MAX_DIMS] = {};

  int64_t numel() const;
  // Dimension `i`; negative counts from the end (-1 = innermost).
  int64_t dim(int i) const { return shape[i < 0 ? ndim + i : i]; }
  int64_t stride(int i) const { return strides[i < 0 ? ndim + i : i]; }
  // Product of all dims but the innermost (1 for rank 0 and 1).
  int64_t rows() const;
  // Elements per row: the innermost dim (1 for rank 0).
  int64_t cols() const { return ndim == 0 ? 1 : shape[ndim - 1]; }
  int64_t col_stride() const { return ndim == 0 ? 1 : strides[ndim - 1]; }
  // Element offset of the first element of row `row` (row-major over the
  // leading dims).
  int64_t RowOffset(int64_t row) const;
  // Row-major strides with no gaps.
  bool IsContiguous() const;

  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(data);
  }
};

// Validates `t` (argument `name`, e.g. "input 1 (table)") against its
// resolved buffer: `buffer_size` bytes, host address `host_base` (NULL when
// not host-addressable), plugin object `buffer`.
Status MakeTensorView(const tsr_tensor* t, const std::string& name, uint64_t buffer_size,
                      char* host_base, const void* buffer, TensorView* out);

// The error for a tensor whose buffer handle is not live in the plugin.
Status UnknownBufferHandle(const std::string& name, const void* handle);

// "[2, 3, 4]"
std::string ShapeString(const TensorView& v);
bool SameShape(const TensorView& a, const TensorView& b);

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_TENSOR_H_
