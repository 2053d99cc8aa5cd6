// decoder_layer v1 (ABI 1.2, TSR_OP_DECODER_LAYER), v2 (ABI 1.4: one
// tensor-parallel rank, two all_reduce steps in the plan) and v3 (ABI 1.5:
// v2 whose int8 projections are linear v3, w8a8) in the kit: its op def
// (arguments, dtype classes, check) and its plan — the v1 op sequence of
// its spec as OpCalls over the launch's tensors and a scratch arena for the
// intermediates. A plugin whose v1 kernels can run on host memory runs the
// plan step by step in one work item (the cpu plugin); a plugin with a
// real megakernel uses only the def and the check.
//
// Building the plan checks every step with the v1 op's own check
// (op_checks.h), so a fused launch is rejected exactly where the unfused
// sequence would be, with the step named in the message.
//
// Plain value types and pure functions; thread-safe.
#ifndef TESSERA_PLUGINS_KIT_DECODER_LAYER_PLAN_H_
#define TESSERA_PLUGINS_KIT_DECODER_LAYER_PLAN_H_

#include <cstddef>
#include <vector>

#include "op_call.h"

namespace tessera::plugin_kit {

// Argument positions of decoder_layer v1 (inputs; outputs are
// kResidualOut, kKCache, kVCache of call.out).
enum DecoderLayerInput : int {
  kDlResidual, kDlPositions, kDlSlots, kDlBlockTable, kDlSeqLens, kDlQueryStart,
  kDlInvFreq, kDlInputNorm, kDlWQkv, kDlWQkvScale, kDlQkvBias, kDlQNorm, kDlKNorm,
  kDlWO, kDlWOScale, kDlOBias, kDlPostNorm, kDlWGateUp, kDlWGateUpScale, kDlWDown,
  kDlWDownScale
};
enum DecoderLayerOutput : int { kDlResidualOut, kDlKCache, kDlVCache };

// One v1 op of the sequence. Views of scratch intermediates have
// `buffer == ScratchMarker()` and `offset` = their byte offset in the arena
// until Bind() gives them addresses.
struct PlanStep {
  const char* what;  // "qkv projection", ...
  OpCall call;       // op, version, tensors, params
};

// The op id of a plan step that is not a v1 op but decoder_layer v2's
// in-place all_reduce SUM of call.out[0] over the plan's communicator.
constexpr tsr_op_id kPlanAllReduce = 0;

struct DecoderLayerPlan {
  std::vector<PlanStep> steps;
  tsr_comm comm = nullptr;  // v2/v3's params.comm (NULL: v1, or no parallelism)
  size_t scratch_bytes = 0;  // the arena's size (64-byte aligned parts)

  // Points every scratch view at `arena` (scratch_bytes, 64-byte aligned).
  void Bind(char* arena);
};

// The marker `buffer` of scratch views.
const void* ScratchMarker();

// Builds (and checks) the plan of a decoder_layer call whose tensors the
// launch already resolved and matched against the signature's classes.
Status PlanDecoderLayer(const OpCall& fused, DecoderLayerPlan* plan);

// The def's check: PlanDecoderLayer, discarding the plan.
Status CheckDecoderLayer(const OpCall& call);

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_DECODER_LAYER_PLAN_H_
