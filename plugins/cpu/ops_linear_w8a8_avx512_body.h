// The AVX-512 kernels of linear v3 (ops_linear_w8a8_kernels.h), written
// once and compiled twice: by ops_linear_w8a8_kernels_avx512.cc (F/BW/VL,
// TSR_W8A8_VNNI 0) and ops_linear_w8a8_kernels_avx512vnni.cc (plus
// AVX512_VNNI, TSR_W8A8_VNNI 1), each including this file inside an
// anonymous namespace under its own target pragma. Not a public header.
//
// Block: MR x 4 register tiles (MR <= 4 x rows, 4 weight rows) of 16-lane
// f32 accumulators; one step is 64 bytes of K = two 32-byte halves, lanes
// 0-7 holding the first half's partial sums and 8-15 the second's, so a
// step needs G % 32 == 0 (the halves may share a block when G >= 64), and a
// K % 64 == 32 tail runs one half-step.
//  - VNNI: vpdpbusd takes u8 x s8, so the weights are flipped to
//    u = w + 128 (w ^ 0x80) and the accumulator starts at -128 * sum(x) of
//    each lane's 4 bytes (one vpdpbusd of 0x80 bytes with x per x row):
//    sum u x - 128 sum x = sum w x, exact.
//  - BW: |w| (vpabsb) times x with w's sign (a masked byte subtract, BW
//    has no vpsignb) in vpmaddubsw, then vpmaddwd with ones.
//  Then per (row, weight row): convert to f32, times the two scales'
//  product (lane halves), FMA. Weight rows of the next group are
//  prefetched into L2 one cache line per step.
//  4-bit weights (kW4, linear v4): a step's 64 weights are 32 bytes (two
//  Q4_0 blocks), broadcast to both 256-bit halves with the upper half
//  shifted by 4: both blocks' low nibbles, then their high nibbles
//  (weights 0-15, 32-47, 16-31, 48-63 of the step), the order x is
//  permuted to once per call (PermuteW4Rows), so the scale lanes
//  interleave (0xF0F0); a K % 64 == 32 tail step puts its one block's
//  nibbles back in order with a 128-bit lane shuffle instead. The nibbles
//  u are u8 already: VNNI takes them as they are with the accumulator
//  started at -8 * sum(x); BW multiplies u by x in vpmaddubsw and adds the
//  same -8 sum(x) (vpmaddubsw of 8s) after vpmaddwd. 4-bit rows are
//  prefetched 8 rows ahead (4 for int8, whose rows are twice as long).
// Quantize: 16 floats per vector with masked tails, any G; the f32 steps
// are the contract's, so q is bit-identical to the scalar path's.
//
// Needs: <immintrin.h>, <algorithm>, <cstring>, <type_traits>, ops_linear_w8a8_kernels.h,
// ops_linear_int8_rows.h, TSR_W8A8_VNNI defined and F16C enabled (4-bit
// weights' f16 scales).

// A scale: f32, or f16 bits (4-bit weights' scales).
inline float ScaleAt(const float* s, int64_t b) { return s[b]; }
inline float ScaleAt(const uint16_t* s, int64_t b) { return _cvtsh_ss(s[b]); }

// s[b0] in the lanes of `lanes1`'s zero bits, s[b1] in its one bits.
template <typename S>
inline __m512 HalfScales(const S* s, int64_t b0, int64_t b1, __mmask16 lanes1 = 0xFF00) {
  return _mm512_mask_mov_ps(_mm512_set1_ps(ScaleAt(s, b0)), lanes1,
                            _mm512_set1_ps(ScaleAt(s, b1)));
}

