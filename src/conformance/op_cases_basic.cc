// Cases for embedding, rms_norm, add_rms_norm, linear, silu_and_mul, add and
// cast. See op_cases.h for how cases are written.
#include <cmath>

#include "conformance/op_cases.h"

namespace tessera::conformance {
namespace {

using Shape = std::vector<int64_t>;

int64_t Numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

tsr_rms_norm_params NormParams(float eps) {
  tsr_rms_norm_params p{};
  p.struct_size = sizeof(p);
  p.eps = eps;
  return p;
}

}  // namespace

// embedding: ids I32 [T], table X [V, H] -> y X [T, H]. Exact (a gather).
void AddEmbeddingCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[1];
  enum Layout { kPacked, kStrided, kRepeated };
  auto add = [&](std::string name, int64_t t, int64_t v, int64_t h, Layout l) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.num_inputs = 2;
                     c.compare = CompareMode::kExact;
                     TensorSpec ids = b.Ints({t}, 0, v);
                     if (l == kRepeated)
                       ids.values.assign(t, static_cast<double>(v - 1));
                     TensorSpec table = b.Uniform(x, {v, h}, -2, 2);
                     TensorSpec y = b.Output(x, {t, h});
                     if (l == kStrided) {
                       ids = WithStrides(ids, {2});
                       table = AtOffset(PadRows(table, 3), 5);
                       y = AtOffset(PadRows(y, 7), 1);
                     }
                     c.args = {ids, table, y};
                     return c;
                   }});
  };
  add("tiny", 1, 1, 1, kPacked);
  add("basic", 3, 17, 33, kPacked);
  add("wide", 17, 129, 64, kPacked);
  add("strided", 9, 33, 17, kStrided);
  add("repeated", 5, 17, 8, kRepeated);
  add("empty", 0, 17, 8, kPacked);
}

// embedding v2 (ABI 1.4): a shard of `rows` vocabulary rows starting at
// row_begin; ids span the whole vocabulary (most fall outside: zeros).
void AddEmbeddingShardCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[1];
  auto add = [&](std::string name, int64_t t, int64_t vocab, int64_t begin, int64_t rows,
                 int64_t h, bool strided) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.version = 2;
                     c.num_inputs = 2;
                     c.compare = CompareMode::kExact;
                     TensorSpec ids = b.Ints({t}, 0, vocab);
                     if (t >= 2) {  // both edges of the shard, always
                       ids.values[0] = static_cast<double>(begin);
                       ids.values[1] = static_cast<double>(begin + rows - 1);
                     }
                     TensorSpec table = b.Uniform(x, {rows, h}, -2, 2);
                     TensorSpec y = b.Output(x, {t, h});
                     if (strided) {
                       ids = WithStrides(ids, {2});
                       table = AtOffset(PadRows(table, 3), 5);
                       y = AtOffset(PadRows(y, 7), 1);
                     }
                     c.args = {ids, table, y};
                     tsr_embedding_shard_params p{};
                     p.struct_size = sizeof(p);
                     p.row_begin = begin;
                     c.SetParams(p);
                     return c;
                   }});
  };
  add("first_shard", 9, 64, 0, 16, 33, false);
  add("middle_shard", 17, 64, 24, 16, 64, false);
  add("last_shard", 12, 48, 32, 16, 24, false);
  add("strided", 9, 40, 30, 10, 17, true);
  add("empty", 0, 17, 4, 8, 8, false);
}

