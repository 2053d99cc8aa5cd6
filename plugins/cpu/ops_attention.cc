// Attention-side ops:
//   rope             positions I32 (T), inv_freq F32 (R/2), q (T, Hq, D),
//                    k (T, Hk, D) -> q_out, k_out (may alias q, k exactly)
//   kv_store         k, v (T, Hk, D), slots I32 (T) -> k_cache, v_cache
//                    (S, Hk, D), rows named by slots written in place
//   paged_attention  q (T, Hq, D), k_cache/v_cache (S, Hk, D), block_table
//                    I32 (B, P), seq_lens I32 (B), query_start I32 (B+1)
//                    -> o (T, Hq, D). Tiles of query rows (x the GQA
//                    group) per (sequence, KV head) walk the sequence's
//                    keys in blocks of 32 with online softmax. A sequence
//                    with several query tiles (a prefill) has its K/V
//                    blocks converted to f32 (K transposed) once per call,
//                    shared by all its tiles; a single tile converts each
//                    block as it goes, a page's run of rows at a time
//                    (one memcpy for f32 rows of a head-major cache, as
//                    the engine's is), asking for the rows at least 4 KiB
//                    ahead. Long KV ranges are split across threads when
//                    tiles are few (flash-decoding) and merged after; many
//                    tiles (a decode batch) go to workers four at a time,
//                    each asking for its next tile's first rows.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu_isa.h"
#include "ops.h"
#include "ops_attention_kernels.h"
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

// Per-sequence facts, read from the I32 inputs.
struct SeqInfo {
  int64_t first_row;  // query_start[b]
  int64_t len;        // seq_lens[b]
  int64_t new_tokens; // query_start[b+1] - query_start[b]
};

Status ReadSequences(const OpCall& call, int64_t slots, std::vector<SeqInfo>* seqs) {
  const TensorView &q = call.in[0], &table = call.in[3], &lens = call.in[4],
                   &starts = call.in[5];
  const int64_t t_count = q.dim(0), b_count = lens.dim(0), pages = table.dim(1);
  const int64_t page_size = call.params.attention.page_size;
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
    seqs->push_back(SeqInfo{lo, len, hi - lo});
  }
  return OkStatus();
}

// Query rows per tile: a tile's rows times the GQA group (the query heads
// that read one KV head) share every K/V block loaded for them.
constexpr int64_t kTileQueryRows = 64;
// A KV range is split (flash-decoding) only into parts of at least this
// many keys, and only when the tiles alone would leave threads idle.
constexpr int64_t kMinSplitKeys = 256;
// Below this many multiply-adds (scores + P V) a call runs on one thread.
constexpr int64_t kMinParallelMacs = 1 << 16;
// Most f32 bytes one call converts K/V blocks into for sharing between
// tiles (8 KiB per 32 keys x D = 128 x (K + V)): 8192 keys of 8 KV heads
// take 64 MiB. Sequences past the budget convert per tile instead.
constexpr int64_t kMaxSharedBlockBytes = int64_t{256} << 20;
// K/V rows are asked for at least this many bytes (of one head's rows)
// ahead of the block being read.
constexpr int64_t kPrefetchBytes = 4096;
// With at least this many items per worker, workers take them in chunks.
constexpr size_t kChunkedItemsPerWorker = 16;

// One unit of work: query rows [t0, t1) of sequence b against KV head kvh,
// over keys [k_lo, k_hi). Items of a split tile write partial results.
struct AttentionItem {
  int64_t b, kvh, t0, t1, k_lo, k_hi;
  int64_t partial = -1;  // index of the partial result; -1: write o
  int64_t cost() const { return (t1 - t0) * (k_hi - k_lo); }
  // The first key block it reads (blocks are aligned to 32 keys).
  int64_t first_block() const { return k_lo / kAttentionKeyBlock * kAttentionKeyBlock; }
};

