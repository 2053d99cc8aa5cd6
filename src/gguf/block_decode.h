// Decoding GGUF tensor rows into floats: every tensor type gguf_format.h
// reads, with the block layouts ggml defines (all little-endian; "f16" is
// an IEEE half, x[i] the i-th element of the block):
//
//   Q8_0  32 elements, 34 bytes: f16 d | int8 q[32]
//         x[i] = d * q[i]
//   Q4_0  32 elements, 18 bytes: f16 d | u8 qs[16]
//         x[i] = d * ((qs[i] & 15) - 8), x[i + 16] = d * ((qs[i] >> 4) - 8)
//   Q4_1  32 elements, 20 bytes: f16 d | f16 m | u8 qs[16]
//         x[i] = d * (qs[i] & 15) + m, x[i + 16] = d * (qs[i] >> 4) + m
//   Q5_0  32 elements, 22 bytes: f16 d | u32 qh | u8 qs[16]
//         5-bit q: low nibble as Q4_0, bit 4 of element k is bit k of qh;
//         x = d * (q - 16)
//   Q5_1  32 elements, 24 bytes: f16 d | f16 m | u32 qh | u8 qs[16]
//         as Q5_0 with x = d * q + m
//   Q4_K  256 elements, 144 bytes: f16 d | f16 dmin | u8 scales[12] |
//         u8 qs[128]. Eight sub-blocks of 32, each with a 6-bit scale sc
//         and a 6-bit min mn packed in `scales` (sub-block j < 4:
//         sc = scales[j] & 63, mn = scales[j + 4] & 63; j >= 4:
//         sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4,
//         mn = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4).
//         Sub-blocks 2p and 2p + 1 share qs[32p .. 32p + 31]: low nibbles
//         for 2p, high nibbles for 2p + 1; x = d * sc * q - dmin * mn.
//   Q5_K  256 elements, 176 bytes: f16 d | f16 dmin | u8 scales[12] |
//         u8 qh[32] | u8 qs[128]. As Q4_K, plus bit 4 of element l of
//         sub-block j is bit j of qh[l].
//   Q6_K  256 elements, 210 bytes: u8 ql[128] | u8 qh[64] | int8 sc[16] |
//         f16 d. Two halves of 128; in half h, for l < 32 and k < 4 the
//         6-bit value of element 32k + l is the low (k < 2) or high (k >= 2)
//         nibble of ql[64h + l + 32 (k & 1)] with bits 2k..2k+1 of
//         qh[32h + l] above it; x = d * sc[8h + 2k + l / 16] * (q - 32).
//
// Pure functions, thread-safe.
#ifndef TESSERA_GGUF_BLOCK_DECODE_H_
#define TESSERA_GGUF_BLOCK_DECODE_H_

#include <cstddef>
#include <cstdint>

#include "gguf/gguf_format.h"

namespace tessera::gguf {

// Decodes `elements` consecutive elements of `type` starting at `in` (a
// row's bytes, may be unaligned) into out[0 .. elements). `elements` is a
// multiple of BlockElements(type) (callers check shapes first).
void DecodeRow(TensorType type, const std::byte* in, int64_t elements,
               float* out);

}  // namespace tessera::gguf

#endif  // TESSERA_GGUF_BLOCK_DECODE_H_
