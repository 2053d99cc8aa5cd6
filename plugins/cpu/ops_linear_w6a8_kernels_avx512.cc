// The AVX-512 F/BW block_w6 of linear v5 (Q6_K weights times int8
// activations, ops_linear_w8a8_kernels.h), which both AVX-512 tables use
// (vpdpbusd would not save an instruction: the 6-bit values need the
// -32 offset and the int8 sub-block scales, which vpmaddwd applies).
//
// A half super-block (128 weights) of a weight row is one 64-byte load of
// ql and one 32-byte qh broadcast to both halves of a zmm: ql's low
// nibbles are weights 0-63 in order, its high nibbles 64-127, and per-half
// variable 16-bit shifts (vpsllvw / vpsrlvw) bring qh's bit pairs to bits
// 4-5 — two zmm of u in [0, 63] in x's own order. Each zmm (64 weights,
// two x blocks of 32) then takes vpmaddubsw(u, x) - vpmaddubsw(32, x)
// (|pair| <= 2 * 63 * 127, no saturation), vpmaddwd with the four
// sub-blocks' int8 scales spread over their 8 lanes each by vpermw (exact
// in int32), a conversion and an FMA with xs * d spread over each x
// block's 8 lanes by vpermps. MR x rows (1 or 2) times 4 weight rows, the
// next 4 rows prefetched a super-block at a time. G == 32.
// Compiled for AVX-512BW by a target pragma: only called when cpuid
// reports it (LinearW8A8KernelsFor).
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <vector>

#include "ops_linear_int8_rows.h"
#include "ops_linear_w8a8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")

namespace tessera::cpu {
namespace {

// The two zmm of 6-bit values of half h of the super-block at blk:
// *u0 weights 128 h + 0..63, *u1 weights 128 h + 64..127.
inline __attribute__((always_inline)) void Unpack6(const uint8_t* blk, int h, __m512i* u0,
                                                   __m512i* u1) {
  const __m512i ql = _mm512_loadu_si512(blk + 64 * h);
  const __m512i qh = _mm512_broadcast_i64x4(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h)));
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i bits45 = _mm512_set1_epi8(0x30);
  // Words of the low 256 bits shift by the first count, the high by the
  // second: quarters 0 / 1 take qh bits 0-1 / 2-3 (<< 4 / << 2), quarters
  // 2 / 3 bits 4-5 / 6-7 (>> 0 / >> 2); the masks keep each byte's own.
  const __m512i left = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i right = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  *u0 = _mm512_or_si512(_mm512_and_si512(ql, low4),
                        _mm512_and_si512(_mm512_sllv_epi16(qh, left), bits45));
  *u1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                        _mm512_and_si512(_mm512_srlv_epi16(qh, right), bits45));
}

// xb [rows, K / 16]: per x row and sub-block s of 16, 32 * xs(block of
// s) * (sum of q over s): the -32 offset's share of every weight row.
void W6OffsetShares(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs,
                    int64_t rows, int64_t k, float* xb) {
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t s = 0; s < k / 16; ++s) {
      const int8_t* q = xq + m * ldxq + 16 * s;
      int32_t sum = 0;
      for (int i = 0; i < 16; ++i) sum += q[i];
      xb[m * (k / 16) + s] = 32.0f * xs[m * ldxs + s / 2] * static_cast<float>(sum);
    }
  }
}

// vpermw indices spreading sub-blocks 4 p .. 4 p + 3 over 8 words each (p
// = 2 h + q: 64 weights), and vpermps indices spreading x blocks 2 p,
// 2 p + 1 over 8 lanes each.
struct W6Indices {
  alignas(64) int16_t sc[4][32];
  alignas(64) int32_t xs[4][16];
  W6Indices() {
    for (int p = 0; p < 4; ++p) {
      for (int w = 0; w < 32; ++w) sc[p][w] = static_cast<int16_t>(4 * p + w / 8);
      for (int l = 0; l < 16; ++l) xs[p][l] = 2 * p + l / 8;
    }
  }
};
const W6Indices kW6Indices;

