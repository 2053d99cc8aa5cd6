#include "runtime/tensor.h"

#include <fmt/format.h>

#include "base/dtype.h"

namespace tessera::runtime {

tsr_tensor MakeTensor(tsr_buffer buffer, tsr_dtype dtype,
                      std::span<const int64_t> shape, uint64_t offset) {
  tsr_tensor t{};
  t.struct_size = sizeof(t);
  t.dtype = dtype;
  t.buffer = buffer;
  t.offset = offset;
  t.ndim = static_cast<int32_t>(shape.size() > TSR_MAX_DIMS ? TSR_MAX_DIMS
                                                            : shape.size());
  int64_t stride = 1;
  for (int k = t.ndim - 1; k >= 0; --k) {
    t.shape[k] = shape[k];
    t.strides[k] = stride;
    stride *= shape[k] > 0 ? shape[k] : 1;
  }
  return t;
}

int64_t NumElements(const tsr_tensor& t) {
  int64_t n = 1;
  for (int k = 0; k < t.ndim && k < TSR_MAX_DIMS; ++k) n *= t.shape[k];
  return n;
}

StatusOr<ByteSpan> TensorByteSpan(const tsr_tensor& t,
                                  const std::string& what) {
  if (t.struct_size < sizeof(tsr_tensor)) {
    return InvalidArgumentError(
        fmt::format("{}: tsr_tensor.struct_size is {}, expected at least {}",
                    what, t.struct_size, sizeof(tsr_tensor)));
  }
  size_t element = DTypeSize(t.dtype);
  if (element == 0) {
    return InvalidArgumentError(
        fmt::format("{}: invalid dtype {}", what, t.dtype));
  }
  if (t.ndim < 0 || t.ndim > TSR_MAX_DIMS) {
    return InvalidArgumentError(fmt::format("{}: ndim {} is outside 0..{}",
                                            what, t.ndim, TSR_MAX_DIMS));
  }
  if (t.buffer == nullptr) {
    return InvalidArgumentError(fmt::format("{}: buffer is NULL", what));
  }
  unsigned __int128 last = 0;  // element index of the last element
  for (int k = 0; k < t.ndim; ++k) {
    if (t.shape[k] < 0 || t.strides[k] < 0) {
      return InvalidArgumentError(fmt::format(
          "{}: dimension {} has shape {} and stride {}; both must be >= 0",
          what, k, t.shape[k], t.strides[k]));
    }
    if (t.shape[k] == 0) return ByteSpan{t.offset, t.offset};
    last += static_cast<unsigned __int128>(t.shape[k] - 1) *
            static_cast<uint64_t>(t.strides[k]);
  }
  unsigned __int128 end =
      static_cast<unsigned __int128>(t.offset) + (last + 1) * element;
  if (end > UINT64_MAX) {
    return InvalidArgumentError(
        fmt::format("{}: the addressed bytes overflow 64 bits", what));
  }
  return ByteSpan{t.offset, static_cast<uint64_t>(end)};
}

std::string TensorToString(const tsr_tensor& t) {
  std::string shape, strides;
  bool contiguous = true;
  int64_t expect = 1;
  for (int k = t.ndim - 1; k >= 0 && k < TSR_MAX_DIMS; --k) {
    if (t.shape[k] > 1 && t.strides[k] != expect) contiguous = false;
    expect *= t.shape[k];
  }
  for (int k = 0; k < t.ndim && k < TSR_MAX_DIMS; ++k) {
    shape += fmt::format("{}{}", k ? ", " : "", t.shape[k]);
    strides += fmt::format("{}{}", k ? ", " : "", t.strides[k]);
  }
  std::string out = fmt::format("{}[{}]", DTypeName(t.dtype), shape);
  if (!contiguous) out += fmt::format(" strides [{}]", strides);
  return out;
}

}  // namespace tessera::runtime