// Lists the work of one call: tiles of query rows per (sequence, KV head),
// and splits of long KV ranges when there are fewer tiles than 2 per
// thread. `partials` counts the items that write partial results; a split
// tile's items are consecutive.
std::vector<AttentionItem> PlanAttention(const std::vector<SeqInfo>& seqs, int64_t hk,
                                         int64_t tile_rows, int64_t window, int threads,
                                         int64_t* partials) {
  std::vector<AttentionItem> tiles;
  for (int64_t b = 0; b < static_cast<int64_t>(seqs.size()); ++b) {
    const SeqInfo& s = seqs[b];
    for (int64_t r0 = 0; r0 < s.new_tokens; r0 += tile_rows) {
      const int64_t r1 = std::min(s.new_tokens, r0 + tile_rows);
      const int64_t first_pos = s.len - s.new_tokens + r0, last_pos = s.len - s.new_tokens + r1 - 1;
      const int64_t k_lo = window > 0 ? std::max<int64_t>(0, first_pos - window + 1) : 0;
      for (int64_t kvh = 0; kvh < hk; ++kvh) {
        tiles.push_back({b, kvh, s.first_row + r0, s.first_row + r1, k_lo, last_pos + 1});
      }
    }
  }
  const int64_t want = 2 * int64_t{threads};
  const int64_t count = static_cast<int64_t>(tiles.size());
  *partials = 0;
  if (threads <= 1 || count >= want) return tiles;
  std::vector<AttentionItem> items;
  for (const AttentionItem& tile : tiles) {
    const int64_t keys = tile.k_hi - tile.k_lo;
    const int64_t splits =
        std::clamp<int64_t>((want + count - 1) / count, 1, keys / kMinSplitKeys);
    if (splits <= 1) {
      items.push_back(tile);
      continue;
    }
    // Split at key-block boundaries so each part loads whole blocks.
    const int64_t per = ((keys + splits - 1) / splits + kAttentionKeyBlock - 1) /
                        kAttentionKeyBlock * kAttentionKeyBlock;
    for (int64_t lo = tile.k_lo; lo < tile.k_hi; lo += per) {
      AttentionItem part = tile;
      part.k_lo = lo;
      part.k_hi = std::min(tile.k_hi, lo + per);
      part.partial = (*partials)++;
      items.push_back(part);
    }
  }
  return items;
}

// One thread's f32 tiles (ops_attention_kernels.h), sized for the largest
// tile of a call. Kept per thread across calls (Reserve only grows), so a
// decode step does not allocate.
struct AttentionScratch {
  std::vector<float> q, acc, k, kt, v, s, m, l;
  std::vector<int32_t> lo, hi;
  void Reserve(int64_t rows, int64_t d) {
    auto grow = [](auto& vec, int64_t n) {
      if (static_cast<int64_t>(vec.size()) < n) vec.resize(static_cast<size_t>(n));
    };
    grow(q, rows * d), grow(acc, rows * d), grow(k, kAttentionKeyBlock * d);
    grow(kt, d * kAttentionKeyBlock), grow(v, kAttentionKeyBlock * d);
    grow(s, rows * kAttentionKeyBlock), grow(m, rows), grow(l, rows), grow(lo, rows);
    grow(hi, rows);
  }
};

AttentionScratch& ThreadScratch(int64_t rows, int64_t d) {
  thread_local AttentionScratch scratch;
  scratch.Reserve(rows, d);
  return scratch;
}

// K/V blocks of some sequences converted once per call and shared by their
// tiles: for sequence b (when first_block[b] >= 0) and KV head h, block
// `blk` (keys [blk, blk + 32), blk >= first_block[b]) is
//   kt: [D][32] f32 (transposed keys), at Kt(b, h, blk)
//   v:  [32][D] f32, at V(b, h, blk)
// with zeros for keys at or past the sequence's length. Storage is the
// calling thread's, grown only (reused by every layer's call).
struct SharedBlocks {
  std::vector<int64_t> first_block;  // per sequence; -1: not shared
  std::vector<int64_t> base;         // per sequence: its first block's index
  std::vector<int64_t> blocks;       // per sequence: blocks per KV head
  int64_t hk = 0, d = 0;
  float* data = nullptr;

  bool Has(int64_t b) const { return !first_block.empty() && first_block[b] >= 0; }
  int64_t Index(int64_t b, int64_t h, int64_t blk) const {
    return base[b] + h * blocks[b] + (blk - first_block[b]) / kAttentionKeyBlock;
  }
  const float* Kt(int64_t b, int64_t h, int64_t blk) const {
    return data + Index(b, h, blk) * 2 * kAttentionKeyBlock * d;
  }
  const float* V(int64_t b, int64_t h, int64_t blk) const {
    return Kt(b, h, blk) + kAttentionKeyBlock * d;
  }
};

