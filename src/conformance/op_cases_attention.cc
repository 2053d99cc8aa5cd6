// Cases for rope, kv_store and paged_attention. See op_cases.h.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "conformance/op_cases.h"

namespace tessera::conformance {
namespace {

// Positions stay below 256: a plugin may compute angles in f32 (as Hugging
// Face does), whose rounding grows with the position (tolerance.h).
constexpr int64_t kMaxPosition = 256;

std::vector<double> InvFreq(int64_t rotary, double base) {
  std::vector<double> v(rotary / 2);
  for (int64_t i = 0; i < rotary / 2; ++i) {
    v[i] = 1.0 / std::pow(base, 2.0 * i / rotary);
  }
  return v;
}

// A random permutation of 0..n-1.
std::vector<int64_t> Shuffled(Rng& rng, int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) std::swap(v[i], v[rng.Int(0, i + 1)]);
  return v;
}

}  // namespace

// rope: positions I32 [T], inv_freq F32 [R/2], q X [T, Hq, D], k X [T, Hk, D]
// -> q_out, k_out (may alias q, k).
void AddRopeCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[2];
  enum Layout { kPacked, kQkvInplace, kInplacePadded, kStrided };
  for (tsr_rope_style style : {TSR_ROPE_NEOX, TSR_ROPE_INTERLEAVED}) {
    const std::string prefix =
        style == TSR_ROPE_NEOX ? "neox." : "interleaved.";
    auto add = [&](std::string name, int64_t t, int64_t hq, int64_t hk,
                   int64_t d, int64_t r, Layout l) {
      out.push_back(
          {prefix + name, [=](CaseBuilder& b) {
             OpCase c;
             c.num_inputs = 4;
             tsr_rope_params p{};
             p.struct_size = sizeof(p);
             p.style = style;
             c.SetParams(p);
             TensorSpec pos = b.Ints({t}, 0, kMaxPosition);
             TensorSpec freq =
                 b.Values(TSR_DTYPE_F32, {r / 2}, InvFreq(r, 10000));
             TensorSpec q = b.Uniform(x, {t, hq, d}, -2, 2);
             TensorSpec k = b.Uniform(x, {t, hk, d}, -2, 2);
             TensorSpec qo = b.Output(x, {t, hq, d}),
                        ko = b.Output(x, {t, hk, d});
             switch (l) {
               case kPacked:
                 c.args = {pos, freq, q, k, qo, ko};
                 break;
               case kQkvInplace: {
                 // q and k are views of one fused [T, (Hq + 2 Hk) * D] qkv
                 // buffer, rotated in place; the v part must stay untouched.
                 const int64_t row = (hq + 2 * hk) * d;
                 q = WithStrides(q, {row, d, 1});
                 k = InBufferOf(WithStrides(k, {row, d, 1}), 2, hq * d);
                 c.args = {pos, freq, q, k};
                 c.args.push_back(AliasOf(c.args, 2));
                 c.args.push_back(AliasOf(c.args, 3));
                 break;
               }
               case kInplacePadded:
                 c.args = {pos, freq, AtOffset(PadRows(q, 3), 2),
                           AtOffset(PadRows(k, 1), 1)};
                 c.args.push_back(AliasOf(c.args, 2));
                 c.args.push_back(AliasOf(c.args, 3));
                 break;
               case kStrided:
                 c.args = {
                     WithStrides(pos, {2}),
                     AtOffset(WithStrides(freq, {2}), 1),
                     AtOffset(WithStrides(q, {hq * (d + 3) + 5, d + 3, 1}), 2),
                     WithStrides(k, {hk * d + 7, d, 1}),
                     AtOffset(PadRows(qo, 1), 4),
                     AtOffset(PadRows(ko, 2), 3)};
                 break;
             }
             return c;
           }});
    };
    add("basic", 3, 4, 2, 16, 16, kPacked);
    add("partial", 5, 2, 1, 64, 32, kPacked);
    add("odd", 17, 3, 3, 6, 4, kPacked);
    add("t1", 1, 1, 1, 2, 2, kPacked);
    add("d128", 9, 8, 2, 128, 128, kPacked);
    add("qkv_inplace", 7, 4, 2, 32, 32, kQkvInplace);
    add("inplace_partial", 4, 2, 2, 16, 8, kInplacePadded);
    add("strided", 6, 3, 1, 8, 8, kStrided);
    add("empty", 0, 2, 1, 8, 8, kPacked);
  }
}