// MR x rows times 4 weight rows. `xb` [MR, ldxb]: per x row and sub-block
// s, 32 * xs(block of s) * (sum of q over s): the -32 offset's share,
// taken off once per super-block as dot(d * sc, xb) instead of per pair.
template <int MR>
inline __attribute__((always_inline)) void TileW6(const int8_t* xq, int64_t ldxq,
                                                  const float* xs, int64_t ldxs,
                                                  const float* xb, int64_t ldxb,
                                                  const RowGroup<uint16_t>& g, int64_t k,
                                                  float* out, int64_t ldo) {
  __m512 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
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
      __m512i xv[MR][2];
      __m512 xsv[MR][2];
      for (int r = 0; r < MR; ++r) {
        const __m512 xs8 = _mm512_castps256_ps512(_mm256_loadu_ps(xs + r * ldxs + c * 8));
        for (int q = 0; q < 2; ++q) {
          xv[r][q] = _mm512_loadu_si512(xq + r * ldxq + 256 * c + 128 * h + 64 * q);
          xsv[r][q] = _mm512_permutexvar_ps(_mm512_load_si512(kW6Indices.xs[2 * h + q]), xs8);
        }
      }
      for (int j = 0; j < 4; ++j) {
        __m512i u[2];
        Unpack6(blk[j], h, &u[0], &u[1]);
        const __m512i sc16 = _mm512_cvtepi8_epi16(_mm256_zextsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[j] + 192))));
        const __m512 dj = _mm512_set1_ps(d[j]);
        for (int q = 0; q < 2; ++q) {
          const __m512i sc =
              _mm512_permutexvar_epi16(_mm512_load_si512(kW6Indices.sc[2 * h + q]), sc16);
          for (int r = 0; r < MR; ++r) {
            const __m512 dot = _mm512_cvtepi32_ps(
                _mm512_madd_epi16(_mm512_maddubs_epi16(u[q], xv[r][q]), sc));
            acc[r][j] = _mm512_fmadd_ps(dot, _mm512_mul_ps(xsv[r][q], dj), acc[r][j]);
          }
        }
      }
    }
    // The offset: - d * sum_s sc[s] * xb[s] over the super-block's 16
    // sub-blocks (lanes are summed at the end like the rest).
    for (int j = 0; j < 4; ++j) {
      const __m512 scd = _mm512_mul_ps(
          _mm512_set1_ps(d[j]),
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[j] + 192)))));
      for (int r = 0; r < MR; ++r) {
        acc[r][j] = _mm512_fnmadd_ps(scd, _mm512_loadu_ps(xb + r * ldxb + 16 * c), acc[r][j]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < g.nr; ++j) out[r * ldo + j] = _mm512_reduce_add_ps(acc[r][j]);
  }
}

