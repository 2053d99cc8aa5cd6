// Cases for argmax, sample and logprobs. See op_cases.h.
#include <cmath>

#include "conformance/op_cases.h"

namespace tessera::conformance {

// argmax: logits X [B, V] -> ids I32 [B], ties to the lowest index. Exact.
void AddArgmaxCases(CaseList& out, std::span<const DType> dtypes) {
  const DType x = dtypes[0];
  enum Layout { kPacked, kStrided, kTransposed, kTies };
  auto add = [&](std::string name, int64_t rows, int64_t vocab, Layout l) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.num_inputs = 1;
                     c.compare = CompareMode::kExact;
                     TensorSpec logits = b.Uniform(x, {rows, vocab}, -8, 8);
                     TensorSpec ids = b.Output(TSR_DTYPE_I32, {rows});
                     switch (l) {
                       case kPacked:
                         break;
                       case kStrided:
                         logits = AtOffset(PadRows(logits, 7), 2);
                         ids = WithStrides(ids, {2});
                         break;
                       case kTransposed:
                         logits = Transpose2D(logits);
                         break;
                       case kTies:
                         // Few distinct values: the maximum repeats in every
                         // row.
                         for (double& v : logits.values)
                           v = static_cast<double>(b.rng().Int(0, 4));
                         break;
                     }
                     c.args = {logits, ids};
                     return c;
                   }});
  };
  add("v1", 1, 1, kPacked);
  add("basic", 3, 17, kPacked);
  add("v1000", 5, 1000, kPacked);
  add("v32000", 2, 32000, kPacked);
  add("strided", 4, 129, kStrided);
  add("transposed", 7, 33, kTransposed);
  add("ties", 6, 40, kTies);
  add("empty", 0, 5, kPacked);
}

// sample: logits F32 [B, V], temperature, top_k, top_p, min_p, uniform [B]
// -> ids I32 [B]. Compared with CompareMode::kSample.
void AddSampleCases(CaseList& out, std::span<const DType> /*dtypes*/) {
  enum Kind { kGreedy, kPlain, kTopK, kTopP, kMinP, kCombined, kTies, kEdges };
  auto add = [&](std::string name, int64_t rows, int64_t vocab, Kind kind,
                 bool strided) {
    out.push_back(
        {name, [=](CaseBuilder& b) {
           OpCase c;
           c.num_inputs = 6;
           c.compare = CompareMode::kSample;
           Rng& r = b.rng();
           TensorSpec logits = b.Uniform(TSR_DTYPE_F32, {rows, vocab}, -4, 4);
           if (kind == kTies) {
             for (double& v : logits.values)
               v = static_cast<double>(r.Int(0, 3));
           }
           std::vector<double> temp(rows), top_k(rows), top_p(rows),
               min_p(rows), uniform(rows);
           for (int64_t i = 0; i < rows; ++i) {
             temp[i] = r.Uniform(0.5, 1.5);
             top_k[i] = 0;
             top_p[i] = 1;
             min_p[i] = 0;
             uniform[i] = r.Uniform(0, 1);
             switch (kind) {
               case kGreedy:
                 temp[i] = i % 2 ? 0.0 : -1.0;
                 break;
               case kPlain:
                 break;
               case kTopK: {
                 const double ks[] = {1, 2, 5, 50, 99, 100, 200, -1};
                 top_k[i] = ks[i % 8];
                 break;
               }
               case kTopP: {
                 const double ps[] = {0.05, 0.3,  0.5,  0.8,
                                      0.9,  0.95, 0.99, 1.0};
                 top_p[i] = ps[i % 8];
                 break;
               }
               case kMinP: {
                 const double ms[] = {0.01, 0.05, 0.1, 0.2, 0.5, 0.9, 1.0, 0};
                 min_p[i] = ms[i % 8];
                 break;
               }
               case kCombined:
                 temp[i] = r.Uniform(0, 1) < 0.15 ? 0.0 : r.Uniform(0.3, 2.0);
                 top_k[i] = static_cast<double>(r.Int(-1, vocab + 2));
                 top_p[i] = r.Uniform(0.2, 1.05);
                 min_p[i] = r.Uniform(0, 1) < 0.5 ? 0.0 : r.Uniform(0, 0.3);
                 break;
               case kTies:
                 top_k[i] = i % 3 == 0 ? 3 : 0;
                 break;
               case kEdges:
                 uniform[i] = i % 2 ? 0.0 : 0.99999994;
                 break;
             }
           }
           TensorSpec t = b.Values(TSR_DTYPE_F32, {rows}, temp);
           TensorSpec k = b.Values(TSR_DTYPE_I32, {rows}, top_k);
           TensorSpec p = b.Values(TSR_DTYPE_F32, {rows}, top_p);
           TensorSpec m = b.Values(TSR_DTYPE_F32, {rows}, min_p);
           TensorSpec u = b.Values(TSR_DTYPE_F32, {rows}, uniform);
           TensorSpec ids = b.Output(TSR_DTYPE_I32, {rows});
           if (strided) {
             logits = AtOffset(PadRows(logits, 3), 1);
             t = WithStrides(t, {2});
             k = AtOffset(WithStrides(k, {3}), 1);
             p = WithStrides(p, {2});
             m = AtOffset(WithStrides(m, {2}), 1);
             u = WithStrides(u, {4});
             ids = AtOffset(WithStrides(ids, {3}), 2);
           }
           c.args = {logits, t, k, p, m, u, ids};
           return c;
         }});
  };
  add("greedy", 4, 17, kGreedy, false);
  add("plain", 8, 33, kPlain, false);
  add("top_k", 8, 100, kTopK, false);
  add("top_p", 8, 100, kTopP, false);
  add("min_p", 8, 100, kMinP, false);
  add("combined", 32, 1000, kCombined, false);
  add("ties", 6, 20, kTies, false);
  add("edges", 4, 50, kEdges, false);
  add("v1", 3, 1, kPlain, false);
  add("strided", 5, 65, kCombined, true);
}

