// Cases of the fused decoder_layer (ABI 1.2): whole layers over a small
// paged pool, compared with reference/'s composition of the v1 ops.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "conformance/op_cases.h"

namespace tessera::conformance {
namespace {

struct LayerSeq {
  int64_t cached;  // tokens already in the pool
  int64_t fresh;   // new tokens
};

struct LayerSpec {
  int64_t hq = 4, hk = 2, d = 16, rotary = 16, hidden = 32, inter = 24;
  int64_t page_size = 4;
  std::vector<LayerSeq> seqs;
  bool qk_norm = false, qkv_bias = false, o_bias = false;
  tsr_rope_style style = TSR_ROPE_NEOX;
  bool inplace = false;  // residual_out aliases residual
  int32_t group = 8;     // int8 weights: scales per 8 weights (v3: 0, per channel)
};

// Weight [n, k] in W (U8: packed 4-bit, [n, k / 2]), and its scales
// [n, k / G] (F32 for I8, F16 for U8; absent otherwise). Effective weights are uniform in
// about +-range.
std::pair<TensorSpec, TensorSpec> Weight(CaseBuilder& b, DType w, int64_t n, int64_t k,
                                         int32_t group, double range) {
  TensorSpec absent;
  absent.dtype = TSR_DTYPE_INVALID;
  if (w == TSR_DTYPE_U8) {
    TensorSpec q = b.Ints({n, k / 2}, 0, 256);
    q.dtype = TSR_DTYPE_U8;
    TensorSpec s = b.Uniform(TSR_DTYPE_F16, {n, group > 0 ? k / group : 1}, 0.5 * range / 8,
                             range / 8);
    return {q, s};
  }
  if (w != TSR_DTYPE_I8) return {b.Uniform(w, {n, k}, -range, range), absent};
  TensorSpec q = b.Ints({n, k}, -127, 128);
  q.dtype = TSR_DTYPE_I8;
  // group 0 (decoder_layer v3): per channel, one scale per row.
  TensorSpec s = b.Uniform(TSR_DTYPE_F32, {n, group > 0 ? k / group : 1}, 0.5 * range / 127,
                           range / 127);
  return {q, s};
}

OpCase MakeLayer(CaseBuilder& b, std::span<const DType> classes, const LayerSpec& a) {
  const DType x = classes[0], w = classes[1], kv = classes[2];
  OpCase c;
  c.num_inputs = TSR_DECODER_LAYER_NUM_INPUTS;
  const int64_t batch = static_cast<int64_t>(a.seqs.size());
  int64_t tokens = 0, pages_needed = 0, max_pages = 0;
  for (const LayerSeq& s : a.seqs) {
    const int64_t p = (s.cached + s.fresh + a.page_size - 1) / a.page_size;
    pages_needed += p;
    max_pages = std::max(max_pages, p);
    tokens += s.fresh;
  }
  const int64_t pool_pages = pages_needed + 2;  // spare pages hold noise
  const int64_t slots = pool_pages * a.page_size;
  // Pages handed out in a scrambled order.
  std::vector<int64_t> order(pool_pages);
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = pool_pages - 1; i > 0; --i) {
    std::swap(order[i], order[b.rng().Int(0, i + 1)]);
  }
  std::vector<double> positions, slot_ids, table(batch * max_pages, 0.0), seq_lens,
      query_start = {0};
  size_t next = 0;
  for (int64_t i = 0; i < batch; ++i) {
    const LayerSeq& s = a.seqs[i];
    const int64_t len = s.cached + s.fresh;
    for (int64_t p = 0; p * a.page_size < len; ++p) {
      table[i * max_pages + p] = static_cast<double>(order[next++]);
    }
    for (int64_t j = s.cached; j < len; ++j) {
      positions.push_back(static_cast<double>(j));
      slot_ids.push_back(table[i * max_pages + j / a.page_size] * a.page_size +
                         static_cast<double>(j % a.page_size));
    }
    seq_lens.push_back(static_cast<double>(len));
    query_start.push_back(query_start.back() + static_cast<double>(s.fresh));
  }
  std::vector<double> inv_freq;
  for (int64_t i = 0; i < a.rotary / 2; ++i) {
    inv_freq.push_back(std::pow(10000.0, -2.0 * i / static_cast<double>(a.rotary)));
  }
  const int64_t nqkv = (a.hq + 2 * a.hk) * a.d;
  TensorSpec absent;
  absent.dtype = TSR_DTYPE_INVALID;
  auto norm = [&](int64_t n) { return b.Uniform(x, {n}, 0.5, 1.5); };
  auto [w_qkv, s_qkv] = Weight(b, w, nqkv, a.hidden, a.group, 0.3);
  auto [w_o, s_o] = Weight(b, w, a.hidden, a.hq * a.d, a.group, 0.3);
  auto [w_gu, s_gu] = Weight(b, w, 2 * a.inter, a.hidden, a.group, 0.3);
  auto [w_down, s_down] = Weight(b, w, a.hidden, a.inter, a.group, 0.3);

