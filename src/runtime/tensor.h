// Helpers for tsr_tensor, the ABI's strided tensor descriptor.
//
// A tsr_tensor is a view: (buffer, byte offset, dtype, shape, strides in
// elements). These functions build contiguous views and compute the byte
// span a view addresses, which is what a copy must move to carry the tensor
// to another device (strides and offsets honoured, gaps included). Pure
// functions; thread-safe.
#ifndef TESSERA_RUNTIME_TENSOR_H_
#define TESSERA_RUNTIME_TENSOR_H_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "base/status.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::runtime {

// A row-major contiguous view of `buffer` at `offset` bytes.
tsr_tensor MakeTensor(tsr_buffer buffer, tsr_dtype dtype,
                      std::span<const int64_t> shape, uint64_t offset = 0);
inline tsr_tensor MakeTensor(tsr_buffer buffer, tsr_dtype dtype,
                             std::initializer_list<int64_t> shape,
                             uint64_t offset = 0) {
  return MakeTensor(buffer, dtype,
                    std::span<const int64_t>(shape.begin(), shape.size()),
                    offset);
}

// Product of the shape (1 for a scalar, 0 if any dimension is 0).
int64_t NumElements(const tsr_tensor& t);

// The bytes [begin, end) of t.buffer that t addresses: begin = t.offset,
// end = offset + (sum((shape[k]-1) * strides[k]) + 1) * dtype size, or
// end == begin when the tensor has no elements.
struct ByteSpan {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
};

// Validates the descriptor (struct_size, dtype, ndim, non-negative shape
// and strides, no overflow) and returns its span. `what` names the tensor in
// the error ("input 0 of rms_norm").
StatusOr<ByteSpan> TensorByteSpan(const tsr_tensor& t, const std::string& what);

// "f32[2, 3]" (with "strides [..]" appended when not contiguous).
std::string TensorToString(const tsr_tensor& t);

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_TENSOR_H_