// logprobs: logits F32 [B, V], ids I32 [B] -> logprob F32 [B] (+ top_ids
// I32 [B, K], top_logprobs F32 [B, K]). Compared with kLogprobs.
void AddLogprobsCases(CaseList& out, std::span<const DType> dtypes) {
  const bool top = dtypes.size() == 5;
  auto add = [&](std::string name, int64_t rows, int64_t vocab, int64_t k,
                 double scale, bool ties, bool strided) {
    out.push_back({name, [=](CaseBuilder& b) {
                     OpCase c;
                     c.num_inputs = 2;
                     c.compare = CompareMode::kLogprobs;
                     TensorSpec logits =
                         b.Uniform(TSR_DTYPE_F32, {rows, vocab}, -scale, scale);
                     if (ties) {
                       for (double& v : logits.values)
                         v = static_cast<double>(b.rng().Int(0, 3));
                     }
                     TensorSpec ids = b.Ints({rows}, 0, vocab);
                     TensorSpec lp = b.Output(TSR_DTYPE_F32, {rows});
                     TensorSpec ti = b.Output(TSR_DTYPE_I32, {rows, k});
                     TensorSpec tl = b.Output(TSR_DTYPE_F32, {rows, k});
                     if (strided) {
                       logits = AtOffset(PadRows(logits, 3), 1);
                       ids = WithStrides(ids, {2});
                       lp = AtOffset(WithStrides(lp, {3}), 1);
                       ti = AtOffset(PadRows(ti, 2), 1);
                       tl = PadRows(tl, 1);
                     }
                     c.args = {logits, ids, lp};
                     if (top) {
                       c.args.push_back(ti);
                       c.args.push_back(tl);
                     }
                     return c;
                   }});
  };
  add("basic", 3, 17, 1, 4, false, false);
  add("v1000", 7, 1000, 5, 4, false, false);
  add("v1", 2, 1, 1, 4, false, false);
  add("large_logits", 4, 64, 3, 40, false, false);
  add("strided", 5, 33, 4, 4, false, true);
  add("ties", 4, 20, 6, 0, true, false);
  if (top) {
    add("k0", 3, 17, 0, 4, false, false);
    add("k_eq_v", 2, 17, 17, 4, false, false);
  }
}

}  // namespace tessera::conformance
