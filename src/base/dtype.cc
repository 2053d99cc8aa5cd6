#include "base/dtype.h"

#include <cmath>
#include <cstring>

namespace tessera {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case TSR_DTYPE_F32: return 4;
    case TSR_DTYPE_F16: return 2;
    case TSR_DTYPE_BF16: return 2;
    case TSR_DTYPE_I32: return 4;
    case TSR_DTYPE_I64: return 8;
    case TSR_DTYPE_U8: return 1;
    case TSR_DTYPE_I8: return 1;
    default: return 0;
  }
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case TSR_DTYPE_F32: return "f32";
    case TSR_DTYPE_F16: return "f16";
    case TSR_DTYPE_BF16: return "bf16";
    case TSR_DTYPE_I32: return "i32";
    case TSR_DTYPE_I64: return "i64";
    case TSR_DTYPE_U8: return "u8";
    case TSR_DTYPE_I8: return "i8";
    default: return "invalid";
  }
}

std::optional<DType> ParseDType(std::string_view name) {
  if (name == "f32" || name == "float32") return TSR_DTYPE_F32;
  if (name == "f16" || name == "float16") return TSR_DTYPE_F16;
  if (name == "bf16" || name == "bfloat16") return TSR_DTYPE_BF16;
  if (name == "i32" || name == "int32") return TSR_DTYPE_I32;
  if (name == "i64" || name == "int64") return TSR_DTYPE_I64;
  if (name == "u8" || name == "uint8") return TSR_DTYPE_U8;
  if (name == "i8" || name == "int8") return TSR_DTYPE_I8;
  return std::nullopt;
}

bool IsFloatDType(DType dtype) {
  return dtype == TSR_DTYPE_F32 || dtype == TSR_DTYPE_F16 ||
         dtype == TSR_DTYPE_BF16;
}

uint16_t FloatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding) >> 16);
}

float Bf16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

uint16_t FloatToF16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {
    // Subnormal or zero in f16: scale by 2^24 and round to nearest even.
    float f;
    std::memcpy(&f, &abs, 4);
    float scaled = f * 16777216.0f;  // 2^24
    uint32_t mant = uint32_t(std::nearbyint(scaled));
    return uint16_t(sign | mant);
  }
  uint32_t exp = ((abs >> 23) - 112u) << 10;
  uint32_t mant = (abs >> 13) & 0x3ffu;
  uint32_t result = exp | mant;
  uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result;
  return uint16_t(sign | result);
}

float F16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  float out;
  if (exp == 0) {
    float f = std::ldexp(float(mant), -24);
    std::memcpy(&out, &f, 4);
    uint32_t bits;
    std::memcpy(&bits, &out, 4);
    bits |= sign;
    std::memcpy(&out, &bits, 4);
    return out;
  }
  uint32_t bits;
  if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  std::memcpy(&out, &bits, 4);
  return out;
}

double LoadAsDouble(const void* base, DType dtype, int64_t index) {
  switch (dtype) {
    case TSR_DTYPE_F32: return static_cast<const float*>(base)[index];
    case TSR_DTYPE_F16:
      return F16ToFloat(static_cast<const uint16_t*>(base)[index]);
    case TSR_DTYPE_BF16:
      return Bf16ToFloat(static_cast<const uint16_t*>(base)[index]);
    case TSR_DTYPE_I32: return static_cast<const int32_t*>(base)[index];
    case TSR_DTYPE_I64:
      return double(static_cast<const int64_t*>(base)[index]);
    case TSR_DTYPE_U8: return static_cast<const uint8_t*>(base)[index];
    case TSR_DTYPE_I8: return static_cast<const int8_t*>(base)[index];
    default: return 0.0;
  }
}

void StoreFromDouble(void* base, DType dtype, int64_t index, double value) {
  switch (dtype) {
    case TSR_DTYPE_F32:
      static_cast<float*>(base)[index] = float(value);
      break;
    case TSR_DTYPE_F16:
      static_cast<uint16_t*>(base)[index] = FloatToF16(float(value));
      break;
    case TSR_DTYPE_BF16:
      static_cast<uint16_t*>(base)[index] = FloatToBf16(float(value));
      break;
    case TSR_DTYPE_I32:
      static_cast<int32_t*>(base)[index] = int32_t(value);
      break;
    case TSR_DTYPE_I64:
      static_cast<int64_t*>(base)[index] = int64_t(value);
      break;
    case TSR_DTYPE_U8:
      static_cast<uint8_t*>(base)[index] = uint8_t(value);
      break;
    case TSR_DTYPE_I8:
      static_cast<int8_t*>(base)[index] = int8_t(value);
      break;
    default: break;
  }
}

}  // namespace tessera