// The int32 partial sums of a step: lanes of x . w (bytes 4l..4l+3).
// VNNI: wv holds u = w ^ 0x80 (kW4: the nibbles) and ncorr = -128 (kW4:
// -8) * (x's lane sums). BW, kW4: wa holds the nibbles and ncorr is
// VNNI's.
template <bool kW4>
inline __m512i StepDot(__m512i xv, __m512i wv, [[maybe_unused]] __m512i wa,
                       [[maybe_unused]] __mmask64 wneg, [[maybe_unused]] __m512i ncorr) {
#if TSR_W8A8_VNNI
  return _mm512_dpbusd_epi32(ncorr, wv, xv);
#else
  (void)wv;
  if constexpr (kW4) {
    return _mm512_add_epi32(
        _mm512_madd_epi16(_mm512_maddubs_epi16(wa, xv), _mm512_set1_epi16(1)), ncorr);
  } else {
    const __m512i xs = _mm512_mask_sub_epi8(xv, wneg, _mm512_setzero_si512(), xv);
    return _mm512_madd_epi16(_mm512_maddubs_epi16(wa, xs), _mm512_set1_epi16(1));
  }
#endif
}

// -c * (x's lane sums) for the step's x bytes: the correction of weights
// stored as u = w + c (c = 128 for int8 flipped to u8 on VNNI, 8 for
// 4-bit nibbles).
inline __m512i NegLaneSums(__m512i xv, char c) {
#if TSR_W8A8_VNNI
  const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(c), xv);
#else
  const __m512i sums = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_set1_epi8(c), xv),
                                         _mm512_set1_epi16(1));
#endif
  return _mm512_sub_epi32(_mm512_setzero_si512(), sums);
}

// One weight row's full 4-bit step: 32 bytes at `w` (two Q4_0 blocks)
// broadcast to both 256-bit halves, the upper half shifted right by 4: the
// low nibbles of both blocks, then their high nibbles — weights [0-15,
// 32-47, 16-31, 48-63] of the step, the order PermuteW4Rows leaves x in —
// in three instructions (no lane shuffle); with `prefetch`, the next
// group's 64 bytes at pf prefetched into L2 (every other step: a line).
inline __attribute__((always_inline)) __m512i LoadWeightStep4Interleaved(const int8_t* w,
                                                                         const int8_t* pf,
                                                                         bool prefetch) {
  const __m512i raw =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
  if (prefetch) _mm_prefetch(reinterpret_cast<const char*>(pf), _MM_HINT_T1);
  const __m512i shifted = _mm512_mask_srli_epi16(raw, 0xFFFF0000u, raw, 4);
  return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0F));
}

// The K % 64 == 32 tail's 4-bit half step: 16 bytes at `w` (one block) as
// its 32 nibbles in weight order in the low 256 bits (x's tail is not
// permuted), zeros above.
inline __attribute__((always_inline)) __m512i LoadWeightStep4(const int8_t* w, const int8_t* pf,
                                                              bool half) {
  const __m256i raw = _mm256_maskz_loadu_epi8(half ? 0xFFFFu : 0xFFFFFFFFu, w);
  _mm_prefetch(reinterpret_cast<const char*>(pf), _MM_HINT_T1);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i lo = _mm256_and_si256(raw, low4);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
  const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  return _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
}

// One weight row's step: 64 bytes at `w` (`bytes` masks the half-step
// tail), the same offset of the next group's row prefetched into L2, and
// the forms StepDot takes — VNNI: u = w ^ 0x80 in *wv; BW: *wa = |w| and
// *wneg = w's sign bits.
inline __attribute__((always_inline)) void LoadWeightStep(const int8_t* w, const int8_t* pf,
                                                          __mmask64 bytes, __m512i* wv,
                                                          __m512i* wa, __mmask64* wneg) {
  *wv = _mm512_maskz_loadu_epi8(bytes, w);
  _mm_prefetch(reinterpret_cast<const char*>(pf), _MM_HINT_T1);
#if TSR_W8A8_VNNI
  *wv = _mm512_xor_si512(*wv, _mm512_set1_epi8(static_cast<char>(0x80)));
  *wa = *wv;
  *wneg = 0;
#else
  *wa = _mm512_abs_epi8(*wv);
  *wneg = _mm512_movepi8_mask(*wv);
#endif
}

