#include "op_table.h"

#include <vector>

#include "op_checks.h"

namespace tessera::plugin_kit {
namespace {

constexpr tsr_dtype kF32 = TSR_DTYPE_F32;
constexpr tsr_dtype kBF16 = TSR_DTYPE_BF16;
constexpr tsr_dtype kF16 = TSR_DTYPE_F16;
constexpr tsr_dtype kI32 = TSR_DTYPE_I32;

const OpDef kOpDefs[] = {
    {TSR_OP_EMBEDDING, "embedding", {"ids", "table"}, {"y"}, 0, CheckEmbedding},
    {TSR_OP_RMS_NORM, "rms_norm", {"x", "w"}, {"y"}, sizeof(tsr_rms_norm_params), CheckRmsNorm},
    {TSR_OP_ADD_RMS_NORM, "add_rms_norm", {"x", "residual", "w"}, {"y", "residual_out"},
     sizeof(tsr_rms_norm_params), CheckAddRmsNorm},
    {TSR_OP_LINEAR, "linear", {"x", "w", "bias"}, {"y"}, 0, CheckLinear},
    {TSR_OP_ROPE, "rope", {"positions", "inv_freq", "q", "k"}, {"q_out", "k_out"},
     sizeof(tsr_rope_params), CheckRope},
    {TSR_OP_KV_STORE, "kv_store", {"k", "v", "slots"}, {"k_cache", "v_cache"}, 0, CheckKvStore},
    {TSR_OP_PAGED_ATTENTION, "paged_attention",
     {"q", "k_cache", "v_cache", "block_table", "seq_lens", "query_start"}, {"o"},
     sizeof(tsr_paged_attention_params), CheckPagedAttention},
    {TSR_OP_SILU_AND_MUL, "silu_and_mul", {"x"}, {"y"}, 0, CheckSiluAndMul},
    {TSR_OP_ADD, "add", {"a", "b"}, {"y"}, 0, CheckAdd},
    {TSR_OP_CAST, "cast", {"x"}, {"y"}, 0, CheckCast},
    {TSR_OP_ARGMAX, "argmax", {"logits"}, {"ids"}, 0, CheckArgmax},
    {TSR_OP_SAMPLE, "sample", {"logits", "temperature", "top_k", "top_p", "min_p", "uniform"},
     {"ids"}, 0, CheckSample},
    {TSR_OP_LOGPROBS, "logprobs", {"logits", "ids"}, {"logprob", "top_ids", "top_logprobs"}, 0,
     CheckLogprobs},
};

struct Tables : OpTableBuilder {
  std::vector<tsr_op_signature> sigs;
  std::vector<OpSignatureInfo> infos;

  void Add(const OpDef* def, size_t num_inputs,
           std::initializer_list<tsr_dtype> dtypes) override {
    tsr_op_signature sig{};
    sig.struct_size = sizeof(tsr_op_signature);
    sig.op = def->id;
    sig.version = def->version;
    sig.num_args = static_cast<uint32_t>(dtypes.size());
    size_t i = 0;
    for (tsr_dtype d : dtypes) sig.dtypes[i++] = d;
    sigs.push_back(sig);
    infos.push_back(OpSignatureInfo{def, num_inputs, dtypes.size() - num_inputs});
  }
  void AddFused(const OpDef* def, size_t num_inputs, size_t num_outputs,
                std::initializer_list<tsr_dtype> classes) override {
    Add(def, 0, classes);
    infos.back().num_inputs = num_inputs;
    infos.back().num_outputs = num_outputs;
  }
  // A v1 signature of the shared table.
  void Add(tsr_op_id op, size_t num_inputs, std::initializer_list<tsr_dtype> dtypes) {
    Add(FindOpDef(op), num_inputs, dtypes);
  }
};

const Tables& GetTables() {
  static const Tables tables = [] {
    Tables t;
    for (tsr_dtype x : {kF32, kBF16, kF16}) t.Add(TSR_OP_EMBEDDING, 2, {kI32, x, x});
    for (tsr_dtype x : {kF32, kBF16}) {
      t.Add(TSR_OP_RMS_NORM, 2, {x, x, x});
      t.Add(TSR_OP_ADD_RMS_NORM, 3, {x, x, x, x, x});
    }
    for (tsr_dtype a : {kF32, kBF16}) {
      for (tsr_dtype w : {a, kF16}) {
        t.Add(TSR_OP_LINEAR, 2, {a, w, a});
        t.Add(TSR_OP_LINEAR, 3, {a, w, a, a});
      }
    }
    for (tsr_dtype x : {kF32, kBF16}) {
      t.Add(TSR_OP_ROPE, 4, {kI32, kF32, x, x, x, x});
      t.Add(TSR_OP_KV_STORE, 3, {x, x, kI32, x, x});
      t.Add(TSR_OP_PAGED_ATTENTION, 6, {x, x, x, kI32, kI32, kI32, x});
      t.Add(TSR_OP_SILU_AND_MUL, 1, {x, x});
      t.Add(TSR_OP_ADD, 2, {x, x, x});
    }
    for (tsr_dtype x : {kF32, kBF16, kF16}) {
      for (tsr_dtype y : {kF32, kBF16, kF16}) t.Add(TSR_OP_CAST, 1, {x, y});
    }
    for (tsr_dtype x : {kF32, kBF16}) t.Add(TSR_OP_ARGMAX, 1, {x, kI32});
    t.Add(TSR_OP_SAMPLE, 6, {kF32, kF32, kI32, kF32, kF32, kF32, kI32});
    t.Add(TSR_OP_LOGPROBS, 2, {kF32, kI32, kF32});
    t.Add(TSR_OP_LOGPROBS, 2, {kF32, kI32, kF32, kI32, kF32});
    ExtendOpTable(t);
    return t;
  }();
  return tables;
}

}  // namespace

// The default: no extra signatures. A plugin's own (strong) definition
// replaces it at link time.
__attribute__((weak)) void ExtendOpTable(OpTableBuilder& /*table*/) {}

const tsr_op_signature* OpSignatures() { return GetTables().sigs.data(); }
const OpSignatureInfo* OpSignatureInfos() { return GetTables().infos.data(); }
size_t NumOpSignatures() { return GetTables().sigs.size(); }

long FindOpSignature(const tsr_op_signature& sig) {
  const Tables& t = GetTables();
  for (size_t i = 0; i < t.sigs.size(); ++i) {
    const tsr_op_signature& s = t.sigs[i];
    if (s.op != sig.op || s.version != sig.version || s.num_args != sig.num_args) continue;
    bool same = true;
    for (uint32_t a = 0; a < s.num_args; ++a) same = same && s.dtypes[a] == sig.dtypes[a];
    if (same) return static_cast<long>(i);
  }
  return -1;
}

const OpDef* FindOpDef(tsr_op_id id) {
  for (const OpDef& def : kOpDefs) {
    if (def.id == id) return &def;
  }
  if (id == TSR_OP_DECODER_LAYER) return &DecoderLayerDef();
  return nullptr;
}

std::string ArgLabel(const OpDef& def, bool output, size_t index) {
  const char* name = output ? def.output_names[index] : def.input_names[index];
  return StrCat(output ? "output " : "input ", index, " (", name ? name : "?", ")");
}

}  // namespace tessera::plugin_kit
