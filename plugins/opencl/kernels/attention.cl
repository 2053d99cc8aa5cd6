// Attention-side ops (host side: ops_attention.cc):
//   rope_<X>                     positions I32 [T], inv_freq F32 [R/2],
//                                q X [T, Hq, D], k X [T, Hk, D] -> q_out, k_out
//   kv_store_<X>                 k, v X [T, Hk, D], slots I32 [T]
//                                -> k_cache, v_cache X [S, Hk, D] in place
//   paged_attention_validate     checks query_start / seq_lens / block_table
//                                (one work-item, sequences in order: the
//                                first bad one is the reported error)
//   paged_attention_<X>          o X [T, Hq, D], one work-item per (row, head),
//                                any D and strides (q row and accumulator in
//                                __local memory)
//   paged_attention_<X>_d<D>     the same for D in {64, 128} and unit-stride
//                                q/K/V rows, in registers, 16 positions a step
// X in {f32, bf16}. All tensors are (buffer, tsr_layout) pairs. The host
// (ops_attention.cc) enqueues paged_attention_validate first, so the
// attention kernels may trust query_start, seq_lens and block_table.

// The raw storage of a dtype, for bit-exact copies.
typedef uint tsr_raw_f32;
typedef ushort tsr_raw_bf16;

inline long tsr_at1(tsr_layout l, long i) { return l.offset + i * l.strides[0]; }
inline long tsr_at3(tsr_layout l, long i, long j, long k) {
  return l.offset + i * l.strides[0] + j * l.strides[1] + k * l.strides[2];
}

// ---------------------------------------------------------------------------
// rope: work-item (i, t). For i < R/2 it computes the angle positions[t] *
// inv_freq[i] once (in f32) and rotates pair i of every q and k head of
// token t (NEOX: dims i, i + R/2; interleaved: 2i, 2i + 1). Work-items
// i = R/2 .. R/2 + (D - R) - 1 copy dim R + (i - R/2) of every head. Each
// element is read and written by one work-item, so q_out == q is safe.
// ---------------------------------------------------------------------------