// kv_store: k, v X [T, Hk, D], slots I32 [T] -> k_cache, v_cache X [S, Hk, D]
// in place. Exact.
void AddKvStoreCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[0];
  enum Layout { kPacked, kPadding, kQkvViews, kCachePadded };
  auto add = [&](std::string name, int64_t t, int64_t hk, int64_t d, int64_t s,
                 Layout l) {
    out.push_back(
        {name, [=](CaseBuilder& b) {
           OpCase c;
           c.num_inputs = 3;
           c.compare = CompareMode::kExact;
           TensorSpec k = b.Uniform(x, {t, hk, d}, -2, 2);
           TensorSpec v = b.Uniform(x, {t, hk, d}, -2, 2);
           std::vector<int64_t> perm = Shuffled(b.rng(), s);
           std::vector<double> slots(t);
           for (int64_t i = 0; i < t; ++i)
             slots[i] = static_cast<double>(perm[i]);
           if (l == kPadding) {
             for (int64_t i = 1; i < t; i += 3) slots[i] = -1;
           }
           TensorSpec sl = b.Values(TSR_DTYPE_I32, {t}, slots);
           // The pool starts with data: only the named rows may change.
           TensorSpec kc = b.Uniform(x, {s, hk, d}, -2, 2);
           TensorSpec vc = b.Uniform(x, {s, hk, d}, -2, 2);
           switch (l) {
             case kPacked:
             case kPadding:
               c.args = {k, v, sl, kc, vc};
               break;
             case kQkvViews: {
               const int64_t hq = 4, row = (hq + 2 * hk) * d;
               k = AtOffset(WithStrides(k, {row, d, 1}), hq * d);
               v = InBufferOf(WithStrides(v, {row, d, 1}), 0, (hq + hk) * d);
               c.args = {k, v, WithStrides(sl, {2}), kc, vc};
               break;
             }
             case kCachePadded:
               c.args = {
                   k, v, sl,
                   AtOffset(WithStrides(kc, {hk * (d + 4) + 3, d + 4, 1}), 2),
                   AtOffset(WithStrides(vc, {hk * (d + 1) + 1, d + 1, 1}), 5)};
               break;
           }
           return c;
         }});
  };
  add("basic", 5, 2, 16, 32, kPacked);
  add("padding", 9, 2, 8, 16, kPadding);
  add("t1", 1, 1, 1, 1, kPacked);
  add("d128", 17, 1, 128, 64, kPacked);
  add("qkv_views", 6, 2, 8, 16, kQkvViews);
  add("cache_padded", 7, 2, 8, 16, kCachePadded);
  add("empty", 0, 2, 8, 16, kPacked);
}