// rms_norm: x X [.., H], w X [H] -> y X [.., H]; y may alias x.
void AddRmsNormCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[0];
  enum Layout { kPacked, kStrided, kTransposed, kInplace };
  auto add = [&](std::string name, Shape shape, float eps, double x_scale,
                 Layout l) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.num_inputs = 2;
                     c.SetParams(NormParams(eps));
                     TensorSpec xs =
                         b.Uniform(x, shape, -2 * x_scale, 2 * x_scale);
                     TensorSpec w = b.Uniform(x, {shape.back()}, 0.5, 1.5);
                     TensorSpec y = b.Output(x, shape);
                     switch (l) {
                       case kPacked:
                         c.args = {xs, w, y};
                         break;
                       case kStrided:
                         c.args = {AtOffset(PadRows(xs, 7), 3),
                                   AtOffset(WithStrides(w, {2}), 1),
                                   AtOffset(PadRows(y, 2), 5)};
                         break;
                       case kTransposed:
                         c.args = {Transpose2D(xs), w, y};
                         break;
                       case kInplace:
                         c.args = {AtOffset(PadRows(xs, 3), 2), w};
                         c.args.push_back(AliasOf(c.args, 0));
                         break;
                     }
                     return c;
                   }});
  };
  add("h1", {1, 1}, 1e-6f, 1, kPacked);
  add("basic", {3, 17}, 1e-6f, 1, kPacked);
  add("wide", {17, 129}, 1e-5f, 1, kPacked);
  add("rank3", {2, 3, 33}, 1e-6f, 1, kPacked);
  add("h1024", {4, 1024}, 1e-6f, 1, kPacked);
  add("vector", {17}, 1e-6f, 1, kPacked);
  add("strided", {5, 33}, 1e-6f, 1, kStrided);
  add("transposed", {17, 33}, 1e-6f, 1, kTransposed);
  add("inplace", {3, 129}, 1e-6f, 1, kInplace);
  add("eps", {3, 17}, 1e-2f, 0.01, kPacked);  // eps dominates mean(x^2)
  add("empty", {0, 17}, 1e-6f, 1, kPacked);
}

// add_rms_norm: x, residual X [.., H], w X [H] -> y, residual_out X [.., H];
// residual_out may alias residual.
void AddAddRmsNormCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[0];
  enum Layout { kPacked, kStrided, kInplace, kInplaceStrided };
  auto add = [&](std::string name, Shape shape, float eps, Layout l) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.num_inputs = 3;
                     c.SetParams(NormParams(eps));
                     TensorSpec xs = b.Uniform(x, shape, -2, 2);
                     TensorSpec r = b.Uniform(x, shape, -2, 2);
                     TensorSpec w = b.Uniform(x, {shape.back()}, 0.5, 1.5);
                     TensorSpec y = b.Output(x, shape), ro = b.Output(x, shape);
                     switch (l) {
                       case kPacked:
                         c.args = {xs, r, w, y, ro};
                         break;
                       case kStrided:
                         c.args = {AtOffset(PadRows(xs, 3), 1),
                                   AtOffset(PadRows(r, 5), 2),
                                   AtOffset(WithStrides(w, {3}), 1),
                                   AtOffset(PadRows(y, 1), 4),
                                   AtOffset(PadRows(ro, 6), 3)};
                         break;
                       case kInplace:
                         c.args = {xs, r, w, y};
                         c.args.push_back(AliasOf(c.args, 1));
                         break;
                       case kInplaceStrided:
                         c.args = {AtOffset(PadRows(xs, 2), 3),
                                   AtOffset(PadRows(r, 4), 1), w,
                                   PadRows(y, 3)};
                         c.args.push_back(AliasOf(c.args, 1));
                         break;
                     }
                     return c;
                   }});
  };
  add("h1", {1, 1}, 1e-6f, kPacked);
  add("basic", {3, 17}, 1e-6f, kPacked);
  add("wide", {17, 129}, 1e-5f, kPacked);
  add("rank3", {2, 3, 33}, 1e-6f, kPacked);
  add("strided", {5, 33}, 1e-6f, kStrided);
  add("inplace", {7, 65}, 1e-6f, kInplace);
  add("inplace_strided", {4, 33}, 1e-6f, kInplaceStrided);
  add("empty", {0, 9}, 1e-6f, kPacked);
}

