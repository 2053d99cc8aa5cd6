#include "gguf/tensor_encode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessera::gguf {
namespace {

void StoreU16(std::byte* out, uint16_t value) {
  std::memcpy(out, &value, sizeof(value));
}

uint16_t LoadU16(const std::byte* in) {
  uint16_t value;
  std::memcpy(&value, in, sizeof(value));
  return value;
}

}  // namespace

void EncodeQ8_0(std::span<const float> in, std::span<std::byte> out) {
  const size_t blocks = in.size() / kQ8_0BlockElements;
  for (size_t b = 0; b < blocks; ++b) {
    const float* x = in.data() + b * kQ8_0BlockElements;
    std::byte* block = out.data() + b * kQ8_0BlockBytes;
    float amax = 0.0f;
    for (int64_t i = 0; i < kQ8_0BlockElements; ++i) {
      amax = std::max(amax, std::fabs(x[i]));
    }
    const float d = amax / 127.0f;
    StoreU16(block, FloatToF16(d));
    auto* q = reinterpret_cast<int8_t*>(block + 2);
    for (int64_t i = 0; i < kQ8_0BlockElements; ++i) {
      float v = d != 0.0f ? std::round(x[i] / d) : 0.0f;
      if (std::isnan(v)) v = 0.0f;  // a NaN weight has no int8 code
      q[i] = int8_t(std::clamp(v, -127.0f, 127.0f));
    }
  }
}

void DecodeQ8_0(std::span<const std::byte> in, std::span<float> out) {
  const size_t blocks = out.size() / kQ8_0BlockElements;
  for (size_t b = 0; b < blocks; ++b) {
    const std::byte* block = in.data() + b * kQ8_0BlockBytes;
    const float d = F16ToFloat(LoadU16(block));
    const auto* q = reinterpret_cast<const int8_t*>(block + 2);
    for (int64_t i = 0; i < kQ8_0BlockElements; ++i) {
      out[b * kQ8_0BlockElements + i] = d * float(q[i]);
    }
  }
}

Status EncodeRow(std::span<const float> in, TensorType type,
                 std::span<std::byte> out) {
  auto bytes = RowBytes(type, int64_t(in.size()));
  if (!bytes) {
    return InvalidArgumentError(fmt::format(
        "a row of {} elements cannot be encoded as {}: it needs a multiple "
        "of {} elements",
        in.size(), TensorTypeName(type), BlockElements(type)));
  }
  if (*bytes != out.size()) {
    return InvalidArgumentError(fmt::format(
        "encoding {} elements as {} needs {} bytes, the buffer has {}",
        in.size(), TensorTypeName(type), *bytes, out.size()));
  }
  switch (type) {
    case TensorType::kF32:
      std::memcpy(out.data(), in.data(), in.size_bytes());
      break;
    case TensorType::kF16:
      for (size_t i = 0; i < in.size(); ++i) {
        StoreU16(out.data() + 2 * i, FloatToF16(in[i]));
      }
      break;
    case TensorType::kBF16:
      for (size_t i = 0; i < in.size(); ++i) {
        StoreU16(out.data() + 2 * i, FloatToBf16(in[i]));
      }
      break;
    case TensorType::kQ8_0:
      EncodeQ8_0(in, out);
      break;
  }
  return OkStatus();
}

void DecodeToFloat(const std::byte* in, DType dtype, std::span<float> out) {
  switch (dtype) {
    case TSR_DTYPE_F32:
      std::memcpy(out.data(), in, out.size_bytes());
      break;
    case TSR_DTYPE_F16:
      for (size_t i = 0; i < out.size(); ++i) {
        out[i] = F16ToFloat(LoadU16(in + 2 * i));
      }
      break;
    case TSR_DTYPE_BF16:
      for (size_t i = 0; i < out.size(); ++i) {
        out[i] = Bf16ToFloat(LoadU16(in + 2 * i));
      }
      break;
    default:
      for (size_t i = 0; i < out.size(); ++i) {
        out[i] = float(LoadAsDouble(in, dtype, int64_t(i)));
      }
      break;
  }
}

}  // namespace tessera::gguf