namespace {

struct Seq {
  int64_t context;  // L
  int64_t fresh;    // n, new tokens
};

struct AttentionSpec {
  int64_t hq = 4, hk = 2, d = 16, page_size = 16;
  std::vector<Seq> seqs;
  int32_t window = 0;
  float softcap = 0;
  double q_scale = 1;
  enum Layout { kPacked, kStrided, kKvInterleaved } layout = kPacked;
};

OpCase MakeAttention(CaseBuilder& b, DType x, const AttentionSpec& a) {
  OpCase c;
  c.num_inputs = 6;
  const int64_t batch = static_cast<int64_t>(a.seqs.size());
  int64_t pages_needed = 0, max_pages = 0, tokens = 0;
  for (const Seq& s : a.seqs) {
    int64_t p = (s.context + a.page_size - 1) / a.page_size;
    pages_needed += p;
    max_pages = std::max(max_pages, p);
    tokens += s.fresh;
  }
  const int64_t pool_pages = pages_needed + 3;  // spare pages hold noise
  const int64_t slots = pool_pages * a.page_size;
  const int64_t width = max_pages + 1;  // one padding column
  std::vector<int64_t> pages = Shuffled(b.rng(), pool_pages);
  std::vector<double> table(batch * width, 0.0), seq_lens, query_start = {0};
  size_t next_page = 0;
  for (int64_t i = 0; i < batch; ++i) {
    const Seq& s = a.seqs[i];
    for (int64_t p = 0; p * a.page_size < s.context; ++p) {
      table[i * width + p] = static_cast<double>(pages[next_page++]);
    }
    seq_lens.push_back(static_cast<double>(s.context));
    query_start.push_back(query_start.back() + static_cast<double>(s.fresh));
  }
  tsr_paged_attention_params p{};
  p.struct_size = sizeof(p);
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.d)));
  p.page_size = static_cast<int32_t>(a.page_size);
  p.sliding_window = a.window;
  p.logit_softcap = a.softcap;
  c.SetParams(p);

  TensorSpec q = b.Uniform(x, {tokens, a.hq, a.d}, -a.q_scale, a.q_scale);
  TensorSpec kc = b.Uniform(x, {slots, a.hk, a.d}, -1, 1);
  TensorSpec vc = b.Uniform(x, {slots, a.hk, a.d}, -1, 1);
  TensorSpec bt = b.Values(TSR_DTYPE_I32, {batch, width}, table);
  TensorSpec sl = b.Values(TSR_DTYPE_I32, {batch}, seq_lens);
  TensorSpec qs = b.Values(TSR_DTYPE_I32, {batch + 1}, query_start);
  TensorSpec o = b.Output(x, {tokens, a.hq, a.d});
  switch (a.layout) {
    case AttentionSpec::kPacked:
      break;
    case AttentionSpec::kStrided: {
      const int64_t row = (a.hq + 2 * a.hk) * a.d;  // q inside a fused qkv
      q = WithStrides(q, {row, a.d, 1});
      bt = AtOffset(PadRows(bt, 2), 1);
      sl = WithStrides(sl, {2});
      qs = AtOffset(WithStrides(qs, {3}), 2);
      o = AtOffset(WithStrides(o, {a.hq * (a.d + 2) + 1, a.d + 2, 1}), 3);
      break;
    }
    case AttentionSpec::kKvInterleaved: {
      // One pool [S, 2, Hk, D]: K and V of a slot side by side.
      const int64_t row = 2 * a.hk * a.d;
      kc = WithStrides(kc, {row, a.d, 1});
      vc = InBufferOf(WithStrides(vc, {row, a.d, 1}), 1, a.hk * a.d);
      break;
    }
  }
  c.args = {q, kc, vc, bt, sl, qs, o};
  return c;
}

}  // namespace

// paged_attention: a ragged batch over a paged pool (see the header).
void AddPagedAttentionCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[0];
  auto add = [&](std::string name, AttentionSpec spec) {
    out.push_back(
        {name, [=](CaseBuilder& b) { return MakeAttention(b, x, spec); }});
  };
  using S = AttentionSpec;
  add("decode", S{4, 2, 16, 16, {{1, 1}, {17, 1}, {40, 1}}});
  add("prefill", S{4, 4, 32, 16, {{17, 17}}});
  add("prefix_prefill", S{4, 2, 32, 8, {{33, 9}}});
  add("mixed", S{8, 2, 64, 16, {{33, 9}, {20, 1}, {5, 5}, {48, 16}}});
  add("zero_new", S{2, 1, 16, 4, {{10, 0}, {6, 2}}});
  add("page1", S{2, 1, 8, 1, {{7, 3}, {4, 1}}});
  add("page5", S{4, 2, 16, 5, {{23, 4}, {11, 11}}});
  add("mqa", S{8, 1, 16, 16, {{30, 2}, {1, 1}}});
  add("window", S{4, 2, 16, 4, {{25, 5}, {9, 1}, {3, 3}}, 7});
  add("softcap", S{4, 2, 16, 16, {{20, 4}, {6, 1}}, 0, 5.0f, 8});
  add("window_softcap", S{4, 2, 16, 4, {{13, 6}, {2, 1}}, 4, 3.0f, 6});
  add("d80", S{2, 1, 80, 16, {{19, 3}}});
  add("d3", S{2, 2, 3, 2, {{5, 2}}});
  add("long", S{4, 1, 128, 16, {{300, 1}, {129, 2}}});
  S strided{4, 2, 16, 8, {{12, 3}, {7, 1}}};
  strided.layout = S::kStrided;
  add("strided", strided);
  S interleaved{4, 2, 16, 8, {{12, 3}, {7, 1}}};
  interleaved.layout = S::kKvInterleaved;
  add("kv_interleaved", interleaved);
}

}  // namespace tessera::conformance