#define TSR_DEFINE_ROPE(X)                                                                      \
  inline void rope_rotate_##X(__global const uchar* in, tsr_layout li,                          \
                              __global uchar* out, tsr_layout lo, long t, long a, long b,      \
                              float c, float s) {                                              \
    for (long h = 0; h < li.shape[1]; ++h) {                                                   \
      const float x1 = ld_##X(in, tsr_at3(li, t, h, a));                                       \
      const float x2 = ld_##X(in, tsr_at3(li, t, h, b));                                       \
      st_##X(out, tsr_at3(lo, t, h, a), x1 * c - x2 * s);                                      \
      st_##X(out, tsr_at3(lo, t, h, b), x2 * c + x1 * s);                                      \
    }                                                                                          \
  }                                                                                            \
  inline void rope_copy_##X(__global const uchar* in, tsr_layout li, __global uchar* out,      \
                            tsr_layout lo, long t, long d) {                                   \
    for (long h = 0; h < li.shape[1]; ++h) {                                                   \
      ((__global tsr_raw_##X*)out)[tsr_at3(lo, t, h, d)] =                                     \
          ((__global const tsr_raw_##X*)in)[tsr_at3(li, t, h, d)];                             \
    }                                                                                          \
  }                                                                                            \
  __kernel void rope_##X(__global int* st, __global const uchar* pos, tsr_layout lp,            \
                         __global const uchar* inv, tsr_layout linv, __global const uchar* q,  \
                         tsr_layout lq, __global const uchar* k, tsr_layout lk,                \
                         __global uchar* qo, tsr_layout lqo, __global uchar* ko,               \
                         tsr_layout lko, int neox) {                                           \
    TSR_SKIP_IF_FAILED(st);                                                                    \
    const long i = get_global_id(0), t = get_global_id(1);                                     \
    const long half_r = linv.shape[0], d = lq.shape[2];                                        \
    if (t >= lq.shape[0] || i >= d - half_r) return;                                           \
    if (i < half_r) {                                                                          \
      const float angle = (float)ld_i32(pos, tsr_at1(lp, t)) * ld_f32(inv, tsr_at1(linv, i));  \
      const float c = cos(angle), s = sin(angle);                                              \
      const long a = neox ? i : 2 * i, b = neox ? i + half_r : 2 * i + 1;                      \
      rope_rotate_##X(q, lq, qo, lqo, t, a, b, c, s);                                          \
      rope_rotate_##X(k, lk, ko, lko, t, a, b, c, s);                                          \
    } else {                                                                                   \
      const long dim = half_r + i; /* 2 * half_r + (i - half_r) */                             \
      rope_copy_##X(q, lq, qo, lqo, t, dim);                                                   \
      rope_copy_##X(k, lk, ko, lko, t, dim);                                                   \
    }                                                                                          \
  }

TSR_DEFINE_ROPE(f32)
TSR_DEFINE_ROPE(bf16)

// ---------------------------------------------------------------------------
// kv_store: work-item (e, t) copies element e = hk * D + d of token t's k and
// v rows into row slots[t] of the caches (bit-exact). slots[t] == -1 skips
// the token; any other slot outside [0, S) fails the stream (reported once
// per token, by its e == 0 work-item; the first report wins). Tokens with
// valid slots may still be written when another token's slot is bad: the
// stream fails either way, and its later work is skipped.
// ---------------------------------------------------------------------------

#define TSR_DEFINE_KV_STORE(X)                                                                  \
  __kernel void kv_store_##X(__global int* st, __global const uchar* k, tsr_layout lk,          \
                             __global const uchar* v, tsr_layout lv,                           \
                             __global const uchar* slots, tsr_layout ls, __global uchar* kc,   \
                             tsr_layout lkc, __global uchar* vc, tsr_layout lvc) {             \
    TSR_SKIP_IF_FAILED(st);                                                                    \
    const long e = get_global_id(0), t = get_global_id(1);                                     \
    const long hk = lk.shape[1], d = lk.shape[2];                                              \
    if (t >= lk.shape[0] || e >= hk * d) return;                                               \
    const long slot = ld_i32(slots, tsr_at1(ls, t));                                           \
    if (slot == -1) return;                                                                    \
    const long s_count = lkc.shape[0];                                                         \
    if (slot < 0 || slot >= s_count) {                                                         \
      if (e == 0) tsr_fail(st, TSR_FAIL_KV_SLOT, (int)t, (int)slot, (int)s_count, 0);          \
      return;                                                                                  \
    }                                                                                          \
    const long h = e / d, i = e % d;                                                           \
    ((__global tsr_raw_##X*)kc)[tsr_at3(lkc, slot, h, i)] =                                    \
        ((__global const tsr_raw_##X*)k)[tsr_at3(lk, t, h, i)];                                \
    ((__global tsr_raw_##X*)vc)[tsr_at3(lvc, slot, h, i)] =                                    \
        ((__global const tsr_raw_##X*)v)[tsr_at3(lv, t, h, i)];                                \
  }

TSR_DEFINE_KV_STORE(f32)
TSR_DEFINE_KV_STORE(bf16)

// ---------------------------------------------------------------------------
// paged_attention
// ---------------------------------------------------------------------------

// One work-item walks the B sequences in order and fails the stream at the
// first bad one, with the checks (and order) of the cpu plugin:
// 0 <= query_start[b] <= query_start[b+1] <= T; seq_lens[b] >= new tokens;
// seq_lens[b] <= P * page_size; every page the sequence uses lies in [0, S).
__kernel void paged_attention_validate(__global int* st, __global const uchar* table,
                                       tsr_layout lt, __global const uchar* lens,
                                       tsr_layout ll, __global const uchar* starts,
                                       tsr_layout lqs, long t_count, long s_count,
                                       int page_size) {
  TSR_SKIP_IF_FAILED(st);
  if (get_global_id(0) != 0) return;
  const long b_count = ll.shape[0], pages = lt.shape[1];
  for (long b = 0; b < b_count; ++b) {
    const long lo = ld_i32(starts, tsr_at1(lqs, b));
    const long hi = ld_i32(starts, tsr_at1(lqs, b + 1));
    const long len = ld_i32(lens, tsr_at1(ll, b));
    if (lo < 0 || hi < lo || hi > t_count) {
      tsr_fail(st, TSR_FAIL_ATTN_QUERY_RANGE, (int)b, (int)lo, (int)hi, (int)t_count);
      return;
    }
    if (len < hi - lo) {
      tsr_fail(st, TSR_FAIL_ATTN_LEN_SHORT, (int)b, (int)(hi - lo), (int)len, 0);
      return;
    }
    if (len > pages * page_size) {
      tsr_fail(st, TSR_FAIL_ATTN_LEN_TABLE, (int)b, (int)len, (int)pages, page_size);
      return;
    }
    for (long p = 0; p * page_size < len; ++p) {
      const long page = ld_i32(table, lt.offset + b * lt.strides[0] + p * lt.strides[1]);
      const long used = min((long)page_size, len - p * page_size);
      if (page < 0 || page * page_size + used > s_count) {
        tsr_fail(st, TSR_FAIL_ATTN_PAGE, (int)b, (int)p, (int)page, (int)s_count);
        return;
      }
    }
  }
}

// The sequence that query row t belongs to: the largest b in [0, B] with
// query_start[b] <= t, or -1 when t is before query_start[0] or past
// query_start[B] (rows left untouched). query_start was validated, so it is
// non-decreasing.
inline long tsr_attn_sequence(__global const uchar* starts, tsr_layout lqs, long b_count,
                              long t) {
  if (ld_i32(starts, tsr_at1(lqs, 0)) > t) return -1;
  long lo = 0, hi = b_count;
  while (lo < hi) {
    const long mid = (lo + hi + 1) / 2;
    if (ld_i32(starts, tsr_at1(lqs, mid)) <= t) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo == b_count ? -1 : lo;
}

// 8 consecutive elements from element `off`, widened to float.
#define TSR_LD8_f32(b, off) vload8(0, (__global const float*)(b) + (off))
#define TSR_LD8_bf16(b, off) \
  as_float8(convert_uint8(vload8(0, (__global const ushort*)(b) + (off))) << 16)

inline float tsr_hsum8(float8 v) {
  float4 a = v.lo + v.hi;
  float2 b = a.lo + a.hi;
  return b.x + b.y;
}

// Work-item g = t * Hq + h computes o[t, h]: q row in f32 in its slice of
// `scratch` (2 * D floats per work-item of the group: q then the output
// accumulator), then one pass over positions start..p with an online
// softmax (running max m, running sum l). K/V rows with a unit inner stride
// are read with 8-wide vector loads.
#define TSR_DEFINE_PAGED_ATTENTION(X)                                                           \
  inline float attn_dot_##X(__local const float* qf, __global const uchar* kc, long off,       \
                            long stride, long d) {                                             \
    long i = 0;                                                                                \
    float s = 0.0f;                                                                            \
    if (stride == 1) {                                                                         \
      float8 acc = (float8)(0.0f);                                                             \
      for (; i + 8 <= d; i += 8) acc = fma(vload8(0, qf + i), TSR_LD8_##X(kc, off + i), acc);  \
      s = tsr_hsum8(acc);                                                                      \
    }                                                                                          \
    for (; i < d; ++i) s = fma(qf[i], ld_##X(kc, off + i * stride), s);                        \
    return s;                                                                                  \
  }                                                                                            \
  inline void attn_axpy_##X(__local float* acc, float weight, __global const uchar* vc,         \
                            long off, long stride, long d) {                                   \
    long i = 0;                                                                                \
    if (stride == 1) {                                                                         \
      for (; i + 8 <= d; i += 8) {                                                             \
        vstore8(fma((float8)(weight), TSR_LD8_##X(vc, off + i), vload8(0, acc + i)), 0,        \
                acc + i);                                                                      \
      }                                                                                        \
    }                                                                                          \
    for (; i < d; ++i) acc[i] = fma(weight, ld_##X(vc, off + i * stride), acc[i]);             \
  }                                                                                            \
  __kernel void paged_attention_##X(                                                           \
      __global int* st, __global const uchar* q, tsr_layout lq, __global const uchar* kc,      \
      tsr_layout lk, __global const uchar* vc, tsr_layout lv, __global const uchar* table,     \
      tsr_layout lt, __global const uchar* lens, tsr_layout ll,                                \
      __global const uchar* starts, tsr_layout lqs, __global uchar* o, tsr_layout lo,          \
      int page_size, int window, float scale, float cap, __local float* scratch) {             \
    TSR_SKIP_IF_FAILED(st);                                                                    \
    const long t_count = lq.shape[0], hq = lq.shape[1], d = lq.shape[2];                       \
    const long g = get_global_id(0);                                                           \
    if (g >= t_count * hq) return;                                                             \
    const long t = g / hq, h = g % hq;                                                         \
    const long b = tsr_attn_sequence(starts, lqs, ll.shape[0], t);                             \
    if (b < 0) return;                                                                         \
    const long first = ld_i32(starts, tsr_at1(lqs, b));                                        \
    const long fresh = ld_i32(starts, tsr_at1(lqs, b + 1)) - first;                            \
    const long p = ld_i32(lens, tsr_at1(ll, b)) - fresh + (t - first);                         \
    const long start = window > 0 ? max(0L, p - window + 1) : 0;                               \
    const long kvh = h / (hq / lk.shape[1]);                                                   \
    __local float* qf = scratch + get_local_id(0) * 2 * d;                                     \
    __local float* acc = qf + d;                                                               \
    for (long i = 0; i < d; ++i) {                                                             \
      qf[i] = ld_##X(q, tsr_at3(lq, t, h, i));                                                 \
      acc[i] = 0.0f;                                                                           \
    }                                                                                          \
    const long trow = lt.offset + b * lt.strides[0];                                           \
    float m = -INFINITY, l = 0.0f;                                                             \
    long slot_base = 0;                                                                        \
    for (long j = start; j <= p; ++j) {                                                        \
      const long in_page = j % page_size;                                                      \
      if (j == start || in_page == 0) {                                                        \
        slot_base = (long)ld_i32(table, trow + (j / page_size) * lt.strides[1]) * page_size;   \
      }                                                                                        \
      const long slot = slot_base + in_page;                                                   \
      float score =                                                                            \
          scale * attn_dot_##X(qf, kc, tsr_at3(lk, slot, kvh, 0), lk.strides[2], d);           \
      if (cap > 0.0f) score = cap * tanh(score / cap);                                         \
      float weight;                                                                            \
      if (score > m) {                                                                         \
        const float correction = exp(m - score); /* 0 when m = -inf */                         \
        l *= correction;                                                                       \
        for (long i = 0; i < d; ++i) acc[i] *= correction;                                     \
        m = score;                                                                             \
        weight = 1.0f;                                                                         \
      } else {                                                                                 \
        weight = exp(score - m);                                                               \
      }                                                                                        \
      l += weight;                                                                             \
      attn_axpy_##X(acc, weight, vc, tsr_at3(lv, slot, kvh, 0), lv.strides[2], d);             \
    }                                                                                          \
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;                                              \
    for (long i = 0; i < d; ++i) st_##X(o, tsr_at3(lo, t, h, i), acc[i] * inv);               \
  }

TSR_DEFINE_PAGED_ATTENTION(f32)
TSR_DEFINE_PAGED_ATTENTION(bf16)

// ---------------------------------------------------------------------------
// paged_attention_<X>_d<D>, D in {64, 128}: the same result for q, k_cache
// and v_cache with unit inner strides, with the work-item's q row and
// output accumulator in registers (D / 16 float16 each) and positions taken
// 16 at a time: 16 scores, then one vector exp for the block and a single
// rescale of the accumulator per block (the block form of online softmax).
// Positions past p in the last block score -inf and weigh 0.
// ---------------------------------------------------------------------------

#define TSR_ATT_LD16_f32(b, off) vload16(0, (__global const float*)(b) + (off))
#define TSR_ATT_LD16_bf16(b, off) \
  as_float16(convert_uint16(vload16(0, (__global const ushort*)(b) + (off))) << 16)

inline float tsr_att_hsum16(float16 v) {
  float8 a = v.lo + v.hi;
  float4 b = a.lo + a.hi;
  float2 c = b.lo + b.hi;
  return c.x + c.y;
}
inline float tsr_att_hmax16(float16 v) {
  float8 a = fmax(v.lo, v.hi);
  float4 b = fmax(a.lo, a.hi);
  float2 c = fmax(b.lo, b.hi);
  return fmax(c.x, c.y);
}

#define TSR_DEFINE_PAGED_ATTENTION_D(X, DD)                                                    \
  __kernel void paged_attention_##X##_d##DD(                                                   \
      __global int* st, __global const uchar* q, tsr_layout lq, __global const uchar* kc,      \
      tsr_layout lk, __global const uchar* vc, tsr_layout lv, __global const uchar* table,     \
      tsr_layout lt, __global const uchar* lens, tsr_layout ll,                                \
      __global const uchar* starts, tsr_layout lqs, __global uchar* o, tsr_layout lo,          \
      int page_size, int window, float scale, float cap) {                                     \
    TSR_SKIP_IF_FAILED(st);                                                                    \
    const long t_count = lq.shape[0], hq = lq.shape[1];                                        \
    const long g = get_global_id(0);                                                           \
    if (g >= t_count * hq) return;                                                             \
    const long t = g / hq, h = g % hq;                                                         \
    const long b = tsr_attn_sequence(starts, lqs, ll.shape[0], t);                             \
    if (b < 0) return;                                                                         \
    const long first = ld_i32(starts, tsr_at1(lqs, b));                                        \
    const long fresh = ld_i32(starts, tsr_at1(lqs, b + 1)) - first;                            \
    const long p = ld_i32(lens, tsr_at1(ll, b)) - fresh + (t - first);                         \
    const long start = window > 0 ? max(0L, p - window + 1) : 0;                               \
    const long kvh = h / (hq / lk.shape[1]);                                                   \
    const long trow = lt.offset + b * lt.strides[0];                                           \
    const long qoff = lq.offset + t * lq.strides[0] + h * lq.strides[1];                       \
    const long khead = lk.offset + kvh * lk.strides[1], vhead = lv.offset + kvh * lv.strides[1]; \
    float16 qv[DD / 16], acc[DD / 16];                                                         \
    _Pragma("unroll") for (int v = 0; v < DD / 16; ++v) {                                      \
      qv[v] = TSR_ATT_LD16_##X(q, qoff + 16 * v);                                              \
      acc[v] = (float16)(0.0f);                                                                \
    }                                                                                          \
    float m = -INFINITY, l = 0.0f;                                                             \
    for (long j0 = start; j0 <= p; j0 += 16) {                                                 \
      float sc[16];                                                                            \
      long slot[16];                                                                           \
      _Pragma("unroll") for (int u = 0; u < 16; ++u) {                                         \
        const long j = min(j0 + u, p);                                                         \
        slot[u] = (long)ld_i32(table, trow + (j / page_size) * lt.strides[1]) * page_size +    \
                  j % page_size;                                                               \
        const long koff = khead + slot[u] * lk.strides[0];                                     \
        float16 s = qv[0] * TSR_ATT_LD16_##X(kc, koff);                                        \
        _Pragma("unroll") for (int v = 1; v < DD / 16; ++v) {                                  \
          s = fma(qv[v], TSR_ATT_LD16_##X(kc, koff + 16 * v), s);                              \
        }                                                                                      \
        float score = scale * tsr_att_hsum16(s);                                               \
        if (cap > 0.0f) score = cap * tanh(score / cap);                                       \
        sc[u] = j0 + u <= p ? score : -INFINITY;                                               \
      }                                                                                        \
      const float16 s16 = vload16(0, sc);                                                      \
      const float m_new = fmax(m, tsr_att_hmax16(s16));                                        \
      const float correction = exp(m - m_new); /* 0 while m = -inf */                          \
      const float16 w16 = exp(s16 - m_new);                                                    \
      l = l * correction + tsr_att_hsum16(w16);                                                \
      m = m_new;                                                                               \
      float wt[16];                                                                            \
      vstore16(w16, 0, wt);                                                                    \
      _Pragma("unroll") for (int v = 0; v < DD / 16; ++v) acc[v] *= correction;                \
      const long valid = min(16L, p - j0 + 1);                                                 \
      _Pragma("unroll") for (int u = 0; u < 16; ++u) {                                         \
        if (u >= valid) break;                                                                 \
        const long voff = vhead + slot[u] * lv.strides[0];                                     \
        _Pragma("unroll") for (int v = 0; v < DD / 16; ++v) {                                  \
          acc[v] = fma((float16)(wt[u]), TSR_ATT_LD16_##X(vc, voff + 16 * v), acc[v]);         \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;                                              \
    const long ooff = lo.offset + t * lo.strides[0] + h * lo.strides[1];                       \
    const long os = lo.strides[2];                                                             \
    _Pragma("unroll") for (int v = 0; v < DD / 16; ++v) {                                      \
      float r[16];                                                                             \
      vstore16(acc[v] * inv, 0, r);                                                            \
      for (int i = 0; i < 16; ++i) st_##X(o, ooff + (16 * v + i) * os, r[i]);                  \
    }                                                                                          \
  }

TSR_DEFINE_PAGED_ATTENTION_D(f32, 64)
TSR_DEFINE_PAGED_ATTENTION_D(f32, 128)
TSR_DEFINE_PAGED_ATTENTION_D(bf16, 64)
TSR_DEFINE_PAGED_ATTENTION_D(bf16, 128)
