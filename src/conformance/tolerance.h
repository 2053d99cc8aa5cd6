// Numeric tolerances of the ops check group: how far a plugin's output may
// be from reference/'s (which accumulates in double and rounds once).
//
// An element passes when
//     |got - want| <= atol * scale + rtol * |want|
// where scale is the RMS of the reference output tensor (1 when it is all
// zeros): atol bounds errors relative to the tensor's magnitude (what
// accumulation order and cancellation cause), rtol bounds errors relative to
// the element (what rounding to the output dtype causes).
//
// The one table, keyed by the OUTPUT dtype:
//   dtype  rtol    atol    why
//   f32    1e-4    1e-4    f32 accumulation (sum of 4096 terms ~ 1e-5),
//                          expf/tanhf and f32 RoPE angles (~1e-5 at pos 255)
//   f16    2e-3    2e-3    ~2 ulp of f16 (2^-10 = 9.8e-4): one rounding
//                          of the result plus one of an intermediate
//   bf16   1.6e-2  1.6e-2  ~2 ulp of bf16 (2^-7 = 7.8e-3), same reasoning
// A case may scale these (OpCase::tolerance_scale) where its numerics need
// it, saying why next to the case. Integer outputs, copies (embedding,
// kv_store) and casts are compared exactly.
#ifndef TESSERA_CONFORMANCE_TOLERANCE_H_
#define TESSERA_CONFORMANCE_TOLERANCE_H_

#include "base/dtype.h"

namespace tessera::conformance {

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

inline Tolerance ToleranceFor(DType dtype) {
  switch (dtype) {
    case TSR_DTYPE_F32:
      return {1e-4, 1e-4};
    case TSR_DTYPE_F16:
      return {2e-3, 2e-3};
    case TSR_DTYPE_BF16:
      return {1.6e-2, 1.6e-2};
    default:
      return {0, 0};  // integers: exact
  }
}

// sample: a plugin's id is accepted when it is the reference's, or when the
// row's `uniform` lies within this distance of a CDF boundary next to it
// (float vs double probabilities move boundaries by ~1e-6).
inline constexpr double kSampleBoundaryTolerance = 1e-4;
// sample: top_p and min_p are also perturbed by this relative amount when
// collecting acceptable ids (a boundary of the kept set can move too).
inline constexpr double kSampleParamTolerance = 1e-5;

}  // namespace tessera::conformance

#endif  // TESSERA_CONFORMANCE_TOLERANCE_H_
