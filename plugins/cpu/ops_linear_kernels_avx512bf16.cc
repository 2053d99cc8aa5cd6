// The AVX512_BF16 linear block kernel (ops_linear_kernels.h) for bf16 x
// times bf16 w, all products by vdpbf16ps (32 bf16 products per
// instruction, summed pairwise into 16 f32 lanes). Two shapes of work:
//  - Decode blocks (rows < kGemmMinRows): dot-product tiles, 4x4 (or, for
//    5..16 rows, 8x2) of 16-lane accumulators, each weight row streamed
//    once straight from memory (with a prefetch of the next group), one
//    horizontal sum per output; the K tail (K % 32) is one masked step.
//  - Prefill blocks (rows >= kGemmMinRows): an outer-product GEMM. For
//    each 64 weight rows (output columns), chunk of kRc x rows and slice
//    of kKc inputs, the weights are packed (16x16 register transposes,
//    the next slice fetched into L2 meanwhile) into a 32 KiB panel that
//    stays in L1, laid out as [kKc/2 pairs][64 columns] of 32-bit bf16
//    pairs (w[j][2p] low, w[j][2p+1] high; zero past n or K). A 6x4
//    micro-kernel keeps 6 rows x 64 columns of f32 sums in 24 zmm
//    registers; per input pair it loads 4 panel vectors and broadcasts one
//    bf16 pair of each x row, so the inner loop is 10 loads per 24
//    vdpbf16ps, with no horizontal sums, and each x element is read once
//    per 64 weight rows (the dot-product tiles read x once per 4). Each
//    slice's sums are added to the previous slices' in `out`.
// The other weight types use the avx512 kernels. Compiled for avx512bf16
// by a target pragma: only called when cpuid reports it.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "ops_linear_kernels.h"

// GCC 12 warns falsely inside _mm512_reduce_add_ps (an undefined vector).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")

#include "avx512_sum4.h"
#include "avx512_transpose16.h"

