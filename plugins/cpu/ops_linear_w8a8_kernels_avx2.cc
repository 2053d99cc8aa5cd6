// The AVX2 kernels of linear v3 (ops_linear_w8a8_kernels.h): MR x 4
// register tiles (MR <= 2 x rows, 4 weight rows) of 8-lane f32
// accumulators, one 32-byte block per step (G % 32 == 0). The int8 dot of a
// block is llama.cpp's AVX2 one: |w| (vpsignb w, w) times x carrying w's
// sign (vpsignb x, w) in vpmaddubsw (u8 x s8 pairs -> i16; |w| <= 128 and
// |x| <= 127 keep a pair sum below 2^15), widened by vpmaddwd with ones to
// 8 i32 lanes, converted, and FMA-ed with the block's two scales'
// product. Quantisation is the scalar one (x is small next to the weights).
// 4-bit weights (linear v4, TileW4): a chunk of 64 weights is 32 bytes of
// a row (two Q4_0 blocks), split into low nibbles (weights 0-15 of each
// block) and high nibbles (16-31), u8 already, so vpmaddubsw takes them
// against x as they are and -8 * sum(x) (vpmaddubsw of 8s) is added after
// vpmaddwd. x is permuted once per call (PermuteW4Chunks<64>) so that both
// halves keep block b in lanes 4b .. 4b + 3 and their sums add in int32
// before one conversion and FMA; at G == 32 the scale products of 8 blocks
// are made once and permuted into each chunk's lanes.
// Compiled for avx2 by a target pragma: only called when cpuid reports it.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>

#include "ops_linear_int8_rows.h"
#include "ops_linear_w8a8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::cpu {
namespace {

inline float HSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// A scale: f32, or f16 bits (4-bit weights' scales).
inline float ScaleAt(const float* s, int64_t b) { return s[b]; }
inline float ScaleAt(const uint16_t* s, int64_t b) { return _cvtsh_ss(s[b]); }

template <int MR>
inline __attribute__((always_inline)) void Tile(const int8_t* xq, int64_t ldxq, const float* xs,
                                                int64_t ldxs, const int8_t* const* w,
                                                const float* const* ws, int64_t k, int64_t group,
                                                int nr, float* out, int64_t ldo) {
  __m256 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t i = 0, b = 0, in_block = 0; i < k; i += 32) {
    __m256i wa[4], wv[4];
    for (int j = 0; j < 4; ++j) {
      wv[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[j] + i));
      wa[j] = _mm256_sign_epi8(wv[j], wv[j]);
    }
    for (int r = 0; r < MR; ++r) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + r * ldxq + i));
      const float xsv = xs[r * ldxs + b];
      for (int j = 0; j < 4; ++j) {
        const __m256i sums =
            _mm256_madd_epi16(_mm256_maddubs_epi16(wa[j], _mm256_sign_epi8(xv, wv[j])), ones);
        const __m256 dot = _mm256_cvtepi32_ps(sums);
        acc[r][j] = _mm256_fmadd_ps(dot, _mm256_set1_ps(xsv * ws[j][b]), acc[r][j]);
      }
    }
    in_block += 32;
    if (in_block == group) {
      in_block = 0;
      ++b;
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) out[r * ldo + j] = HSum(acc[r][j]);
  }
}

// The scales of the blocks of the 4-bit chunk at weight i (nb <= 2 blocks
// of 32): lanes 0-3 the block of weight i, 4-7 that of i + 32 (0 when nb
// is 1); any G % 32 == 0.
template <typename S>
inline __m256 ChunkScales(const S* s, int64_t i, int64_t group, int nb) {
  const float s0 = ScaleAt(s, i / group), s1 = nb > 1 ? ScaleAt(s, (i + 32) / group) : 0.0f;
  return _mm256_set_m128(_mm_set1_ps(s1), _mm_set1_ps(s0));
}