// The scale pair of step i (64 bytes from byte i): lanes 0-7 the block of
// byte i, 8-15 that of byte i + 32 (the same block when G >= 64 or in the
// half-step tail). kG32: G == 32, so the pair is s[i / 32], s[i / 32 + 1].
// kW4 full steps hold the halves interleaved (lanes 0-3 and 8-11 the
// first half, 4-7 and 12-15 the second: see LoadWeightStep4Interleaved).
template <bool kG32, bool kW4 = false, typename S>
inline __m512 StepScales(const S* s, int64_t i, int64_t group, bool half) {
  if constexpr (kG32 && std::is_same_v<S, uint16_t>) {
    if (!half) {  // the step's two f16 scales in one load and one conversion
      uint32_t pair;
      std::memcpy(&pair, s + (i >> 5), sizeof(pair));
      const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(pair)));
      const __m512i lanes = kW4 ? _mm512_set_epi32(1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0)
                                : _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
      return _mm512_permutexvar_ps(lanes, _mm512_castps128_ps512(f));
    }
  }
  const __mmask16 lanes1 = kW4 && !half ? 0xF0F0 : 0xFF00;
  if constexpr (kG32) {
    return HalfScales(s, i >> 5, half ? i >> 5 : (i >> 5) + 1, lanes1);
  } else {
    const int64_t b0 = i / group;
    return HalfScales(s, b0, half ? b0 : (i + 32) / group, lanes1);
  }
}

template <int MR, bool kG32, bool kW4, typename S>
inline __attribute__((always_inline)) void Tile(const int8_t* xq, int64_t ldxq, const float* xs,
                                                int64_t ldxs, const int8_t* const* w,
                                                const S* const* ws, int64_t k, int64_t group,
                                                int nr, float* out, int64_t ldo,
                                                const int8_t* const* pf, const S* pfs) {
  __m512 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < k; i += 64) {
    // A full step, or the K % 64 == 32 tail (upper bytes zero: their dot is 0).
    const bool half = i + 64 > k;
    const __mmask64 bytes = half ? 0xFFFFFFFFull : ~0ull;
    // The next group's scales (4 rows of K / 8 bytes at G = 32, contiguous
    // when lds == K / G): K / 2 bytes over K / 64 steps, a line every 2.
    if ((i & 127) == 0) _mm_prefetch(reinterpret_cast<const char*>(pfs + (i >> 3)), _MM_HINT_T1);
    __m512i wv[4], wa[4];
    __mmask64 wneg[4];
    __m512 wsv[4];
    for (int j = 0; j < 4; ++j) {
      if constexpr (kW4) {
        // 4-bit rows are half as long: prefetch twice as many rows ahead
        // (8, the group after next; measured better than 4 or 16).
        const int8_t* pf8 = pf[j] + (pf[j] - w[j]);
        wv[j] = wa[j] = half ? LoadWeightStep4(w[j] + i / 2, pf8 + i / 2, true)
                             : LoadWeightStep4Interleaved(w[j] + i / 2, pf8 + i / 2,
                                                          (i & 127) == 0);  // a line per 2 steps
        wneg[j] = 0;
      } else {
        LoadWeightStep(w[j] + i, pf[j] + i, bytes, &wv[j], &wa[j], &wneg[j]);
      }
      wsv[j] = StepScales<kG32, kW4>(ws[j], i, group, half);
    }
    for (int r = 0; r < MR; ++r) {
      const __m512i xv = _mm512_maskz_loadu_epi8(bytes, xq + r * ldxq + i);
      const __m512 xsv = StepScales<kG32, kW4>(xs + r * ldxs, i, group, half);
      __m512i ncorr = _mm512_setzero_si512();
      if constexpr (kW4) {
        ncorr = NegLaneSums(xv, 8);
      } else if (TSR_W8A8_VNNI) {
        ncorr = NegLaneSums(xv, static_cast<char>(0x80));
      }
      for (int j = 0; j < 4; ++j) {
        const __m512 dot = _mm512_cvtepi32_ps(StepDot<kW4>(xv, wv[j], wa[j], wneg[j], ncorr));
        acc[r][j] = _mm512_fmadd_ps(dot, _mm512_mul_ps(xsv, wsv[j]), acc[r][j]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) out[r * ldo + j] = _mm512_reduce_add_ps(acc[r][j]);
  }
}

// G == K (one scale per weight row and per x row: SGLang's w8a8_int8,
// per-channel weights and per-token activations): the int32 partial sums
// run over the whole row and are converted and scaled once at the end —
// one vpdpbusd per (x row, weight row, 64 bytes) on VNNI.
template <int MR>
inline __attribute__((always_inline)) void TilePerChannel(
    const int8_t* xq, int64_t ldxq, const float* xs, const int8_t* const* w,
    const float* const* ws, int64_t k, int nr, float* out, int64_t ldo,
    const int8_t* const* pf) {
  __m512i acc[MR][4];
  __m512i corr[MR];  // VNNI: 128 * (x's lane sums), subtracted at the end
  for (int r = 0; r < MR; ++r) {
    corr[r] = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_si512();
  }
  [[maybe_unused]] const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t i = 0; i < k; i += 64) {
    const __mmask64 bytes = i + 64 > k ? 0xFFFFFFFFull : ~0ull;
    __m512i wv[4], wa[4];
    __mmask64 wneg[4];
    for (int j = 0; j < 4; ++j) {
      LoadWeightStep(w[j] + i, pf[j] + i, bytes, &wv[j], &wa[j], &wneg[j]);
    }
    for (int r = 0; r < MR; ++r) {
      const __m512i xv = _mm512_maskz_loadu_epi8(bytes, xq + r * ldxq + i);
#if TSR_W8A8_VNNI
      corr[r] = _mm512_dpbusd_epi32(corr[r], flip, xv);
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], wv[j], xv);
#else
      for (int j = 0; j < 4; ++j) {
        acc[r][j] = _mm512_add_epi32(
            acc[r][j], StepDot<false>(xv, wv[j], wa[j], wneg[j], _mm512_setzero_si512()));
      }
#endif
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) {
      const int32_t dot = _mm512_reduce_add_epi32(_mm512_sub_epi32(acc[r][j], corr[r]));
      out[r * ldo + j] = xs[r] * ws[j][0] * static_cast<float>(dot);
    }
  }
}

