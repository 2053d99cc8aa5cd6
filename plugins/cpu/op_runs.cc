// The op table's kernels: each listed (op, version) mapped to its Run, and
// the cpu plugin's additions to the shared v1 table (ExtendOpTable, see
// kit/op_table.h): linear v2, weight-only int8 (ABI 1.1), linear v3, w8a8
// (ABI 1.5), and the fused decoder_layer (v1 since ABI 1.2, v2 — a
// tensor-parallel rank — since 1.4, v3 — int8 projections as w8a8 — since
// 1.5), linear v4 and decoder_layer v4 (4-bit weights, w4a8, ABI 1.6),
// linear v5 (Q6_K weights, w6a8, ABI 1.8).
#include "kit/decoder_layer_plan.h"
#include "kit/op_checks.h"
#include "ops.h"

namespace tessera::plugin_kit {

namespace {
// linear v2 (weight-only int8), v3 (w8a8), v4 (w4a8) and v5 (w6a8): the same
// arguments and check (the check reads the version).
OpDef LinearQuantizedDef(uint32_t version) {
  return {TSR_OP_LINEAR,    "linear",      {"x", "w", "w_scale", "bias"}, {"y"},
          sizeof(tsr_linear_w8_params), CheckLinearW8, version};
}
const OpDef kLinearW8Def = LinearQuantizedDef(2);
const OpDef kLinearW8A8Def = LinearQuantizedDef(3);
const OpDef kLinearW4A8Def = LinearQuantizedDef(4);
const OpDef kLinearW6A8Def = LinearQuantizedDef(5);
const OpDef kEmbeddingShardDef = {TSR_OP_EMBEDDING,
                                  "embedding",
                                  {"ids", "table"},
                                  {"y"},
                                  sizeof(tsr_embedding_shard_params),
                                  CheckEmbeddingShard,
                                  2};
}  // namespace

// Replaces the kit's weak default: v1 + linear v2, v3 and v4 + embedding
// v2 + decoder_layer v1, v2, v3 and v4.
void ExtendOpTable(OpTableBuilder& table) {
  constexpr tsr_dtype I8 = TSR_DTYPE_I8;
  constexpr tsr_dtype U8 = TSR_DTYPE_U8;
  constexpr tsr_dtype F32 = TSR_DTYPE_F32;
  constexpr tsr_dtype F16 = TSR_DTYPE_F16;
  constexpr tsr_dtype BF16 = TSR_DTYPE_BF16;
  for (tsr_dtype a : {F32, BF16}) {
    table.Add(&kLinearW8Def, 3, {a, I8, F32, a});
    table.Add(&kLinearW8Def, 4, {a, I8, F32, a, a});
    table.Add(&kLinearW8A8Def, 3, {a, I8, F32, a});
    table.Add(&kLinearW8A8Def, 4, {a, I8, F32, a, a});
    table.Add(&kLinearW4A8Def, 3, {a, U8, F16, a});
    table.Add(&kLinearW4A8Def, 4, {a, U8, F16, a, a});
    table.Add(&kLinearW6A8Def, 3, {a, U8, F16, a});
    table.Add(&kLinearW6A8Def, 4, {a, U8, F16, a, a});
  }
  for (tsr_dtype x : {F32, BF16, tsr_dtype{TSR_DTYPE_F16}}) {
    table.Add(&kEmbeddingShardDef, 2, {TSR_DTYPE_I32, x, x});
  }
  // Every (X, W, KV) class triple its v1 kernels cover.
  for (tsr_dtype x : {F32, BF16}) {
    for (tsr_dtype w : {x, tsr_dtype{TSR_DTYPE_F16}, I8}) {
      for (tsr_dtype kv : {F32, BF16}) {
        table.AddFused(&DecoderLayerDef(), TSR_DECODER_LAYER_NUM_INPUTS,
                       TSR_DECODER_LAYER_NUM_OUTPUTS, {x, w, kv});
        table.AddFused(&DecoderLayerTpDef(), TSR_DECODER_LAYER_NUM_INPUTS,
                       TSR_DECODER_LAYER_NUM_OUTPUTS, {x, w, kv});
        if (w == I8) {
          table.AddFused(&DecoderLayerW8A8Def(), TSR_DECODER_LAYER_NUM_INPUTS,
                         TSR_DECODER_LAYER_NUM_OUTPUTS, {x, w, kv});
        }
      }
    }
    for (tsr_dtype kv : {F32, BF16}) {
      table.AddFused(&DecoderLayerW4A8Def(), TSR_DECODER_LAYER_NUM_INPUTS,
                     TSR_DECODER_LAYER_NUM_OUTPUTS, {x, U8, kv});
    }
  }
}

}  // namespace tessera::plugin_kit

namespace tessera::cpu {

OpRunFn FindOpRun(const OpDef& def) { return FindOpRun(def.id, def.version); }

OpRunFn FindOpRun(tsr_op_id op, uint32_t version) {
  if (version == 5) return op == TSR_OP_LINEAR ? RunLinearW8A8 : nullptr;  // w6a8
  if (version == 3 || version == 4) {  // w8a8, w4a8: one driver
    if (op == TSR_OP_LINEAR) return RunLinearW8A8;
    return op == TSR_OP_DECODER_LAYER ? RunDecoderLayer : nullptr;
  }
  if (version == 2) {
    if (op == TSR_OP_LINEAR) return RunLinearW8;
    if (op == TSR_OP_EMBEDDING) return RunEmbeddingShard;
    return op == TSR_OP_DECODER_LAYER ? RunDecoderLayer : nullptr;
  }
  if (version != 1) return nullptr;
  switch (op) {
    case TSR_OP_EMBEDDING: return RunEmbedding;
    case TSR_OP_RMS_NORM: return RunRmsNorm;
    case TSR_OP_ADD_RMS_NORM: return RunAddRmsNorm;
    case TSR_OP_LINEAR: return RunLinear;
    case TSR_OP_ROPE: return RunRope;
    case TSR_OP_KV_STORE: return RunKvStore;
    case TSR_OP_PAGED_ATTENTION: return RunPagedAttention;
    case TSR_OP_SILU_AND_MUL: return RunSiluAndMul;
    case TSR_OP_ADD: return RunAdd;
    case TSR_OP_CAST: return RunCast;
    case TSR_OP_ARGMAX: return RunArgmax;
    case TSR_OP_SAMPLE: return RunSample;
    case TSR_OP_LOGPROBS: return RunLogprobs;
    case TSR_OP_DECODER_LAYER: return RunDecoderLayer;
    default: return nullptr;
  }
}

}  // namespace tessera::cpu
