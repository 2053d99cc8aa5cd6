// kv_store and paged_attention (tessera_plugin.h, TSR_OP_KV_STORE /
// TSR_OP_PAGED_ATTENTION).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "reference/ops_internal.h"

namespace tessera::reference::internal {

// in k, v X [T, Hk, D], slots I32 [T]; out k_cache, v_cache X [S, Hk, D],
// updated in place. slots[t] == -1 skips token t; other slots outside
// [0, S) are an error (checked before anything is written).
Status KvStore(const OpCall& call) {
  const HostTensor& k = call.in[0];
  const HostTensor& v = call.in[1];
  const HostTensor& slots = call.in[2];
  const HostTensor& k_cache = call.out[0];
  const HostTensor& v_cache = call.out[1];
  TSR_RETURN_IF_ERROR(ExpectRank(call, k, "k", 3, "[T, Hk, D]"));
  TSR_RETURN_IF_ERROR(ExpectShape(call, v, "v", k.shape, "the shape of k"));
  const int64_t tokens = k.shape[0], heads = k.shape[1], dim = k.shape[2];
  TSR_RETURN_IF_ERROR(ExpectShape(call, slots, "slots", {tokens}, "[T]"));
  TSR_RETURN_IF_ERROR(ExpectRank(call, k_cache, "k_cache", 3, "[S, Hk, D]"));
  const int64_t num_slots = k_cache.shape[0];
  TSR_RETURN_IF_ERROR(ExpectShape(call, k_cache, "k_cache",
                                  {num_slots, heads, dim},
                                  "[S, Hk, D], Hk and D from k"));
  TSR_RETURN_IF_ERROR(ExpectShape(call, v_cache, "v_cache", k_cache.shape,
                                  "the shape of k_cache"));
  if (!call.execute) return OkStatus();

  for (int64_t t = 0; t < tokens; ++t) {
    int64_t slot = slots.LoadInt(t * slots.strides[0]);
    if (slot != -1 && (slot < 0 || slot >= num_slots)) {
      return InvalidArgumentError(fmt::format(
          "kv_store: slots[{}] = {} is outside [0, {}) and not -1 (padding)", t,
          slot, num_slots));
    }
  }
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t slot = slots.LoadInt(t * slots.strides[0]);
    if (slot == -1) continue;
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t d = 0; d < dim; ++d) {
        int64_t src_k = t * k.strides[0] + h * k.strides[1] + d * k.strides[2];
        int64_t src_v = t * v.strides[0] + h * v.strides[1] + d * v.strides[2];
        k_cache.Store(slot * k_cache.strides[0] + h * k_cache.strides[1] +
                          d * k_cache.strides[2],
                      k.Load(src_k));
        v_cache.Store(slot * v_cache.strides[0] + h * v_cache.strides[1] +
                          d * v_cache.strides[2],
                      v.Load(src_v));
      }
    }
  }
  return OkStatus();
}

namespace {

struct SeqLayout {
  int64_t first_row = 0;  // query_start[b]
  int64_t num_new = 0;    // n
  int64_t context = 0;    // L = seq_lens[b]
};

}  // namespace

