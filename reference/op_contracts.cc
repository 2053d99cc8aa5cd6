#include "reference/op_contracts.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace tessera::reference {
namespace {

constexpr std::array<tsr_op_id, 13> kAllOps = {TSR_OP_EMBEDDING,
                                               TSR_OP_RMS_NORM,
                                               TSR_OP_ADD_RMS_NORM,
                                               TSR_OP_LINEAR,
                                               TSR_OP_ROPE,
                                               TSR_OP_KV_STORE,
                                               TSR_OP_PAGED_ATTENTION,
                                               TSR_OP_SILU_AND_MUL,
                                               TSR_OP_ADD,
                                               TSR_OP_CAST,
                                               TSR_OP_ARGMAX,
                                               TSR_OP_SAMPLE,
                                               TSR_OP_LOGPROBS};

constexpr DType F32 = TSR_DTYPE_F32;
constexpr DType F16 = TSR_DTYPE_F16;
constexpr DType BF16 = TSR_DTYPE_BF16;
constexpr DType I32 = TSR_DTYPE_I32;
constexpr std::array<DType, 3> kFloatTypes = {F32, BF16, F16};

std::vector<std::vector<DType>> Uniform(std::initializer_list<int> pattern) {
  // pattern: 1 = the float type X, 0 = I32, 2 = F32 fixed.
  std::vector<std::vector<DType>> out;
  for (DType x : kFloatTypes) {
    std::vector<DType> sig;
    for (int p : pattern) sig.push_back(p == 1 ? x : p == 2 ? F32 : I32);
    out.push_back(std::move(sig));
  }
  return out;
}

}  // namespace

std::string_view OpName(tsr_op_id op) {
  switch (op) {
    case TSR_OP_EMBEDDING:
      return "embedding";
    case TSR_OP_RMS_NORM:
      return "rms_norm";
    case TSR_OP_ADD_RMS_NORM:
      return "add_rms_norm";
    case TSR_OP_LINEAR:
      return "linear";
    case TSR_OP_ROPE:
      return "rope";
    case TSR_OP_KV_STORE:
      return "kv_store";
    case TSR_OP_PAGED_ATTENTION:
      return "paged_attention";
    case TSR_OP_SILU_AND_MUL:
      return "silu_and_mul";
    case TSR_OP_ADD:
      return "add";
    case TSR_OP_CAST:
      return "cast";
    case TSR_OP_ARGMAX:
      return "argmax";
    case TSR_OP_SAMPLE:
      return "sample";
    case TSR_OP_LOGPROBS:
      return "logprobs";
    case TSR_OP_DECODER_LAYER:
      return "decoder_layer";
    default:
      return "";
  }
}

std::span<const tsr_op_id> AllOps() { return kAllOps; }

bool IsKnownVersion(tsr_op_id op, uint32_t version) {
  if (OpName(op).empty()) return false;
  if (IsFusedOp(op)) {
    return version == kOpVersion ||
           (op == TSR_OP_DECODER_LAYER && (version == kDecoderLayerTpVersion ||
                                           version == kDecoderLayerW8A8Version ||
                                           version == kDecoderLayerW4A8Version));
  }
  return version == kOpVersion || IsLinearInt8(op, version) ||
         (op == TSR_OP_EMBEDDING && version == kEmbeddingShardVersion);
}