template <typename T>
class PagedAttention {
 public:
  PagedAttention(const OpCall& call, const std::vector<SeqInfo>& seqs)
      : q_(call.in[0]), kc_(call.in[1]), vc_(call.in[2]), table_(call.in[3]), o_(call.out[0]),
        seqs_(seqs), params_(call.params.attention), d_(q_.dim(2)),
        group_(q_.dim(1) / kc_.dim(1)),
        kernels_(AttentionKernelsFor(ActiveCpuIsa())) {}

  int64_t d() const { return d_; }
  int64_t group() const { return group_; }
  // Tiles of the sequences `shared` has read their blocks from it.
  void UseShared(const SharedBlocks* shared) { shared_ = shared; }

  // Fills block `blk` of KV head `kvh` of sequence b in `shared` (keys
  // [blk, blk + 32) of its len; zeros past len). `w` is scratch.
  void PrepareShared(int64_t b, int64_t kvh, int64_t blk, const SharedBlocks& shared,
                     AttentionScratch& w) const {
    AttentionItem all{b, kvh, 0, 0, blk, std::min(blk + kAttentionKeyBlock, seqs_[b].len)};
    float* kt = const_cast<float*>(shared.Kt(b, kvh, blk));
    float* v = const_cast<float*>(shared.V(b, kvh, blk));
    ConvertRows(all, blk, w.k.data(), v);
    kernels_.transpose_keys(w.k.data(), d_, kt);
  }