template <int MR, bool kG32>
inline __attribute__((always_inline)) void TileW4(const int8_t* xq, int64_t ldxq,
                                                  const float* xs, int64_t ldxs,
                                                  const int8_t* const* w,
                                                  const uint16_t* const* ws, int64_t k,
                                                  int64_t group, int nr, float* out,
                                                  int64_t ldo) {
  __m256 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i eights = _mm256_set1_epi8(8);
  const __m256i lane_blocks = _mm256_set_epi32(1, 1, 1, 1, 0, 0, 0, 0);
  for (int64_t c0 = 0; c0 < k; c0 += 256) {  // a span of up to 8 blocks
    const int64_t span = std::min<int64_t>(256, k - c0);
    [[maybe_unused]] __m256 prod[MR][4];
    if constexpr (kG32) {
      const int64_t b0 = c0 >> 5, nb = span >> 5;
      alignas(32) uint16_t w16[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      alignas(32) float x32[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      __m256 wsv[4];
      for (int j = 0; j < 4; ++j) {
        if (nb == 8) {
          wsv[j] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ws[j] + b0)));
        } else {
          std::copy_n(ws[j] + b0, nb, w16);
          wsv[j] = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(w16)));
        }
      }
      for (int r = 0; r < MR; ++r) {
        __m256 xsv;
        if (nb == 8) {
          xsv = _mm256_loadu_ps(xs + r * ldxs + b0);
        } else {
          std::copy_n(xs + r * ldxs + b0, nb, x32);
          xsv = _mm256_load_ps(x32);
        }
        for (int j = 0; j < 4; ++j) prod[r][j] = _mm256_mul_ps(xsv, wsv[j]);
      }
    }
    for (int64_t i = c0; i < c0 + span; i += 64) {
      const bool full = i + 64 <= k;  // else one block (K % 64 == 32)
      __m256i lo[4], hi[4];
      for (int j = 0; j < 4; ++j) {
        const int8_t* wp = w[j] + i / 2;
        const __m256i raw =
            full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp))
                 : _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wp)));
        lo[j] = _mm256_and_si256(raw, low4);
        hi[j] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
      }
      [[maybe_unused]] __m256i pick;
      [[maybe_unused]] __m256 wsc[4];
      if constexpr (kG32) {
        pick = _mm256_add_epi32(lane_blocks, _mm256_set1_epi32(static_cast<int>((i - c0) >> 5)));
      } else {
        for (int j = 0; j < 4; ++j) wsc[j] = ChunkScales(ws[j], i, group, full ? 2 : 1);
      }
      for (int r = 0; r < MR; ++r) {
        const int8_t* xp = xq + r * ldxq + i;
        __m256i xa, xb;
        if (full) {
          xa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xp));
          xb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xp + 32));
        } else {
          xa = _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xp)));
          xb = _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xp + 16)));
        }
        // 8 * (x's lane sums over both halves): the nibbles u stand for u - 8.
        const __m256i corr = _mm256_madd_epi16(
            _mm256_add_epi16(_mm256_maddubs_epi16(eights, xa), _mm256_maddubs_epi16(eights, xb)),
            ones);
        [[maybe_unused]] __m256 xsc;
        if constexpr (!kG32) xsc = ChunkScales(xs + r * ldxs, i, group, full ? 2 : 1);
        for (int j = 0; j < 4; ++j) {
          // Each i16 lane adds 4 products u x of at most 15 * 127 = 1905
          // (a pair from each half): far below 2^15, so nothing saturates.
          const __m256i sums = _mm256_sub_epi32(
              _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(lo[j], xa),
                                                 _mm256_maddubs_epi16(hi[j], xb)),
                                ones),
              corr);
          __m256 scale;
          if constexpr (kG32) {
            scale = _mm256_permutevar8x32_ps(prod[r][j], pick);
          } else {
            scale = _mm256_mul_ps(xsc, wsc[j]);
          }
          acc[r][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc[r][j]);
        }
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) out[r * ldo + j] = HSum(acc[r][j]);
  }
}

