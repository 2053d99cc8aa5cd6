#include "tensor.h"

#include "half.h"

namespace tessera::plugin_kit {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

int64_t TensorView::rows() const {
  int64_t n = 1;
  for (int i = 0; i + 1 < ndim; ++i) n *= shape[i];
  return n;
}

int64_t TensorView::RowOffset(int64_t row) const {
  int64_t offset = 0;
  for (int i = ndim - 2; i >= 0; --i) {
    int64_t d = shape[i];
    offset += (row % d) * strides[i];
    row /= d;
  }
  return offset;
}

bool TensorView::IsContiguous() const {
  int64_t expected = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::string ShapeString(const TensorView& v) {
  std::string s = "[";
  for (int i = 0; i < v.ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(v.shape[i]);
  }
  return s + "]";
}

bool SameShape(const TensorView& a, const TensorView& b) {
  if (a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i) {
    if (a.shape[i] != b.shape[i]) return false;
  }
  return true;
}

Status UnknownBufferHandle(const std::string& name, const void* handle) {
  return InvalidHandle(name, ": buffer handle ", handle,
                       " is not a live buffer of this plugin (NULL, freed, or "
                       "never allocated here)");
}

Status MakeTensorView(const tsr_tensor* t, const std::string& name, uint64_t buffer_size,
                      char* host_base, const void* buffer, TensorView* out) {
  size_t esize = DTypeSize(t->dtype);
  if (esize == 0) {
    return InvalidArgument(name, ": dtype ", t->dtype, " is not a valid tsr_dtype");
  }
  if (t->ndim < 0 || t->ndim > TSR_MAX_DIMS) {
    return InvalidArgument(name, ": ndim ", t->ndim, " is outside [0, ", TSR_MAX_DIMS, "]");
  }
  TensorView v;
  v.dtype = t->dtype;
  v.ndim = t->ndim;
  bool empty = false;
  unsigned __int128 count = 1;
  unsigned __int128 last = 0;  // element index of the furthest element
  for (int i = 0; i < t->ndim; ++i) {
    if (t->shape[i] < 0) {
      return InvalidArgument(name, ": shape[", i, "] = ", t->shape[i], " is negative");
    }
    if (t->strides[i] < 0) {
      return InvalidArgument(name, ": strides[", i, "] = ", t->strides[i],
                             " is negative; strides must be >= 0");
    }
    v.shape[i] = t->shape[i];
    v.strides[i] = t->strides[i];
    if (t->shape[i] == 0) empty = true;
    count *= static_cast<unsigned __int128>(t->shape[i]);
    if (count > (static_cast<unsigned __int128>(1) << 48)) count = static_cast<unsigned __int128>(1) << 49;
    if (t->shape[i] > 0) {
      last += static_cast<unsigned __int128>(t->shape[i] - 1) *
              static_cast<unsigned __int128>(t->strides[i]);
    }
  }
  if (t->offset % esize != 0) {
    return InvalidArgument(name, ": offset ", t->offset, " is not a multiple of the ",
                           DTypeName(t->dtype), " element size (", esize, " bytes)");
  }
  unsigned __int128 end = t->offset;
  if (!empty) end += (last + 1) * esize;
  if (end > buffer_size) {
    return InvalidArgument(name, ": the tensor (offset ", t->offset, ", shape ",
                           ShapeString(v), ", ", DTypeName(t->dtype),
                           ") addresses bytes beyond its buffer of ", buffer_size,
                           " bytes; check the offset, shape and strides");
  }
  if (!empty && count > (static_cast<unsigned __int128>(1) << 48)) {
    return InvalidArgument(name, ": ", ShapeString(v), " has too many elements");
  }
  v.data = host_base == nullptr ? nullptr : host_base + t->offset;
  v.buffer = buffer;
  v.offset = t->offset;
  *out = v;
  return OkStatus();
}

}  // namespace tessera::plugin_kit
