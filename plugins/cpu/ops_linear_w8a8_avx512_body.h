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
//  4-bit weights (linear v4, TileW4): a chunk of 128 weights is 64 bytes
//  (four Q4_0 blocks), split into low and high nibbles whose x partners
//  PermuteW4Rows put in that order once per call, so each block keeps the
//  same 4 lanes in both halves and the two dot products add before one
//  conversion. The nibbles u are u8 already: VNNI takes them as they are
//  with the accumulator started at -8 * sum(x); BW multiplies u by x in
//  vpmaddubsw and adds the same -8 sum(x) after vpmaddwd. At G == 32 the
//  scale products of 16 blocks are made once and permuted into each
//  chunk's lanes. 4-bit rows are prefetched 8 rows ahead (4 for int8,
//  whose rows are twice as long).
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

// The int32 partial sums of an int8 step: lanes of x . w (bytes
// 4l..4l+3). VNNI: wv holds u = w ^ 0x80 and ncorr = -128 * (x's lane
// sums). BW: wa = |w| and wneg its sign bits.
inline __m512i StepDot(__m512i xv, __m512i wv, [[maybe_unused]] __m512i wa,
                       [[maybe_unused]] __mmask64 wneg, [[maybe_unused]] __m512i ncorr) {
#if TSR_W8A8_VNNI
  return _mm512_dpbusd_epi32(ncorr, wv, xv);
#else
  (void)wv;
  const __m512i xs = _mm512_mask_sub_epi8(xv, wneg, _mm512_setzero_si512(), xv);
  return _mm512_madd_epi16(_mm512_maddubs_epi16(wa, xs), _mm512_set1_epi16(1));
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

// One weight row's step: 64 bytes at `w` (`bytes` masks the half-step
// tail), the same offset of the next group's row prefetched into L2, and
// the forms StepDot takes — VNNI: u = w ^ 0x80 in *wv; BW: *wa = |w| and
// *wneg = w's sign bits.
inline __attribute__((always_inline)) void LoadWeightStep(const int8_t* w, const int8_t* pf,
                                                          __mmask64 bytes, __m512i* wv,
                                                          __m512i* wa, __mmask64* wneg) {
  // Plain loads for full steps: masked ones stream markedly slower.
  *wv = bytes == ~0ull ? _mm512_loadu_si512(w) : _mm512_maskz_loadu_epi8(bytes, w);
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
// half-step tail). kG32: G == 32, so the pair is s[i / 32], s[i / 32 + 1]
// (Tile itself picks G == 32's pairs from a span's products instead).
template <bool kG32>
inline __m512 StepScales(const float* s, int64_t i, int64_t group, bool half) {
  if constexpr (kG32) {
    return HalfScales(s, i >> 5, half ? i >> 5 : (i >> 5) + 1);
  } else {
    const int64_t b0 = i / group;
    return HalfScales(s, b0, half ? b0 : (i + 32) / group);
  }
}

// 16 scales from s (f32, or f16 bits widened), lanes outside `lanes` 0.
inline __m512 LoadScales16(__mmask16 lanes, const float* s) {
  return _mm512_maskz_loadu_ps(lanes, s);
}
inline __m512 LoadScales16(__mmask16 lanes, const uint16_t* s) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lanes, s));
}

// G == 32: prod[r][j] = x row r's scales times weight row j's (ws[j]) for
// the blocks of the span of weights [c0, c0 + span), span <= 512 (up to 16
// blocks; lanes past the span 0): one multiply per 16 blocks per (r, j).
template <int MR, typename S>
inline __attribute__((always_inline)) void SpanScaleProducts(const float* xs, int64_t ldxs,
                                                             const S* const* ws, int64_t c0,
                                                             int64_t span, __m512 (*prod)[4]) {
  const int64_t b0 = c0 >> 5, nb = span >> 5;
  const __mmask16 lanes = static_cast<__mmask16>(nb >= 16 ? 0xFFFFu : (1u << nb) - 1u);
  __m512 wsv[4];
  for (int j = 0; j < 4; ++j) wsv[j] = LoadScales16(lanes, ws[j] + b0);
  for (int r = 0; r < MR; ++r) {
    const __m512 xsv = _mm512_maskz_loadu_ps(lanes, xs + r * ldxs + b0);
    for (int j = 0; j < 4; ++j) prod[r][j] = _mm512_mul_ps(xsv, wsv[j]);
  }
}