  // Runs `item`; leaves its m, l, acc (unnormalised) in `w`, and writes o
  // when the item is a whole tile.
  void Run(const AttentionItem& item, AttentionScratch& w) const {
    const SeqInfo& seq = seqs_[item.b];
    const int64_t rows = (item.t1 - item.t0) * group_;
    const int64_t base_pos = seq.len - seq.new_tokens - seq.first_row;  // + t = position
    const int64_t window = params_.sliding_window;
    for (int64_t t = item.t0; t < item.t1; ++t) {
      for (int64_t g = 0; g < group_; ++g) {
        const int64_t i = (t - item.t0) * group_ + g;
        const T* row = Row3<T>(q_, t, item.kvh * group_ + g);
        for (int64_t c = 0; c < d_; ++c) w.q[i * d_ + c] = params_.scale * ToF32(row[c * q_.stride(2)]);
      }
    }
    std::fill(w.m.begin(), w.m.begin() + rows, -std::numeric_limits<float>::infinity());
    std::fill(w.l.begin(), w.l.begin() + rows, 0.0f);
    std::fill(w.acc.begin(), w.acc.begin() + rows * d_, 0.0f);
    for (int64_t blk = item.first_block(); blk < item.k_hi; blk += kAttentionKeyBlock) {
      bool any = false;
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t pos = base_pos + item.t0 + i / group_;
        const int64_t from = std::max(item.k_lo, window > 0 ? pos - window + 1 : 0);
        const int64_t to = std::min(item.k_hi, pos + 1);
        w.lo[i] = static_cast<int32_t>(std::clamp<int64_t>(from - blk, 0, kAttentionKeyBlock));
        w.hi[i] = static_cast<int32_t>(std::clamp<int64_t>(to - blk, 0, kAttentionKeyBlock));
        any = any || w.lo[i] < w.hi[i];
      }
      if (!any) continue;
      // Few rows (a decode): dot products on the key rows; else one
      // transpose shared by all rows (and, when the sequence's blocks are
      // shared, by all its tiles).
      const bool transpose = rows > kRowScoreMaxRows;
      const float* v = w.v.data();
      if (transpose && shared_ != nullptr && shared_->Has(item.b)) {
        kernels_.scores(w.q.data(), rows, d_, shared_->Kt(item.b, item.kvh, blk), w.s.data());
        v = shared_->V(item.b, item.kvh, blk);
        PrefetchShared(item, blk + kAttentionKeyBlock);
      } else {
        LoadBlock(item, blk, transpose, w);
        if (transpose) {
          kernels_.scores(w.q.data(), rows, d_, w.kt.data(), w.s.data());
        } else {
          kernels_.scores_from_rows(w.q.data(), rows, d_, w.k.data(), w.s.data());
        }
      }
      if (params_.logit_softcap > 0.0f) Softcap(rows, w);
      kernels_.softmax_accumulate(w.s.data(), rows, w.lo.data(), w.hi.data(), v, d_,
                                  w.m.data(), w.l.data(), w.acc.data());
    }
    if (item.partial < 0) Write(item, w.acc.data(), w.l.data());
  }

  // Writes rows of a tile: o = acc / l.
  void Write(const AttentionItem& item, const float* acc, const float* l) const {
    for (int64_t t = item.t0; t < item.t1; ++t) {
      for (int64_t g = 0; g < group_; ++g) {
        const int64_t i = (t - item.t0) * group_ + g;
        T* out = const_cast<T*>(Row3<T>(o_, t, item.kvh * group_ + g));
        const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
        for (int64_t c = 0; c < d_; ++c) out[c * o_.stride(2)] = FromF32<T>(acc[i * d_ + c] * inv);
      }
    }
  }

  // Asks for the K/V rows `item` reads first (AheadKeys() of them), unless
  // its sequence's blocks are shared (already f32, in cache).
  void PrefetchStart(const AttentionItem& item) const {
    if (shared_ != nullptr && shared_->Has(item.b)) return;
    Prefetch(item, item.first_block(), item.first_block() + AheadKeys());
  }

 private:
  // How far ahead the K/V rows are asked for, in keys: whole blocks of at
  // least kPrefetchBytes of one head's rows, so small heads (stories260k's
  // 32-byte rows: one block is 1 KiB) still look far enough ahead to hide
  // DRAM latency; a short item (a decode over a few hundred keys) asks
  // for all its rows as it starts.
  int64_t AheadKeys() const {
    const int64_t row_bytes = d_ * static_cast<int64_t>(sizeof(T));
    const int64_t keys = (kPrefetchBytes + row_bytes - 1) / row_bytes;
    return std::max<int64_t>(1, (keys + kAttentionKeyBlock - 1) / kAttentionKeyBlock) *
           kAttentionKeyBlock;
  }

  // k, v [32][D] = the block's K and V rows as f32 for keys in [k_lo,
  // k_hi), zero for the others.
  void ConvertRows(const AttentionItem& item, int64_t blk, float* k, float* v) const {
    constexpr int64_t kB = kAttentionKeyBlock;
    const int64_t j_lo = std::max(blk, item.k_lo) - blk;
    const int64_t j_hi = std::min(blk + kB, item.k_hi) - blk;
    if (j_lo > 0 || j_hi < kB) {
      std::fill(k, k + kB * d_, 0.0f);
      std::fill(v, v + kB * d_, 0.0f);
    }
    // Page by page: one table lookup per run of keys in a page; an f32
    // run of dense rows (a head-major cache: a head's slots are d
    // elements apart) copied as one span.
    for (int64_t j = j_lo; j < j_hi;) {
      const auto [slot, run] = PageRunAt(item.b, blk + j, blk + j_hi);
      if constexpr (std::is_same_v<T, float>) {
        ConvertRun(kc_, slot, item.kvh, run, k + j * d_);
        ConvertRun(vc_, slot, item.kvh, run, v + j * d_);
      } else {
        // Row by row, K and V interleaved: measured faster for bf16 rows
        // of 128 at 4096 positions than a span of K then one of V.
        for (int64_t r = 0; r < run; ++r) {
          WidenRow(Row3<T>(kc_, slot + r, item.kvh), kc_.stride(2), k + (j + r) * d_);
          WidenRow(Row3<T>(vc_, slot + r, item.kvh), vc_.stride(2), v + (j + r) * d_);
        }
      }
      j += run;
    }
  }

  // The slot of key `pos` of sequence b, and how many keys from pos (before
  // `end`) follow it in the same page (consecutive slots).
  struct PageRun {
    int64_t slot, run;
  };
  PageRun PageRunAt(int64_t b, int64_t pos, int64_t end) const {
    const int64_t page_size = params_.page_size;
    const int64_t page = pos / page_size, in_page = pos - page * page_size;
    return {int64_t{I32At2(table_, b, page)} * page_size + in_page,
            std::min(end - pos, page_size - in_page)};
  }

  // out [run][D] = an f32 cache's rows of KV head kvh in slots [slot,
  // slot + run): one memcpy when they are dense.
  void ConvertRun(const TensorView& cache, int64_t slot, int64_t kvh, int64_t run,
                  float* out) const {
    const T* first = Row3<T>(cache, slot, kvh);
    if (cache.stride(2) == 1 && cache.stride(0) == d_) {
      std::memcpy(out, first, static_cast<size_t>(run * d_) * sizeof(float));
      return;
    }
    for (int64_t r = 0; r < run; ++r) {
      WidenRow(first + r * cache.stride(0), cache.stride(2), out + r * d_);
    }
  }

  // Asks for the shared f32 block at `blk` (2 x 32 x D floats, contiguous).
  void PrefetchShared(const AttentionItem& item, int64_t blk) const {
    if (blk >= item.k_hi) return;
    const char* p = reinterpret_cast<const char*>(shared_->Kt(item.b, item.kvh, blk));
    const int64_t bytes = 2 * kAttentionKeyBlock * d_ * static_cast<int64_t>(sizeof(float));
    for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off);
  }

  // Converts keys [max(blk, k_lo), min(blk + B, k_hi)) to f32: K rows into
  // k (then transposed into kt when `transpose`); V into v. The block's
  // other rows are zero (their probabilities are zero, and 0 * garbage
  // could be NaN).
  void LoadBlock(const AttentionItem& item, int64_t blk, bool transpose,
                 AttentionScratch& w) const {
    // Asks for the block AheadKeys() on; with small heads (several blocks
    // ahead) the first block also asks for those before it.
    const int64_t ahead = AheadKeys();
    if (ahead > kAttentionKeyBlock && blk == item.first_block()) {
      Prefetch(item, blk + kAttentionKeyBlock, blk + ahead);
    }
    ConvertRows(item, blk, w.k.data(), w.v.data());
    if (transpose) kernels_.transpose_keys(w.k.data(), d_, w.kt.data());
    Prefetch(item, blk + ahead, blk + ahead + kAttentionKeyBlock);
  }

  // Asks for the K/V rows of keys [from, to) (within the item's range):
  // one KV head's rows are a few cache lines spaced apart, scattered over
  // pages, which the hardware prefetchers do not follow. A page's rows that
  // are contiguous (head-major caches) are asked for line by line.
  void Prefetch(const AttentionItem& item, int64_t from, int64_t to) const {
    to = std::min(to, item.k_hi);
    from = std::max(from, item.k_lo);
    if (from >= to || kc_.stride(2) != 1 || vc_.stride(2) != 1) return;
    const int64_t row_bytes = d_ * static_cast<int64_t>(sizeof(T));
    const int64_t elem = static_cast<int64_t>(sizeof(T));
    const bool dense = kc_.stride(0) == d_ && vc_.stride(0) == d_;
    for (int64_t pos = from; pos < to;) {
      // Rows of this page from pos on (one at a time unless rows are dense).
      auto [slot, run] = PageRunAt(item.b, pos, to);
      if (!dense) run = 1;
      const char* k = reinterpret_cast<const char*>(Row3<T>(kc_, slot, item.kvh));
      const char* v = reinterpret_cast<const char*>(Row3<T>(vc_, slot, item.kvh));
      const int64_t bytes = (run - 1) * kc_.stride(0) * elem + row_bytes;
      for (int64_t off = 0; off < bytes; off += 64) {
        __builtin_prefetch(k + off);
        __builtin_prefetch(v + off);
      }
      pos += run;
    }
  }

  void WidenRow(const T* row, int64_t stride, float* out) const {
    if constexpr (std::is_same_v<T, Bf16>) {
      if (stride == 1) {
        kernels_.widen_bf16(reinterpret_cast<const uint16_t*>(row), d_, out);
        return;
      }
    }
    for (int64_t c = 0; c < d_; ++c) out[c] = ToF32(row[c * stride]);
  }

  void Softcap(int64_t rows, AttentionScratch& w) const {
    const float cap = params_.logit_softcap;
    for (int64_t i = 0; i < rows; ++i) {
      float* si = w.s.data() + i * kAttentionKeyBlock;
      for (int32_t j = w.lo[i]; j < w.hi[i]; ++j) si[j] = cap * std::tanh(si[j] / cap);
    }
  }

  const TensorView &q_, &kc_, &vc_, &table_, &o_;
  const std::vector<SeqInfo>& seqs_;
  const tsr_paged_attention_params& params_;
  const int64_t d_, group_;
  const AttentionKernels& kernels_;
  const SharedBlocks* shared_ = nullptr;
};

