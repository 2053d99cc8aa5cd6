#include "conformance/op_cases.h"

#include <algorithm>

namespace tessera::conformance {

TensorSpec CaseBuilder::Uniform(DType dtype, std::vector<int64_t> shape,
                                double lo, double hi) {
  TensorSpec t;
  t.dtype = dtype;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  t.shape = std::move(shape);
  t.values.resize(n);
  for (double& v : t.values) v = rng_.Uniform(lo, hi);
  return t;
}

TensorSpec CaseBuilder::Ints(std::vector<int64_t> shape, int64_t lo,
                             int64_t hi) {
  TensorSpec t;
  t.dtype = TSR_DTYPE_I32;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  t.shape = std::move(shape);
  t.values.resize(n);
  for (double& v : t.values) v = static_cast<double>(rng_.Int(lo, hi));
  return t;
}

TensorSpec CaseBuilder::Values(DType dtype, std::vector<int64_t> shape,
                               std::vector<double> values) {
  TensorSpec t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.values = std::move(values);
  return t;
}

TensorSpec CaseBuilder::Output(DType dtype, std::vector<int64_t> shape) {
  TensorSpec t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

std::vector<int64_t> PackedStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t running = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = running;
    running *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

TensorSpec PadRows(TensorSpec t, int64_t pad) {
  const size_t n = t.shape.size();
  if (n == 0) return t;
  std::vector<int64_t> strides(n, 1);
  if (n >= 2) {
    strides[n - 2] = t.shape[n - 1] + pad;
    for (size_t i = n - 2; i-- > 0;) {
      strides[i] = strides[i + 1] * std::max<int64_t>(t.shape[i + 1], 1);
    }
  } else {
    strides[0] = 1 + pad;  // a vector: spread its elements out
  }
  t.strides = std::move(strides);
  return t;
}

TensorSpec Transpose2D(TensorSpec t) {
  if (t.shape.size() == 2) t.strides = {1, std::max<int64_t>(t.shape[0], 1)};
  return t;
}

TensorSpec WithStrides(TensorSpec t, std::vector<int64_t> strides) {
  t.strides = std::move(strides);
  return t;
}

TensorSpec AtOffset(TensorSpec t, int64_t elements) {
  t.offset = elements;
  return t;
}

TensorSpec InBufferOf(TensorSpec t, int arg, int64_t offset) {
  t.buffer_of = arg;
  t.offset = offset;
  return t;
}

TensorSpec AliasOf(const std::vector<TensorSpec>& args, int arg) {
  TensorSpec t = args[arg];
  t.buffer_of = args[arg].buffer_of >= 0 ? args[arg].buffer_of : arg;
  return t;
}

CaseList MakeOpCases(tsr_op_id op, std::span<const DType> dtypes,
                     uint32_t version) {
  CaseList out;
  if (op == TSR_OP_DECODER_LAYER && version >= 1 && version <= 4) {
    AddDecoderLayerCases(out, dtypes, version);  // dtypes: the classes (X, W, KV)
    return out;
  }
  if (version != 1) {
    if (op == TSR_OP_LINEAR && version >= 2 && version <= 4) {
      AddLinearW8Cases(out, dtypes, version);
    }
    if (op == TSR_OP_LINEAR && version == 5) AddLinearW6Cases(out, dtypes);
    if (op == TSR_OP_EMBEDDING && version == 2) AddEmbeddingShardCases(out, dtypes);
    return out;
  }
  switch (op) {
    case TSR_OP_EMBEDDING:
      AddEmbeddingCases(out, dtypes);
      break;
    case TSR_OP_RMS_NORM:
      AddRmsNormCases(out, dtypes);
      break;
    case TSR_OP_ADD_RMS_NORM:
      AddAddRmsNormCases(out, dtypes);
      break;
    case TSR_OP_LINEAR:
      AddLinearCases(out, dtypes);
      break;
    case TSR_OP_ROPE:
      AddRopeCases(out, dtypes);
      break;
    case TSR_OP_KV_STORE:
      AddKvStoreCases(out, dtypes);
      break;
    case TSR_OP_PAGED_ATTENTION:
      AddPagedAttentionCases(out, dtypes);
      break;
    case TSR_OP_SILU_AND_MUL:
      AddSiluAndMulCases(out, dtypes);
      break;
    case TSR_OP_ADD:
      AddAddCases(out, dtypes);
      break;
    case TSR_OP_CAST:
      AddCastCases(out, dtypes);
      break;
    case TSR_OP_ARGMAX:
      AddArgmaxCases(out, dtypes);
      break;
    case TSR_OP_SAMPLE:
      AddSampleCases(out, dtypes);
      break;
    case TSR_OP_LOGPROBS:
      AddLogprobsCases(out, dtypes);
      break;
    default:
      break;
  }
  return out;
}

}  // namespace tessera::conformance