template <int MR, bool kG32>
inline __attribute__((always_inline)) void Tile(const int8_t* xq, int64_t ldxq, const float* xs,
                                                int64_t ldxs, const int8_t* const* w,
                                                const float* const* ws, int64_t k, int64_t group,
                                                int nr, float* out, int64_t ldo,
                                                const int8_t* const* pf, const float* pfs) {
  __m512 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  // Lanes 0-7 hold 0, 8-15 hold 1: a step's two blocks.
  [[maybe_unused]] const __m512i lane_halves = _mm512_srli_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 3);
  for (int64_t c0 = 0; c0 < k; c0 += 512) {  // a span of up to 16 blocks
    const int64_t span = std::min<int64_t>(512, k - c0);
    // G == 32: each step's scale pair is picked from the span's products
    // with one permute.
    [[maybe_unused]] __m512 prod[MR][4];
    if constexpr (kG32) SpanScaleProducts<MR>(xs, ldxs, ws, c0, span, prod);
    for (int64_t i = c0; i < c0 + span; i += 64) {
      // A full step, or the K % 64 == 32 tail (upper bytes zero: their dot is 0).
      const bool half = i + 64 > k;
      const __mmask64 bytes = half ? 0xFFFFFFFFull : ~0ull;
      // The next group's scales (4 rows of K / 8 bytes at G = 32, contiguous
      // when lds == K / G): K / 2 bytes over K / 64 steps, a line every 2.
      if ((i & 127) == 0) {
        _mm_prefetch(reinterpret_cast<const char*>(pfs + (i >> 3)), _MM_HINT_T1);
      }
      __m512i wv[4], wa[4];
      __mmask64 wneg[4];
      [[maybe_unused]] __m512 wsv[4];
      for (int j = 0; j < 4; ++j) {
        LoadWeightStep(w[j] + i, pf[j] + i, bytes, &wv[j], &wa[j], &wneg[j]);
        if constexpr (!kG32) wsv[j] = StepScales<kG32>(ws[j], i, group, half);
      }
      [[maybe_unused]] __m512i pick;
      if constexpr (kG32) {
        pick = _mm512_add_epi32(lane_halves, _mm512_set1_epi32(static_cast<int>((i - c0) >> 5)));
      }
      for (int r = 0; r < MR; ++r) {
        const int8_t* xp = xq + r * ldxq + i;
        const __m512i xv = half ? _mm512_maskz_loadu_epi8(bytes, xp) : _mm512_loadu_si512(xp);
        [[maybe_unused]] __m512 xsv;
        if constexpr (!kG32) xsv = StepScales<kG32>(xs + r * ldxs, i, group, half);
        __m512i ncorr = _mm512_setzero_si512();
        if (TSR_W8A8_VNNI) ncorr = NegLaneSums(xv, static_cast<char>(0x80));
        for (int j = 0; j < 4; ++j) {
          const __m512 dot = _mm512_cvtepi32_ps(StepDot(xv, wv[j], wa[j], wneg[j], ncorr));
          __m512 scale;
          if constexpr (kG32) {
            scale = _mm512_permutexvar_ps(pick, prod[r][j]);
          } else {
            scale = _mm512_mul_ps(xsv, wsv[j]);
          }
          acc[r][j] = _mm512_fmadd_ps(dot, scale, acc[r][j]);
        }
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) out[r * ldo + j] = _mm512_reduce_add_ps(acc[r][j]);
  }
}

// lanes 4q .. 4q + 3 of a vector: q (the block of a 4-bit chunk, below).
inline __m512i ChunkLaneBlocks() {
  return _mm512_srli_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                           2);
}

// The scales of the blocks of the 4-bit chunk at weight i (nb <= 4 blocks
// of 32), lanes 4q .. 4q + 3 the block of weights i + 32q (any G % 32 ==
// 0; 0 for q >= nb).
template <typename S>
inline __m512 ChunkScales(const S* s, int64_t i, int64_t group, int nb) {
  float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int q = 0; q < nb; ++q) v[q] = ScaleAt(s, (i + 32 * q) / group);
  return _mm512_permutexvar_ps(ChunkLaneBlocks(), _mm512_castps128_ps512(_mm_loadu_ps(v)));
}