// linear: x A [T, K], w W [N, K], optional bias A [N] -> y A [T, N].
void AddLinearCases(CaseList& out, std::span<const DType> dtypes) {
  const DType a = dtypes[0], wt = dtypes[1];
  const bool bias = dtypes.size() == 4;
  enum Layout { kPacked, kStrided, kTransposedX };
  auto add = [&](std::string name, int64_t t, int64_t k, int64_t n, Layout l) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.num_inputs = bias ? 3 : 2;
                     const double ws = 1.0 / std::sqrt(static_cast<double>(
                                                 std::max<int64_t>(k, 1)));
                     TensorSpec x = b.Uniform(a, {t, k}, -1, 1);
                     TensorSpec w = b.Uniform(wt, {n, k}, -ws, ws);
                     TensorSpec bs = b.Uniform(a, {n}, -1, 1);
                     TensorSpec y = b.Output(a, {t, n});
                     if (l == kStrided) {
                       x = AtOffset(PadRows(x, 3), 5);
                       w = AtOffset(PadRows(w, 8), 3);
                       bs = AtOffset(WithStrides(bs, {3}), 2);
                       y = AtOffset(PadRows(y, 5), 1);
                     } else if (l == kTransposedX) {
                       x = Transpose2D(x);
                     }
                     c.args = {x, w};
                     if (bias) c.args.push_back(bs);
                     c.args.push_back(y);
                     return c;
                   }});
  };
  add("tiny", 1, 1, 1, kPacked);
  add("basic", 3, 17, 5, kPacked);
  add("wide", 17, 33, 129, kPacked);
  add("tall", 5, 129, 17, kPacked);
  add("k256", 33, 256, 64, kPacked);
  add("gemv", 1, 512, 33, kPacked);
  add("k4096", 2, 4096, 9, kPacked);
  add("strided", 7, 33, 17, kStrided);
  add("x_transposed", 9, 17, 13, kTransposedX);
  add("t0", 0, 17, 5, kPacked);
}

// linear v2 (ABI 1.1): x A [T, K], w I8 [N, K], w_scale F32 [N, K / G],
// optional bias A [N] -> y A [T, N]. Group sizes 32 and K (per channel),
// and odd ones (1, 11) no SIMD path specialises; T on both sides of the
// cpu plugin's decode / prefill split (16 rows per thread); scales around
// 1 / (127 sqrt(K)) so outputs are O(1). The math is exact dequantisation,
// so the ordinary tolerance of the output dtype applies.
// linear v3 (w8a8, ABI 1.5; version 3) takes the same cases plus K % 64 ==
// 32 and G = 64: its activation quantisation is bit-exact by contract, so
// the same tolerance applies.
// linear v4 (w4a8, ABI 1.6; version 4): w U8 [N, K / 2], random packed
// nibbles, F16 scales, K and G multiples of 32; its own shapes (the same
// roles).
// linear v5 (w6a8, ABI 1.8; version 5): w U8 [N, K / 256 * 208], random
// Q6_K super-blocks (any byte is a valid block: u in [0, 63], sc any int8),
// w_scale F16 [N, K / 256] (d), K % 256 == 0, G = 32 .. 256.
void AddLinearW6Cases(CaseList& out, std::span<const DType> dtypes) {
  const DType a = dtypes[0];
  const bool bias = dtypes.size() == 5;
  enum Layout { kPacked, kStrided, kTransposedX };
  auto add = [&](std::string name, int64_t t, int64_t k, int64_t n, int64_t g, Layout l) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.version = 5;
                     c.num_inputs = bias ? 4 : 3;
                     tsr_linear_w8_params p{};
                     p.struct_size = sizeof(p);
                     p.group_size = static_cast<int32_t>(g);
                     c.SetParams(p);
                     // sc * (u - 32) has an rms near 1360: d keeps y O(1).
                     const double d = 1.0 / (1000.0 * std::sqrt(static_cast<double>(k)));
                     TensorSpec x = b.Uniform(a, {t, k}, -1, 1);
                     TensorSpec w = b.Ints({n, k / 256 * 208}, 0, 256);
                     w.dtype = TSR_DTYPE_U8;
                     TensorSpec sc = b.Uniform(TSR_DTYPE_F16, {n, k / 256}, 0.25 * d, 2 * d);
                     TensorSpec bs = b.Uniform(a, {n}, -1, 1);
                     TensorSpec y = b.Output(a, {t, n});
                     if (l == kStrided) {
                       x = AtOffset(PadRows(x, 3), 5);
                       w = AtOffset(PadRows(w, 8), 3);
                       sc = AtOffset(Transpose2D(sc), 1);
                       bs = AtOffset(WithStrides(bs, {3}), 2);
                       y = AtOffset(PadRows(y, 5), 1);
                     } else if (l == kTransposedX) {
                       x = Transpose2D(x);
                     }
                     c.args = {x, w, sc};
                     if (bias) c.args.push_back(bs);
                     c.args.push_back(y);
                     return c;
                   }});
  };
  add("gemv", 1, 1024, 33, 32, kPacked);
  add("basic", 3, 256, 5, 32, kPacked);
  add("wide", 17, 512, 129, 32, kPacked);
  add("head_like", 2, 1024, 1031, 32, kPacked);
  add("k4096", 1, 4096, 9, 32, kPacked);
  add("prefill", 70, 256, 64, 32, kPacked);
  add("group64", 4, 512, 11, 64, kPacked);
  add("group256", 3, 768, 7, 256, kPacked);
  add("strided", 7, 256, 17, 32, kStrided);
  add("x_transposed", 9, 256, 13, 32, kTransposedX);
  add("t0", 0, 256, 5, 32, kPacked);
}