// Tiles over every group of 4 weight rows: 2 x rows at a time, then 1.
// tile(MR, m, group) runs one.
template <typename S, typename TileFn>
void ForEachTile(const int8_t* w, int64_t ldw, const S* ws, int64_t ldws, int64_t rows,
                 int64_t n, const TileFn& tile) {
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const RowGroup<S> g(w, ldw, ws, ldws, j0, n);
    int64_t m = 0;
    for (; m + 2 <= rows; m += 2) tile.template operator()<2>(m, j0, g);
    if (m < rows) tile.template operator()<1>(m, j0, g);
  }
}

void Block(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
           const int8_t* w, int64_t ldw, const float* ws, int64_t ldws, int64_t n, int64_t k,
           int64_t group, float* out, int64_t ldo) {
  ForEachTile(w, ldw, ws, ldws, rows, n, [&]<int MR>(int64_t m, int64_t j0, const Int8RowGroup& g) {
    Tile<MR>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, g.w, g.s, k, group, g.nr,
             out + m * ldo + j0, ldo);
  });
}

template <bool kG32>
void BlockW4Impl(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
                 const int8_t* w, int64_t ldw, const uint16_t* ws, int64_t ldws, int64_t n,
                 int64_t k, int64_t group, float* out, int64_t ldo) {
  ForEachTile(w, ldw, ws, ldws, rows, n,
              [&]<int MR>(int64_t m, int64_t j0, const RowGroup<uint16_t>& g) {
                TileW4<MR, kG32>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, g.w, g.s, k, group,
                                 g.nr, out + m * ldo + j0, ldo);
              });
}

// xq as PermuteW4Rows left it.
void BlockW4(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
             const int8_t* w, int64_t ldw, const uint16_t* ws, int64_t ldws, int64_t n, int64_t k,
             int64_t group, float* out, int64_t ldo) {
  if (group == 32) {
    BlockW4Impl<true>(xq, ldxq, xs, ldxs, rows, w, ldw, ws, ldws, n, k, group, out, ldo);
  } else {
    BlockW4Impl<false>(xq, ldxq, xs, ldxs, rows, w, ldw, ws, ldws, n, k, group, out, ldo);
  }
}

// Q6_K (linear v5): the 6-bit values u in [0, 63] of the 32 weights of
// quarter Q of half h of the super-block at blk (weights 128 h + 32 Q ..
// + 31), as bytes. AVX2 has no byte shifts: 16-bit shifts, then masks that
// keep each byte's own bits.
template <int Q>
inline __m256i Unpack6(const uint8_t* blk, int h) {
  const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * h + 32 * (Q & 1)));
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h));
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  const __m256i lo = (Q >> 1) != 0 ? _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4)
                                   : _mm256_and_si256(ql, low4);
  __m256i hi;  // qh's bits 2Q, 2Q + 1 moved to bits 4, 5
  if constexpr (Q == 0) hi = _mm256_slli_epi16(qh, 4);
  if constexpr (Q == 1) hi = _mm256_slli_epi16(qh, 2);
  if constexpr (Q == 2) hi = qh;
  if constexpr (Q == 3) hi = _mm256_srli_epi16(qh, 2);
  return _mm256_or_si256(lo, _mm256_and_si256(hi, bits45));
}

// One x block (32 weights, quarter Q of half h of super-block c) of TileW6:
// sum q (u - 32) per pair of weights as vpmaddubsw(u, q) - vpmaddubsw(32, q)
// (|pair| <= 2 * 63 * 127, no saturation), times the sub-blocks' int8
// scales in vpmaddwd (lanes 0-3 weights 0-15, 4-7 weights 16-31), exact in
// int32, then converted and FMA-ed with xs * d.
template <int MR, int Q>
inline __attribute__((always_inline)) void TileW6Quarter(const int8_t* xq, int64_t ldxq,
                                                         const float* xs, int64_t ldxs,
                                                         const uint8_t* const* blk,
                                                         const float* d, int h, int64_t i,
                                                         int64_t b, __m256 (&acc)[MR][4]) {
  __m256i u[4], sc[4];
  for (int j = 0; j < 4; ++j) {
    u[j] = Unpack6<Q>(blk[j], h);
    const auto* s8 = reinterpret_cast<const int8_t*>(blk[j] + 192 + 8 * h + 2 * Q);
    sc[j] = _mm256_set_m128i(_mm_set1_epi16(s8[1]), _mm_set1_epi16(s8[0]));
  }
  const __m256i thirty_two = _mm256_set1_epi8(32);
  for (int r = 0; r < MR; ++r) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + r * ldxq + i));
    const __m256i corr = _mm256_maddubs_epi16(thirty_two, xv);
    const float xsv = xs[r * ldxs + b];
    for (int j = 0; j < 4; ++j) {
      const __m256i pairs = _mm256_sub_epi16(_mm256_maddubs_epi16(u[j], xv), corr);
      const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, sc[j]));
      acc[r][j] = _mm256_fmadd_ps(dot, _mm256_set1_ps(xsv * d[j]), acc[r][j]);
    }
  }
}