// Combines the partial results of one split tile (items [first, last)):
// o = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M), M = max_s m_s.
// Partial p's row i sits at acc[(p * stride + i) * d], ml[(p * stride + i) * 2].
template <typename T>
void MergeSplits(const PagedAttention<T>& attention, const std::vector<AttentionItem>& items,
                 size_t first, size_t last, int64_t stride, const std::vector<float>& acc,
                 const std::vector<float>& ml) {
  const AttentionItem& tile = items[first];
  const int64_t rows = (tile.t1 - tile.t0) * attention.group(), d = attention.d();
  std::vector<float> out(rows * d, 0.0f), l(rows, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    float top = -std::numeric_limits<float>::infinity();
    for (size_t s = first; s < last; ++s) top = std::max(top, ml[(items[s].partial * stride + i) * 2]);
    for (size_t s = first; s < last; ++s) {
      const int64_t p = items[s].partial;
      const float m = ml[(p * stride + i) * 2], ls = ml[(p * stride + i) * 2 + 1];
      if (ls == 0.0f) continue;
      const float f = std::exp(m - top);
      l[i] += ls * f;
      const float* a = acc.data() + (p * stride + i) * d;
      for (int64_t c = 0; c < d; ++c) out[i * d + c] += a[c] * f;
    }
  }
  attention.Write(tile, out.data(), l.data());
}