// Runs tile.template operator()<MR>(m, j0, group, pf) over every group of
// 4 weight rows (from j0) and tile of x rows (from m): MR = 4 while 4 rows
// are left, then the 1-3 left. pf is the next group's rows for a group's
// first tile (prefetched while it streams) and the group's own, already
// cached, rows for the others.
template <typename S, typename TileFn>
inline __attribute__((always_inline)) void ForEachTile(const int8_t* w, int64_t ldw,
                                                       const S* ws, int64_t ldws,
                                                       int64_t rows, int64_t n,
                                                       const TileFn& tile) {
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const RowGroup<S> g(w, ldw, ws, ldws, j0, n);
    int64_t m = 0;
    for (; m + 4 <= rows; m += 4) tile.template operator()<4>(m, j0, g, m == 0 ? g.pf : g.w);
    const int8_t* const* pf = m == 0 ? g.pf : g.w;
    if (rows - m == 3) tile.template operator()<3>(m, j0, g, pf);
    if (rows - m == 2) tile.template operator()<2>(m, j0, g, pf);
    if (rows - m == 1) tile.template operator()<1>(m, j0, g, pf);
  }
}

template <bool kG32, bool kW4, typename S>
void BlockImpl(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
               const int8_t* w, int64_t ldw, const S* ws, int64_t ldws, int64_t n, int64_t k,
               int64_t group, float* out, int64_t ldo) {
  ForEachTile(w, ldw, ws, ldws, rows, n,
              [&]<int MR>(int64_t m, int64_t j0, const RowGroup<S>& g, const int8_t* const* pf) {
                Tile<MR, kG32, kW4>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, g.w, g.s, k, group,
                               g.nr, out + m * ldo + j0, ldo, pf, g.pfs);
              });
}