void AddLinearW8Cases(CaseList& out, std::span<const DType> dtypes, uint32_t version) {
  const DType a = dtypes[0];
  const bool bias = dtypes.size() == 5;
  enum Layout { kPacked, kStrided, kTransposedX };
  auto add = [&](std::string name, int64_t t, int64_t k, int64_t n, int64_t g,
                 Layout l) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.version = version;
                     c.num_inputs = bias ? 4 : 3;
                     tsr_linear_w8_params p{};
                     p.struct_size = sizeof(p);
                     p.group_size = static_cast<int32_t>(g);
                     c.SetParams(p);
                     const double s = 1.0 / (127.0 * std::sqrt(static_cast<double>(
                                                         std::max<int64_t>(k, 1))));
                     TensorSpec x = b.Uniform(a, {t, k}, -1, 1);
                     const bool w4 = version == 4;  // 4-bit weights are within +-8
                     TensorSpec w = b.Uniform(TSR_DTYPE_I8, {n, k}, -127, 127);
                     if (w4) {
                       w = b.Ints({n, k / 2}, 0, 256);
                       w.dtype = TSR_DTYPE_U8;
                     }
                     const double ws = w4 ? s * 127.0 / 8.0 : s;
                     TensorSpec sc = b.Uniform(w4 ? TSR_DTYPE_F16 : TSR_DTYPE_F32, {n, k / g},
                                               0.25 * ws, 2 * ws);
                     TensorSpec bs = b.Uniform(a, {n}, -1, 1);
                     TensorSpec y = b.Output(a, {t, n});
                     if (l == kStrided) {
                       x = AtOffset(PadRows(x, 3), 5);
                       w = AtOffset(PadRows(w, 8), 3);
                       sc = AtOffset(Transpose2D(sc), 1);
                       bs = AtOffset(WithStrides(bs, {3}), 2);
                       y = AtOffset(PadRows(y, 5), 1);
                     } else if (l == kTransposedX) {
                       x = Transpose2D(x);
                     }
                     c.args = {x, w, sc};
                     if (bias) c.args.push_back(bs);
                     c.args.push_back(y);
                     return c;
                   }});
  };
  if (version == 4) {
    add("tiny", 1, 32, 1, 32, kPacked);
    add("basic", 3, 64, 5, 32, kPacked);
    add("wide", 17, 96, 129, 32, kPacked);
    add("per_channel", 5, 128, 17, 128, kPacked);
    add("gemv", 1, 512, 33, 32, kPacked);
    add("gemv_per_channel", 3, 4096, 9, 4096, kPacked);
    add("prefill", 70, 256, 64, 32, kPacked);
    add("group64", 6, 192, 21, 64, kPacked);
    add("k_tail32", 3, 96, 11, 32, kPacked);
    add("strided", 7, 64, 17, 32, kStrided);
    add("x_transposed", 9, 64, 13, 32, kTransposedX);
    add("t0", 0, 64, 5, 32, kPacked);
    return;
  }
  add("tiny", 1, 1, 1, 1, kPacked);
  add("basic", 3, 64, 5, 32, kPacked);
  add("wide", 17, 96, 129, 32, kPacked);
  add("per_channel", 5, 129, 17, 129, kPacked);
  add("gemv", 1, 512, 33, 32, kPacked);
  add("gemv_per_channel", 3, 4096, 9, 4096, kPacked);
  add("prefill", 70, 256, 64, 32, kPacked);
  add("prefill_per_channel", 40, 100, 67, 100, kPacked);
  add("group11", 4, 99, 7, 11, kPacked);
  add("strided", 7, 64, 17, 32, kStrided);
  add("x_transposed", 9, 33, 13, 33, kTransposedX);
  add("t0", 0, 64, 5, 32, kPacked);
  if (version == 3) {
    add("k_tail32", 3, 96, 11, 32, kPacked);
    add("group64", 6, 192, 21, 64, kPacked);
  }
}

