#include "reference/reference_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "reference/ops_internal.h"

namespace tessera::reference {
namespace internal {

Status ExpectRank(const OpCall& call, const HostTensor& t,
                  std::string_view what, int rank, std::string_view layout) {
  if (t.ndim() == rank) return OkStatus();
  return InvalidArgumentError(fmt::format(
      "{}: {} has rank {} (shape {}), expected rank {} ({})", call.op_name,
      what, t.ndim(), ShapeString(t.shape), rank, layout));
}

Status ExpectShape(const OpCall& call, const HostTensor& t,
                   std::string_view what, std::span<const int64_t> want,
                   std::string_view why) {
  if (t.shape.size() == want.size() &&
      std::equal(want.begin(), want.end(), t.shape.begin())) {
    return OkStatus();
  }
  return InvalidArgumentError(
      fmt::format("{}: {} has shape {}, expected {} ({})", call.op_name, what,
                  ShapeString(t.shape), ShapeString(want), why));
}

Status ExpectShape(const OpCall& call, const HostTensor& t,
                   std::string_view what, std::initializer_list<int64_t> want,
                   std::string_view why) {
  return ExpectShape(call, t, what,
                     std::span<const int64_t>(want.begin(), want.size()), why);
}

double RoundTo(DType dtype, double value) {
  uint64_t slot = 0;
  StoreFromDouble(&slot, dtype, 0, value);
  return LoadAsDouble(&slot, dtype, 0);
}

}  // namespace internal

namespace {

using internal::OpCall;
using internal::OpFn;

struct OpEntry {
  OpFn fn;
  // (output index, input index) pairs that may alias exactly.
  std::vector<std::pair<int, int>> exact_aliases;
};

const OpEntry* FindOp(tsr_op_id op, uint32_t version) {
  static const OpEntry kLinearW8{internal::LinearW8, {}};
  if (op == TSR_OP_LINEAR && version == kLinearW8Version) return &kLinearW8;
  static const OpEntry kLinearW8A8{internal::LinearW8A8, {}};
  if (op == TSR_OP_LINEAR && version == kLinearW8A8Version) return &kLinearW8A8;
  static const OpEntry kLinearW4A8{internal::LinearW4A8, {}};
  if (op == TSR_OP_LINEAR && version == kLinearW4A8Version) return &kLinearW4A8;
  static const OpEntry kLinearW6A8{internal::LinearW6A8, {}};
  if (op == TSR_OP_LINEAR && version == kLinearW6A8Version) return &kLinearW6A8;
  static const OpEntry kEmbeddingShard{internal::EmbeddingShard, {}};
  if (op == TSR_OP_EMBEDDING && version == kEmbeddingShardVersion) return &kEmbeddingShard;
  static const OpEntry kDecoderLayer{internal::DecoderLayer, {{0, 0}}};
  if (op == TSR_OP_DECODER_LAYER &&
      (version == kOpVersion || version == kDecoderLayerTpVersion)) {
    return &kDecoderLayer;
  }
  static const OpEntry kDecoderLayerW8A8{internal::DecoderLayerW8A8, {{0, 0}}};
  if (op == TSR_OP_DECODER_LAYER && version == kDecoderLayerW8A8Version) {
    return &kDecoderLayerW8A8;
  }
  static const OpEntry kDecoderLayerW4A8{internal::DecoderLayerW4A8, {{0, 0}}};
  if (op == TSR_OP_DECODER_LAYER && version == kDecoderLayerW4A8Version) {
    return &kDecoderLayerW4A8;
  }
  static const OpEntry kEmbedding{internal::Embedding, {}};
  static const OpEntry kRmsNorm{internal::RmsNorm, {{0, 0}}};
  static const OpEntry kAddRmsNorm{internal::AddRmsNorm, {{1, 1}}};
  static const OpEntry kLinear{internal::Linear, {}};
  static const OpEntry kRope{internal::Rope, {{0, 2}, {1, 3}}};
  static const OpEntry kKvStore{internal::KvStore, {}};
  static const OpEntry kPagedAttention{internal::PagedAttention, {}};
  static const OpEntry kSiluAndMul{internal::SiluAndMul, {}};
  static const OpEntry kAdd{internal::Add, {{0, 0}, {0, 1}}};
  static const OpEntry kCast{internal::Cast, {}};
  static const OpEntry kArgmax{internal::Argmax, {}};
  static const OpEntry kSample{internal::Sample, {}};
  static const OpEntry kLogprobs{internal::Logprobs, {}};
  switch (op) {
    case TSR_OP_EMBEDDING:
      return &kEmbedding;
    case TSR_OP_RMS_NORM:
      return &kRmsNorm;
    case TSR_OP_ADD_RMS_NORM:
      return &kAddRmsNorm;
    case TSR_OP_LINEAR:
      return &kLinear;
    case TSR_OP_ROPE:
      return &kRope;
    case TSR_OP_KV_STORE:
      return &kKvStore;
    case TSR_OP_PAGED_ATTENTION:
      return &kPagedAttention;
    case TSR_OP_SILU_AND_MUL:
      return &kSiluAndMul;
    case TSR_OP_ADD:
      return &kAdd;
    case TSR_OP_CAST:
      return &kCast;
    case TSR_OP_ARGMAX:
      return &kArgmax;
    case TSR_OP_SAMPLE:
      return &kSample;
    case TSR_OP_LOGPROBS:
      return &kLogprobs;
    default:
      return nullptr;
  }
}

Status CheckTensor(std::string_view op_name, const std::string& what,
                   const HostTensor& t, bool is_output) {
  if (t.ndim() > TSR_MAX_DIMS) {
    return InvalidArgumentError(
        fmt::format("{}: {} has {} dims, more than TSR_MAX_DIMS ({})", op_name,
                    what, t.ndim(), TSR_MAX_DIMS));
  }
  if (t.strides.size() != t.shape.size()) {
    return InvalidArgumentError(fmt::format("{}: {} has {} strides for {} dims",
                                            op_name, what, t.strides.size(),
                                            t.shape.size()));
  }
  for (int d = 0; d < t.ndim(); ++d) {
    if (t.shape[d] < 0 || t.strides[d] < 0) {
      return InvalidArgumentError(fmt::format(
          "{}: {} has shape {} strides {}; shapes and strides must be >= 0",
          op_name, what, ShapeString(t.shape), ShapeString(t.strides)));
    }
    if (is_output && t.strides[d] == 0 && t.shape[d] > 1) {
      return InvalidArgumentError(fmt::format(
          "{}: output {} has stride 0 in dim {} of size {}, so several "
          "elements would share memory",
          op_name, what, d, t.shape[d]));
    }
  }
  if (t.data == nullptr && t.NumElements() > 0) {
    return InvalidArgumentError(
        fmt::format("{}: {} has no data pointer", op_name, what));
  }
  return OkStatus();
}

// Byte address of every element of t, sorted.
std::vector<uintptr_t> ElementAddresses(const HostTensor& t) {
  std::vector<uintptr_t> out;
  size_t size = DTypeSize(t.dtype);
  for (int64_t off : ElementOffsets(t)) {
    out.push_back(reinterpret_cast<uintptr_t>(t.data) + off * size);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool ElementsOverlap(const HostTensor& a, const HostTensor& b) {
  if (a.NumElements() == 0 || b.NumElements() == 0) return false;
  uintptr_t a0 = reinterpret_cast<uintptr_t>(a.data);
  uintptr_t b0 = reinterpret_cast<uintptr_t>(b.data);
  uintptr_t a1 = a0 + a.ExtentElements() * DTypeSize(a.dtype);
  uintptr_t b1 = b0 + b.ExtentElements() * DTypeSize(b.dtype);
  if (a1 <= b0 || b1 <= a0) return false;
  // Byte ranges intersect: compare element byte ranges exactly (views
  // interleaved in one buffer, like q and k of a fused qkv, do not overlap).
  std::vector<uintptr_t> ea = ElementAddresses(a), eb = ElementAddresses(b);
  size_t sa = DTypeSize(a.dtype), sb = DTypeSize(b.dtype);
  size_t i = 0, j = 0;
  while (i < ea.size() && j < eb.size()) {
    if (ea[i] + sa <= eb[j]) {
      ++i;
    } else if (eb[j] + sb <= ea[i]) {
      ++j;
    } else {
      return true;
    }
  }
  return false;
}

bool ExactAlias(const HostTensor& a, const HostTensor& b) {
  return a.data == b.data && a.dtype == b.dtype && a.shape == b.shape &&
         a.strides == b.strides;
}

Status CheckAliasing(tsr_op_id op, uint32_t version, const OpEntry& entry,
                     std::span<const HostTensor> inputs,
                     std::span<const HostTensor> outputs) {
  const int num_inputs = static_cast<int>(inputs.size());
  const std::vector<std::string> names =
      ArgNames(op, num_inputs, static_cast<int>(outputs.size()), version);
  for (int o = 0; o < static_cast<int>(outputs.size()); ++o) {
    for (int i = 0; i < num_inputs; ++i) {
      if (inputs[i].dtype == TSR_DTYPE_INVALID) continue;  // absent
      if (!ElementsOverlap(outputs[o], inputs[i])) continue;
      bool allowed =
          std::find(entry.exact_aliases.begin(), entry.exact_aliases.end(),
                    std::make_pair(o, i)) != entry.exact_aliases.end();
      if (allowed && ExactAlias(outputs[o], inputs[i])) continue;
      return InvalidArgumentError(fmt::format(
          "{}: output {} overlaps input {}{}", OpName(op),
          names[num_inputs + o], names[i],
          allowed ? " without being an exact alias (same buffer, offset, "
                    "shape and strides)"
                  : "; the contract does not allow this output to alias "
                    "that input"));
    }
    for (int p = 0; p < o; ++p) {
      if (ElementsOverlap(outputs[o], outputs[p])) {
        return InvalidArgumentError(
            fmt::format("{}: outputs {} and {} overlap", OpName(op),
                        names[num_inputs + p], names[num_inputs + o]));
      }
    }
  }
  return OkStatus();
}

Status Dispatch(tsr_op_id op, uint32_t version,
                std::span<const HostTensor> inputs,
                std::span<const HostTensor> outputs, const void* params,
                bool execute) {
  const OpEntry* entry = FindOp(op, version);
  if (entry == nullptr) {
    return NotFoundError(fmt::format(
        "op id {} is not a v1 op; the reference implements ids 1..13 and "
        "decoder_layer ({})",
        op, TSR_OP_DECODER_LAYER));
  }
  std::string_view name = OpName(op);
  uint32_t num_args = static_cast<uint32_t>(inputs.size() + outputs.size());
  TSR_ASSIGN_OR_RETURN(ArgSplit split, SplitArgs(op, num_args, version));
  if (split.num_inputs != static_cast<int>(inputs.size())) {
    return InvalidArgumentError(fmt::format(
        "{}: got {} inputs and {} outputs; expected {} inputs and {} outputs",
        name, inputs.size(), outputs.size(), split.num_inputs,
        split.num_outputs));
  }
  std::vector<DType> dtypes;
  if (IsFusedOp(op)) {
    // The classes (X, W, KV): residual, w_qkv, k_cache.
    dtypes = {inputs[0].dtype, inputs[8].dtype, outputs[1].dtype};
  } else {
    for (const HostTensor& t : inputs) dtypes.push_back(t.dtype);
    for (const HostTensor& t : outputs) dtypes.push_back(t.dtype);
  }
  TSR_RETURN_IF_ERROR(ValidateSignature(op, version, dtypes));
  const int num_inputs = static_cast<int>(inputs.size());
  const std::vector<std::string> names =
      ArgNames(op, num_inputs, static_cast<int>(outputs.size()), version);
  for (int i = 0; i < num_inputs; ++i) {
    if (inputs[i].dtype == TSR_DTYPE_INVALID) continue;  // absent (fused ops)
    TSR_RETURN_IF_ERROR(CheckTensor(name, names[i], inputs[i], false));
  }
  for (int o = 0; o < static_cast<int>(outputs.size()); ++o) {
    TSR_RETURN_IF_ERROR(
        CheckTensor(name, names[num_inputs + o], outputs[o], true));
  }
  OpCall call{name, inputs, outputs, params, false};
  TSR_RETURN_IF_ERROR(entry->fn(call));  // shape checks only
  TSR_RETURN_IF_ERROR(CheckAliasing(op, version, *entry, inputs, outputs));
  if (!execute) return OkStatus();
  call.execute = true;
  return entry->fn(call);
}

}  // namespace

Status RunReferenceOp(tsr_op_id op, uint32_t version,
                      std::span<const HostTensor> inputs,
                      std::span<HostTensor> outputs, const void* params) {
  return Dispatch(op, version, inputs,
                  std::span<const HostTensor>(outputs.data(), outputs.size()),
                  params, true);
}

Status ValidateOpLaunch(tsr_op_id op, uint32_t version,
                        std::span<const HostTensor> inputs,
                        std::span<const HostTensor> outputs,
                        const void* params) {
  return Dispatch(op, version, inputs, outputs, params, false);
}

}  // namespace tessera::reference