std::vector<std::string> ArgNames(tsr_op_id op, int num_inputs,
                                  int num_outputs, uint32_t version) {
  std::vector<std::string> in, out;
  switch (IsLinearInt8(op, version) ? 0 : op) {
    case 0:  // linear v2, v3, v4
      in = {"x", "w", "w_scale", "bias"};
      out = {"y"};
      break;
    case TSR_OP_DECODER_LAYER:
      in = {"residual",  "positions",   "slots",           "block_table",
            "seq_lens",  "query_start", "inv_freq",        "input_norm",
            "w_qkv",     "w_qkv_scale", "qkv_bias",        "q_norm",
            "k_norm",    "w_o",         "w_o_scale",       "o_bias",
            "post_norm", "w_gate_up",   "w_gate_up_scale", "w_down",
            "w_down_scale"};
      out = {"residual_out", "k_cache", "v_cache"};
      break;
    case TSR_OP_EMBEDDING:
      in = {"ids", "table"};
      out = {"y"};
      break;
    case TSR_OP_RMS_NORM:
      in = {"x", "w"};
      out = {"y"};
      break;
    case TSR_OP_ADD_RMS_NORM:
      in = {"x", "residual", "w"};
      out = {"y", "residual_out"};
      break;
    case TSR_OP_LINEAR:
      in = {"x", "w", "bias"};
      out = {"y"};
      break;
    case TSR_OP_ROPE:
      in = {"positions", "inv_freq", "q", "k"};
      out = {"q_out", "k_out"};
      break;
    case TSR_OP_KV_STORE:
      in = {"k", "v", "slots"};
      out = {"k_cache", "v_cache"};
      break;
    case TSR_OP_PAGED_ATTENTION:
      in = {"q",           "k_cache",  "v_cache",
            "block_table", "seq_lens", "query_start"};
      out = {"o"};
      break;
    case TSR_OP_SILU_AND_MUL:
      in = {"x"};
      out = {"y"};
      break;
    case TSR_OP_ADD:
      in = {"a", "b"};
      out = {"y"};
      break;
    case TSR_OP_CAST:
      in = {"x"};
      out = {"y"};
      break;
    case TSR_OP_ARGMAX:
      in = {"logits"};
      out = {"ids"};
      break;
    case TSR_OP_SAMPLE:
      in = {"logits", "temperature", "top_k", "top_p", "min_p", "uniform"};
      out = {"ids"};
      break;
    case TSR_OP_LOGPROBS:
      in = {"logits", "ids"};
      out = {"logprob", "top_ids", "top_logprobs"};
      break;
    default:
      break;
  }
  std::vector<std::string> names;
  for (int i = 0; i < num_inputs; ++i) {
    names.push_back(
        i < static_cast<int>(in.size()) ? in[i] : fmt::format("input {}", i));
  }
  for (int i = 0; i < num_outputs; ++i) {
    names.push_back(i < static_cast<int>(out.size())
                        ? out[i]
                        : fmt::format("output {}", i));
  }
  return names;
}

StatusOr<ArgSplit> SplitArgs(tsr_op_id op, uint32_t num_args,
                             uint32_t version) {
  if (IsLinearInt8(op, version)) {
    if (num_args == 4) return ArgSplit{3, 1};
    if (num_args == 5) return ArgSplit{4, 1};
    return InvalidArgumentError(fmt::format(
        "linear v{} takes 4 arguments (x, w, w_scale, y) or 5 (x, w, w_scale, "
        "bias, y), not {}",
        version, num_args));
  }
  auto want = [&](int in, int out) -> StatusOr<ArgSplit> {
    if (num_args == static_cast<uint32_t>(in + out)) return ArgSplit{in, out};
    return InvalidArgumentError(
        fmt::format("{} takes {} arguments ({} inputs, {} outputs), not {}",
                    OpName(op), in + out, in, out, num_args));
  };
  switch (op) {
    case TSR_OP_DECODER_LAYER:  // the launch's tensors, not its classes
      return want(TSR_DECODER_LAYER_NUM_INPUTS, TSR_DECODER_LAYER_NUM_OUTPUTS);
    case TSR_OP_EMBEDDING:
      return want(2, 1);
    case TSR_OP_RMS_NORM:
      return want(2, 1);
    case TSR_OP_ADD_RMS_NORM:
      return want(3, 2);
    case TSR_OP_LINEAR:
      if (num_args == 3) return ArgSplit{2, 1};
      if (num_args == 4) return ArgSplit{3, 1};
      return InvalidArgumentError(fmt::format(
          "linear takes 3 arguments (x, w, y) or 4 (x, w, bias, y), not {}",
          num_args));
    case TSR_OP_ROPE:
      return want(4, 2);
    case TSR_OP_KV_STORE:
      return want(3, 2);
    case TSR_OP_PAGED_ATTENTION:
      return want(6, 1);
    case TSR_OP_SILU_AND_MUL:
      return want(1, 1);
    case TSR_OP_ADD:
      return want(2, 1);
    case TSR_OP_CAST:
      return want(1, 1);
    case TSR_OP_ARGMAX:
      return want(1, 1);
    case TSR_OP_SAMPLE:
      return want(6, 1);
    case TSR_OP_LOGPROBS:
      if (num_args == 3) return ArgSplit{2, 1};
      if (num_args == 5) return ArgSplit{2, 3};
      return InvalidArgumentError(fmt::format(
          "logprobs takes 3 arguments (logits, ids, logprob) or 5 (plus "
          "top_ids, top_logprobs), not {}",
          num_args));
    default:
      return NotFoundError(
          fmt::format("op id {} is not a v1 op (v1 ids are 1..13)", op));
  }
}

