// The prefill GEMM of the f32-x linear kernels (ops_linear_kernels.h) on
// paths without bf16 dot products: weights widened to f32 once per packed
// panel, then an f32 FMA outer-product micro-kernel from the L1-resident
// panel. Written once over a vector type and compiled per path: included
// by ops_linear_kernels_avx512.cc (16 lanes) and ops_linear_kernels_avx2.cc
// (8 lanes) inside an anonymous namespace, after their target pragma, and
// by ops_linear_kernels_scalar.cc (4 lanes of the x86-64 baseline's SSE2,
// multiply then add). Not a public header.
//
// GemmF32<W>(x, ldx, rows, w, ldw, n, k, out, ldo) computes what every
// block kernel does (out[r * ldo + j] = sum_k x[r][k] * w[j][k], f32
// accumulation; x f32 [rows, ldx], w W::T [n, ldw]). For each 64 weight rows
// (output columns) and each slice of kGemmKc inputs, the weights are packed
// into a panel [kGemmKc][64] of f32 (blocks of kLanes rows x kLanes inputs
// loaded, widened and transposed in registers; zero past n or K; the next
// slice of the same rows fetched into L2 meanwhile). Then every x row meets
// the panel in micro-tiles of kGemmMr rows x kGemmNv vectors of columns,
// whose sums stay in registers over the slice: per input, kGemmNv panel
// loads and kGemmMr broadcasts of x feed kGemmMr * kGemmNv FMAs, with no
// horizontal sums. Each slice's sums are added to the previous slices' in
// `out`. Each weight element is widened once per block of rows (the tile
// kernels widen it once per 4 rows) and each x element is read once per
// kGemmNv * kLanes columns.
//
// Needs from the including file, all under its target pragma:
//  - <algorithm>, <cstdint>, <immintrin.h>;
//  - `struct GemmVec` with `using V` (an f32 vector), `kLanes`, and static
//    Zero(), Load(const float*) / Store(float*, V) (64-byte aligned),
//    Set1(float), Fma(a, b, c) (a * b + c), Transpose(V[kLanes]) (r[i]
//    lane c -> r[c] lane i), Accumulate(float* o, V s, int64_t cols, bool
//    first) (o[0, cols) = s, or += s unless first; cols in [1, kLanes]);
//  - per weight type W (`using T`), LoadPart(const T* p, int64_t count):
//    p[0, count) widened to f32, zero past count (count in [1, kLanes];
//    nothing past p + count is read);
//  - constants kGemmMr (x rows per micro-tile), kGemmNv (vectors of
//    columns per micro-tile; kGemmNv * kLanes divides 64) and kGemmKc
//    (inputs per slice, a multiple of kLanes).

constexpr int64_t kGemmPanelN = 64;  // weight rows (output columns) per panel

// panel[p * kGemmPanelN + j] = w[j][p] as f32 for j < nb, p < kc; zero for
// nb <= j < 64. w: nb rows of stride ldw starting at the slice's first
// input. next_kc: inputs in the next slice of the same rows (at w +
// kGemmKc), fetched into L2 meanwhile; 0 for none.
template <typename W>
inline void PackPanelF32(const typename W::T* w, int64_t ldw, int64_t nb, int64_t kc,
                         int64_t next_kc, float* panel) {
  constexpr int kL = GemmVec::kLanes;
  using V = typename GemmVec::V;
  for (int64_t j0 = 0; j0 < kGemmPanelN; j0 += kL) {
    for (int64_t p0 = 0; p0 < kc; p0 += kL) {
      const int64_t count = std::min<int64_t>(kL, kc - p0);
      V r[kL];
      for (int i = 0; i < kL; ++i) {
        if (j0 + i < nb) {
          const typename W::T* wr = w + (j0 + i) * ldw + p0;
          r[i] = W::LoadPart(wr, count);
          if (p0 < next_kc) _mm_prefetch(reinterpret_cast<const char*>(wr + kGemmKc), _MM_HINT_T1);
        } else {
          r[i] = GemmVec::Zero();
        }
      }
      GemmVec::Transpose(r);
      for (int64_t c = 0; c < count; ++c) GemmVec::Store(panel + (p0 + c) * kGemmPanelN + j0, r[c]);
    }
  }
}

