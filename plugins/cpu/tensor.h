// TensorView: a validated tsr_tensor with its buffer resolved to a host
// address, plus the shape helpers ops share.
//
// MakeTensorView() checks everything a launch must reject synchronously:
// struct_size, dtype, rank, non-negative shape and strides, a live buffer
// handle, an offset aligned to the element size and an addressed extent
// (offset + the furthest element) inside the buffer. Element (i0..in-1)
// lives at data + (sum ik * strides[k]) * element size; strides are in
// elements. Plain value type.
#ifndef TESSERA_PLUGINS_CPU_TENSOR_H_
#define TESSERA_PLUGINS_CPU_TENSOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "status.h"

namespace tessera::cpu {

struct Buffer;

struct TensorView {
  char* data = nullptr;  // buffer address + offset
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

// Resolves and validates `t` (argument `name`, e.g. "input 1 (table)").
// `keep` (optional) receives the buffer so queued work can hold it alive.
Status MakeTensorView(const tsr_tensor* t, const std::string& name, TensorView* out,
                      std::shared_ptr<Buffer>* keep = nullptr);

// "[2, 3, 4]"
std::string ShapeString(const TensorView& v);
bool SameShape(const TensorView& a, const TensorView& b);

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_TENSOR_H_
