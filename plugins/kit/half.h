// Scalar element types of the plugins and their conversions to and from
// f32: bf16 (the top half of an f32) and IEEE binary16. Conversions to the
// 16-bit types round to nearest even and keep NaN a (quiet) NaN; f16
// overflow goes to infinity and small values to subnormals or zero.
// Pure inline functions.
#ifndef TESSERA_PLUGINS_KIT_HALF_H_
#define TESSERA_PLUGINS_KIT_HALF_H_

#include <cstdint>
#include <cstring>

#include "tessera/plugin/tessera_plugin.h"

namespace tessera::plugin_kit {

// Distinct storage types so templates can tell bf16 from f16.
struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline float Bf16ToF32(uint16_t bits) { return BitsFloat(uint32_t{bits} << 16); }

inline uint16_t F32ToBf16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Branch-free so loops of it vectorise: rebias the exponent; inf/NaN get
// the all-ones exponent; subnormals are rebuilt as (normal - 2^-14), which
// is exact and never touches f32 denormals (slow on x86).
inline float F16ToF32(uint16_t h) {
  uint32_t u = uint32_t{h & 0x7fffu} << 13;
  const uint32_t exp = u & 0x0f800000u;
  u += 0x38000000u;                                                     // bias 15 -> 127
  u += (0u - static_cast<uint32_t>(exp == 0x0f800000u)) & 0x38000000u;  // inf / NaN
  const uint32_t subnormal = FloatBits(BitsFloat(u + 0x00800000u) - BitsFloat(0x38800000u));
  const uint32_t is_subnormal = 0u - static_cast<uint32_t>(exp == 0);
  u = (subnormal & is_subnormal) | (u & ~is_subnormal);
  return BitsFloat(u | (uint32_t{h & 0x8000u} << 16));
}

inline uint16_t F32ToF16(float f) {
  uint32_t u = FloatBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: value = abs_f * 2^24 rounded to integer.
    if (abs < 0x33000000u) return sign;  // < 2^-25: rounds to zero
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14..24 (value = mant * 2^(exp-150), want * 2^24)
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias exponent and round the mantissa to 10 bits.
  uint32_t r = abs - 0x38000000u;  // exponent bias 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<uint16_t>(sign | (r >> 13));
}

// Typed loads and stores through f32.
inline float ToF32(float v) { return v; }
inline float ToF32(Bf16 v) { return Bf16ToF32(v.bits); }
inline float ToF32(F16 v) { return F16ToF32(v.bits); }

template <typename T>
inline T FromF32(float v);
template <>
inline float FromF32<float>(float v) {
  return v;
}
template <>
inline Bf16 FromF32<Bf16>(float v) {
  return Bf16{F32ToBf16(v)};
}
template <>
inline F16 FromF32<F16>(float v) {
  return F16{F32ToF16(v)};
}

// Rounds an f32 to the precision of T and back (the value a store of T keeps).
template <typename T>
inline float RoundTo(float v) {
  return ToF32(FromF32<T>(v));
}

// Bytes per element of a dtype; 0 for unknown ones.
inline size_t DTypeSize(tsr_dtype dtype) {
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

inline const char* DTypeName(tsr_dtype dtype) {
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

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_HALF_H_
