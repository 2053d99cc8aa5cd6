// argmax, sample and logprobs: one work-group of TSR_SMP_GROUP items per row
// of logits [B, V] (V up to ~150k), each item owning the same runs of
// columns in every pass over the row (TSR_SMP_FOR_ELEMENTS).
//
// Rows are ordered as the sample contract orders them: by value descending,
// ties by lower id. A non-NaN float maps to a 32-bit key whose unsigned
// order is the float order (-0 counts as +0), so "the k-th largest value",
// "the value where the probability mass reaches p" etc. are found by a
// search over keys: each pass sorts the elements of the candidate key
// range into 16 buckets (the first pass by value, later ones by key bits),
// sums their count or probability mass per bucket and narrows the range to
// the smallest and largest key of the chosen bucket, until one key is
// left (about log16(V) passes). Ties at the found key are split by id with
// a second search, over ids. Every set the sample op keeps (top_k, top_p,
// min_p) is a prefix of the order, written (tau, cut): the ids with
// key > tau and those with key == tau, id <= cut. NaN logits are skipped
// (never chosen, never counted).
//
// Sums accumulate in double where the device has cl_khr_fp64, else in f32.

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double tsr_smp_acc;
#else
typedef float tsr_smp_acc;
#endif

#define TSR_SMP_GROUP 128  // work-items per row; kSamplingGroup in ops_sampling.cc
// Each item visits runs of TSR_SMP_RUN consecutive elements, the runs
// strided by the group (whole cache lines per item on CPUs, still mostly
// coalesced on GPUs); within an item, ids ascend.
#define TSR_SMP_RUN 16
#define TSR_SMP_FOR_ELEMENTS(i, first, last)                                                   \
  for (long run_ = (first) + (long)get_local_id(0) * TSR_SMP_RUN; run_ <= (last);              \
       run_ += TSR_SMP_GROUP * TSR_SMP_RUN)                                                    \
    for (long i = run_, end_ = min(run_ + TSR_SMP_RUN - 1, (long)(last)); i <= end_; ++i)
#define TSR_SMP_BUCKET_BITS 4
#define TSR_SMP_BUCKETS (1 << TSR_SMP_BUCKET_BITS)
#define TSR_SMP_NO_KEY 0xffffffffu  // above every key of a non-NaN float