// Chooses the sequences whose K/V blocks are converted once for all their
// tiles (more than one query tile, whose rows take the transposed-key
// path, within kMaxSharedBlockBytes) and converts them on the pool. The
// first block is the first tile's, so a sliding window skips the keys no
// tile reads.
template <typename T>
void PrepareSharedBlocks(const PagedAttention<T>& attention, const std::vector<SeqInfo>& seqs,
                         int64_t hk, int64_t tile_rows, int64_t window, ExecContext& ctx,
                         SharedBlocks* shared) {
  constexpr int64_t kB = kAttentionKeyBlock;
  const int64_t d = attention.d();
  const int64_t block_bytes = 2 * kB * d * static_cast<int64_t>(sizeof(float));
  const int64_t b_count = static_cast<int64_t>(seqs.size());
  shared->first_block.assign(b_count, -1);
  shared->base.assign(b_count, 0);
  shared->blocks.assign(b_count, 0);
  shared->hk = hk, shared->d = d;
  int64_t total = 0;  // blocks
  struct Job {
    int64_t b, h, blk;
  };
  std::vector<Job> jobs;
  for (int64_t b = 0; b < b_count; ++b) {
    const SeqInfo& s = seqs[b];
    if (s.new_tokens <= tile_rows || tile_rows * attention.group() <= kRowScoreMaxRows) continue;
    const int64_t first_pos = s.len - s.new_tokens;
    const int64_t k_lo = window > 0 ? std::max<int64_t>(0, first_pos - window + 1) : 0;
    const int64_t first = k_lo / kB * kB;
    const int64_t blocks = (s.len - first + kB - 1) / kB;
    if ((total + blocks * hk) * block_bytes > kMaxSharedBlockBytes) continue;
    shared->first_block[b] = first;
    shared->base[b] = total;
    shared->blocks[b] = blocks;
    total += blocks * hk;
    for (int64_t h = 0; h < hk; ++h) {
      for (int64_t i = 0; i < blocks; ++i) jobs.push_back({b, h, first + i * kB});
    }
  }
  if (jobs.empty()) return;
  thread_local std::vector<float> storage;  // the calling thread's, reused
  const size_t floats = static_cast<size_t>(total * block_bytes / sizeof(float));
  if (storage.size() < floats) storage.resize(floats);
  shared->data = storage.data();
  const int64_t grain = std::max<int64_t>(1, 64 * 128 / std::max<int64_t>(1, d));
  ctx.pool->ParallelFor(static_cast<int64_t>(jobs.size()), grain, [&](int64_t begin, int64_t end) {
    AttentionScratch& scratch = ThreadScratch(1, d);
    for (int64_t i = begin; i < end; ++i) {
      attention.PrepareShared(jobs[i].b, jobs[i].h, jobs[i].blk, *shared, scratch);
    }
  });
}

