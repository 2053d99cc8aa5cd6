// HostTensor: a strided view of host memory, the operand type of the
// reference op implementations (reference/reference_ops.h).
//
// Layout mirrors tsr_tensor: element (i0, .., in-1) lives at
// data + (i0*strides[0] + .. + in-1*strides[n-1]) * DTypeSize(dtype) bytes,
// with strides in elements and non-negative. `data` already includes any
// byte offset (it points at element (0, .., 0)). A HostTensor does not own
// its memory; OwnedTensor below does, for tests and the conformance kit.
//
// Thread-compatible value types; no synchronisation.
#ifndef TESSERA_REFERENCE_HOST_TENSOR_H_
#define TESSERA_REFERENCE_HOST_TENSOR_H_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"

namespace tessera::reference {

struct HostTensor {
  void* data = nullptr;  // element (0, .., 0); may be null when empty
  DType dtype = TSR_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // elements, one per dim

  // A view with row-major contiguous strides.
  static HostTensor Contiguous(void* data, DType dtype,
                               std::vector<int64_t> shape);

  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t NumElements() const;
  // Element offset (in elements, from `data`) of a multi-index.
  int64_t Offset(std::span<const int64_t> index) const;
  // One past the largest element offset the view touches (0 when empty).
  int64_t ExtentElements() const;

  // Element access by element offset, converting through double.
  double Load(int64_t element_offset) const;
  void Store(int64_t element_offset, double value) const;
  int64_t LoadInt(int64_t element_offset) const;  // I32 / I64 / U8 / I8
  void StoreInt(int64_t element_offset, int64_t value) const;
};

// Row-major contiguous strides of `shape`.
std::vector<int64_t> ContiguousStrides(std::span<const int64_t> shape);

// The element offsets of every element of `t`, in row-major logical order.
std::vector<int64_t> ElementOffsets(const HostTensor& t);
// The element offsets of every leading index of `t` (all dims but the last),
// in row-major order; a rank-1 tensor has one row at offset 0.
std::vector<int64_t> RowOffsets(const HostTensor& t);

// "[3, 17]".
std::string ShapeString(std::span<const int64_t> shape);

// A HostTensor that owns contiguous storage (zero-initialised).
class OwnedTensor {
 public:
  OwnedTensor() = default;
  OwnedTensor(DType dtype, std::vector<int64_t> shape);
  // Contiguous, filled from `values` (row-major, rounded to dtype).
  static OwnedTensor FromValues(DType dtype, std::vector<int64_t> shape,
                                std::span<const double> values);
  static OwnedTensor FromValues(DType dtype, std::vector<int64_t> shape,
                                std::initializer_list<double> values);

  OwnedTensor(const OwnedTensor& other);
  OwnedTensor& operator=(const OwnedTensor& other);
  OwnedTensor(OwnedTensor&&) = default;
  OwnedTensor& operator=(OwnedTensor&&) = default;

  const HostTensor& view() const { return view_; }
  HostTensor& view() { return view_; }
  // All elements as doubles, row-major.
  std::vector<double> Values() const;

 private:
  std::vector<uint64_t> storage_;  // 8-byte aligned bytes
  HostTensor view_;
};

}  // namespace tessera::reference

#endif  // TESSERA_REFERENCE_HOST_TENSOR_H_