  TensorSpec residual = b.Uniform(x, {tokens, a.hidden}, -1, 1);
  if (!a.inplace) residual = PadRows(residual, 3);  // strided rows are allowed
  c.args = {residual,
            b.Values(TSR_DTYPE_I32, {tokens}, positions),
            b.Values(TSR_DTYPE_I32, {tokens}, slot_ids),
            b.Values(TSR_DTYPE_I32, {batch, max_pages}, table),
            b.Values(TSR_DTYPE_I32, {batch}, seq_lens),
            b.Values(TSR_DTYPE_I32, {batch + 1}, query_start),
            b.Values(TSR_DTYPE_F32, {a.rotary / 2}, inv_freq),
            norm(a.hidden),
            w_qkv,
            s_qkv,
            a.qkv_bias ? b.Uniform(x, {nqkv}, -0.2, 0.2) : absent,
            a.qk_norm ? norm(a.d) : absent,
            a.qk_norm ? norm(a.d) : absent,
            w_o,
            s_o,
            a.o_bias ? b.Uniform(x, {a.hidden}, -0.2, 0.2) : absent,
            norm(a.hidden),
            w_gu,
            s_gu,
            w_down,
            s_down};
  // The pool holds the cached prefix (and noise elsewhere) before the call.
  c.args.push_back(a.inplace ? AliasOf(c.args, 0) : b.Output(x, {tokens, a.hidden}));
  c.args.push_back(b.Uniform(kv, {slots, a.hk, a.d}, -1, 1));
  c.args.push_back(b.Uniform(kv, {slots, a.hk, a.d}, -1, 1));

  tsr_decoder_layer_params p{};
  p.struct_size = sizeof(p);
  p.rms_norm_eps = 1e-5f;
  p.rope_style = a.style;
  p.num_q_heads = static_cast<int32_t>(a.hq);
  p.num_kv_heads = static_cast<int32_t>(a.hk);
  p.head_dim = static_cast<int32_t>(a.d);
  p.weight_group_size = w == TSR_DTYPE_I8 || w == TSR_DTYPE_U8 ? a.group : 0;
  p.attn_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.d)));
  p.page_size = static_cast<int32_t>(a.page_size);
  c.SetParams(p);
  // A layer chains ~14 roundings of its intermediates to X: a one-ulp
  // difference early (f32 vs f64 accumulation) moves the output by a few
  // ulp, most in bf16.
  c.tolerance_scale = x == TSR_DTYPE_BF16 || kv == TSR_DTYPE_BF16 ? 3 : 4;
  return c;
}

}  // namespace

// decoder_layer v1 (and v2 without a communicator, and v3 — w8a8, W I8
// only — whose projections quantise activations): dtypes are the
// signature's classes (X, W, KV). Group 8 keeps the shapes small (the cpu
// plugin's v3 then runs its scalar block; its SIMD blocks are in the
// linear v3 cases).
// v4 (w4a8, W U8: packed 4-bit) needs every K a multiple of 32: its
// layers have I = 32 and G = 32.
void AddDecoderLayerCases(CaseList& out, std::span<const DType> dtypes, uint32_t version) {
  const std::vector<DType> classes(dtypes.begin(), dtypes.end());
  auto add = [&](std::string name, LayerSpec spec) {
    if (version == 4) {
      spec.inter = 32;
      if (spec.group != 0) spec.group = 32;
    }
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c = MakeLayer(b, classes, spec);
                     c.version = version;  // v2: params.comm stays NULL
                     // v3/v4 quantise each projection's input to int8 inside
                     // the layer: a one-ulp difference in an intermediate (f32
                     // here, f64 in the reference; a bf16 KV rounding) can move
                     // one activation across a quantisation boundary, one step
                     // of 1/127 of its block's max, which no f32 tolerance
                     // covers. Such layers are compared at bf16's tolerance
                     // (2^-7, that step's size) whatever X is; the linear v3 /
                     // v4 cases check the int8 arithmetic itself at X's.
                     if (version >= 3 && classes[0] == TSR_DTYPE_F32) {
                       c.tolerance_scale = 1.6e-2 / 1e-4;
                     }
                     return c;
                   }});
  };
  LayerSpec decode;  // Qwen3-like: q/k norms, GQA, decode over a prefix
  decode.seqs = {{5, 1}, {9, 1}, {0, 1}};
  decode.qk_norm = true;
  decode.inplace = true;
  add("decode", decode);
  LayerSpec mixed;  // Qwen2-like: biases; prefill over a prefix + decode
  mixed.seqs = {{2, 3}, {6, 1}, {0, 4}};
  mixed.qkv_bias = true;
  add("mixed", mixed);
  LayerSpec llama;  // Llama-like: interleaved partial rope, o bias, MHA
  llama.hq = llama.hk = 2;
  llama.rotary = 8;
  llama.style = TSR_ROPE_INTERLEAVED;
  llama.o_bias = true;
  llama.page_size = 3;
  llama.seqs = {{4, 2}, {1, 1}};
  llama.inplace = true;
  add("llama", llama);
  if ((version == 3 && classes[1] == TSR_DTYPE_I8) || version == 4) {
    LayerSpec per_channel = mixed;  // weight_group_size 0: G = each K
    per_channel.group = 0;
    add("per_channel", per_channel);
  }
}

OpCase MakeDecoderLayerTpCase(CaseBuilder& b) {
  LayerSpec spec;
  spec.seqs = {{5, 1}, {0, 3}, {9, 1}};
  spec.qk_norm = true;
  spec.qkv_bias = true;
  spec.o_bias = true;
  spec.inplace = true;
  const DType f32[] = {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32};
  return MakeLayer(b, f32, spec);
}

}  // namespace tessera::conformance