// MR x rows times 4 Q6_K weight rows, G == 32; the next group's rows are
// prefetched a super-block at a time.
template <int MR>
inline __attribute__((always_inline)) void TileW6(const int8_t* xq, int64_t ldxq,
                                                  const float* xs, int64_t ldxs,
                                                  const RowGroup<uint16_t>& g, int64_t k,
                                                  float* out, int64_t ldo) {
  __m256 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  for (int64_t c = 0; c < k / 256; ++c) {
    const uint8_t* blk[4];
    float d[4];
    for (int j = 0; j < 4; ++j) {
      blk[j] = reinterpret_cast<const uint8_t*>(g.w[j]) + c * kW6BlockBytes;
      d[j] = _cvtsh_ss(g.s[j][c]);
      const char* pf = reinterpret_cast<const char*>(g.pf[j]) + c * kW6BlockBytes;
      for (int line = 0; line < kW6BlockBytes; line += 64) _mm_prefetch(pf + line, _MM_HINT_T0);
    }
    for (int h = 0; h < 2; ++h) {
      const int64_t i = 256 * c + 128 * h, b = i / 32;
      TileW6Quarter<MR, 0>(xq, ldxq, xs, ldxs, blk, d, h, i, b, acc);
      TileW6Quarter<MR, 1>(xq, ldxq, xs, ldxs, blk, d, h, i + 32, b + 1, acc);
      TileW6Quarter<MR, 2>(xq, ldxq, xs, ldxs, blk, d, h, i + 64, b + 2, acc);
      TileW6Quarter<MR, 3>(xq, ldxq, xs, ldxs, blk, d, h, i + 96, b + 3, acc);
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < g.nr; ++j) out[r * ldo + j] = HSum(acc[r][j]);
  }
}

// TileW4's x order: chunks of 64 weights, low-nibble partners first.
void PermuteW4Rows(int8_t* q, int64_t ldq, int64_t rows, int64_t k) {
  PermuteW4Chunks<64>(q, ldq, rows, k);
}

}  // namespace

void Avx2LinearW6A8Block(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs,
                         int64_t rows, const uint8_t* w, int64_t ldw, const uint16_t* wd,
                         int64_t ldwd, int64_t n, int64_t k, int64_t group, float* out,
                         int64_t ldo) {
  (void)group;  // 32 (the table's w6_group)
  ForEachTile(reinterpret_cast<const int8_t*>(w), ldw, wd, ldwd, rows, n,
              [&]<int MR>(int64_t m, int64_t j0, const RowGroup<uint16_t>& g) {
                TileW6<MR>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, g, k, out + m * ldo + j0,
                           ldo);
              });
}

}  // namespace tessera::cpu

#pragma GCC pop_options

namespace tessera::cpu {

const LinearW8A8Kernels& Avx2LinearW8A8Kernels() {
  static const LinearW8A8Kernels kernels{"avx2",   ScalarLinearW8A8Kernels().quantize,
                                         &Block,   32,
                                         &BlockW4, &PermuteW4Rows,
                                         &Avx2LinearW6A8Block, 32};
  return kernels;
}

}  // namespace tessera::cpu

#endif  // x86-64
