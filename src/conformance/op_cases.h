// Op test cases for the ops check group: for every signature a plugin
// lists, a set of named cases (shapes, strides, offsets, aliasing, params)
// whose outputs the kit compares against reference/.
//
// A case is plain data: one TensorSpec per argument (inputs then outputs, as
// in the op's contract), the params struct as bytes, and how to compare.
// Values are stored in logical row-major order; the layout (strides, byte
// offset, a buffer shared with another argument) is separate, so one set of
// values can be laid out many ways.
//
// Adding an op (like llama.cpp's test-backend-ops): write
//   void AddFooCases(CaseList& out, std::span<const DType> dtypes)
// in the op_cases_*.cc file of its family, producing cases named after what
// they vary ("basic", "strided", "inplace", ...) with CaseBuilder, and list
// it in MakeOpCases (op_cases.cc). Use odd sizes (1, 3, 17, 33, 129),
// non-contiguous views wherever the contract allows them, non-zero offsets,
// and the aliasing the contract permits. The reference must accept every
// case; the comparison and its tolerance come from tolerance.h.
//
// Thread-compatible; generation is deterministic (seeded by case name).
#ifndef TESSERA_CONFORMANCE_OP_CASES_H_
#define TESSERA_CONFORMANCE_OP_CASES_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "conformance/plugin_env.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::conformance {

struct TensorSpec {
  DType dtype = TSR_DTYPE_F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // elements; empty = contiguous
  int64_t offset = 0;            // elements from the start of its buffer
  // Argument index whose buffer this one shares (-1: its own buffer).
  int buffer_of = -1;
  // Initial values (row-major logical order); empty = leave the buffer's
  // random background bytes (for outputs that must be overwritten).
  std::vector<double> values;
};

// How outputs are judged against the reference.
enum class CompareMode {
  kNumeric,   // per-dtype tolerance (tolerance.h)
  kExact,     // bit-for-bit values (copies, casts, ids)
  kSample,    // sample: the reference's id, or a neighbour near a boundary
  kLogprobs,  // logprob numeric; top_ids by value, ties either way
};

struct OpCase {
  std::string name;              // "basic", "strided", ...
  std::vector<TensorSpec> args;  // inputs then outputs
  int num_inputs = 0;
  std::vector<uint8_t> params;  // the params struct; empty = NULL
  CompareMode compare = CompareMode::kNumeric;
  double tolerance_scale = 1.0;  // multiplies the table tolerance
  uint32_t version = 1;          // the op version (linear v2: 2, v3: 3)

  template <typename P>
  void SetParams(const P& p) {
    params.resize(sizeof(P));
    std::memcpy(params.data(), &p, sizeof(P));
  }
};

// Builds tensors with seeded values.
class CaseBuilder {
 public:
  explicit CaseBuilder(uint64_t seed) : rng_(seed) {}
  Rng& rng() { return rng_; }

  // Contiguous, uniform in [lo, hi) (rounded to dtype by the harness).
  TensorSpec Uniform(DType dtype, std::vector<int64_t> shape, double lo = -1,
                     double hi = 1);
  // Contiguous I32 in [lo, hi).
  TensorSpec Ints(std::vector<int64_t> shape, int64_t lo, int64_t hi);
  TensorSpec Values(DType dtype, std::vector<int64_t> shape,
                    std::vector<double> values);
  // An output with no initial values (random background bytes).
  TensorSpec Output(DType dtype, std::vector<int64_t> shape);

 private:
  Rng rng_;
};

// Layout helpers (each returns the modified spec).
// Rows (the second-to-last dim) get a stride of shape[-1] + pad; the
// innermost stride stays 1; outer dims pack the padded rows.
TensorSpec PadRows(TensorSpec t, int64_t pad);
// A 2-D [R, C] view stored column-major: strides (1, R).
TensorSpec Transpose2D(TensorSpec t);
TensorSpec WithStrides(TensorSpec t, std::vector<int64_t> strides);
TensorSpec AtOffset(TensorSpec t, int64_t elements);
// Places `t` in argument `arg`'s buffer at `offset` elements.
TensorSpec InBufferOf(TensorSpec t, int arg, int64_t offset);
// An output that aliases input `arg` exactly (same buffer, offset, shape,
// strides), keeping its values.
TensorSpec AliasOf(const std::vector<TensorSpec>& args, int arg);

// Contiguous strides of a shape.
std::vector<int64_t> PackedStrides(const std::vector<int64_t>& shape);

struct CaseDef {
  std::string name;
  std::function<OpCase(CaseBuilder&)> build;
};
using CaseList = std::vector<CaseDef>;

// Every case for one (valid) signature of `op` version `version`.
CaseList MakeOpCases(tsr_op_id op, std::span<const DType> dtypes,
                     uint32_t version = 1);

// Per op family (op_cases_*.cc).
void AddEmbeddingCases(CaseList& out, std::span<const DType> dtypes);
void AddRmsNormCases(CaseList& out, std::span<const DType> dtypes);
void AddAddRmsNormCases(CaseList& out, std::span<const DType> dtypes);
void AddLinearCases(CaseList& out, std::span<const DType> dtypes);
// linear v2 (weight-only int8) and v3 (w8a8): `version` 2 or 3.
void AddLinearW8Cases(CaseList& out, std::span<const DType> dtypes, uint32_t version);
// linear v5 (w6a8, Q6_K weights; ABI 1.8).
void AddLinearW6Cases(CaseList& out, std::span<const DType> dtypes);
void AddEmbeddingShardCases(CaseList& out, std::span<const DType> dtypes);  // v2
void AddSiluAndMulCases(CaseList& out, std::span<const DType> dtypes);
void AddAddCases(CaseList& out, std::span<const DType> dtypes);
void AddCastCases(CaseList& out, std::span<const DType> dtypes);
void AddRopeCases(CaseList& out, std::span<const DType> dtypes);
void AddKvStoreCases(CaseList& out, std::span<const DType> dtypes);
void AddPagedAttentionCases(CaseList& out, std::span<const DType> dtypes);
void AddArgmaxCases(CaseList& out, std::span<const DType> dtypes);
void AddSampleCases(CaseList& out, std::span<const DType> dtypes);
void AddLogprobsCases(CaseList& out, std::span<const DType> dtypes);
// decoder_layer v1, and v2 with params.comm NULL (`version` 2: v1's cases).
void AddDecoderLayerCases(CaseList& out, std::span<const DType> dtypes,
                          uint32_t version = 1);
// The whole f32 layer collectives.decoder_layer_tp splits over two ranks:
// Hq 4, Hk 2, D 16, H 32, I 24, q/k norms, qkv and o biases, residual_out
// aliasing residual.
OpCase MakeDecoderLayerTpCase(CaseBuilder& b);

}  // namespace tessera::conformance

#endif  // TESSERA_CONFORMANCE_OP_CASES_H_
