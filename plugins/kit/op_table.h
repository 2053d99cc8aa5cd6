// The v1 op table the in-tree plugins share: every (op, version, dtype
// signature) of the v1 contracts they implement, and per op its argument
// names, params size and synchronous check (op_checks.h). A plugin maps the
// op id to its own kernel (the cpu plugin's ops.h, the OpenCL plugin's
// cl_ops.h).
//
// Adding an op: write Check<Op> in op_checks.cc, add an OpDef to kOpDefs in
// op_table.cc with its argument names and params size, list its signatures
// there, and give each plugin a kernel.
//
// Op versions of later minors (e.g. linear v2, ABI 1.1) are not in the
// shared table: a plugin that implements one defines ExtendOpTable (below),
// which adds the OpDefs and signatures of that plugin only; a plugin that
// does not define it lists exactly the v1 table (the host falls back to the
// cpu plugin for the rest). The tables are built once, on first use, and
// are immutable afterwards; thread-safe.
#ifndef TESSERA_PLUGINS_KIT_OP_TABLE_H_
#define TESSERA_PLUGINS_KIT_OP_TABLE_H_

#include <cstddef>
#include <initializer_list>
#include <string>

#include "op_call.h"
#include "status.h"

namespace tessera::plugin_kit {

// Synchronous shape/param checks (dtypes, counts, handles and extents are
// already checked against the signature by the launch entry).
using OpCheckFn = Status (*)(const OpCall& call);

// Fused ops only: the dtype launch argument `arg` (inputs then outputs)
// must have under the signature's dtype classes; TSR_DTYPE_INVALID when it
// must be absent. *optional is set when it may be absent.
using FusedArgDTypeFn = tsr_dtype (*)(const tsr_op_signature& sig, size_t arg,
                                      bool* optional);

struct OpDef {
  tsr_op_id id;
  const char* name;
  // Argument names for messages (optional ones last).
  const char* input_names[kMaxCallInputs];
  const char* output_names[kMaxCallOutputs];
  size_t params_size;  // v1.0 size of its params struct; 0 = no params
  OpCheckFn check;
  uint32_t version = 1;  // the op version this def describes
  FusedArgDTypeFn fused_arg_dtype = nullptr;  // fused ops: see above
};

// A signature plus how its arguments split into inputs and outputs.
struct OpSignatureInfo {
  const OpDef* def;
  size_t num_inputs;
  size_t num_outputs;
};

// Collects a plugin's extra signatures (see ExtendOpTable).
class OpTableBuilder {
 public:
  virtual ~OpTableBuilder() = default;
  // Lists `dtypes` (inputs then outputs; the first `num_inputs` are inputs)
  // for `def`'s (op, version). `def` must outlive the plugin (a static).
  virtual void Add(const OpDef* def, size_t num_inputs,
                   std::initializer_list<tsr_dtype> dtypes) = 0;
  // Lists a fused op (def->fused_arg_dtype set) with its dtype `classes`;
  // its launches pass `num_inputs` and `num_outputs` tensors.
  virtual void AddFused(const OpDef* def, size_t num_inputs, size_t num_outputs,
                        std::initializer_list<tsr_dtype> classes) = 0;
};

// The hook a plugin defines (as a plain function in its own sources) to
// append its own op versions after the shared v1 signatures. The kit holds
// a weak, empty default, so a plugin that does not define it gets the v1
// table alone. Called once, when the tables are first built.
void ExtendOpTable(OpTableBuilder& table);

// list_ops' array and the parallel array of infos (same order and count).
const tsr_op_signature* OpSignatures();
const OpSignatureInfo* OpSignatureInfos();
size_t NumOpSignatures();

// The signature index matching `sig`, or -1.
long FindOpSignature(const tsr_op_signature& sig);
// The def of op `id`'s version 1 (for names and messages), or NULL. Knows
// the v1 ops and the fused ops the kit defines (decoder_layer).
const OpDef* FindOpDef(tsr_op_id id);

// decoder_layer v1 (ABI 1.2): the kit's def, for a plugin's ExtendOpTable
// (AddFused with TSR_DECODER_LAYER_NUM_INPUTS / _OUTPUTS and (X, W, KV)).
const OpDef& DecoderLayerDef();
// decoder_layer v2 (ABI 1.4): the same, reading params.comm.
const OpDef& DecoderLayerTpDef();
// decoder_layer v3 (ABI 1.5): v2 with int8 weights only, projections as
// linear v3 (w8a8).
const OpDef& DecoderLayerW8A8Def();
// decoder_layer v4 (w4a8).
const OpDef& DecoderLayerW4A8Def();

// "input 1 (table)" / "output 0 (y)".
std::string ArgLabel(const OpDef& def, bool output, size_t index);

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_OP_TABLE_H_