// A group of 4 weight rows unpacked once for many x rows (rows >= 2):
// u bytes [4][K], each 64 weights' vpermw-spread sub-block scales [4][K /
// 64] (zmm), the super-blocks' d * sc as f32 [4][K / 256] (zmm) and d.
struct W6Unpacked {
  std::vector<uint8_t> u;
  std::vector<int16_t> sc;  // 32 words per 64 weights
  std::vector<float> scd;   // 16 per super-block
  std::vector<float> d;
  void Fill(const RowGroup<uint16_t>& g, int64_t k) {
    u.resize(static_cast<size_t>(4 * k));
    sc.resize(static_cast<size_t>(4 * k / 64 * 32));
    scd.resize(static_cast<size_t>(4 * k / 256 * 16));
    d.resize(static_cast<size_t>(4 * k / 256));
    const int64_t supers = k / 256;
    for (int j = 0; j < 4; ++j) {
      for (int64_t c = 0; c < supers; ++c) {
        const uint8_t* blk = reinterpret_cast<const uint8_t*>(g.w[j]) + c * kW6BlockBytes;
        const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
        const __m512i sc16 = _mm512_cvtepi8_epi16(_mm256_zextsi128_si256(sc8));
        const float dj = _cvtsh_ss(g.s[j][c]);
        d[j * supers + c] = dj;
        _mm512_storeu_ps(
            scd.data() + 16 * (j * supers + c),
            _mm512_mul_ps(_mm512_set1_ps(dj), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc8))));
        for (int h = 0; h < 2; ++h) {
          __m512i u0, u1;
          Unpack6(blk, h, &u0, &u1);
          uint8_t* dst = u.data() + j * k + 256 * c + 128 * h;
          _mm512_storeu_si512(dst, u0);
          _mm512_storeu_si512(dst + 64, u1);
          for (int q = 0; q < 2; ++q) {
            _mm512_storeu_si512(
                sc.data() + 32 * (j * (k / 64) + 4 * c + 2 * h + q),
                _mm512_permutexvar_epi16(_mm512_load_si512(kW6Indices.sc[2 * h + q]), sc16));
          }
        }
      }
    }
  }
};

// MR x rows times the 4 unpacked weight rows `wu`.
template <int MR>
inline __attribute__((always_inline)) void TileW6Unpacked(const int8_t* xq, int64_t ldxq,
                                                          const float* xs, int64_t ldxs,
                                                          const float* xb, int64_t ldxb,
                                                          const W6Unpacked& wu, int nr,
                                                          int64_t k, float* out, int64_t ldo) {
  __m512 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  const int64_t supers = k / 256, groups = k / 64;
  for (int64_t c = 0; c < supers; ++c) {
    for (int p = 0; p < 4; ++p) {
      const __m512i xs_idx = _mm512_load_si512(kW6Indices.xs[p]);
      const int64_t i = 256 * c + 64 * p;
      for (int r = 0; r < MR; ++r) {
        const __m512i xv = _mm512_loadu_si512(xq + r * ldxq + i);
        const __m512 xsv = _mm512_permutexvar_ps(
            xs_idx, _mm512_castps256_ps512(_mm256_loadu_ps(xs + r * ldxs + c * 8)));
        for (int j = 0; j < 4; ++j) {
          const __m512i u = _mm512_loadu_si512(wu.u.data() + j * k + i);
          const __m512 dot = _mm512_cvtepi32_ps(
              _mm512_madd_epi16(_mm512_maddubs_epi16(u, xv),
                                _mm512_loadu_si512(wu.sc.data() + 32 * (j * groups + 4 * c + p))));
          acc[r][j] = _mm512_fmadd_ps(
              dot, _mm512_mul_ps(xsv, _mm512_set1_ps(wu.d[j * supers + c])), acc[r][j]);
        }
      }
    }
    for (int r = 0; r < MR; ++r) {
      const __m512 xbv = _mm512_loadu_ps(xb + r * ldxb + 16 * c);
      for (int j = 0; j < 4; ++j) {
        acc[r][j] = _mm512_fnmadd_ps(_mm512_loadu_ps(wu.scd.data() + 16 * (j * supers + c)), xbv,
                                     acc[r][j]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) out[r * ldo + j] = _mm512_reduce_add_ps(acc[r][j]);
  }
}

}  // namespace

void Avx512LinearW6A8Block(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs,
                           int64_t rows, const uint8_t* w, int64_t ldw, const uint16_t* wd,
                           int64_t ldwd, int64_t n, int64_t k, int64_t group, float* out,
                           int64_t ldo) {
  (void)group;  // 32 (the tables' w6_group)
  // Each x row's offset shares (see TileW6), once per call.
  const int64_t ldxb = k / 16;
  thread_local std::vector<float> xb_buffer;
  xb_buffer.resize(static_cast<size_t>(rows * ldxb));
  float* xb = xb_buffer.data();
  W6OffsetShares(xq, ldxq, xs, ldxs, rows, k, xb);
  // One x row (decode): each weight row is unpacked as it streams. More:
  // each group of 4 weight rows is unpacked once into L1 and every x row,
  // 4 at a time, meets it there.
  thread_local W6Unpacked wu;
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const RowGroup<uint16_t> g(reinterpret_cast<const int8_t*>(w), ldw, wd, ldwd, j0, n);
    if (rows == 1) {
      TileW6<1>(xq, ldxq, xs, ldxs, xb, ldxb, g, k, out + j0, ldo);
      continue;
    }
    wu.Fill(g, k);
    int64_t m = 0;
    for (; m + 4 <= rows; m += 4) {
      TileW6Unpacked<4>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, xb + m * ldxb, ldxb, wu,
                        g.nr, k, out + m * ldo + j0, ldo);
    }
    for (; m + 2 <= rows; m += 2) {
      TileW6Unpacked<2>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, xb + m * ldxb, ldxb, wu,
                        g.nr, k, out + m * ldo + j0, ldo);
    }
    if (m < rows) {
      TileW6Unpacked<1>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, xb + m * ldxb, ldxb, wu,
                        g.nr, k, out + m * ldo + j0, ldo);
    }
  }
}

}  // namespace tessera::cpu

