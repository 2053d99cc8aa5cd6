// Attention-side ops:
//   rope             positions I32 (T), inv_freq F32 (R/2), q (T, Hq, D),
//                    k (T, Hk, D) -> q_out, k_out (may alias q, k exactly)
//   kv_store         k, v (T, Hk, D), slots I32 (T) -> k_cache, v_cache
//                    (S, Hk, D), rows named by slots written in place
//   paged_attention  q (T, Hq, D), k_cache/v_cache (S, Hk, D), block_table
//                    I32 (B, P), seq_lens I32 (B), query_start I32 (B+1)
//                    -> o (T, Hq, D); online softmax per (token, head)
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops.h"
#include "ops_common.h"

namespace tessera::cpu {
namespace {

// Reads element (i0, i1, i2) of a rank-3 view.
template <typename T>
inline const T* Row3(const TensorView& v, int64_t i0, int64_t i1) {
  return v.as<T>() + i0 * v.stride(0) + i1 * v.stride(1);
}

inline int32_t I32At(const TensorView& v, int64_t i) {
  return v.as<int32_t>()[i * v.stride(0)];
}

inline int32_t I32At2(const TensorView& v, int64_t i, int64_t j) {
  return v.as<int32_t>()[i * v.stride(0) + j * v.stride(1)];
}

// Rotates the first 2 * half dims of one head of D elements (in -> out).
template <typename T>
void RotateHead(const T* in, int64_t sin_, T* out, int64_t sout, int64_t d, int64_t half,
                const float* cosv, const float* sinv, bool neox, float* scratch) {
  for (int64_t i = 0; i < d; ++i) scratch[i] = ToF32(in[i * sin_]);
  for (int64_t i = 0; i < half; ++i) {
    int64_t a = neox ? i : 2 * i;
    int64_t b = neox ? i + half : 2 * i + 1;
    float x1 = scratch[a], x2 = scratch[b];
    out[a * sout] = FromF32<T>(x1 * cosv[i] - x2 * sinv[i]);
    out[b * sout] = FromF32<T>(x2 * cosv[i] + x1 * sinv[i]);
  }
  for (int64_t i = 2 * half; i < d; ++i) out[i * sout] = FromF32<T>(scratch[i]);
}

template <typename T>
Status RopeImpl(const OpCall& call, ExecContext& ctx) {
  const TensorView &pos = call.in[0], &inv = call.in[1], &q = call.in[2], &k = call.in[3];
  const TensorView &q_out = call.out[0], &k_out = call.out[1];
  const int64_t t_count = q.dim(0), d = q.dim(2), half = inv.dim(0);
  const bool neox = call.params.rope.style == TSR_ROPE_NEOX;
  const int64_t work = (q.dim(1) + k.dim(1)) * d;
  ctx.pool->ParallelFor(t_count, RowGrain(work, 8192), [&](int64_t begin, int64_t end) {
    std::vector<float> cosv(half), sinv(half), scratch(d);
    for (int64_t t = begin; t < end; ++t) {
      double p = I32At(pos, t);
      for (int64_t i = 0; i < half; ++i) {
        double angle = p * static_cast<double>(inv.as<float>()[i * inv.stride(0)]);
        cosv[i] = static_cast<float>(std::cos(angle));
        sinv[i] = static_cast<float>(std::sin(angle));
      }
      for (int64_t h = 0; h < q.dim(1); ++h) {
        RotateHead(Row3<T>(q, t, h), q.stride(2), const_cast<T*>(Row3<T>(q_out, t, h)),
                   q_out.stride(2), d, half, cosv.data(), sinv.data(), neox, scratch.data());
      }
      for (int64_t h = 0; h < k.dim(1); ++h) {
        RotateHead(Row3<T>(k, t, h), k.stride(2), const_cast<T*>(Row3<T>(k_out, t, h)),
                   k_out.stride(2), d, half, cosv.data(), sinv.data(), neox, scratch.data());
      }
    }
  });
  return OkStatus();
}

template <typename T>
void CopyHeadRows(const TensorView& src, int64_t t, const TensorView& dst, int64_t slot) {
  for (int64_t h = 0; h < src.dim(1); ++h) {
    const T* s = Row3<T>(src, t, h);
    T* o = const_cast<T*>(Row3<T>(dst, slot, h));
    const int64_t ss = src.stride(2), so = dst.stride(2);
    for (int64_t i = 0; i < src.dim(2); ++i) o[i * so] = s[i * ss];
  }
}

inline float Dot(const float* a, const float* b, int64_t n) {
  float s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])) + tail;
}

// Loads D elements of a (strided) row as f32, or points at them directly.
template <typename T>
inline const float* RowAsF32(const T* row, int64_t stride, int64_t d, float* scratch) {
  if constexpr (std::is_same_v<T, float>) {
    if (stride == 1) return row;
  }
  for (int64_t i = 0; i < d; ++i) scratch[i] = ToF32(row[i * stride]);
  return scratch;
}

// Per-sequence facts, read from the I32 inputs.
struct SeqInfo {
  int64_t first_row;  // query_start[b]
  int64_t len;        // seq_lens[b]
  int64_t new_tokens; // query_start[b+1] - query_start[b]
};