// 4-bit weights (linear v4), MR x 4 tiles over chunks of 128 weights: a
// chunk is 64 bytes of a row (four Q4_0 blocks), loaded once and split
// into its low nibbles (weights 0-15 of each block) and high nibbles
// (16-31). x is in PermuteW4Rows's order (each chunk's low-nibble partners
// first, then the high-nibble ones), so both halves put block q in lanes
// 4q .. 4q + 3 and their two dot products add in int32 before the one
// conversion and FMA per (x row, weight row, chunk). K % 128 tails are a
// chunk of 1-3 blocks (masked loads; plain loads for full chunks, which
// stream faster). At G == 32 the scales of 16 blocks (4 chunks) are read
// and multiplied once (x's by the weights') and each chunk picks its
// four with one permute.
template <int MR, bool kG32>
inline __attribute__((always_inline)) void TileW4(const int8_t* xq, int64_t ldxq,
                                                  const float* xs, int64_t ldxs,
                                                  const int8_t* const* w,
                                                  const uint16_t* const* ws, int64_t k,
                                                  int64_t group, int nr, float* out, int64_t ldo,
                                                  const int8_t* const* pf, const uint16_t* pfs) {
  __m512 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  const __m512i lane_blocks = ChunkLaneBlocks();
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  // 4-bit rows are half as long as int8 ones: prefetch 8 rows ahead (the
  // group after next; measured better than 4 or 16).
  const int8_t* pf8[4];
  for (int j = 0; j < 4; ++j) pf8[j] = pf[j] + (pf[j] - w[j]);
  for (int64_t c0 = 0; c0 < k; c0 += 512) {  // a span of up to 16 blocks
    const int64_t span = std::min<int64_t>(512, k - c0);
    // The next group's scales: 4 rows of K / 32 f16 at G = 32 (K / 4 bytes
    // when contiguous), two lines per span.
    _mm_prefetch(reinterpret_cast<const char*>(pfs + (c0 >> 3)), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(pfs + (c0 >> 3) + 32), _MM_HINT_T1);
    [[maybe_unused]] __m512 prod[MR][4];
    if constexpr (kG32) SpanScaleProducts<MR>(xs, ldxs, ws, c0, span, prod);
    for (int64_t i = c0; i < c0 + span; i += 128) {
      const int64_t half = std::min<int64_t>(128, k - i) / 2;  // bytes: 16, 32, 48 or 64
      const bool full = half == 64;
      const __mmask64 bytes = full ? ~0ull : (1ull << half) - 1;
      __m512i lo[4], hi[4];
      for (int j = 0; j < 4; ++j) {
        const int8_t* wp = w[j] + i / 2;
        const __m512i raw = full ? _mm512_loadu_si512(wp) : _mm512_maskz_loadu_epi8(bytes, wp);
        _mm_prefetch(reinterpret_cast<const char*>(pf8[j] + i / 2), _MM_HINT_T1);
        lo[j] = _mm512_and_si512(raw, low4);
        hi[j] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
      }
      [[maybe_unused]] __m512i pick;
      [[maybe_unused]] __m512 wsc[4];
      if constexpr (kG32) {
        pick = _mm512_add_epi32(lane_blocks, _mm512_set1_epi32(static_cast<int>((i - c0) >> 5)));
      } else {
        for (int j = 0; j < 4; ++j) {
          wsc[j] = ChunkScales(ws[j], i, group, static_cast<int>(half / 16));
        }
      }
      for (int r = 0; r < MR; ++r) {
        const int8_t* xp = xq + r * ldxq + i;
        const __m512i xa = full ? _mm512_loadu_si512(xp) : _mm512_maskz_loadu_epi8(bytes, xp);
        const __m512i xb =
            full ? _mm512_loadu_si512(xp + 64) : _mm512_maskz_loadu_epi8(bytes, xp + half);
        // -8 * (x's lane sums over both halves): the nibbles u stand for u - 8.
        const __m512i ncorr = _mm512_add_epi32(NegLaneSums(xa, 8), NegLaneSums(xb, 8));
        [[maybe_unused]] __m512 xsc;
        if constexpr (!kG32) xsc = ChunkScales(xs + r * ldxs, i, group, static_cast<int>(half / 16));
        for (int j = 0; j < 4; ++j) {
#if TSR_W8A8_VNNI
          const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(ncorr, lo[j], xa), hi[j], xb);
#else
          const __m512i ones = _mm512_set1_epi16(1);
          const __m512i dot = _mm512_add_epi32(
              _mm512_add_epi32(_mm512_madd_epi16(_mm512_maddubs_epi16(lo[j], xa), ones),
                               _mm512_madd_epi16(_mm512_maddubs_epi16(hi[j], xb), ones)),
              ncorr);
#endif
          __m512 scale;
          if constexpr (kG32) {
            scale = _mm512_permutexvar_ps(pick, prod[r][j]);
          } else {
            scale = _mm512_mul_ps(xsc, wsc[j]);
          }
          acc[r][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[r][j]);
        }
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
            acc[r][j], StepDot(xv, wv[j], wa[j], wneg[j], _mm512_setzero_si512()));
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
                if constexpr (kW4) {
                  TileW4<MR, kG32>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, g.w, g.s, k, group,
                                   g.nr, out + m * ldo + j0, ldo, pf, g.pfs);
                } else {
                  Tile<MR, kG32>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, g.w, g.s, k, group,
                                 g.nr, out + m * ldo + j0, ldo, pf, g.pfs);
                }
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

// BlockW4's x order (TileW4): chunks of 128 weights, low-nibble partners
// first (ops_linear_int8_rows.h).
void PermuteW4Rows(int8_t* q, int64_t ldq, int64_t rows, int64_t k) {
  PermuteW4Chunks<128>(q, ldq, rows, k);
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