#pragma GCC pop_options

// The VNNI variant: vpdpbusd(u, x) sums 4 products u x per int32 lane in one
// instruction on the multiply port (vpmaddubsw + vpmaddwd take two), and
// the sub-block scales go to the f32 side instead: each lane's d * sc
// (spread per 64 weights at unpack time) times its x block's xs, one
// multiply and one FMA on either vector port. Every weight row group is
// unpacked once into L1 (W6UnpackedF32) and every x row meets it there.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

namespace tessera::cpu {
namespace {

// A group of 4 weight rows unpacked: u bytes [4][K]; per 64 weights the
// 16 lanes' d * sc (lane l: sub-block 4 p + l / 4 of the super-block)
// [4][K / 64][16]; per super-block d * sc of its 16 sub-blocks [4][K / 256][16].
struct W6UnpackedF32 {
  std::vector<uint8_t> u;
  std::vector<float> lane_scale;
  std::vector<float> scd;
  void Fill(const RowGroup<uint16_t>& g, int64_t k) {
    const int64_t supers = k / 256, groups = k / 64;
    u.resize(static_cast<size_t>(4 * k));
    lane_scale.resize(static_cast<size_t>(4 * groups * 16));
    scd.resize(static_cast<size_t>(4 * supers * 16));
    for (int j = 0; j < 4; ++j) {
      for (int64_t c = 0; c < supers; ++c) {
        const uint8_t* blk = reinterpret_cast<const uint8_t*>(g.w[j]) + c * kW6BlockBytes;
        const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
        const __m512 scd_c = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(g.s[j][c])),
                                           _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc8)));
        _mm512_storeu_ps(scd.data() + 16 * (j * supers + c), scd_c);
        for (int p = 0; p < 4; ++p) {
          alignas(64) int32_t idx[16];
          for (int l = 0; l < 16; ++l) idx[l] = 4 * p + l / 4;
          _mm512_storeu_ps(lane_scale.data() + 16 * (j * groups + 4 * c + p),
                           _mm512_permutexvar_ps(_mm512_load_si512(idx), scd_c));
        }
        for (int h = 0; h < 2; ++h) {
          __m512i u0, u1;
          Unpack6(blk, h, &u0, &u1);
          uint8_t* dst = u.data() + j * k + 256 * c + 128 * h;
          _mm512_storeu_si512(dst, u0);
          _mm512_storeu_si512(dst + 64, u1);
        }
      }
    }
  }
};

