// Element types (the ABI's tsr_dtype values) and scalar conversions.
//
// Conversions to BF16 and F16 round to nearest even and keep NaN a NaN;
// these are the host-side helpers. Plugins carry their own (they are built
// only against the ABI header). Pure functions, thread-safe.
#ifndef TESSERA_BASE_DTYPE_H_
#define TESSERA_BASE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "tessera/plugin/tessera_plugin.h"

namespace tessera {

using DType = tsr_dtype;

// Bytes per element; 0 for an unknown dtype.
size_t DTypeSize(DType dtype);
// "f32", "f16", "bf16", "i32", "i64", "u8", "i8"; "invalid" otherwise.
std::string_view DTypeName(DType dtype);
// Inverse of DTypeName (also accepts "float32", "bfloat16", "float16").
std::optional<DType> ParseDType(std::string_view name);
bool IsFloatDType(DType dtype);

uint16_t FloatToBf16(float value);
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToF16(float value);
float F16ToFloat(uint16_t bits);

// Reads element `index` of a float-typed array (F32/F16/BF16) as double.
double LoadAsDouble(const void* base, DType dtype, int64_t index);
// Writes `value` (rounded to `dtype`) into element `index`. Integer dtypes
// are written truncated toward zero.
void StoreFromDouble(void* base, DType dtype, int64_t index, double value);

}  // namespace tessera

#endif  // TESSERA_BASE_DTYPE_H_