// in q X [T, Hq, D], k_cache, v_cache X [S, Hk, D], block_table I32 [B, P],
// seq_lens I32 [B], query_start I32 [B+1]; out o X [T, Hq, D].
// Query j of sequence b sits at position L - n + j and attends causally
// (and within the sliding window) to the cached positions before it.
Status PagedAttention(const OpCall& call) {
  const HostTensor& q = call.in[0];
  const HostTensor& k_cache = call.in[1];
  const HostTensor& v_cache = call.in[2];
  const HostTensor& block_table = call.in[3];
  const HostTensor& seq_lens = call.in[4];
  const HostTensor& query_start = call.in[5];
  const HostTensor& o = call.out[0];
  TSR_RETURN_IF_ERROR(ExpectRank(call, q, "q", 3, "[T, Hq, D]"));
  const int64_t tokens = q.shape[0], q_heads = q.shape[1], dim = q.shape[2];
  TSR_RETURN_IF_ERROR(ExpectRank(call, k_cache, "k_cache", 3, "[S, Hk, D]"));
  const int64_t num_slots = k_cache.shape[0], kv_heads = k_cache.shape[1];
  TSR_RETURN_IF_ERROR(ExpectShape(call, k_cache, "k_cache",
                                  {num_slots, kv_heads, dim},
                                  "[S, Hk, D], D from q"));
  TSR_RETURN_IF_ERROR(ExpectShape(call, v_cache, "v_cache", k_cache.shape,
                                  "the shape of k_cache"));
  if (kv_heads < 1 || q_heads % kv_heads != 0) {
    return InvalidArgumentError(fmt::format(
        "paged_attention: q has {} heads and the cache {}; Hq must be a "
        "multiple of Hk >= 1 (GQA)",
        q_heads, kv_heads));
  }
  TSR_RETURN_IF_ERROR(
      ExpectRank(call, block_table, "block_table", 2, "[B, P]"));
  const int64_t batch = block_table.shape[0], max_pages = block_table.shape[1];
  TSR_RETURN_IF_ERROR(ExpectShape(call, seq_lens, "seq_lens", {batch}, "[B]"));
  TSR_RETURN_IF_ERROR(
      ExpectShape(call, query_start, "query_start", {batch + 1}, "[B+1]"));
  TSR_RETURN_IF_ERROR(ExpectShape(call, o, "o", q.shape, "the shape of q"));
  TSR_ASSIGN_OR_RETURN(
      auto params,
      ReadParams<tsr_paged_attention_params>(
          call,
          offsetof(tsr_paged_attention_params, logit_softcap) + sizeof(float)));
  if (params.page_size < 1) {
    return InvalidArgumentError(
        fmt::format("paged_attention: params.page_size is {}; it must be >= 1",
                    params.page_size));
  }
  if (params.sliding_window < 0) {
    return InvalidArgumentError(fmt::format(
        "paged_attention: params.sliding_window is {}; use 0 for none",
        params.sliding_window));
  }
  if (!call.execute) return OkStatus();

  // Check the batch layout before writing anything.
  const int64_t page_size = params.page_size;
  std::vector<SeqLayout> seqs(batch);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t start = query_start.LoadInt(b * query_start.strides[0]);
    int64_t end = query_start.LoadInt((b + 1) * query_start.strides[0]);
    int64_t context = seq_lens.LoadInt(b * seq_lens.strides[0]);
    if (start < 0 || end < start || end > tokens) {
      return InvalidArgumentError(fmt::format(
          "paged_attention: query_start[{}..{}] = [{}, {}) is not a "
          "non-decreasing range inside [0, T = {})",
          b, b + 1, start, end, tokens));
    }
    if (context < end - start || context > max_pages * page_size) {
      return InvalidArgumentError(fmt::format(
          "paged_attention: seq_lens[{}] = {} must cover its {} new tokens "
          "and fit in P * page_size = {} slots",
          b, context, end - start, max_pages * page_size));
    }
    for (int64_t page = 0; page * page_size < context; ++page) {
      int64_t id = block_table.LoadInt(b * block_table.strides[0] +
                                       page * block_table.strides[1]);
      if (id < 0 || (id + 1) * page_size > num_slots) {
        return InvalidArgumentError(fmt::format(
            "paged_attention: block_table[{}][{}] = {} names a page outside "
            "the pool of {} slots ({} pages of {})",
            b, page, id, num_slots, num_slots / page_size, page_size));
      }
    }
    seqs[b] = {start, end - start, context};
  }

  const int64_t group = q_heads / kv_heads;
  const double scale = params.scale;
  const double cap = params.logit_softcap;
  std::vector<double> qv(dim), scores, acc(dim);
  std::vector<int64_t> slot_of;
  for (int64_t b = 0; b < batch; ++b) {
    const SeqLayout& s = seqs[b];
    slot_of.assign(s.context, 0);
    for (int64_t pos = 0; pos < s.context; ++pos) {
      int64_t page =
          block_table.LoadInt(b * block_table.strides[0] +
                              (pos / page_size) * block_table.strides[1]);
      slot_of[pos] = page * page_size + pos % page_size;
    }
    for (int64_t j = 0; j < s.num_new; ++j) {
      const int64_t row = s.first_row + j;
      const int64_t pos = s.context - s.num_new + j;
      int64_t first = 0;
      if (params.sliding_window > 0) {
        first = std::max<int64_t>(0, pos - params.sliding_window + 1);
      }
      for (int64_t h = 0; h < q_heads; ++h) {
        const int64_t kvh = h / group;
        for (int64_t d = 0; d < dim; ++d) {
          qv[d] =
              q.Load(row * q.strides[0] + h * q.strides[1] + d * q.strides[2]);
        }
        scores.assign(pos - first + 1, 0.0);
        double max_score = -INFINITY;
        for (int64_t p = first; p <= pos; ++p) {
          const int64_t base =
              slot_of[p] * k_cache.strides[0] + kvh * k_cache.strides[1];
          double dot = 0;
          for (int64_t d = 0; d < dim; ++d) {
            dot += qv[d] * k_cache.Load(base + d * k_cache.strides[2]);
          }
          double sc = scale * dot;
          if (cap != 0) sc = cap * std::tanh(sc / cap);
          scores[p - first] = sc;
          max_score = std::max(max_score, sc);
        }
        double denom = 0;
        for (double& sc : scores) {
          sc = std::exp(sc - max_score);
          denom += sc;
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t p = first; p <= pos; ++p) {
          const double weight = scores[p - first] / denom;
          const int64_t base =
              slot_of[p] * v_cache.strides[0] + kvh * v_cache.strides[1];
          for (int64_t d = 0; d < dim; ++d) {
            acc[d] += weight * v_cache.Load(base + d * v_cache.strides[2]);
          }
        }
        for (int64_t d = 0; d < dim; ++d) {
          o.Store(row * o.strides[0] + h * o.strides[1] + d * o.strides[2],
                  acc[d]);
        }
      }
    }
  }
  return OkStatus();
}

}  // namespace tessera::reference::internal