// Whether the stream has failed, the same for the whole group (*flag is
// __local). Kernels never return early: every item must reach every
// barrier (PoCL fails otherwise), so a failed stream empties the loops.
inline int tsr_smp_failed(__global const int* st, __local int* flag) {
  if (get_local_id(0) == 0) *flag = st[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return *flag != 0;
}

// The order-preserving key of a non-NaN float.
inline uint tsr_smp_key(float v) {
  uint u = as_uint(v);
  if ((u & 0x7fffffffu) == 0u) u = 0u;  // -0 == +0
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
inline float tsr_smp_unkey(uint k) {
  return as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

inline float tsr_smp_ld(__global const uchar* x, long i, int bf16) {
  return bf16 ? ld_bf16(x, i) : ld_f32(x, i);
}

// Unnormalised probability of logit v: exp((v - max) / temperature), in
// (0, 1]. Every pass computes it with this one expression, so a value gets
// the same probability wherever it is evaluated.
inline float tsr_smp_prob(float v, float m, float t) { return exp((v - m) / t); }

// Whether (key k, id i) lies in the prefix (tau, cut).
inline int tsr_smp_kept(uint k, long i, uint tau, long cut) {
  return k > tau || (k == tau && i <= cut);
}

// The largest key of row x[base + i * cs], i < n, and the lowest id holding
// it, over the non-NaN values; with `after`, only over the values that come
// after (pk, pi) in the order (key descending, id ascending). *best_i is -1
// when there are none. Also the smallest key (TSR_SMP_NO_KEY when none).
// lkey: 2 * TSR_SMP_GROUP, lidx: TSR_SMP_GROUP.
inline void tsr_smp_best(__global const uchar* x, long base, long cs, long n, int bf16,
                         int after, uint pk, long pi, __local uint* lkey, __local long* lidx,
                         uint* best_k, long* best_i, uint* min_k) {
  const int lid = get_local_id(0);
  uint kmax = 0u, kmin = TSR_SMP_NO_KEY;
  long imax = -1;
  TSR_SMP_FOR_ELEMENTS(i, 0, n - 1) {
    float v = tsr_smp_ld(x, base + i * cs, bf16);
    if (isnan(v)) continue;
    uint k = tsr_smp_key(v);
    if (after && !(k < pk || (k == pk && i > pi))) continue;
    if (imax < 0 || k > kmax) {
      kmax = k;
      imax = i;
    }
    kmin = min(kmin, k);
  }
  lkey[lid] = kmax;
  lkey[TSR_SMP_GROUP + lid] = kmin;
  lidx[lid] = imax;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = TSR_SMP_GROUP / 2; s > 0; s >>= 1) {
    if (lid < s) {
      uint ko = lkey[lid + s];
      long io = lidx[lid + s];
      if (io >= 0 && (lidx[lid] < 0 || ko > lkey[lid] || (ko == lkey[lid] && io < lidx[lid]))) {
        lkey[lid] = ko;
        lidx[lid] = io;
      }
      lkey[TSR_SMP_GROUP + lid] = min(lkey[TSR_SMP_GROUP + lid], lkey[TSR_SMP_GROUP + lid + s]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *best_k = lkey[0];
  *best_i = lidx[0];
  *min_k = lkey[TSR_SMP_GROUP];
  barrier(CLK_LOCAL_MEM_FENCE);
}

// The work-group sum of v (all items get it). lacc: TSR_SMP_GROUP.
inline tsr_smp_acc tsr_smp_sum(tsr_smp_acc v, __local tsr_smp_acc* lacc) {
  const int lid = get_local_id(0);
  lacc[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = TSR_SMP_GROUP / 2; s > 0; s >>= 1) {
    if (lid < s) lacc[lid] += lacc[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  tsr_smp_acc total = lacc[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

// How many ties of probability q, after mass `above`, bring the cumulative
// mass to the target: the smallest r >= 1 with above + r * q >= target
// (> target when strict), given d = target - above. n + 1 means all.
inline long tsr_smp_ties_needed(tsr_smp_acc d, float q, int strict, long n) {
  if (!(q > 0.0f)) return n + 1;
  tsr_smp_acc r = d / (tsr_smp_acc)q;
  r = strict ? floor(r) + 1 : ceil(r);
  if (!(r >= 1)) return 1;  // also NaN
  return r > (tsr_smp_acc)(n + 1) ? n + 1 : (long)r;
}

// The sample op runs as a sequence of radix searches, one pass over the
// row per loop iteration of sample_f32 (a single loop keeps the kernel's
// barriers in one simple place, which CPU OpenCL compilers need). Stages:
#define TSR_SMP_TOPK 0      // the top_k-th largest key (counts)
#define TSR_SMP_TOPK_TIE 1  // the id ending the top_k prefix among its ties
#define TSR_SMP_TOPP 2      // the key where the mass reaches top_p * total
#define TSR_SMP_TOPP_TIE 3  // the id ending the top_p prefix among its ties
#define TSR_SMP_MINP 4      // the smallest key with p >= min_p * p_max
#define TSR_SMP_DRAW 5      // the key where the kept mass exceeds u * kept total
#define TSR_SMP_DRAW_TIE 6  // the drawn id among its ties
#define TSR_SMP_DONE 7
// What a search sums per element.
#define TSR_SMP_W_COUNT 0  // 1
#define TSR_SMP_W_PROB 1   // the unnormalised probability
#define TSR_SMP_W_MINP 2   // 1 when the probability is >= the min_p threshold

// A search finds the largest search key t in [lo, hi] with S(t) >= target
// (> target when strict), S(t) = the sum of weights of the filtered
// elements whose search key is >= t; target = min(goal, S(lo)) for counts
// and goal * S(lo) otherwise. The search key is the value's key, or for a
// tie search (by_id) n - 1 - id over the elements whose key is tie_tau, so
// that the largest t names the lowest ids. Filter: the prefix (f_tau, f_cut).
typedef struct {
  int stage;
  // The current search.
  int weight, by_id, strict, pass;
  // Whether this item's list segment holds every element of its share of
  // the row with key >= list_lo (list_n of them, NaN-free), which every
  // search but a tie search may narrow to its filter.
  int list_ok, list_n;
  uint list_lo;
  uint lo, hi, tie_tau, f_tau;
  long f_cut;
  tsr_smp_acc goal, above, target, total;
  // Results so far: the kept prefix (keep_tau, keep_cut), a found key and
  // how many of its ties to take, the drawn id.
  uint keep_tau, found_tau;
  long keep_cut, need, result;
  // The row.
  uint kmin, kmax;
  long imax, n;
  float m, t, top_p, min_p, u, min_p_prob;
  int top_k;
} tsr_smp_state;

inline void tsr_smp_start(tsr_smp_state* s, int weight, int by_id, int strict, tsr_smp_acc goal,
                          uint lo, uint hi, uint f_tau, long f_cut) {
  s->weight = weight;
  s->by_id = by_id;
  // A tie search follows the search that found its key: the list holds
  // the ties. A value search can use the list when it holds its range
  // (which holds for the searches after the first: each starts at or above
  // the kept prefix's key, which no earlier search ends below).
  if (!by_id && lo < s->list_lo) s->list_ok = 0;
  s->strict = strict;
  s->goal = goal;
  s->lo = lo;
  s->hi = hi;
  s->f_tau = f_tau;
  s->f_cut = f_cut;
  s->pass = 0;
  s->above = 0;
  s->target = goal;
  s->total = 0;
}

// Narrows *keep to the prefix (tau, cut) when that one is shorter.
inline void tsr_smp_intersect(tsr_smp_state* s, uint tau, long cut) {
  if (tau > s->keep_tau || (tau == s->keep_tau && cut < s->keep_cut)) {
    s->keep_tau = tau;
    s->keep_cut = cut;
  }
}

// Starts the search of s->stage, skipping stages the row's parameters
// switch off.
inline void tsr_smp_configure(tsr_smp_state* s) {
  const long n = s->n;
  for (;;) {
    switch (s->stage) {
      case TSR_SMP_TOPK:
        if (s->top_k > 0 && s->top_k < n) {
          tsr_smp_start(s, TSR_SMP_W_COUNT, 0, 0, (tsr_smp_acc)s->top_k, s->kmin, s->kmax,
                        s->kmin, n);
          return;
        }
        s->stage = TSR_SMP_TOPP;
        break;
      case TSR_SMP_TOPK_TIE:
      case TSR_SMP_TOPP_TIE:
        tsr_smp_start(s, TSR_SMP_W_COUNT, 1, 0, (tsr_smp_acc)s->need, 0u, (uint)(n - 1), s->kmin,
                      n);
        s->tie_tau = s->found_tau;
        return;
      case TSR_SMP_TOPP:
        if (s->top_p < 1.0f) {
          tsr_smp_start(s, TSR_SMP_W_PROB, 0, 0, (tsr_smp_acc)s->top_p, s->kmin, s->kmax,
                        s->kmin, n);
          return;
        }
        s->stage = TSR_SMP_MINP;
        break;
      case TSR_SMP_MINP:
        if (s->min_p > 0.0f) {
          s->min_p_prob = s->min_p * tsr_smp_prob(s->m, s->m, s->t);
          // Only keys in the kept prefix matter.
          tsr_smp_start(s, TSR_SMP_W_MINP, 0, 0, (tsr_smp_acc)1, s->keep_tau, s->kmax, s->kmin, n);
          return;
        }
        s->stage = TSR_SMP_DRAW;
        break;
      case TSR_SMP_DRAW:
        // The first id always stays.
        if (s->keep_tau == s->kmax && s->keep_cut < s->imax) s->keep_cut = s->imax;
        tsr_smp_start(s, TSR_SMP_W_PROB, 0, 1, (tsr_smp_acc)s->u, s->keep_tau, s->kmax, s->keep_tau,
                      s->keep_cut);
        return;
      case TSR_SMP_DRAW_TIE:
        tsr_smp_start(s, TSR_SMP_W_COUNT, 1, 0, (tsr_smp_acc)s->need, 0u, (uint)(n - 1),
                      s->keep_tau, s->keep_cut);
        s->tie_tau = s->found_tau;
        return;
      default:
        return;  // TSR_SMP_DONE
    }
  }
}

// Takes the result of the finished search of s->stage (found: the key tau
// with S(tau + 1) = s->above) and starts the next one.
inline void tsr_smp_finish(tsr_smp_state* s, int found, uint tau) {
  const long n = s->n;
  switch (s->stage) {
    case TSR_SMP_TOPK:
      s->found_tau = tau;
      s->need = (long)(s->target - s->above);
      s->stage = found ? TSR_SMP_TOPK_TIE : TSR_SMP_TOPP;
      break;
    case TSR_SMP_TOPK_TIE:
      if (found) tsr_smp_intersect(s, s->found_tau, n - 1 - (long)tau);
      s->stage = TSR_SMP_TOPP;
      break;
    case TSR_SMP_TOPP:
      s->found_tau = tau;
      s->need = tsr_smp_ties_needed(s->target - s->above,
                                    tsr_smp_prob(tsr_smp_unkey(tau), s->m, s->t), 0, n);
      s->stage = found ? TSR_SMP_TOPP_TIE : TSR_SMP_MINP;
      break;
    case TSR_SMP_TOPP_TIE:
      if (found) tsr_smp_intersect(s, s->found_tau, n - 1 - (long)tau);
      s->stage = TSR_SMP_MINP;
      break;
    case TSR_SMP_MINP:
      // No value reaches the threshold (min_p > 1): only the first id.
      if (found && s->total > 0) {
        tsr_smp_intersect(s, tau, n);
      } else {
        tsr_smp_intersect(s, s->kmax, s->imax);
      }
      s->stage = TSR_SMP_DRAW;
      break;
    case TSR_SMP_DRAW:
      if (found) {
        s->found_tau = tau;
        s->need = tsr_smp_ties_needed(s->target - s->above,
                                      tsr_smp_prob(tsr_smp_unkey(tau), s->m, s->t), 1, n);
      } else {
        // Rounding left no id above the target: the last kept id.
        s->found_tau = s->keep_tau;
        s->need = n + 1;
      }
      s->stage = TSR_SMP_DRAW_TIE;
      break;
    case TSR_SMP_DRAW_TIE:
      if (found) s->result = n - 1 - (long)tau;
      s->stage = TSR_SMP_DONE;
      break;
  }
  tsr_smp_configure(s);
}

// argmax_<x>: logits X [B, V] -> ids I32 [B]; ties to the lowest index,
// NaNs skipped (0 for a row without a number).
#define TSR_DEFINE_ARGMAX(X, BF16)                                                            \
  __kernel __attribute__((reqd_work_group_size(TSR_SMP_GROUP, 1, 1))) void argmax_##X(        \
      __global int* st, __global const uchar* x, tsr_layout lx, __global uchar* ids,          \
      tsr_layout li) {                                                                        \
    __local uint lkey[2 * TSR_SMP_GROUP];                                                     \
    __local long lidx[TSR_SMP_GROUP];                                                         \
    __local int failed;                                                                       \
    const int skip = tsr_smp_failed(st, &failed);                                            \
    const long row = get_group_id(0);                                                         \
    uint kmax, kmin;                                                                          \
    long imax;                                                                                \
    tsr_smp_best(x, lx.offset + row * lx.strides[0], lx.strides[1], skip ? 0 : lx.shape[1],   \
                 BF16, 0, 0u, 0, lkey, lidx, &kmax, &imax, &kmin);                            \
    if (!skip && get_local_id(0) == 0) {                                                      \
      st_i32(ids, li.offset + row * li.strides[0], (int)max(imax, 0L));                       \
    }                                                                                         \
  }
TSR_DEFINE_ARGMAX(f32, 0)
TSR_DEFINE_ARGMAX(bf16, 1)

// The bucket of element (i, v) in a pass of the search over [lo, hi]
// (by_id, tie_tau, filter (f_tau, f_cut)), -1 when it does not count; its
// search key in *sk. Buckets split the search keys into runs of 2^shift
// from lo, or with by_value the values into 16 equal parts from vlo.
// Takes scalars so the caller's loop keeps them in registers.
inline int tsr_smp_bucket(long i, float v, long n, uint lo, uint hi, int shift, int by_value,
                          float vlo, float vscale, int by_id, uint tie_tau, uint f_tau, long f_cut,
                          uint* sk) {
  if (isnan(v)) return -1;
  uint k = tsr_smp_key(v);
  *sk = by_id ? (uint)(n - 1 - i) : k;
  if (*sk < lo || *sk > hi || (by_id && k != tie_tau) || !tsr_smp_kept(k, i, f_tau, f_cut)) {
    return -1;
  }
  if (by_value) return clamp((int)((v - vlo) * vscale), 0, TSR_SMP_BUCKETS - 1);
  return (int)((*sk - lo) >> shift);
}

// The weight of an element of probability q (unused for counts).
inline tsr_smp_acc tsr_smp_weight(int weight, float q, float min_p_prob) {
  if (weight == TSR_SMP_W_COUNT) return 1;
  return weight == TSR_SMP_W_PROB ? (tsr_smp_acc)q : (tsr_smp_acc)(q >= min_p_prob);
}

// sample_f32: logits F32 [B, V], temperature F32 [B], top_k I32 [B],
// top_p F32 [B], min_p F32 [B], uniform F32 [B] -> ids I32 [B].
// list: scratch of B * TSR_SMP_GROUP * list_cap (id, value, probability)
// int triples. Each item lists the elements of its share of the row that
// later passes and searches still need (key >= the current range's
// floor), in visiting order, and visits only those while they fit
// (list_cap entries; the sums come out the same either way). With
// list_cap >= the item's share of the row, each search reads the row at
// most once and most read it not at all.
__kernel __attribute__((reqd_work_group_size(TSR_SMP_GROUP, 1, 1))) void sample_f32(
    __global int* st, __global const uchar* x, tsr_layout lx, __global const uchar* temperature,
    tsr_layout lt, __global const uchar* top_k, tsr_layout lk, __global const uchar* top_p,
    tsr_layout lp, __global const uchar* min_p, tsr_layout lm, __global const uchar* uniform,
    tsr_layout lu, __global uchar* ids, tsr_layout li, __global int* list, int list_cap) {
  __local uint lkey[2 * TSR_SMP_GROUP];
  __local long lidx[TSR_SMP_GROUP];
  __local tsr_smp_acc lacc[TSR_SMP_GROUP * (TSR_SMP_BUCKETS + 1)];
  __local uint lmin[TSR_SMP_GROUP * TSR_SMP_BUCKETS];
  __local uint lmax[TSR_SMP_GROUP * TSR_SMP_BUCKETS];
  __local int failed;
  const int skip = tsr_smp_failed(st, &failed);
  const int lid = get_local_id(0);
  const long row = get_group_id(0);
  const long base = lx.offset + row * lx.strides[0], cs = lx.strides[1];
  const long n = skip ? 0 : lx.shape[1];  // a failed stream: no work, no search
  __global int* seg = list + (row * TSR_SMP_GROUP + lid) * (3 * (long)list_cap);
  tsr_smp_state s;
  s.n = n;
  s.t = ld_f32(temperature, lt.offset + row * lt.strides[0]);
  s.top_k = ld_i32(top_k, lk.offset + row * lk.strides[0]);
  s.top_p = ld_f32(top_p, lp.offset + row * lp.strides[0]);
  s.min_p = ld_f32(min_p, lm.offset + row * lm.strides[0]);
  s.u = ld_f32(uniform, lu.offset + row * lu.strides[0]);
  tsr_smp_best(x, base, cs, n, 0, 0, 0u, 0, lkey, lidx, &s.kmax, &s.imax, &s.kmin);
  s.m = tsr_smp_unkey(s.kmax);
  s.result = max(s.imax, 0L);
  s.keep_tau = s.kmin;  // the kept prefix: everything
  s.keep_cut = n;
  s.list_ok = 0;
  s.list_n = 0;
  s.list_lo = TSR_SMP_NO_KEY;
  // Greedy (no search) for temperature <= 0 (or NaN), a row without
  // numbers, or an infinite maximum (no softmax).
  s.stage = (s.t > 0.0f && s.imax >= 0 && !isinf(s.m)) ? TSR_SMP_TOPK : TSR_SMP_DONE;
  tsr_smp_configure(&s);
  while (s.stage != TSR_SMP_DONE) {
    // One pass: per bucket the weight and the smallest and largest search
    // key of the counted elements, and the elements kept for the next
    // passes.
    {
      const uint lo = s.lo, hi = s.hi, tie_tau = s.tie_tau, f_tau = s.f_tau;
      const long f_cut = s.f_cut;
      const int by_id = s.by_id, weight = s.weight, list_n = s.list_n;
      const float m = s.m, t = s.t, min_p_prob = s.min_p_prob;
      int shift = 0;
      while (((ulong)TSR_SMP_BUCKETS << shift) < (ulong)(hi - lo) + 1ul) ++shift;
      // The first pass over values splits them evenly by value, which
      // separates typical logits far better than the key's bits do.
      const float vlo = tsr_smp_unkey(lo), vscale = TSR_SMP_BUCKETS / (tsr_smp_unkey(hi) - vlo);
      const int by_value = s.pass == 0 && !by_id && isfinite(vlo) && isfinite(vscale) && vscale > 0;
      tsr_smp_acc h[TSR_SMP_BUCKETS];
      uint kmin_b[TSR_SMP_BUCKETS], kmax_b[TSR_SMP_BUCKETS];
      for (int j = 0; j < TSR_SMP_BUCKETS; ++j) {
        h[j] = 0;
        kmin_b[j] = TSR_SMP_NO_KEY;
        kmax_b[j] = 0u;
      }
      // Elements stay listed while their key is >= floor (those above hi
      // are needed by later searches); a tie search keeps the list whole.
      const uint floor_key = by_id ? tie_tau : lo;
      int kept = 0, complete = 1;
      uint sk;
      if (s.list_ok) {
        for (int e = 0; e < list_n; ++e) {
          int i = seg[3 * e], bits = seg[3 * e + 1], q_bits = seg[3 * e + 2];
          const float v = as_float(bits);
          const uint k = tsr_smp_key(v);
          if (k < floor_key) continue;
          if (!by_id && !tsr_smp_kept(k, i, f_tau, f_cut)) continue;
          int b = tsr_smp_bucket(i, v, n, lo, hi, shift, by_value, vlo, vscale, by_id, tie_tau,
                                 f_tau, f_cut, &sk);
          if (b >= 0) {
            float q = as_float(q_bits);
            if (weight != TSR_SMP_W_COUNT && isnan(q)) {
              q = tsr_smp_prob(v, m, t);
              q_bits = as_int(q);
            }
            h[b] += tsr_smp_weight(weight, q, min_p_prob);
            kmin_b[b] = min(kmin_b[b], sk);
            kmax_b[b] = max(kmax_b[b], sk);
          }
          seg[3 * kept] = i;  // kept <= e: compacts in place
          seg[3 * kept + 1] = bits;
          seg[3 * kept + 2] = q_bits;
          ++kept;
        }
      } else {
        // A tie search past its first pass only visits its id range (and
        // leaves no list).
        const long first = by_id ? n - 1 - (long)hi : 0, last = by_id ? n - 1 - (long)lo : n - 1;
        complete = first == 0 && last == n - 1;
        TSR_SMP_FOR_ELEMENTS(i, first, last) {
          const float v = ld_f32(x, base + i * cs);
          if (isnan(v)) continue;
          const uint k = tsr_smp_key(v);
          if (k < floor_key) continue;
          if (!by_id && !tsr_smp_kept(k, i, f_tau, f_cut)) continue;
          float q = as_float(0x7fc00000);  // not computed yet
          int b = tsr_smp_bucket(i, v, n, lo, hi, shift, by_value, vlo, vscale, by_id, tie_tau,
                                 f_tau, f_cut, &sk);
          if (b >= 0) {
            if (weight != TSR_SMP_W_COUNT) q = tsr_smp_prob(v, m, t);
            h[b] += tsr_smp_weight(weight, q, min_p_prob);
            kmin_b[b] = min(kmin_b[b], sk);
            kmax_b[b] = max(kmax_b[b], sk);
          }
          if (kept < list_cap) {
            seg[3 * kept] = (int)i;
            seg[3 * kept + 1] = as_int(v);
            seg[3 * kept + 2] = as_int(q);
          }
          ++kept;
        }
      }
      s.list_n = kept;
      s.list_lo = floor_key;
      for (int j = 0; j < TSR_SMP_BUCKETS; ++j) {
        lacc[lid * (TSR_SMP_BUCKETS + 1) + j] = h[j];
        lmin[lid * TSR_SMP_BUCKETS + j] = kmin_b[j];
        lmax[lid * TSR_SMP_BUCKETS + j] = kmax_b[j];
      }
      lacc[lid * (TSR_SMP_BUCKETS + 1) + TSR_SMP_BUCKETS] = kept > list_cap || !complete;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int span = TSR_SMP_GROUP / 2; span > 0; span >>= 1) {
      if (lid < span) {
        for (int j = 0; j <= TSR_SMP_BUCKETS; ++j) {
          lacc[lid * (TSR_SMP_BUCKETS + 1) + j] += lacc[(lid + span) * (TSR_SMP_BUCKETS + 1) + j];
        }
        for (int j = 0; j < TSR_SMP_BUCKETS; ++j) {
          const int a = lid * TSR_SMP_BUCKETS + j, o = (lid + span) * TSR_SMP_BUCKETS + j;
          lmin[a] = min(lmin[a], lmin[o]);
          lmax[a] = max(lmax[a], lmax[o]);
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    // Every item takes the same decision from the reduced histogram (only
    // s is read past the barriers: what the pass loop keeps in registers
    // stays private to it).
    s.list_ok = lacc[TSR_SMP_BUCKETS] == 0;
    if (s.pass == 0) {
      for (int j = 0; j < TSR_SMP_BUCKETS; ++j) s.total += lacc[j];
      s.target = s.weight == TSR_SMP_W_COUNT ? min(s.goal, s.total) : s.goal * s.total;
    }
    int chosen = -1;
    tsr_smp_acc suffix = s.above;  // S(smallest key of bucket b + 1)
    for (int b = TSR_SMP_BUCKETS - 1; b >= 0; --b) {
      tsr_smp_acc s_b = suffix + lacc[b];
      if (s.strict ? s_b > s.target : s_b >= s.target) {
        chosen = b;
        break;
      }
      if (b > 0) suffix = s_b;
    }
    if (s.pass == 0 && (chosen < 0 || !(s.total > 0))) {
      tsr_smp_finish(&s, 0, 0u);  // nothing reaches the target
    } else {
      // A later pass re-sums S(lo), which the previous pass found on
      // target, in another order; should it round just below, stay in
      // the lowest bucket (which holds lo).
      if (chosen < 0) {
        chosen = 0;
        while (chosen + 1 < TSR_SMP_BUCKETS && lmin[chosen] > lmax[chosen]) ++chosen;
      }
      // The chosen bucket holds an element: the top one holds hi, and a
      // lower one is chosen only for its own weight.
      if (lmin[chosen] <= lmax[chosen]) {
        s.above = suffix;
        s.lo = lmin[chosen];
        s.hi = lmax[chosen];
      }
      ++s.pass;
      if (s.lo == s.hi) tsr_smp_finish(&s, 1, s.lo);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // before the next pass overwrites lacc
  }
  if (!skip && lid == 0) st_i32(ids, li.offset + row * li.strides[0], (int)s.result);
}

// logprobs_f32: logits F32 [B, V], ids I32 [B] -> logprob F32 [B], and for
// k > 0 top_ids I32 [B, k], top_logprobs F32 [B, k] (for k == 0 the two
// top tensors are not touched; the host may pass any buffer). The top ids
// come from k rounds of a group argmax over the values after the previous
// pick in the order. An id outside [0, V) fails the stream
// (TSR_FAIL_LOGPROBS_ID).
__kernel __attribute__((reqd_work_group_size(TSR_SMP_GROUP, 1, 1))) void logprobs_f32(
    __global int* st, __global const uchar* x, tsr_layout lx, __global const uchar* ids,
    tsr_layout li, __global uchar* logprob, tsr_layout lo, __global uchar* top_ids,
    tsr_layout lti, __global uchar* top_lp, tsr_layout ltl, long k) {
  __local uint lkey[2 * TSR_SMP_GROUP];
  __local long lidx[TSR_SMP_GROUP];
  __local tsr_smp_acc lacc[TSR_SMP_GROUP];
  __local int failed;
  const int failed_before = tsr_smp_failed(st, &failed);
  const int lid = get_local_id(0);
  const long row = get_group_id(0);
  const long base = lx.offset + row * lx.strides[0], cs = lx.strides[1];
  const int id = ld_i32(ids, li.offset + row * li.strides[0]);
  const int bad_id = !failed_before && (id < 0 || id >= lx.shape[1]);
  if (bad_id && lid == 0) tsr_fail(st, TSR_FAIL_LOGPROBS_ID, (int)row, id, (int)lx.shape[1], 0);
  const int skip = failed_before || bad_id;  // the same for the whole group
  const long n = skip ? 0 : lx.shape[1], k_top = skip ? 0 : k;
  uint kmax, kmin;
  long imax;
  tsr_smp_best(x, base, cs, n, 0, 0, 0u, 0, lkey, lidx, &kmax, &imax, &kmin);
  const float m = tsr_smp_unkey(kmax);
  tsr_smp_acc sum = 0;
  TSR_SMP_FOR_ELEMENTS(i, 0, n - 1) {
    float v = ld_f32(x, base + i * cs);
    if (!isnan(v)) sum += (tsr_smp_acc)exp(v - m);
  }
  const tsr_smp_acc lse = (tsr_smp_acc)m + log(tsr_smp_sum(sum, lacc));
  if (!skip && lid == 0) {
    st_f32(logprob, lo.offset + row * lo.strides[0],
           (float)((tsr_smp_acc)ld_f32(x, base + id * cs) - lse));
  }
  // pi < 0 only when the row has fewer than k numbers (NaNs): then id 0.
  uint pk = kmax;
  long pi = imax;
  if (lid == 0 && k_top > 0) {
    st_i32(top_ids, lti.offset + row * lti.strides[0], (int)max(pi, 0L));
    st_f32(top_lp, ltl.offset + row * ltl.strides[0],
           (float)((tsr_smp_acc)ld_f32(x, base + max(pi, 0L) * cs) - lse));
  }
  for (long j = 1; j < k_top; ++j) {
    tsr_smp_best(x, base, cs, n, 0, 1, pk, pi, lkey, lidx, &pk, &pi, &kmin);
    if (lid == 0) {
      long pick = max(pi, 0L);
      st_i32(top_ids, lti.offset + row * lti.strides[0] + j * lti.strides[1], (int)pick);
      st_f32(top_lp, ltl.offset + row * ltl.strides[0] + j * ltl.strides[1],
             (float)((tsr_smp_acc)ld_f32(x, base + pick * cs) - lse));
    }
  }
}
