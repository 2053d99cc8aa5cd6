// The static part of the op contracts of tessera_plugin.h: op names,
// argument counts and the dtype signatures each op version allows (every
// v1 op at version 1; since ABI 1.1 also linear v2, weight-only int8).
//
// Used by the reference implementation to validate a call and by the
// conformance kit to judge a plugin's list_ops() table. Pure functions,
// thread-safe.
#ifndef TESSERA_REFERENCE_OP_CONTRACTS_H_
#define TESSERA_REFERENCE_OP_CONTRACTS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::reference {

// The version every v1 op has; linear also has version 2 (ABI 1.1,
// weight-only int8), 3 (ABI 1.5, w8a8: same arguments and signatures) and
// 4 (ABI 1.6, w4a8: the same arguments, w packed 4-bit as U8 [N, K / 2]
// with F16 scales).
inline constexpr uint32_t kOpVersion = 1;
inline constexpr uint32_t kLinearW8Version = 2;
inline constexpr uint32_t kLinearW8A8Version = 3;
inline constexpr uint32_t kLinearW4A8Version = 4;
// 5 (ABI 1.8, w6a8): the same arguments, w Q6_K super-blocks as U8
// [N, K / 256 * 208] with their F16 d's as w_scale [N, K / 256].
inline constexpr uint32_t kLinearW6A8Version = 5;
// True for linear's quantised-weight versions (v2 .. v5), which share
// argument names and counts (x, w, w_scale [, bias], y).
inline bool IsLinearInt8(tsr_op_id op, uint32_t version) {
  return op == TSR_OP_LINEAR &&
         (version == kLinearW8Version || version == kLinearW8A8Version ||
          version == kLinearW4A8Version || version == kLinearW6A8Version);
}
// decoder_layer v2 (ABI 1.4): one tensor-parallel rank's layer (params.comm).
// Same tensors and signatures as v1; the reference runs it as v1 (without
// the all-reduces: one rank alone, or comm NULL).
inline constexpr uint32_t kDecoderLayerTpVersion = 2;
// decoder_layer v3 (ABI 1.5): v2 with W == I8 only and its projections as
// linear v3 (w8a8).
inline constexpr uint32_t kDecoderLayerW8A8Version = 3;
// decoder_layer v4 (ABI 1.6): v3 with W == U8 (4-bit weights packed as
// linear v4's) and its projections as linear v4 (w4a8).
inline constexpr uint32_t kDecoderLayerW4A8Version = 4;
// embedding v2 (ABI 1.4): a vocabulary shard (params.row_begin; zeros for
// ids outside it). Same arguments and signatures as v1.
inline constexpr uint32_t kEmbeddingShardVersion = 2;

// Fused ops (ids >= TSR_OP_FUSED_BASE; decoder_layer since ABI 1.2): their
// signatures list dtype classes, not one dtype per launch argument.
inline bool IsFusedOp(tsr_op_id op) { return op >= TSR_OP_FUSED_BASE; }
inline constexpr size_t kFusedSignatureClasses = 3;  // (X, W, KV)

// True when the contract defines `version` of `op`.
bool IsKnownVersion(tsr_op_id op, uint32_t version);

// "rms_norm" etc.; "" for an id that is not a v1 op.
std::string_view OpName(tsr_op_id op);
// Every v1 op id, ascending.
std::span<const tsr_op_id> AllOps();

// How a signature of `num_args` dtypes splits into inputs and outputs for
// `op` (linear: 3 or 4 args; logprobs: 3 or 5). Error when `num_args` is not
// a valid count for the op. For a fused op `num_args` counts the launch's
// tensors (decoder_layer: 21 + 3), not its signature's classes.
struct ArgSplit {
  int num_inputs = 0;
  int num_outputs = 0;
};
StatusOr<ArgSplit> SplitArgs(tsr_op_id op, uint32_t num_args,
                             uint32_t version = kOpVersion);

// Checks a signature against the contract: known op id and version, argument
// count, and the dtype of every argument. The message names what is wrong.
Status ValidateSignature(tsr_op_id op, uint32_t version,
                         std::span<const DType> dtypes);
Status ValidateSignature(const tsr_op_signature& signature);

// Short tag for the dtypes of a (valid) signature, used in check names:
// "f32", "bf16_wf16", "f32_bias", "f16_to_bf16", "f32_top"; linear v2:
// "f32_wi8", "bf16_wi8_bias".
std::string SignatureTag(tsr_op_id op, std::span<const DType> dtypes);

// The contract's name of every argument ("x", "w", "y", ...), inputs then
// outputs, for a call with the given counts (linear without bias has no
// "bias"; logprobs with one output has no top_*).
std::vector<std::string> ArgNames(tsr_op_id op, int num_inputs,
                                  int num_outputs,
                                  uint32_t version = kOpVersion);

// Every signature the v1 contract allows, for one op (all dtype
// combinations and both argument counts where an op has optional args).
std::vector<std::vector<DType>> AllowedSignatures(
    tsr_op_id op, uint32_t version = kOpVersion);

}  // namespace tessera::reference

#endif  // TESSERA_REFERENCE_OP_CONTRACTS_H_
