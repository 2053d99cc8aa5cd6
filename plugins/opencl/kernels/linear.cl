// linear: y[T, N] = x[T, K] w[N, K]^T (+ bias[N]), accumulated in f32.
// Host side: ops_linear.cc.
//
// Kernels (beyond the <op>_<dtype> convention, A = x/bias/y dtype, W = w's):
//   linear_pack_x_<A>          x (any strides) widened into a dense f32
//                              [T, K] scratch, one element per work-item.
//   linear_<A>_<W>_r<TR>       the product, x read as A from unit-stride
//                              rows; TR in {1, 2, 4} is the number of x
//                              rows one work-item keeps in registers at a
//                              time.
//   linear_<A>_<W>_r<TR>_xf32  the same with x read from the f32 pack
//                              (A = bf16 only: for A = f32 the kernel above
//                              already reads f32).
// The host (ops_linear.cc) picks TR = 1 for T == 1, 2 for T == 2, else 4,
// and packs x when its rows are strided or (bf16) when T >= 3, where
// widening x once beats widening it again for every 4 weight rows.
//
// Work split (tuned for CPU devices such as PoCL, which run the work-items
// of a group one after another on one core): work-item (i, j) owns the
// TSR_LINEAR_COLS = 4 output columns n = 4i .. 4i+3 (4 weight rows) and the
// rows_per_item rows of x starting at j * rows_per_item. It walks K with
// 16-wide vectors: each step loads 16 contiguous elements of each of its 4
// weight rows once and reuses them for TR rows of x (TR x 4 accumulators).
// So decode (T small) streams each weight row exactly once, in order, from
// contiguous memory, and prefill re-reads a 4-row weight block from cache
// once per TR rows. Rows/columns past T/N are clamped when loading (valid
// memory) and skipped when storing.
//
// Arguments of the product kernels, after st: x as (buffer, x_off, ldx) in
// elements with a unit inner stride (the op's x, or the f32 pack), w as
// (buffer, w_off, ldw) (unit inner stride, checked by the kit), bias
// (tensor; read only when has_bias != 0), y (tensor, any strides), then
// T, N, K and rows_per_item (a multiple of TR).

// 16 consecutive elements starting at element `off`, widened to float.
#define TSR_LD16_f32(b, off) vload16(0, (__global const float*)(b) + (off))
#define TSR_LD16_bf16(b, off) \
  as_float16(convert_uint16(vload16(0, (__global const ushort*)(b) + (off))) << 16)
#define TSR_LD16_f16(b, off) vload_half16(0, (__global const half*)((b) + 2 * (off)))

// Prefetch into L2 (x86: prefetcht1) where the compiler has the builtin
// (clang-based OpenCL compilers such as PoCL's); a no-op elsewhere.
#if defined(__has_builtin)
#if __has_builtin(__builtin_prefetch)
#define TSR_PREFETCH_L2(p) __builtin_prefetch((p), 0, 2)
#endif
#endif
#ifndef TSR_PREFETCH_L2
#define TSR_PREFETCH_L2(p) ((void)0)
#endif
// Bytes per element, and elements per 64-byte cache line less one (W is
// prefetched once a line).
#define TSR_ESIZE_f32 4
#define TSR_ESIZE_bf16 2
#define TSR_ESIZE_f16 2
#define TSR_LINE_MASK_f32 15
#define TSR_LINE_MASK_bf16 31
#define TSR_LINE_MASK_f16 31

inline float tsr_hsum16(float16 v) {
  float8 a = v.lo + v.hi;
  float4 b = a.lo + a.hi;
  float2 c = b.lo + b.hi;
  return c.x + c.y;
}

#define TSR_LINEAR_COLS 4

