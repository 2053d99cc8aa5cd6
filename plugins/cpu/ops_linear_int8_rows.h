// The groups of 4 weight rows the int8 linear kernels (v2:
// ops_linear_w8_kernels_*.cc, v3: ops_linear_w8a8_kernels_*.cc) stream at
// a time. Plain C++, header-only; included by the per-ISA kernel files.
#ifndef TESSERA_PLUGINS_CPU_OPS_LINEAR_INT8_ROWS_H_
#define TESSERA_PLUGINS_CPU_OPS_LINEAR_INT8_ROWS_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace tessera::cpu {

// Rows j0 .. j0 + 3 of w [n, ldw] (int8, or packed 4-bit bytes) and of
// their scales s [n, lds] (S: float, or uint16_t f16 bits): rows past n
// repeat the last real one (their outputs are not written); pf are the next
// group's rows (these rows again for the last group), to prefetch while
// this group streams, and pfs the next group's first scale row.
template <typename S>
struct RowGroup {
  const int8_t* w[4];
  const S* s[4];
  const int8_t* pf[4];
  const S* pfs;
  int nr;  // real rows, 1..4
  RowGroup(const int8_t* w0, int64_t ldw, const S* s0, int64_t lds, int64_t j0, int64_t n)
      : nr(static_cast<int>(std::min<int64_t>(4, n - j0))) {
    for (int j = 0; j < 4; ++j) {
      const int64_t jj = j0 + std::min(j, nr - 1);
      w[j] = w0 + jj * ldw;
      s[j] = s0 + jj * lds;
      pf[j] = j0 + 4 + j < n ? w[j] + 4 * ldw : w[j];
    }
    pfs = j0 + 4 < n ? s[0] + 4 * lds : s[0];
  }
};
using Int8RowGroup = RowGroup<float>;

// The x order of the 4-bit kernels that split a chunk of kChunk weights
// (kChunk / 2 bytes of a packed row, kChunk / 32 Q4_0 blocks) into its low
// and high nibbles: in place, each chunk of each row of q [rows, ldq]
// (a K % kChunk tail: nb = 1 .. kChunk / 32 - 1 blocks) becomes the
// partners of its blocks' low nibbles, x[32b .. 32b + 15] for each block
// b, then those of their high nibbles, x[32b + 16 .. 32b + 31]. K % 32 == 0.
template <int64_t kChunk>
void PermuteW4Chunks(int8_t* q, int64_t ldq, int64_t rows, int64_t k) {
  static_assert(kChunk % 32 == 0 && kChunk <= 512);
  for (int64_t m = 0; m < rows; ++m) {
    int8_t* qr = q + m * ldq;
    for (int64_t i = 0; i < k; i += kChunk) {
      const int64_t nb = std::min<int64_t>(kChunk, k - i) / 32;
      alignas(64) int8_t chunk[kChunk];
      for (int64_t b = 0; b < nb; ++b) {
        std::memcpy(chunk + 16 * b, qr + i + 32 * b, 16);
        std::memcpy(chunk + 16 * nb + 16 * b, qr + i + 32 * b + 16, 16);
      }
      std::memcpy(qr + i, chunk, static_cast<size_t>(32 * nb));
    }
  }
}

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_OPS_LINEAR_INT8_ROWS_H_
