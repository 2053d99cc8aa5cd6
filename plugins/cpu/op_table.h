// The op table of the cpu plugin: every v1 (op, version, dtype signature)
// it implements, and per op the synchronous checks and the kernel that runs
// on a stream worker.
//
// Adding an op: write Check<Op> and Run<Op> in the ops_<family>.cc file
// (declared in ops.h), add an OpDef to kOpDefs in op_table.cc with its
// argument names and params size, and list its signatures there. The
// static tables are immutable; thread-safe.
#ifndef TESSERA_PLUGINS_CPU_OP_TABLE_H_
#define TESSERA_PLUGINS_CPU_OP_TABLE_H_

#include <cstddef>
#include <string>

#include "status.h"
#include "stream.h"
#include "tensor.h"

namespace tessera::cpu {

// One launch, validated and copied: what a kernel runs on.
struct OpCall {
  tsr_op_id op = 0;
  size_t num_inputs = 0;
  size_t num_outputs = 0;
  TensorView in[TSR_MAX_OP_ARGS];
  TensorView out[TSR_MAX_OP_ARGS];
  union Params {
    tsr_rms_norm_params rms_norm;
    tsr_rope_params rope;
    tsr_paged_attention_params attention;
  } params{};
};

// Synchronous shape/param checks (dtypes, counts, handles and extents are
// already checked against the signature by the launch entry).
using OpCheckFn = Status (*)(const OpCall& call);
// The kernel; failures become the stream's sticky error.
using OpRunFn = Status (*)(const OpCall& call, ExecContext& ctx);

struct OpDef {
  tsr_op_id id;
  const char* name;
  // Argument names for messages (optional ones last).
  const char* input_names[TSR_MAX_OP_ARGS];
  const char* output_names[TSR_MAX_OP_ARGS];
  size_t params_size;  // v1.0 size of its params struct; 0 = no params
  OpCheckFn check;
  OpRunFn run;
};

// A signature plus how its arguments split into inputs and outputs.
struct OpSignatureInfo {
  const OpDef* def;
  size_t num_inputs;
  size_t num_outputs;
};

// list_ops' array and the parallel array of infos (same order and count).
const tsr_op_signature* OpSignatures();
const OpSignatureInfo* OpSignatureInfos();
size_t NumOpSignatures();

// The signature index matching `sig`, or -1.
long FindOpSignature(const tsr_op_signature& sig);
const OpDef* FindOpDef(tsr_op_id id);

// "input 1 (table)" / "output 0 (y)".
std::string ArgLabel(const OpDef& def, bool output, size_t index);

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_OP_TABLE_H_
