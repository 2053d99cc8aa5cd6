// Names of the plugin ABI's ops (tsr_op_id <-> "rms_norm"), in one place.
//
// The names are the ones the ABI header uses in its op contracts and the ones
// people type: TESSERA_DISABLE_OPS, doctor's coverage table, metrics labels
// (tessera:op_fallback_total{op="rms_norm"}) and the conformance kit all use
// these. Pure functions over a constant table; thread-safe.
#ifndef TESSERA_RUNTIME_OP_NAMES_H_
#define TESSERA_RUNTIME_OP_NAMES_H_

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::runtime {

// The v1 ops in id order (embedding .. logprobs).
const std::vector<tsr_op_id>& AllOpsV1();

// The fused ops the host knows (decoder_layer, ABI 1.2).
const std::vector<tsr_op_id>& FusedOps();
inline bool IsFusedOp(tsr_op_id op) { return op >= TSR_OP_FUSED_BASE; }

// "rms_norm" for TSR_OP_RMS_NORM, "decoder_layer" for TSR_OP_DECODER_LAYER;
// "fused_<id>" for other ids >= TSR_OP_FUSED_BASE; "op_<id>" for other
// unknown ids.
std::string OpName(tsr_op_id op);

// The id of a v1 or fused op name, or nullopt.
std::optional<tsr_op_id> OpIdFromName(std::string_view name);

// "embedding, rms_norm, ..., logprobs": for error messages.
std::string ValidOpNames();

// Parses a comma-separated list of op names ("rms_norm,linear"; spaces and
// empty items ignored). An unknown name is an InvalidArgument error that
// names `source` (e.g. "TESSERA_DISABLE_OPS") and lists the valid names.
StatusOr<std::set<tsr_op_id>> ParseOpNameList(const std::string& text,
                                              std::string_view source);

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_OP_NAMES_H_