// silu_and_mul: x X [.., 2I] -> y X [.., I].
void AddSiluAndMulCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[0];
  enum Layout { kPacked, kStrided, kTransposed };
  auto add = [&](std::string name, Shape shape, Layout l) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.num_inputs = 1;
                     Shape half = shape;
                     half.back() /= 2;
                     TensorSpec xs = b.Uniform(x, shape, -4, 4);
                     TensorSpec y = b.Output(x, half);
                     if (l == kStrided) {
                       xs = AtOffset(PadRows(xs, 4), 3);
                       y = AtOffset(PadRows(y, 5), 2);
                     } else if (l == kTransposed) {
                       xs = Transpose2D(xs);
                     }
                     c.args = {xs, y};
                     return c;
                   }});
  };
  add("i1", {1, 2}, kPacked);
  add("basic", {3, 34}, kPacked);
  add("wide", {17, 258}, kPacked);
  add("rank3", {2, 3, 66}, kPacked);
  add("vector", {66}, kPacked);
  add("strided", {5, 66}, kStrided);
  add("transposed", {9, 34}, kTransposed);
  add("empty", {0, 8}, kPacked);
}

// add: a, b X [shape] -> y X [shape]; y may alias a or b.
void AddAddCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[0];
  enum Layout { kPacked, kStrided, kTransposed, kBroadcast, kAliasA, kAliasB };
  auto add = [&](std::string name, Shape shape, Layout l) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.num_inputs = 2;
                     TensorSpec as = b.Uniform(x, shape, -4, 4);
                     TensorSpec bs = b.Uniform(x, shape, -4, 4);
                     TensorSpec y = b.Output(x, shape);
                     switch (l) {
                       case kPacked:
                         c.args = {as, bs, y};
                         break;
                       case kStrided:
                         c.args = {AtOffset(PadRows(as, 3), 7),
                                   AtOffset(PadRows(bs, 1), 2),
                                   AtOffset(PadRows(y, 4), 1)};
                         break;
                       case kTransposed:
                         c.args = {Transpose2D(as), bs, Transpose2D(y)};
                         break;
                       case kBroadcast: {
                         // b is one row repeated through a stride-0 leading
                         // dim.
                         const int64_t cols = shape.back();
                         for (int64_t i = cols; i < Numel(shape); ++i) {
                           bs.values[i] = bs.values[i % cols];
                         }
                         c.args = {as, WithStrides(bs, {0, 1}), y};
                         break;
                       }
                       case kAliasA:
                         c.args = {AtOffset(PadRows(as, 2), 1), bs};
                         c.args.push_back(AliasOf(c.args, 0));
                         break;
                       case kAliasB:
                         c.args = {as, AtOffset(bs, 3)};
                         c.args.push_back(AliasOf(c.args, 1));
                         break;
                     }
                     return c;
                   }});
  };
  add("n1", {1}, kPacked);
  add("basic", {17}, kPacked);
  add("2d", {3, 17}, kPacked);
  add("wide", {33, 129}, kPacked);
  add("rank3", {2, 3, 5}, kPacked);
  add("scalar", {}, kPacked);
  add("strided", {5, 33}, kStrided);
  add("transposed", {17, 33}, kTransposed);
  add("broadcast", {3, 17}, kBroadcast);
  add("inplace_a", {9, 17}, kAliasA);
  add("inplace_b", {129}, kAliasB);
  add("empty", {0, 3}, kPacked);
}