template <int MR>
inline __attribute__((always_inline)) void TileW6Vnni(const int8_t* xq, int64_t ldxq,
                                                      const float* xs, int64_t ldxs,
                                                      const float* xb, int64_t ldxb,
                                                      const W6UnpackedF32& wu, int nr,
                                                      int64_t k, float* out, int64_t ldo) {
  __m512 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  const int64_t supers = k / 256, groups = k / 64;
  for (int64_t c = 0; c < supers; ++c) {
    for (int p = 0; p < 4; ++p) {
      const __m512i xs_idx = _mm512_load_si512(kW6Indices.xs[p]);
      const int64_t i = 256 * c + 64 * p, gi = 4 * c + p;
      for (int r = 0; r < MR; ++r) {
        const __m512i xv = _mm512_loadu_si512(xq + r * ldxq + i);
        const __m512 xsv = _mm512_permutexvar_ps(
            xs_idx, _mm512_castps256_ps512(_mm256_loadu_ps(xs + r * ldxs + c * 8)));
        for (int j = 0; j < 4; ++j) {
          const __m512i dot = _mm512_dpbusd_epi32(
              _mm512_setzero_si512(), _mm512_loadu_si512(wu.u.data() + j * k + i), xv);
          const __m512 scale =
              _mm512_mul_ps(xsv, _mm512_loadu_ps(wu.lane_scale.data() + 16 * (j * groups + gi)));
          acc[r][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[r][j]);
        }
      }
    }
    for (int r = 0; r < MR; ++r) {
      const __m512 xbv = _mm512_loadu_ps(xb + r * ldxb + 16 * c);
      for (int j = 0; j < 4; ++j) {
        acc[r][j] = _mm512_fnmadd_ps(_mm512_loadu_ps(wu.scd.data() + 16 * (j * supers + c)), xbv,
                                     acc[r][j]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) out[r * ldo + j] = _mm512_reduce_add_ps(acc[r][j]);
  }
}

}  // namespace

void Avx512VnniLinearW6A8Block(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs,
                               int64_t rows, const uint8_t* w, int64_t ldw, const uint16_t* wd,
                               int64_t ldwd, int64_t n, int64_t k, int64_t group, float* out,
                               int64_t ldo) {
  // One x row (decode at batch 1): the BW kernel, which unpacks each weight
  // row as it streams, keeps up with memory; unpacking into L1 first pays
  // off from two rows on.
  if (rows == 1) {
    Avx512LinearW6A8Block(xq, ldxq, xs, ldxs, rows, w, ldw, wd, ldwd, n, k, group, out, ldo);
    return;
  }
  const int64_t ldxb = k / 16;
  thread_local std::vector<float> xb_buffer;
  xb_buffer.resize(static_cast<size_t>(rows * ldxb));
  float* xb = xb_buffer.data();
  W6OffsetShares(xq, ldxq, xs, ldxs, rows, k, xb);
  thread_local W6UnpackedF32 wu;
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const RowGroup<uint16_t> g(reinterpret_cast<const int8_t*>(w), ldw, wd, ldwd, j0, n);
    // The next group's rows while this one computes.
    for (int j = 0; j < 4; ++j) {
      const char* pf = reinterpret_cast<const char*>(g.pf[j]);
      for (int64_t line = 0; line < k / 256 * kW6BlockBytes; line += 64) {
        _mm_prefetch(pf + line, _MM_HINT_T0);
      }
    }
    wu.Fill(g, k);
    int64_t m = 0;
    for (; m + 4 <= rows; m += 4) {
      TileW6Vnni<4>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, xb + m * ldxb, ldxb, wu, g.nr, k,
                    out + m * ldo + j0, ldo);
    }
    for (; m + 2 <= rows; m += 2) {
      TileW6Vnni<2>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, xb + m * ldxb, ldxb, wu, g.nr, k,
                    out + m * ldo + j0, ldo);
    }
    if (m < rows) {
      TileW6Vnni<1>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, xb + m * ldxb, ldxb, wu, g.nr, k,
                    out + m * ldo + j0, ldo);
    }
  }
}

}  // namespace tessera::cpu

#pragma GCC pop_options

#endif  // x86-64
