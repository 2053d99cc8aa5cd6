// The v1 op table the in-tree plugins share: every (op, version, dtype
// signature) of the v1 contracts they implement, and per op its argument
// names, params size and synchronous check (op_checks.h). A plugin maps the
// op id to its own kernel (the cpu plugin's ops.h, the OpenCL plugin's
// cl_ops.h).
//
// Adding an op: write Check<Op> in op_checks.cc, add an OpDef to kOpDefs in
// op_table.cc with its argument names and params size, list its signatures
// there, and give each plugin a kernel. The static tables are immutable;
// thread-safe.
#ifndef TESSERA_PLUGINS_KIT_OP_TABLE_H_
#define TESSERA_PLUGINS_KIT_OP_TABLE_H_

#include <cstddef>
#include <string>

#include "op_call.h"
#include "status.h"

namespace tessera::plugin_kit {

// Synchronous shape/param checks (dtypes, counts, handles and extents are
// already checked against the signature by the launch entry).
using OpCheckFn = Status (*)(const OpCall& call);

struct OpDef {
  tsr_op_id id;
  const char* name;
  // Argument names for messages (optional ones last).
  const char* input_names[TSR_MAX_OP_ARGS];
  const char* output_names[TSR_MAX_OP_ARGS];
  size_t params_size;  // v1.0 size of its params struct; 0 = no params
  OpCheckFn check;
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

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_OP_TABLE_H_