// cast: x X [shape] -> y Y [shape], round to nearest even. Exact.
void AddCastCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[0], y = dtypes[1];
  enum Layout { kPacked, kStrided, kTransposed, kSpecial, kRange };
  auto add = [&](std::string name, Shape shape, Layout l) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.num_inputs = 1;
                     c.compare = CompareMode::kExact;
                     TensorSpec xs = b.Uniform(x, shape, -3, 3);
                     TensorSpec ys = b.Output(y, shape);
                     if (l == kSpecial) {
                       // Zeros, ties of both 16-bit formats, f16 overflow and
                       // subnormals.
                       xs.values = {0.0,
                                    -0.0,
                                    1.0,
                                    -1.0,
                                    1 + std::ldexp(1.0, -8),
                                    1 + 3 * std::ldexp(1.0, -8),
                                    1 + std::ldexp(1.0, -11),
                                    1 + 3 * std::ldexp(1.0, -11),
                                    65504,
                                    65519,
                                    65520,
                                    70000,
                                    -1e6,
                                    3e-5,
                                    6e-8,
                                    1e-8,
                                    -2.5e-6,
                                    INFINITY,
                                    -INFINITY,
                                    3.14159265,
                                    1e30,
                                    -1e-30,
                                    0.1,
                                    1.0 / 3};
                       xs.shape = {static_cast<int64_t>(xs.values.size())};
                       ys.shape = xs.shape;
                     } else if (l == kRange) {
                       // Magnitudes 2^-30 .. 2^20: both formats' subnormals and
                       // overflow.
                       for (double& v : xs.values) {
                         v = (b.rng().Uniform(0, 1) < 0.5 ? -1 : 1) *
                             std::exp2(b.rng().Uniform(-30, 20));
                       }
                     } else if (l == kStrided) {
                       xs = AtOffset(PadRows(xs, 3), 1);
                       ys = AtOffset(PadRows(ys, 2), 3);
                     } else if (l == kTransposed) {
                       xs = Transpose2D(xs);
                     }
                     c.args = {xs, ys};
                     return c;
                   }});
  };
  add("n1", {1}, kPacked);
  add("basic", {17}, kPacked);
  add("wide", {33, 129}, kPacked);
  add("strided", {5, 17}, kStrided);
  add("transposed", {17, 9}, kTransposed);
  add("special", {1}, kSpecial);
  add("range", {1000}, kRange);
  add("empty", {0}, kPacked);
}

}  // namespace tessera::conformance