// dst[t * K + k] = x[t, k] widened to f32 (exact). Work-item (c, t) packs
// elements 16c .. 16c+15 of row t: one vector load when x's rows are
// unit-stride, else element by element through the strides.
#define TSR_DEFINE_LINEAR_PACK(A)                                                            \
  __kernel void linear_pack_x_##A(__global int* st, __global const uchar* x, tsr_layout lx,  \
                                  __global uchar* dst) {                                      \
    TSR_SKIP_IF_FAILED(st);                                                                   \
    const long k0 = (long)get_global_id(0) * 16, t = get_global_id(1);                        \
    const long k_count = lx.shape[1], ks = lx.strides[1];                                     \
    if (t >= lx.shape[0] || k0 >= k_count) return;                                            \
    const long src = lx.offset + t * lx.strides[0];                                           \
    __global float* out = (__global float*)dst + t * k_count;                                 \
    if (k0 + 16 <= k_count && ks == 1) {                                                      \
      vstore16(TSR_LD16_##A(x, src + k0), 0, out + k0);                                       \
      return;                                                                                 \
    }                                                                                         \
    for (long k = k0; k < min(k0 + 16, k_count); ++k) out[k] = ld_##A(x, src + k * ks);       \
  }

TSR_DEFINE_LINEAR_PACK(f32)
TSR_DEFINE_LINEAR_PACK(bf16)

// Fully unrolled by hand (PoCL keeps private arrays on the stack): row i of
// the TR-row tile and column j of the 4-column block own accumulator a<i><j>.
#define TSR_LIN_ROW_FMA(XT, TR, i)                                \
  if (TR > i) {                                                   \
    const float16 xv = TSR_LD16_##XT(x, xr##i + k);               \
    a##i##0 = fma(xv, w0, a##i##0);                               \
    a##i##1 = fma(xv, w1, a##i##1);                               \
    a##i##2 = fma(xv, w2, a##i##2);                               \
    a##i##3 = fma(xv, w3, a##i##3);                               \
  }
#define TSR_LIN_ROW_SUM(TR, i)         \
  if (TR > i) {                        \
    s##i##0 = tsr_hsum16(a##i##0);     \
    s##i##1 = tsr_hsum16(a##i##1);     \
    s##i##2 = tsr_hsum16(a##i##2);     \
    s##i##3 = tsr_hsum16(a##i##3);     \
  }
#define TSR_LIN_ROW_TAIL(XT, TR, i)                \
  if (TR > i) {                                    \
    const float xs = ld_##XT(x, xr##i + k);        \
    s##i##0 = fma(xs, ws0, s##i##0);               \
    s##i##1 = fma(xs, ws1, s##i##1);               \
    s##i##2 = fma(xs, ws2, s##i##2);               \
    s##i##3 = fma(xs, ws3, s##i##3);               \
  }
#define TSR_LIN_ROW_STORE(A, TR, i)                                              \
  if (TR > i && r0 + i < r_end) {                                                \
    const long yrow = ly.offset + (r0 + i) * ly.strides[0] + n0 * ly.strides[1]; \
    const long ys = ly.strides[1];                                               \
    st_##A(y, yrow, s##i##0 + b0);                                               \
    if (n0 + 1 < N) st_##A(y, yrow + ys, s##i##1 + b1);                          \
    if (n0 + 2 < N) st_##A(y, yrow + 2 * ys, s##i##2 + b2);                      \
    if (n0 + 3 < N) st_##A(y, yrow + 3 * ys, s##i##3 + b3);                      \
  }

#define TSR_DEFINE_LINEAR(A, W, XT, TR, NAME)                                                          \
  __kernel void NAME(                                                                          \
      __global int* st, __global const uchar* x, long x_off, long ldx, __global const uchar* w, \
      long w_off, long ldw, __global const uchar* bias, tsr_layout lb, int has_bias,          \
      __global uchar* y, tsr_layout ly, long T, long N, long K, long rows_per_item) {          \
    TSR_SKIP_IF_FAILED(st);                                                                    \
    const long n0 = (long)get_global_id(0) * TSR_LINEAR_COLS;                                  \
    const long r_begin = (long)get_global_id(1) * rows_per_item;                               \
    if (n0 >= N || r_begin >= T) return;                                                       \
    const long r_end = min(T, r_begin + rows_per_item);                                        \
    const long wr0 = w_off + n0 * ldw;                                                         \
    const long wr1 = w_off + min(n0 + 1, N - 1) * ldw;                                         \
    const long wr2 = w_off + min(n0 + 2, N - 1) * ldw;                                         \
    const long wr3 = w_off + min(n0 + 3, N - 1) * ldw;                                         \
    /* The next work-item's 4 weight rows (byte offsets), fetched into L2 */                   \
    /* meanwhile: a memory-bound GEMV needs more reads in flight than the */                   \
    /* hardware prefetcher starts on its own. */                                               \
    const long pf0 = (w_off + min(n0 + 4, N - 1) * ldw) * TSR_ESIZE_##W;                       \
    const long pf1 = (w_off + min(n0 + 5, N - 1) * ldw) * TSR_ESIZE_##W;                       \
    const long pf2 = (w_off + min(n0 + 6, N - 1) * ldw) * TSR_ESIZE_##W;                       \
    const long pf3 = (w_off + min(n0 + 7, N - 1) * ldw) * TSR_ESIZE_##W;                       \
    float b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f;                                          \
    if (has_bias) {                                                                            \
      const long bs = lb.strides[0];                                                           \
      b0 = ld_##A(bias, lb.offset + n0 * bs);                                                  \
      b1 = ld_##A(bias, lb.offset + min(n0 + 1, N - 1) * bs);                                  \
      b2 = ld_##A(bias, lb.offset + min(n0 + 2, N - 1) * bs);                                  \
      b3 = ld_##A(bias, lb.offset + min(n0 + 3, N - 1) * bs);                                  \
    }                                                                                          \
    for (long r0 = r_begin; r0 < r_end; r0 += TR) {                                            \
      const long xr0 = x_off + r0 * ldx;                                                       \
      const long xr1 = x_off + min(r0 + 1, r_end - 1) * ldx;                                   \
      const long xr2 = x_off + min(r0 + 2, r_end - 1) * ldx;                                   \
      const long xr3 = x_off + min(r0 + 3, r_end - 1) * ldx;                                   \
      const float16 z = (float16)(0.0f);                                                       \
      float16 a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;          \
      float16 a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;          \
      long k = 0;                                                                              \
      for (; k + 16 <= K; k += 16) {                                                           \
        if ((k & TSR_LINE_MASK_##W) == 0) {                                                    \
          const long kb = k * TSR_ESIZE_##W;                                                   \
          TSR_PREFETCH_L2(w + pf0 + kb);                                                       \
          TSR_PREFETCH_L2(w + pf1 + kb);                                                       \
          TSR_PREFETCH_L2(w + pf2 + kb);                                                       \
          TSR_PREFETCH_L2(w + pf3 + kb);                                                       \
        }                                                                                      \
        const float16 w0 = TSR_LD16_##W(w, wr0 + k);                                           \
        const float16 w1 = TSR_LD16_##W(w, wr1 + k);                                           \
        const float16 w2 = TSR_LD16_##W(w, wr2 + k);                                           \
        const float16 w3 = TSR_LD16_##W(w, wr3 + k);                                           \
        TSR_LIN_ROW_FMA(XT, TR, 0)                                                             \
        TSR_LIN_ROW_FMA(XT, TR, 1)                                                             \
        TSR_LIN_ROW_FMA(XT, TR, 2)                                                             \
        TSR_LIN_ROW_FMA(XT, TR, 3)                                                             \
      }                                                                                        \
      float s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;           \
      float s20 = 0, s21 = 0, s22 = 0, s23 = 0, s30 = 0, s31 = 0, s32 = 0, s33 = 0;           \
      TSR_LIN_ROW_SUM(TR, 0)                                                                   \
      TSR_LIN_ROW_SUM(TR, 1)                                                                   \
      TSR_LIN_ROW_SUM(TR, 2)                                                                   \
      TSR_LIN_ROW_SUM(TR, 3)                                                                   \
      for (; k < K; ++k) {                                                                     \
        const float ws0 = ld_##W(w, wr0 + k), ws1 = ld_##W(w, wr1 + k);                        \
        const float ws2 = ld_##W(w, wr2 + k), ws3 = ld_##W(w, wr3 + k);                        \
        TSR_LIN_ROW_TAIL(XT, TR, 0)                                                            \
        TSR_LIN_ROW_TAIL(XT, TR, 1)                                                            \
        TSR_LIN_ROW_TAIL(XT, TR, 2)                                                            \
        TSR_LIN_ROW_TAIL(XT, TR, 3)                                                            \
      }                                                                                        \
      TSR_LIN_ROW_STORE(A, TR, 0)                                                              \
      TSR_LIN_ROW_STORE(A, TR, 1)                                                              \
      TSR_LIN_ROW_STORE(A, TR, 2)                                                              \
      TSR_LIN_ROW_STORE(A, TR, 3)                                                              \
    }                                                                                          \
  }

// x read as A (linear_<A>_<W>_r<TR>) and, for A = bf16, from the f32 pack
// (linear_<A>_<W>_r<TR>_xf32; for A = f32 the two are the same kernel).
#define TSR_DEFINE_LINEAR_ALL_TR(A, W)                              \
  TSR_DEFINE_LINEAR(A, W, A, 1, linear_##A##_##W##_r1)              \
  TSR_DEFINE_LINEAR(A, W, A, 2, linear_##A##_##W##_r2)              \
  TSR_DEFINE_LINEAR(A, W, A, 4, linear_##A##_##W##_r4)
#define TSR_DEFINE_LINEAR_ALL_TR_XF32(A, W)                         \
  TSR_DEFINE_LINEAR(A, W, f32, 1, linear_##A##_##W##_r1_xf32)       \
  TSR_DEFINE_LINEAR(A, W, f32, 2, linear_##A##_##W##_r2_xf32)       \
  TSR_DEFINE_LINEAR(A, W, f32, 4, linear_##A##_##W##_r4_xf32)

TSR_DEFINE_LINEAR_ALL_TR(f32, f32)
TSR_DEFINE_LINEAR_ALL_TR(f32, f16)
TSR_DEFINE_LINEAR_ALL_TR(bf16, bf16)
TSR_DEFINE_LINEAR_ALL_TR(bf16, f16)
TSR_DEFINE_LINEAR_ALL_TR_XF32(bf16, bf16)
TSR_DEFINE_LINEAR_ALL_TR_XF32(bf16, f16)

// ---------------------------------------------------------------------------
// bf16 x bf16 for T >= 3 (compute-bound): linear_bf16_bf16_r4_pairs.
// A 32-bit load of bf16 weights holds an even element in its low half and
// an odd one in its high half, so 32 weights widen to f32 with two
// instructions (<< 16 for the even ones, & 0xffff0000 for the odd ones)
// instead of four. x comes from linear_pack_x_pairs_bf16, which stores each
// full 32-element chunk of a row as its 16 even then its 16 odd elements
// (the K % 32 tail in order), so both halves meet matching x lanes. Needs
// w_off and ldw even (32-bit aligned rows); otherwise the host uses _xf32.
// ---------------------------------------------------------------------------

// dst[t, chunk c] = (x[t, 32c + 2i] for i < 16, then x[t, 32c + 2i + 1]),
// widened to f32; work-item (c, t) writes chunk c (or the tail) of row t.
__kernel void linear_pack_x_pairs_bf16(__global int* st, __global const uchar* x, tsr_layout lx,
                                       __global uchar* dst) {
  TSR_SKIP_IF_FAILED(st);
  const long k0 = (long)get_global_id(0) * 32, t = get_global_id(1);
  const long k_count = lx.shape[1], ks = lx.strides[1];
  if (t >= lx.shape[0] || k0 >= k_count) return;
  const long src = lx.offset + t * lx.strides[0];
  __global float* out = (__global float*)dst + t * k_count + k0;
  if (k0 + 32 > k_count) {
    for (long k = k0; k < k_count; ++k) out[k - k0] = ld_bf16(x, src + k * ks);
    return;
  }
  if (ks == 1) {
    const ushort16 a = vload16(0, (__global const ushort*)x + src + k0);
    const ushort16 b = vload16(0, (__global const ushort*)x + src + k0 + 16);
    vstore16(as_float16(convert_uint16((ushort16)(a.even, b.even)) << 16), 0, out);
    vstore16(as_float16(convert_uint16((ushort16)(a.odd, b.odd)) << 16), 0, out + 16);
    return;
  }
  for (int i = 0; i < 16; ++i) {
    out[i] = ld_bf16(x, src + (k0 + 2 * i) * ks);
    out[16 + i] = ld_bf16(x, src + (k0 + 2 * i + 1) * ks);
  }
}

#define TSR_LD32_PAIRS(b, off) vload16(0, (__global const uint*)((b) + 2 * (off)))
#define TSR_LIN_PAIR_FMA(i)                                            \
  {                                                                    \
    const float16 xe = vload16(0, xf + xr##i + k);                     \
    const float16 xo = vload16(0, xf + xr##i + k + 16);                \
    a##i##0 = fma(xo, wo0, fma(xe, we0, a##i##0));                     \
    a##i##1 = fma(xo, wo1, fma(xe, we1, a##i##1));                     \
    a##i##2 = fma(xo, wo2, fma(xe, we2, a##i##2));                     \
    a##i##3 = fma(xo, wo3, fma(xe, we3, a##i##3));                     \
  }
#define TSR_LIN_PAIR_WIDEN(j)                                          \
  const uint16 u##j = TSR_LD32_PAIRS(w, wr##j + k);                    \
  const float16 we##j = as_float16(u##j << 16);                        \
  const float16 wo##j = as_float16(u##j & (uint16)(0xffff0000u));

__kernel void linear_bf16_bf16_r4_pairs(__global int* st, __global const uchar* x, long x_off,
                                        long ldx, __global const uchar* w, long w_off, long ldw,
                                        __global const uchar* bias, tsr_layout lb, int has_bias,
                                        __global uchar* y, tsr_layout ly, long T, long N, long K,
                                        long rows_per_item) {
  TSR_SKIP_IF_FAILED(st);
  const long n0 = (long)get_global_id(0) * TSR_LINEAR_COLS;
  const long r_begin = (long)get_global_id(1) * rows_per_item;
  if (n0 >= N || r_begin >= T) return;
  const long r_end = min(T, r_begin + rows_per_item);
  __global const float* xf = (__global const float*)x;
  const long wr0 = w_off + n0 * ldw;
  const long wr1 = w_off + min(n0 + 1, N - 1) * ldw;
  const long wr2 = w_off + min(n0 + 2, N - 1) * ldw;
  const long wr3 = w_off + min(n0 + 3, N - 1) * ldw;
  const long pf0 = (w_off + min(n0 + 4, N - 1) * ldw) * 2;
  const long pf1 = (w_off + min(n0 + 5, N - 1) * ldw) * 2;
  const long pf2 = (w_off + min(n0 + 6, N - 1) * ldw) * 2;
  const long pf3 = (w_off + min(n0 + 7, N - 1) * ldw) * 2;
  float b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f;
  if (has_bias) {
    const long bs = lb.strides[0];
    b0 = ld_bf16(bias, lb.offset + n0 * bs);
    b1 = ld_bf16(bias, lb.offset + min(n0 + 1, N - 1) * bs);
    b2 = ld_bf16(bias, lb.offset + min(n0 + 2, N - 1) * bs);
    b3 = ld_bf16(bias, lb.offset + min(n0 + 3, N - 1) * bs);
  }
  for (long r0 = r_begin; r0 < r_end; r0 += 4) {
    const long xr0 = x_off + r0 * ldx;
    const long xr1 = x_off + min(r0 + 1, r_end - 1) * ldx;
    const long xr2 = x_off + min(r0 + 2, r_end - 1) * ldx;
    const long xr3 = x_off + min(r0 + 3, r_end - 1) * ldx;
    const float16 z = (float16)(0.0f);
    float16 a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;
    float16 a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;
    long k = 0;
    for (; k + 32 <= K; k += 32) {
      const long kb = k * 2;
      TSR_PREFETCH_L2(w + pf0 + kb);
      TSR_PREFETCH_L2(w + pf1 + kb);
      TSR_PREFETCH_L2(w + pf2 + kb);
      TSR_PREFETCH_L2(w + pf3 + kb);
      TSR_LIN_PAIR_WIDEN(0)
      TSR_LIN_PAIR_WIDEN(1)
      TSR_LIN_PAIR_WIDEN(2)
      TSR_LIN_PAIR_WIDEN(3)
      TSR_LIN_PAIR_FMA(0)
      TSR_LIN_PAIR_FMA(1)
      TSR_LIN_PAIR_FMA(2)
      TSR_LIN_PAIR_FMA(3)
    }
    float s00 = tsr_hsum16(a00), s01 = tsr_hsum16(a01), s02 = tsr_hsum16(a02);
    float s03 = tsr_hsum16(a03), s10 = tsr_hsum16(a10), s11 = tsr_hsum16(a11);
    float s12 = tsr_hsum16(a12), s13 = tsr_hsum16(a13), s20 = tsr_hsum16(a20);
    float s21 = tsr_hsum16(a21), s22 = tsr_hsum16(a22), s23 = tsr_hsum16(a23);
    float s30 = tsr_hsum16(a30), s31 = tsr_hsum16(a31), s32 = tsr_hsum16(a32);
    float s33 = tsr_hsum16(a33);
    for (; k < K; ++k) {  // the tail, stored in order by the pack
      const float ws0 = ld_bf16(w, wr0 + k), ws1 = ld_bf16(w, wr1 + k);
      const float ws2 = ld_bf16(w, wr2 + k), ws3 = ld_bf16(w, wr3 + k);
      TSR_LIN_ROW_TAIL(f32, 4, 0)
      TSR_LIN_ROW_TAIL(f32, 4, 1)
      TSR_LIN_ROW_TAIL(f32, 4, 2)
      TSR_LIN_ROW_TAIL(f32, 4, 3)
    }
    TSR_LIN_ROW_STORE(bf16, 4, 0)
    TSR_LIN_ROW_STORE(bf16, 4, 1)
    TSR_LIN_ROW_STORE(bf16, 4, 2)
    TSR_LIN_ROW_STORE(bf16, 4, 3)
  }
}