// out[r * ldo + j] (+)= sum over the slice of x[r][p] * panel[p][j] for
// r < MR, j < cols (<= kGemmNv * kLanes). x: MR rows of stride ldx at the
// slice's first input; panel: at the tile's first column (row stride 64).
// first: store instead of add.
template <int MR>
inline __attribute__((always_inline)) void GemmMicroTile(const float* x, int64_t ldx, int64_t kc,
                                                         const float* panel, int64_t cols,
                                                         float* out, int64_t ldo, bool first) {
  constexpr int kL = GemmVec::kLanes;
  using V = typename GemmVec::V;
  V acc[MR][kGemmNv];
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < kGemmNv; ++v) acc[r][v] = GemmVec::Zero();
  }
  const float* xr[MR];
  for (int r = 0; r < MR; ++r) xr[r] = x + r * ldx;
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    V wv[kGemmNv];
    for (int v = 0; v < kGemmNv; ++v) wv[v] = GemmVec::Load(panel + p * kGemmPanelN + v * kL);
    for (int r = 0; r < MR; ++r) {
      const V xv = GemmVec::Set1(xr[r][p]);
      for (int v = 0; v < kGemmNv; ++v) acc[r][v] = GemmVec::Fma(xv, wv[v], acc[r][v]);
    }
  }
  for (int v = 0; v < kGemmNv; ++v) {
    const int64_t c = std::min<int64_t>(kL, cols - v * kL);
    if (c <= 0) break;
    for (int r = 0; r < MR; ++r) GemmVec::Accumulate(out + r * ldo + v * kL, acc[r][v], c, first);
  }
}

// Rows [0, rows) against one panel slice's column range: kGemmMr-row
// tiles, then one smaller tile for the remainder.
template <int MR>
inline __attribute__((always_inline)) void GemmPanelRows(const float* x, int64_t ldx, int64_t rows,
                                                         int64_t kc, const float* panel,
                                                         int64_t cols, float* out, int64_t ldo,
                                                         bool first) {
  int64_t m = 0;
  for (; m + MR <= rows; m += MR) {
    GemmMicroTile<MR>(x + m * ldx, ldx, kc, panel, cols, out + m * ldo, ldo, first);
  }
  if constexpr (MR > 1) {
    if (m < rows) {
      GemmPanelRows<MR - 1>(x + m * ldx, ldx, rows - m, kc, panel, cols, out + m * ldo, ldo,
                            first);
    }
  }
}

template <typename W>
void GemmF32(const float* x, int64_t ldx, int64_t rows, const typename W::T* w, int64_t ldw,
             int64_t n, int64_t k, float* out, int64_t ldo) {
  constexpr int64_t kTileCols = int64_t{kGemmNv} * GemmVec::kLanes;
  static_assert(kGemmPanelN % kTileCols == 0 && kGemmKc % GemmVec::kLanes == 0);
  alignas(64) float panel[kGemmKc * kGemmPanelN];
  for (int64_t n0 = 0; n0 < n; n0 += kGemmPanelN) {
    const int64_t nb = std::min(kGemmPanelN, n - n0);
    for (int64_t k0 = 0; k0 < k; k0 += kGemmKc) {
      const int64_t kc = std::min(kGemmKc, k - k0);
      PackPanelF32<W>(w + n0 * ldw + k0, ldw, nb, kc, std::min(kGemmKc, k - k0 - kc), panel);
      for (int64_t c0 = 0; c0 < nb; c0 += kTileCols) {
        GemmPanelRows<kGemmMr>(x + k0, ldx, rows, kc, panel + c0, std::min(kTileCols, nb - c0),
                               out + n0 + c0, ldo, k0 == 0);
      }
    }
  }
}