namespace tessera::cpu {
namespace {

inline __m512 Dp(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(a), reinterpret_cast<__m512bh&>(b));
}

// out[r * ldo + j] = dot(x_r, w_j) over k for r < MR, j < nr <= NR (w has
// NR valid pointers; the padded ones repeat a real row). pf: rows to fetch
// into L2 meanwhile (NR pointers).
template <int MR, int NR>
inline __attribute__((always_inline)) void Tile(const uint16_t* x, int64_t ldx,
                                                const uint16_t* const* w, int64_t k, int nr,
                                                float* out, int64_t ldo,
                                                const uint16_t* const* pf) {
  __m512 acc[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  const int64_t k32 = k & ~int64_t{31};
  for (int64_t i = 0; i < k32; i += 32) {
    for (int j = 0; j < NR; ++j) {
      const __m512i wv = _mm512_loadu_si512(w[j] + i);
      _mm_prefetch(reinterpret_cast<const char*>(pf[j] + i), _MM_HINT_T1);
      for (int r = 0; r < MR; ++r) {
        acc[r][j] = Dp(acc[r][j], _mm512_loadu_si512(x + r * ldx + i), wv);
      }
    }
  }
  if (k32 < k) {
    const __mmask32 mask = static_cast<__mmask32>((uint64_t{1} << (k - k32)) - 1u);
    for (int j = 0; j < NR; ++j) {
      const __m512i wv = _mm512_maskz_loadu_epi16(mask, w[j] + k32);
      for (int r = 0; r < MR; ++r) {
        acc[r][j] = Dp(acc[r][j], _mm512_maskz_loadu_epi16(mask, x + r * ldx + k32), wv);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    if constexpr (NR == 4) {
      const __m128 s = Sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
      if (nr == 4) {
        _mm_storeu_ps(out + r * ldo, s);
        continue;
      }
      alignas(16) float t[4];
      _mm_store_ps(t, s);
      for (int j = 0; j < nr; ++j) out[r * ldo + j] = t[j];
    } else {
      for (int j = 0; j < nr; ++j) out[r * ldo + j] = _mm512_reduce_add_ps(acc[r][j]);
    }
  }
}

// Rows [m, rows) of x against one group of NR weight rows, in tiles of at
// most MR x rows (the remainder by a smaller tile).
template <int MR, int NR>
inline __attribute__((always_inline)) void Rows(const uint16_t* x, int64_t ldx, int64_t rows,
                                                const uint16_t* const* wr,
                                                const uint16_t* const* pf, int64_t k, int nr,
                                                float* out, int64_t ldo) {
  int64_t m = 0;
  for (; m + MR <= rows; m += MR) {
    Tile<MR, NR>(x + m * ldx, ldx, wr, k, nr, out + m * ldo, ldo, m == 0 ? pf : wr);
  }
  if constexpr (MR > 1) {
    if (m < rows) {
      Rows<MR - 1, NR>(x + m * ldx, ldx, rows - m, wr, m == 0 ? pf : wr, k, nr, out + m * ldo, ldo);
    }
  }
}

// Groups of NR weight rows, each meeting all `rows` x rows in MR-row tiles.
template <int MR, int NR>
void Groups(const uint16_t* x, int64_t ldx, int64_t rows, const uint16_t* w, int64_t ldw, int64_t n,
            int64_t k, float* out, int64_t ldo) {
  for (int64_t j0 = 0; j0 < n; j0 += NR) {
    const int nr = static_cast<int>(std::min<int64_t>(NR, n - j0));
    const uint16_t* wr[NR];
    for (int j = 0; j < NR; ++j) wr[j] = w + (j0 + std::min(j, nr - 1)) * ldw;
    // The next group of rows, fetched into L2 while this one is used
    // (memory-bound GEMV needs more requests in flight than the hardware
    // prefetcher starts); the last group re-touches its own rows.
    const uint16_t* pf[NR];
    for (int j = 0; j < NR; ++j) pf[j] = j0 + NR + j < n ? wr[j] + NR * ldw : wr[j];
    Rows<MR, NR>(x, ldx, rows, wr, pf, k, nr, out + j0, ldo);
  }
}

// ---- Prefill: packed-panel GEMM --------------------------------------

constexpr int64_t kGemmMinRows = 48;  // below this the panel packing does not pay
constexpr int64_t kRc = 96;           // x rows per chunk: its f32 sums (24 KiB) stay in L1
constexpr int kMr = 6;                // x rows per micro-tile
constexpr int kNv = 4;                // 16-column vectors per micro-tile
constexpr int64_t kPanelN = 16 * kNv;  // weight rows (output columns) per panel
constexpr int64_t kKc = 256;           // inputs per slice (even): panel = 32 KiB

// panel[p * kPanelN + j] = bf16 pair (w[j][2p], w[j][2p + 1]) for j < nb,
// 2p < kc; zero elsewhere (a missing odd element or column). w: nb rows of
// stride ldw starting at the slice's first input; blocks of 16 rows x 16
// pairs are transposed in registers (masked loads: nothing past kc is
// read). next_kc: inputs in the next slice of the same rows (at w + kKc),
// fetched into L2 meanwhile; 0 for none.
void PackPanel(const uint16_t* w, int64_t ldw, int64_t nb, int64_t kc, int64_t next_kc,
               uint32_t* panel) {
  const int64_t np = (kc + 1) / 2;
  for (int64_t j0 = 0; j0 < kPanelN; j0 += 16) {
    for (int64_t p0 = 0; p0 < np; p0 += 16) {
      const int64_t left = kc - 2 * p0;
      const __mmask32 m =
          left >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint32_t{1} << left) - 1u);
      __m512i r[16];
      for (int i = 0; i < 16; ++i) {
        if (j0 + i < nb) {
          const uint16_t* wr = w + (j0 + i) * ldw + 2 * p0;
          r[i] = _mm512_maskz_loadu_epi16(m, wr);
          if (2 * p0 < next_kc) _mm_prefetch(reinterpret_cast<const char*>(wr + kKc), _MM_HINT_T1);
        } else {
          r[i] = _mm512_setzero_si512();
        }
      }
      Transpose16(r);
      for (int c = 0; c < 16; ++c) _mm512_store_si512(panel + (p0 + c) * kPanelN + j0, r[c]);
    }
  }
}

// The 16-lane column masks of a panel with nb valid columns.
inline __mmask16 ColMask(int64_t nb, int v) {
  const int64_t c = std::clamp<int64_t>(nb - 16 * v, 0, 16);
  return static_cast<__mmask16>((uint32_t{1} << c) - 1u);
}

// out[r * ldo + j] (+)= sum over the slice of x[r][k] * w[j][k] for r < MR,
// j < nb (<= kPanelN). x: MR rows of stride ldx at the slice's first input,
// kc inputs each (kc odd only at the end of K: its last element is paired
// with zero, nothing past it is read). panel: PackPanel's. first: store
// instead of add. xn: the next tile's x (fetched into L1 meanwhile).
template <int MR>
inline __attribute__((always_inline)) void MicroTile(const uint16_t* x, int64_t ldx, int64_t kc,
                                                     const uint32_t* panel, int64_t nb,
                                                     float* out, int64_t ldo, bool first,
                                                     const uint16_t* xn) {
  __m512 acc[MR][kNv];
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < kNv; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  const uint16_t* xr[MR];
  for (int r = 0; r < MR; ++r) xr[r] = x + r * ldx;
  const int64_t full = kc / 2;
  auto step = [&](int64_t p) __attribute__((always_inline)) {
    __m512i wv[kNv];
    for (int v = 0; v < kNv; ++v) wv[v] = _mm512_load_si512(panel + p * kPanelN + 16 * v);
    for (int r = 0; r < MR; ++r) {
      int32_t pair;
      std::memcpy(&pair, xr[r] + 2 * p, sizeof(pair));
      const __m512i xv = _mm512_set1_epi32(pair);
      for (int v = 0; v < kNv; ++v) acc[r][v] = Dp(acc[r][v], xv, wv[v]);
    }
  };
  int64_t p = 0;
  for (; p + 16 <= full; p += 16) {
    // One cache line of each of the next tile's rows per 16 pairs.
    for (int r = 0; r < MR; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(xn + r * ldx + 2 * p), _MM_HINT_T0);
    }
    for (int q = 0; q < 16; ++q) step(p + q);
  }
  for (; p < full; ++p) step(p);
  if (full * 2 < kc) {
    __m512i wv[kNv];
    for (int v = 0; v < kNv; ++v) wv[v] = _mm512_load_si512(panel + full * kPanelN + 16 * v);
    for (int r = 0; r < MR; ++r) {
      const __m512i xv = _mm512_set1_epi32(static_cast<int32_t>(xr[r][2 * full]));
      for (int v = 0; v < kNv; ++v) acc[r][v] = Dp(acc[r][v], xv, wv[v]);
    }
  }
  for (int v = 0; v < kNv; ++v) {
    const __mmask16 m = ColMask(nb, v);
    if (m == 0) break;
    for (int r = 0; r < MR; ++r) {
      float* o = out + r * ldo + 16 * v;
      __m512 s = acc[r][v];
      if (m == 0xffff) {
        if (!first) s = _mm512_add_ps(s, _mm512_loadu_ps(o));
        _mm512_storeu_ps(o, s);
      } else {
        if (!first) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, o));
        _mm512_mask_storeu_ps(o, m, s);
      }
    }
  }
}