void BlockPerChannel(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs,
                     int64_t rows, const int8_t* w, int64_t ldw, const float* ws, int64_t ldws,
                     int64_t n, int64_t k, float* out, int64_t ldo) {
  ForEachTile(w, ldw, ws, ldws, rows, n,
              [&]<int MR>(int64_t m, int64_t j0, const Int8RowGroup& g, const int8_t* const* pf) {
                float xs_tile[MR];  // the tile's per-row x scales, contiguous
                for (int r = 0; r < MR; ++r) xs_tile[r] = xs[(m + r) * ldxs];
                TilePerChannel<MR>(xq + m * ldxq, ldxq, xs_tile, g.w, g.s, k, g.nr,
                                   out + m * ldo + j0, ldo, pf);
              });
}

void Block(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
           const int8_t* w, int64_t ldw, const float* ws, int64_t ldws, int64_t n, int64_t k,
           int64_t group, float* out, int64_t ldo) {
  if (group == k) {
    BlockPerChannel(xq, ldxq, xs, ldxs, rows, w, ldw, ws, ldws, n, k, out, ldo);
  } else if (group == 32) {
    BlockImpl<true, false>(xq, ldxq, xs, ldxs, rows, w, ldw, ws, ldws, n, k, group, out, ldo);
  } else {
    BlockImpl<false, false>(xq, ldxq, xs, ldxs, rows, w, ldw, ws, ldws, n, k, group, out, ldo);
  }
}

// 4-bit weights (packed bytes, ldw in bytes): G % 32 == 0, K % 32 == 0;
// xq as PermuteW4Rows left it.
void BlockW4(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
             const int8_t* w, int64_t ldw, const uint16_t* ws, int64_t ldws, int64_t n, int64_t k,
             int64_t group, float* out, int64_t ldo) {
  if (group == 32) {
    BlockImpl<true, true>(xq, ldxq, xs, ldxs, rows, w, ldw, ws, ldws, n, k, group, out, ldo);
  } else {
    BlockImpl<false, true>(xq, ldxq, xs, ldxs, rows, w, ldw, ws, ldws, n, k, group, out, ldo);
  }
}

// BlockW4's x order: each full 64-byte step of each row as bytes [0-15,
// 32-47, 16-31, 48-63] (LoadWeightStep4Interleaved's weight order); a
// K % 64 == 32 tail stays as it is.
void PermuteW4Rows(int8_t* q, int64_t ldq, int64_t rows, int64_t k) {
  const __m512i order = _mm512_set_epi64(7, 6, 3, 2, 5, 4, 1, 0);  // 16-byte quarters 0 2 1 3
  for (int64_t m = 0; m < rows; ++m) {
    int8_t* qr = q + m * ldq;
    for (int64_t i = 0; i + 64 <= k; i += 64) {
      const __m512i v = _mm512_loadu_si512(qr + i);
      _mm512_storeu_si512(qr + i, _mm512_permutexvar_epi64(order, v));
    }
  }
}

void Quantize(const float* x, int64_t ldx, int64_t rows, int64_t k, int64_t group, int8_t* q,
              int64_t ldq, float* s, int64_t lds) {
  for (int64_t m = 0; m < rows; ++m) {
    const float* xr = x + m * ldx;
    int8_t* qr = q + m * ldq;
    for (int64_t b0 = 0, b = 0; b0 < k; b0 += group, ++b) {
      const int64_t b1 = b0 + group;
      __m512 vmax = _mm512_setzero_ps();
      for (int64_t i = b0; i < b1; i += 16) {
        const __mmask16 mask = b1 - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (b1 - i)) - 1u);
        vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_maskz_loadu_ps(mask, xr + i)));
      }
      const float amax = _mm512_reduce_max_ps(vmax);
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      s[m * lds + b] = amax / 127.0f;
      const __m512 vinv = _mm512_set1_ps(inv);
      for (int64_t i = b0; i < b1; i += 16) {
        const __mmask16 mask = b1 - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (b1 - i)) - 1u);
        const __m512i qi = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(mask, xr + i), vinv));
        _mm512_mask_cvtsepi32_storeu_epi8(qr + i, mask, qi);
      }
    }
  }
}