std::vector<std::vector<DType>> AllowedSignatures(tsr_op_id op,
                                                  uint32_t version) {
  if (!IsKnownVersion(op, version)) return {};
  if (IsLinearInt8(op, version)) {  // linear v2, v3 (I8), v4, v5 (packed U8)
    // Q4_0 / Q6_K: f16 scales
    const bool w4 = version == kLinearW4A8Version || version == kLinearW6A8Version;
    const DType w = w4 ? DType{TSR_DTYPE_U8} : DType{TSR_DTYPE_I8};
    const DType sc = w4 ? F16 : F32;
    std::vector<std::vector<DType>> out;
    for (DType a : {F32, BF16}) {
      out.push_back({a, w, sc, a});
      out.push_back({a, w, sc, a, a});
    }
    return out;
  }
  switch (op) {
    case TSR_OP_DECODER_LAYER: {  // dtype classes (X, W, KV)
      std::vector<std::vector<DType>> out;
      const bool w8a8 = version == kDecoderLayerW8A8Version;  // W == I8 only
      const bool w4a8 = version == kDecoderLayerW4A8Version;  // W == U8 only
      for (DType x : {F32, BF16}) {
        for (DType w : {x, F16, DType{TSR_DTYPE_I8}, DType{TSR_DTYPE_U8}}) {
          if (w4a8 != (w == TSR_DTYPE_U8)) continue;
          if (w8a8 && w != TSR_DTYPE_I8) continue;
          for (DType kv : {F32, BF16}) out.push_back({x, w, kv});
        }
      }
      return out;
    }
    case TSR_OP_EMBEDDING:
      return Uniform({0, 1, 1});
    case TSR_OP_RMS_NORM:
      return Uniform({1, 1, 1});
    case TSR_OP_ADD_RMS_NORM:
      return Uniform({1, 1, 1, 1, 1});
    case TSR_OP_LINEAR: {
      std::vector<std::vector<DType>> out;
      for (DType a : {F32, BF16}) {
        for (DType w : {a, F16}) {
          out.push_back({a, w, a});
          out.push_back({a, w, a, a});
        }
      }
      return out;
    }
    case TSR_OP_ROPE:
      return Uniform({0, 2, 1, 1, 1, 1});
    case TSR_OP_KV_STORE:
      return Uniform({1, 1, 0, 1, 1});
    case TSR_OP_PAGED_ATTENTION:
      return Uniform({1, 1, 1, 0, 0, 0, 1});
    case TSR_OP_SILU_AND_MUL:
      return Uniform({1, 1});
    case TSR_OP_ADD:
      return Uniform({1, 1, 1});
    case TSR_OP_CAST: {
      std::vector<std::vector<DType>> out;
      for (DType x : kFloatTypes) {
        for (DType y : kFloatTypes) out.push_back({x, y});
      }
      return out;
    }
    case TSR_OP_ARGMAX:
      return {{F32, I32}, {BF16, I32}};
    case TSR_OP_SAMPLE:
      return {{F32, F32, I32, F32, F32, F32, I32}};
    case TSR_OP_LOGPROBS:
      return {{F32, I32, F32}, {F32, I32, F32, I32, F32}};
    default:
      return {};
  }
}