// Rows [0, rows) against one packed panel slice: kMr-row tiles, then one
// smaller tile for the remainder.
template <int MR>
inline __attribute__((always_inline)) void PanelRows(const uint16_t* x, int64_t ldx, int64_t rows,
                                                     int64_t kc, const uint32_t* panel, int64_t nb,
                                                     float* out, int64_t ldo, bool first) {
  int64_t m = 0;
  for (; m + MR <= rows; m += MR) {
    const int64_t next = m + 2 * MR <= rows ? m + MR : m;
    MicroTile<MR>(x + m * ldx, ldx, kc, panel, nb, out + m * ldo, ldo, first, x + next * ldx);
  }
  if constexpr (MR > 1) {
    if (m < rows) {
      PanelRows<MR - 1>(x + m * ldx, ldx, rows - m, kc, panel, nb, out + m * ldo, ldo, first);
    }
  }
}

void GemmBf16(const uint16_t* x, int64_t ldx, int64_t rows, const uint16_t* w, int64_t ldw,
              int64_t n, int64_t k, float* out, int64_t ldo) {
  alignas(64) uint32_t panel[kKc / 2 * kPanelN];  // 32 KiB
  for (int64_t n0 = 0; n0 < n; n0 += kPanelN) {
    const int64_t nb = std::min(kPanelN, n - n0);
    for (int64_t m0 = 0; m0 < rows; m0 += kRc) {
      const int64_t mc = std::min(kRc, rows - m0);
      for (int64_t k0 = 0; k0 < k; k0 += kKc) {
        const int64_t kc = std::min(kKc, k - k0);
        PackPanel(w + n0 * ldw + k0, ldw, nb, kc, std::min(kKc, k - k0 - kc), panel);
        PanelRows<kMr>(x + m0 * ldx + k0, ldx, mc, kc, panel, nb, out + m0 * ldo + n0, ldo,
                       k0 == 0);
      }
    }
  }
}

// Decode-sized blocks (5..8 rows, 16 at most in two passes) use 8x2 tiles:
// each weight row is streamed through the registers once for all rows.
// Larger blocks use 4x4 tiles: half the x traffic from L2 per weight row.
// Prefill blocks use the packed-panel GEMM.
void BlockBf16(const uint16_t* x, int64_t ldx, int64_t rows, const uint16_t* w, int64_t ldw,
               int64_t n, int64_t k, float* out, int64_t ldo) {
  if (rows >= kGemmMinRows && k > 0) {
    GemmBf16(x, ldx, rows, w, ldw, n, k, out, ldo);
  } else if (rows > 4 && rows <= 16) {
    Groups<8, 2>(x, ldx, rows, w, ldw, n, k, out, ldo);
  } else {
    Groups<4, 4>(x, ldx, rows, w, ldw, n, k, out, ldo);
  }
}

}  // namespace
}  // namespace tessera::cpu

#pragma GCC pop_options
#pragma GCC diagnostic pop

// The table is built by baseline code (the pragma above covers only the
// kernels themselves).
namespace tessera::cpu {

const LinearKernels& Avx512Bf16LinearKernels() {
  static const LinearKernels kernels = [] {
    LinearKernels t = Avx512LinearKernels();
    t.bf16_bf16 = &BlockBf16;
    return t;
  }();
  return kernels;
}

}  // namespace tessera::cpu

#endif  // x86-64