Status ReadSequences(const OpCall& call, int64_t slots, std::vector<SeqInfo>* seqs,
                     std::vector<int64_t>* row_seq) {
  const TensorView &q = call.in[0], &table = call.in[3], &lens = call.in[4],
                   &starts = call.in[5];
  const int64_t t_count = q.dim(0), b_count = lens.dim(0), pages = table.dim(1);
  const int64_t page_size = call.params.attention.page_size;
  row_seq->assign(t_count, -1);
  for (int64_t b = 0; b < b_count; ++b) {
    int64_t lo = I32At(starts, b), hi = I32At(starts, b + 1), len = I32At(lens, b);
    if (lo < 0 || hi < lo || hi > t_count) {
      return InvalidArgument("query_start[", b, "..", b + 1, "] = [", lo, ", ", hi,
                             ") is not a valid row range of q's ", t_count,
                             " rows; query_start must be non-decreasing within [0, T]");
    }
    if (len < hi - lo) {
      return InvalidArgument("sequence ", b, " has ", hi - lo, " new tokens but seq_lens[", b,
                             "] = ", len, "; seq_lens counts the new tokens too");
    }
    if (len > pages * page_size) {
      return InvalidArgument("seq_lens[", b, "] = ", len, " exceeds the block table's ", pages,
                             " pages of ", page_size, " slots");
    }
    for (int64_t p = 0; p * page_size < len; ++p) {
      int64_t page = I32At2(table, b, p);
      int64_t used = std::min(page_size, len - p * page_size);
      if (page < 0 || page * page_size + used > slots) {
        return InvalidArgument("block_table[", b, "][", p, "] = ", page,
                               " names slots outside the KV pool of ", slots,
                               " slots (page_size ", page_size, ")");
      }
    }
    for (int64_t r = lo; r < hi; ++r) (*row_seq)[r] = b;
    seqs->push_back(SeqInfo{lo, len, hi - lo});
  }
  return OkStatus();
}

template <typename T>
Status AttentionImpl(const OpCall& call, ExecContext& ctx) {
  const TensorView &q = call.in[0], &kc = call.in[1], &vc = call.in[2], &table = call.in[3];
  const TensorView& o = call.out[0];
  const tsr_paged_attention_params& params = call.params.attention;
  const int64_t t_count = q.dim(0), hq = q.dim(1), d = q.dim(2), hk = kc.dim(1);
  const int64_t group = hq / hk, page_size = params.page_size;
  std::vector<SeqInfo> seqs;
  std::vector<int64_t> row_seq;
  TSR_CPU_RETURN_IF_ERROR(ReadSequences(call, kc.dim(0), &seqs, &row_seq));

  const float scale = params.scale, cap = params.logit_softcap;
  const int64_t window = params.sliding_window;
  ctx.pool->ParallelFor(t_count * hq, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> qf(d), kf(d), vf(d), acc(d);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / hq, h = item % hq;
      T* out = const_cast<T*>(Row3<T>(o, t, h));
      const int64_t b = row_seq[t];
      if (b < 0) continue;  // a row past query_start[B]: left untouched
      const SeqInfo& s = seqs[b];
      const int64_t p = s.len - s.new_tokens + (t - s.first_row);
      const int64_t start = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
      const int64_t kvh = h / group;
      const float* qv = RowAsF32(Row3<T>(q, t, h), q.stride(2), d, qf.data());
      float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = start; j <= p; ++j) {
        const int64_t slot = int64_t{I32At2(table, b, j / page_size)} * page_size + j % page_size;
        const float* kv = RowAsF32(Row3<T>(kc, slot, kvh), kc.stride(2), d, kf.data());
        float score = scale * Dot(qv, kv, d);
        if (cap > 0.0f) score = cap * std::tanh(score / cap);
        float weight;
        if (score > m) {
          const float correction = std::exp(m - score);  // 0 when m = -inf
          l *= correction;
          for (int64_t i = 0; i < d; ++i) acc[i] *= correction;
          m = score;
          weight = 1.0f;
        } else {
          weight = std::exp(score - m);
        }
        l += weight;
        const float* vv = RowAsF32(Row3<T>(vc, slot, kvh), vc.stride(2), d, vf.data());
        for (int64_t i = 0; i < d; ++i) acc[i] += weight * vv[i];
      }
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      for (int64_t i = 0; i < d; ++i) out[i * o.stride(2)] = FromF32<T>(acc[i] * inv);
    }
  });
  return OkStatus();
}

}  // namespace

Status RunRope(const OpCall& call, ExecContext& ctx) {
  return DispatchFloat(call.in[2].dtype,
                       [&](auto tag) { return RopeImpl<decltype(tag)>(call, ctx); });
}

Status RunKvStore(const OpCall& call, ExecContext& ctx) {
  const TensorView &k = call.in[0], &v = call.in[1], &slots = call.in[2];
  const TensorView &kc = call.out[0], &vc = call.out[1];
  const int64_t t_count = k.dim(0), pool_slots = kc.dim(0);
  for (int64_t t = 0; t < t_count; ++t) {
    int64_t slot = I32At(slots, t);
    if (slot != -1 && (slot < 0 || slot >= pool_slots)) {
      return InvalidArgument("slots[", t, "] = ", slot, " is outside the KV pool [0, ",
                             pool_slots, ") (use -1 to skip a padding token)");
    }
  }
  return DispatchFloat(k.dtype, [&](auto tag) {
    using T = decltype(tag);
    ctx.pool->ParallelFor(t_count, RowGrain(2 * k.dim(1) * k.dim(2)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t slot = I32At(slots, t);
        if (slot < 0) continue;
        CopyHeadRows<T>(k, t, kc, slot);
        CopyHeadRows<T>(v, t, vc, slot);
      }
    });
    return OkStatus();
  });
}

Status RunPagedAttention(const OpCall& call, ExecContext& ctx) {
  return DispatchFloat(call.in[0].dtype,
                       [&](auto tag) { return AttentionImpl<decltype(tag)>(call, ctx); });
}

}  // namespace tessera::cpu
