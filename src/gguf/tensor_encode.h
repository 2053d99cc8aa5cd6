// Encoding float rows into GGUF tensor types (F32, F16, BF16, Q8_0) and
// decoding checkpoint rows (F32, F16, BF16) into floats.
//
// Q8_0, per block of 32 consecutive elements x[0..31]:
//   d = max |x[i]| / 127          (computed in f32, stored as f16)
//   q[i] = round(x[i] / d)        (round half away from zero, |q| <= 127;
//                                   all zero when d == 0)
// and a reader reconstructs x[i] ~= f16(d) * q[i]. The division uses the
// f32 d, not the rounded f16 one (as the GGUF reference converter does).
// F16 and BF16 round to nearest even (base/dtype.h).
//
// Pure functions, thread-safe.
#ifndef TESSERA_GGUF_TENSOR_ENCODE_H_
#define TESSERA_GGUF_TENSOR_ENCODE_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/dtype.h"
#include "base/status.h"
#include "gguf/gguf_format.h"

namespace tessera::gguf {

// Encodes `in` as Q8_0 blocks into `out`. Requires in.size() % 32 == 0 and
// out.size() == in.size() / 32 * 34.
void EncodeQ8_0(std::span<const float> in, std::span<std::byte> out);
// The inverse (up to the quantization error): out.size() elements from
// out.size() / 32 blocks of `in`.
void DecodeQ8_0(std::span<const std::byte> in, std::span<float> out);

// Encodes `in` as `type` into `out` (RowBytes(type, in.size()) bytes).
// InvalidArgument when the sizes do not match or a Q8_0 row does not fill
// whole blocks.
Status EncodeRow(std::span<const float> in, TensorType type,
                 std::span<std::byte> out);

// Decodes `out.size()` elements of `dtype` (F32, F16 or BF16) starting at
// `in` (may be unaligned) into floats.
void DecodeToFloat(const std::byte* in, DType dtype, std::span<float> out);

}  // namespace tessera::gguf

#endif  // TESSERA_GGUF_TENSOR_ENCODE_H_