template <typename T>
Status AttentionImpl(const OpCall& call, ExecContext& ctx) {
  const TensorView& kc = call.in[1];
  std::vector<SeqInfo> seqs;
  TSR_CPU_RETURN_IF_ERROR(ReadSequences(call, kc.dim(0), &seqs));
  PagedAttention<T> attention(call, seqs);
  const int64_t group = attention.group(), d = attention.d();
  const int64_t tile_rows = std::max<int64_t>(1, kTileQueryRows / group);
  int64_t partials = 0;
  std::vector<AttentionItem> items = PlanAttention(
      seqs, kc.dim(1), tile_rows, call.params.attention.sliding_window, ctx.pool->size(),
      &partials);
  if (items.empty()) return OkStatus();
  const int64_t max_rows = tile_rows * group;
  SharedBlocks shared;
  PrepareSharedBlocks(attention, seqs, kc.dim(1), tile_rows, call.params.attention.sliding_window,
                      ctx, &shared);
  attention.UseShared(&shared);
  // Partial results: acc [partials, max_rows, d] and (m, l) pairs.
  std::vector<float> partial_acc(partials * max_rows * d), partial_ml(partials * max_rows * 2);
  // Largest first, handed out one at a time, so causal tiles balance.
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return items[a].cost() > items[b].cost(); });
  // Workers: one per thread, but one alone when the whole call is too
  // small to pay for waking a helper (a tiny model's decode step).
  int64_t macs = 0;
  for (const AttentionItem& item : items) macs += item.cost() * group * d;
  const int64_t workers =
      macs < kMinParallelMacs
          ? 1
          : std::min<int64_t>(ctx.pool->size(), static_cast<int64_t>(items.size()));
  // Many items (a decode batch: one per sequence and KV head, each a few
  // blocks) are handed out four at a time, so a worker knows its next
  // item and asks for its first K/V rows while running this one (its
  // first block would otherwise wait on memory).
  const size_t chunk = order.size() >= kChunkedItemsPerWorker * static_cast<size_t>(workers)
                           ? 4
                           : 1;
  std::atomic<size_t> next{0};
  ctx.pool->ParallelFor(workers, 1,
                        [&](int64_t, int64_t) {
    AttentionScratch& scratch = ThreadScratch(max_rows, d);
    for (size_t n0 = next.fetch_add(chunk); n0 < order.size(); n0 = next.fetch_add(chunk)) {
      const size_t n1 = std::min(order.size(), n0 + chunk);
      for (size_t n = n0; n < n1; ++n) {
        if (n + 1 < n1) attention.PrefetchStart(items[order[n + 1]]);
        const AttentionItem& item = items[order[n]];
        attention.Run(item, scratch);
        if (item.partial < 0) continue;
        const int64_t rows = (item.t1 - item.t0) * group;
        std::copy(scratch.acc.begin(), scratch.acc.begin() + rows * d,
                  partial_acc.begin() + item.partial * max_rows * d);
        for (int64_t i = 0; i < rows; ++i) {
          partial_ml[(item.partial * max_rows + i) * 2] = scratch.m[i];
          partial_ml[(item.partial * max_rows + i) * 2 + 1] = scratch.l[i];
        }
      }
    }
  });
  for (size_t first = 0; first < items.size();) {
    size_t last = first + 1;
    if (items[first].partial >= 0) {
      while (last < items.size() && items[last].partial >= 0 &&
             items[last].t0 == items[first].t0 && items[last].kvh == items[first].kvh &&
             items[last].b == items[first].b) {
        ++last;
      }
      MergeSplits(attention, items, first, last, max_rows, partial_acc, partial_ml);
    }
    first = last;
  }
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
