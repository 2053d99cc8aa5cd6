#include "reference/host_tensor.h"

#include <fmt/format.h>

#include <cstring>

namespace tessera::reference {

std::vector<int64_t> ContiguousStrides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t running = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = running;
    running *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

HostTensor HostTensor::Contiguous(void* data, DType dtype,
                                  std::vector<int64_t> shape) {
  HostTensor t;
  t.data = data;
  t.dtype = dtype;
  t.strides = ContiguousStrides(shape);
  t.shape = std::move(shape);
  return t;
}

int64_t HostTensor::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t HostTensor::Offset(std::span<const int64_t> index) const {
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) offset += index[i] * strides[i];
  return offset;
}

int64_t HostTensor::ExtentElements() const {
  if (NumElements() == 0) return 0;
  int64_t last = 0;
  for (size_t i = 0; i < shape.size(); ++i) last += (shape[i] - 1) * strides[i];
  return last + 1;
}

double HostTensor::Load(int64_t element_offset) const {
  return LoadAsDouble(data, dtype, element_offset);
}

void HostTensor::Store(int64_t element_offset, double value) const {
  StoreFromDouble(data, dtype, element_offset, value);
}

int64_t HostTensor::LoadInt(int64_t element_offset) const {
  switch (dtype) {
    case TSR_DTYPE_I32:
      return static_cast<const int32_t*>(data)[element_offset];
    case TSR_DTYPE_I64:
      return static_cast<const int64_t*>(data)[element_offset];
    case TSR_DTYPE_U8:
      return static_cast<const uint8_t*>(data)[element_offset];
    case TSR_DTYPE_I8:
      return static_cast<const int8_t*>(data)[element_offset];
    default:
      return static_cast<int64_t>(Load(element_offset));
  }
}

void HostTensor::StoreInt(int64_t element_offset, int64_t value) const {
  switch (dtype) {
    case TSR_DTYPE_I32:
      static_cast<int32_t*>(data)[element_offset] = static_cast<int32_t>(value);
      break;
    case TSR_DTYPE_I64:
      static_cast<int64_t*>(data)[element_offset] = value;
      break;
    case TSR_DTYPE_U8:
      static_cast<uint8_t*>(data)[element_offset] = static_cast<uint8_t>(value);
      break;
    case TSR_DTYPE_I8:
      static_cast<int8_t*>(data)[element_offset] = static_cast<int8_t>(value);
      break;
    default:
      Store(element_offset, static_cast<double>(value));
      break;
  }
}

namespace {

// Calls fn(offset) for every index of dims [0, ndim) of t in row-major order.
template <typename Fn>
void ForEachOffset(const HostTensor& t, int ndim, Fn&& fn) {
  for (int i = 0; i < ndim; ++i) {
    if (t.shape[i] == 0) return;
  }
  std::vector<int64_t> index(ndim, 0);
  int64_t offset = 0;
  while (true) {
    fn(offset);
    int d = ndim - 1;
    for (; d >= 0; --d) {
      ++index[d];
      offset += t.strides[d];
      if (index[d] < t.shape[d]) break;
      offset -= index[d] * t.strides[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace

std::vector<int64_t> ElementOffsets(const HostTensor& t) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(t.NumElements()));
  ForEachOffset(t, t.ndim(), [&](int64_t off) { out.push_back(off); });
  return out;
}

std::vector<int64_t> RowOffsets(const HostTensor& t) {
  std::vector<int64_t> out;
  if (t.ndim() == 0) return out;
  ForEachOffset(t, t.ndim() - 1, [&](int64_t off) { out.push_back(off); });
  return out;
}

std::string ShapeString(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

OwnedTensor::OwnedTensor(DType dtype, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  size_t bytes = static_cast<size_t>(n) * DTypeSize(dtype);
  storage_.assign((bytes + 7) / 8 + 1, 0);
  view_ = HostTensor::Contiguous(storage_.data(), dtype, std::move(shape));
}

OwnedTensor OwnedTensor::FromValues(DType dtype, std::vector<int64_t> shape,
                                    std::span<const double> values) {
  OwnedTensor t(dtype, std::move(shape));
  int64_t n = t.view_.NumElements();
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(values.size()); ++i) {
    if (IsFloatDType(dtype)) {
      t.view_.Store(i, values[i]);
    } else {
      t.view_.StoreInt(i, static_cast<int64_t>(values[i]));
    }
  }
  return t;
}

OwnedTensor OwnedTensor::FromValues(DType dtype, std::vector<int64_t> shape,
                                    std::initializer_list<double> values) {
  return FromValues(dtype, std::move(shape),
                    std::span<const double>(values.begin(), values.size()));
}

OwnedTensor::OwnedTensor(const OwnedTensor& other)
    : storage_(other.storage_), view_(other.view_) {
  view_.data = storage_.data();
}

OwnedTensor& OwnedTensor::operator=(const OwnedTensor& other) {
  if (this != &other) {
    storage_ = other.storage_;
    view_ = other.view_;
    view_.data = storage_.data();
  }
  return *this;
}

std::vector<double> OwnedTensor::Values() const {
  std::vector<double> out;
  for (int64_t off : ElementOffsets(view_)) {
    out.push_back(IsFloatDType(view_.dtype)
                      ? view_.Load(off)
                      : static_cast<double>(view_.LoadInt(off)));
  }
  return out;
}

}  // namespace tessera::reference