Status ValidateSignature(tsr_op_id op, uint32_t version,
                         std::span<const DType> dtypes) {
  if (OpName(op).empty()) {
    return NotFoundError(fmt::format(
        "op id {} is not a v1 op (v1 ids are 1..13{})", op,
        op >= TSR_OP_FUSED_BASE
            ? fmt::format("; the fused ops of ABI 1.{} are id {} "
                          "(decoder_layer)",
                          TSR_PLUGIN_ABI_MINOR, TSR_OP_DECODER_LAYER)
            : ""));
  }
  if (!IsKnownVersion(op, version)) {
    return NotFoundError(fmt::format(
        "{} version {} is unknown; ABI 1.{} defines version {}{}", OpName(op),
        version, TSR_PLUGIN_ABI_MINOR, kOpVersion,
        op == TSR_OP_LINEAR          ? " and 2 (int8 weights)"
        : op == TSR_OP_DECODER_LAYER ? " and 2 (a tensor-parallel rank)"
        : op == TSR_OP_EMBEDDING     ? " and 2 (a vocabulary shard)"
                                     : " only"));
  }
  if (IsFusedOp(op) && dtypes.size() != kFusedSignatureClasses) {
    return InvalidArgumentError(fmt::format(
        "{} lists {} dtypes; a fused op's signature lists its {} dtype "
        "classes (X, W, KV)",
        OpName(op), dtypes.size(), kFusedSignatureClasses));
  }
  if (!IsFusedOp(op)) {
    TSR_ASSIGN_OR_RETURN(
        ArgSplit split,
        SplitArgs(op, static_cast<uint32_t>(dtypes.size()), version));
    (void)split;
  }
  for (const auto& allowed : AllowedSignatures(op, version)) {
    if (allowed.size() == dtypes.size() &&
        std::equal(allowed.begin(), allowed.end(), dtypes.begin())) {
      return OkStatus();
    }
  }
  std::vector<std::string> names;
  for (DType d : dtypes) names.emplace_back(DTypeName(d));
  std::vector<std::string> allowed_names;
  for (const auto& allowed : AllowedSignatures(op, version)) {
    if (allowed.size() != dtypes.size()) continue;
    std::vector<std::string> n;
    for (DType d : allowed) n.emplace_back(DTypeName(d));
    allowed_names.push_back(fmt::format("({})", fmt::join(n, ", ")));
  }
  return InvalidArgumentError(fmt::format(
      "{} has no dtype signature ({}); the contract allows {}", OpName(op),
      fmt::join(names, ", "), fmt::join(allowed_names, " ")));
}

Status ValidateSignature(const tsr_op_signature& signature) {
  if (signature.num_args > TSR_MAX_OP_ARGS) {
    return InvalidArgumentError(
        fmt::format("signature has num_args {} > TSR_MAX_OP_ARGS ({})",
                    signature.num_args, TSR_MAX_OP_ARGS));
  }
  return ValidateSignature(
      signature.op, signature.version,
      std::span<const DType>(signature.dtypes, signature.num_args));
}

std::string SignatureTag(tsr_op_id op, std::span<const DType> dtypes) {
  auto name = [&](size_t i) {
    return i < dtypes.size() ? std::string(DTypeName(dtypes[i])) : "?";
  };
  switch (op) {
    case TSR_OP_EMBEDDING:
      return name(1);
    case TSR_OP_ROPE:
      return name(2);
    case TSR_OP_LINEAR: {
      std::string tag = name(0);
      if (dtypes.size() > 1 && dtypes[1] != dtypes[0]) tag += "_w" + name(1);
      const bool w8 = dtypes.size() > 1 && dtypes[1] == TSR_DTYPE_I8;
      if (dtypes.size() == (w8 ? 5u : 4u)) tag += "_bias";
      return tag;
    }
    case TSR_OP_CAST:
      return name(0) + "_to_" + name(1);
    case TSR_OP_LOGPROBS:
      return dtypes.size() == 5 ? "f32_top" : "f32";
    case TSR_OP_DECODER_LAYER: {  // "bf16", "bf16_wi8", "f32_kvbf16"
      std::string tag = name(0);
      if (dtypes.size() > 1 && dtypes[1] != dtypes[0]) tag += "_w" + name(1);
      if (dtypes.size() > 2 && dtypes[2] != dtypes[0]) tag += "_kv" + name(2);
      return tag;
    }
    default:
      return name(0);
  }
}

}  // namespace tessera::reference
