#include "decoder_layer_plan.h"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "half.h"
#include "op_checks.h"
#include "op_table.h"

namespace tessera::plugin_kit {
namespace {

constexpr size_t kAlign = 64;

// The dtype of each argument under the classes (X, W, KV); see
// FusedArgDTypeFn.
tsr_dtype DecoderLayerArgDType(const tsr_op_signature& sig, size_t arg, bool* optional) {
  const tsr_dtype x = sig.dtypes[0], w = sig.dtypes[1], kv = sig.dtypes[2];
  *optional = false;
  if (arg >= TSR_DECODER_LAYER_NUM_INPUTS) {  // outputs
    return arg == TSR_DECODER_LAYER_NUM_INPUTS + kDlResidualOut ? x : kv;
  }
  switch (static_cast<int>(arg)) {
    case kDlPositions: case kDlSlots: case kDlBlockTable: case kDlSeqLens: case kDlQueryStart:
      return TSR_DTYPE_I32;
    case kDlInvFreq:
      return TSR_DTYPE_F32;
    case kDlWQkv: case kDlWO: case kDlWGateUp: case kDlWDown:
      return w;
    case kDlWQkvScale: case kDlWOScale: case kDlWGateUpScale: case kDlWDownScale:
      // int8: F32 scales; packed 4-bit (decoder_layer v4): F16 (Q4_0's).
      return w == TSR_DTYPE_I8 ? TSR_DTYPE_F32
             : w == TSR_DTYPE_U8 ? TSR_DTYPE_F16
                                 : TSR_DTYPE_INVALID;
    case kDlQkvBias: case kDlQNorm: case kDlKNorm: case kDlOBias:
      *optional = true;
      return x;
    default:  // residual, input_norm, post_norm
      return x;
  }
}

#define TSR_DECODER_LAYER_ARG_NAMES                                                          \
  {"residual", "positions", "slots", "block_table", "seq_lens", "query_start", "inv_freq",   \
   "input_norm", "w_qkv", "w_qkv_scale", "qkv_bias", "q_norm", "k_norm", "w_o", "w_o_scale", \
   "o_bias", "post_norm", "w_gate_up", "w_gate_up_scale", "w_down", "w_down_scale"},        \
      {"residual_out", "k_cache", "v_cache"}

// v1 reads the params up to logit_softcap (the 1.2 struct), v2 and v3 all
// of it.
const OpDef kDecoderLayerDef = {TSR_OP_DECODER_LAYER,
                                "decoder_layer",
                                TSR_DECODER_LAYER_ARG_NAMES,
                                offsetof(tsr_decoder_layer_params, comm),
                                CheckDecoderLayer,
                                1,
                                DecoderLayerArgDType};
const OpDef kDecoderLayerTpDef = {TSR_OP_DECODER_LAYER,
                                  "decoder_layer",
                                  TSR_DECODER_LAYER_ARG_NAMES,
                                  sizeof(tsr_decoder_layer_params),
                                  CheckDecoderLayer,
                                  2,
                                  DecoderLayerArgDType};
const OpDef kDecoderLayerW8A8Def = {TSR_OP_DECODER_LAYER,
                                    "decoder_layer",
                                    TSR_DECODER_LAYER_ARG_NAMES,
                                    sizeof(tsr_decoder_layer_params),
                                    CheckDecoderLayer,
                                    3,
                                    DecoderLayerArgDType};
const OpDef kDecoderLayerW4A8Def = {TSR_OP_DECODER_LAYER,
                                    "decoder_layer",
                                    TSR_DECODER_LAYER_ARG_NAMES,
                                    sizeof(tsr_decoder_layer_params),
                                    CheckDecoderLayer,
                                    4,
                                    DecoderLayerArgDType};

const char kScratchMarker = 0;

bool Present(const TensorView& t) { return t.dtype != TSR_DTYPE_INVALID; }

// Builds the plan; the arena grows as intermediates are added.
class Planner {
 public:
  // `int8_version`: the linear version of quantised projections (2, 3 for
  // decoder_layer v3's w8a8, 4 for v4's w4a8).
  Planner(DecoderLayerPlan* plan, uint32_t int8_version)
      : plan_(plan), int8_version_(int8_version) {}

  // A contiguous intermediate in the arena.
  TensorView Scratch(tsr_dtype dtype, std::initializer_list<int64_t> shape) {
    TensorView v;
    v.buffer = ScratchMarker();
    v.offset = plan_->scratch_bytes;
    v.dtype = dtype;
    v.ndim = static_cast<int>(shape.size());
    int64_t n = 1, i = 0;
    for (int64_t d : shape) v.shape[i++] = d;
    for (int k = v.ndim - 1; k >= 0; --k) {
      v.strides[k] = n;
      n *= v.shape[k];
    }
    plan_->scratch_bytes += (n * DTypeSize(dtype) + kAlign - 1) / kAlign * kAlign;
    return v;
  }

  // Adds step `what`: op `op` v`version` over `in` and `out`, and checks it
  // with the v1 op's check.
  Status Step(const char* what, tsr_op_id op, uint32_t version,
              std::initializer_list<TensorView> in, std::initializer_list<TensorView> out,
              const void* params, size_t params_size, OpCheckFn check) {
    PlanStep step;
    step.what = what;
    step.call.op = op;
    step.call.version = version;
    for (const TensorView& v : in) step.call.in[step.call.num_inputs++] = v;
    for (const TensorView& v : out) step.call.out[step.call.num_outputs++] = v;
    if (params != nullptr) std::memcpy(&step.call.params, params, params_size);
    Status checked = check(step.call);
    if (!checked.ok()) {
      return Status(checked.code(), StrCat("step ", what, ": ", checked.message()));
    }
    plan_->steps.push_back(step);
    return OkStatus();
  }

  // An in-place all_reduce SUM of `x` over the plan's communicator.
  void AllReduce(const char* what, const TensorView& x) {
    PlanStep step;
    step.what = what;
    step.call.op = kPlanAllReduce;
    step.call.version = 0;
    step.call.in[step.call.num_inputs++] = x;
    step.call.out[step.call.num_outputs++] = x;
    plan_->steps.push_back(step);
  }

  // y = x w^T (+ bias): linear v1, or v2 (v3) for int8 weights.
  Status Linear(const char* what, const TensorView& x, const TensorView& w,
                const TensorView& scale, const TensorView& bias, const TensorView& y,
                int32_t group_size) {
    if (w.dtype != TSR_DTYPE_I8 && w.dtype != TSR_DTYPE_U8) {
      if (Present(bias)) {
        return Step(what, TSR_OP_LINEAR, 1, {x, w, bias}, {y}, nullptr, 0, CheckLinear);
      }
      return Step(what, TSR_OP_LINEAR, 1, {x, w}, {y}, nullptr, 0, CheckLinear);
    }
    // v3's / v4's per-channel layer (group_size 0): G is this projection's K.
    const int32_t g = group_size > 0 ? group_size : static_cast<int32_t>(x.dim(1));
    const tsr_linear_w8_params p{sizeof(tsr_linear_w8_params), g};
    if (Present(bias)) {
      return Step(what, TSR_OP_LINEAR, int8_version_, {x, w, scale, bias}, {y}, &p, sizeof(p),
                  CheckLinearW8);
    }
    return Step(what, TSR_OP_LINEAR, int8_version_, {x, w, scale}, {y}, &p, sizeof(p),
                CheckLinearW8);
  }

 private:
  DecoderLayerPlan* plan_;
  uint32_t int8_version_;
};

// Columns [col0, col0 + heads * d) of a [T, N] view, as [T, heads, d].
TensorView Heads(const TensorView& whole, int64_t col0, int64_t heads, int64_t d) {
  TensorView v = whole;
  const int64_t bytes = col0 * whole.strides[1] * static_cast<int64_t>(DTypeSize(whole.dtype));
  v.offset += bytes;
  if (v.data != nullptr) v.data += bytes;
  v.ndim = 3;
  v.shape[0] = whole.shape[0];
  v.shape[1] = heads;
  v.shape[2] = d;
  v.strides[0] = whole.strides[0];
  v.strides[1] = d;
  v.strides[2] = 1;
  return v;
}

// A contiguous [T, Hq, D] view as [T, Hq D].
TensorView Flat(const TensorView& t) {
  TensorView v = t;
  v.ndim = 2;
  v.shape[1] = t.shape[1] * t.shape[2];
  v.strides[0] = v.shape[1];
  v.strides[1] = 1;
  return v;
}

// Weights, scales, norms and biases: contiguous, as the spec requires.
Status RequirePacked(const OpCall& call) {
  for (int arg : {kDlInputNorm, kDlWQkv, kDlWQkvScale, kDlQkvBias, kDlQNorm, kDlKNorm, kDlWO,
                  kDlWOScale, kDlOBias, kDlPostNorm, kDlWGateUp, kDlWGateUpScale, kDlWDown,
                  kDlWDownScale, kDlPositions, kDlSlots, kDlBlockTable, kDlSeqLens,
                  kDlQueryStart, kDlInvFreq}) {
    const TensorView& t = call.in[arg];
    if (Present(t) && !t.IsContiguous()) {
      return InvalidArgument(kDecoderLayerDef.input_names[arg],
                             " must be contiguous (weights, norms, biases, scales and the "
                             "metadata are packed), but has shape ",
                             ShapeString(t));
    }
  }
  return OkStatus();
}

}  // namespace

const OpDef& DecoderLayerDef() { return kDecoderLayerDef; }
const OpDef& DecoderLayerTpDef() { return kDecoderLayerTpDef; }
const OpDef& DecoderLayerW8A8Def() { return kDecoderLayerW8A8Def; }
const OpDef& DecoderLayerW4A8Def() { return kDecoderLayerW4A8Def; }

const void* ScratchMarker() { return &kScratchMarker; }

void DecoderLayerPlan::Bind(char* arena) {
  for (PlanStep& step : steps) {
    for (size_t i = 0; i < step.call.num_inputs; ++i) {
      TensorView& v = step.call.in[i];
      if (v.buffer == ScratchMarker()) v.data = arena + v.offset;
    }
    for (size_t i = 0; i < step.call.num_outputs; ++i) {
      TensorView& v = step.call.out[i];
      if (v.buffer == ScratchMarker()) v.data = arena + v.offset;
    }
  }
}

Status PlanDecoderLayer(const OpCall& fused, DecoderLayerPlan* plan) {
  const tsr_decoder_layer_params& p = fused.params.decoder_layer;
  const TensorView* in = fused.in;
  const TensorView &residual = in[kDlResidual], &residual_out = fused.out[kDlResidualOut];
  const TensorView &k_cache = fused.out[kDlKCache], &v_cache = fused.out[kDlVCache];
  TSR_KIT_RETURN_IF_ERROR(RequireRank(residual, "residual", 2));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(in[kDlWGateUp], "w_gate_up", 2));
  TSR_KIT_RETURN_IF_ERROR(RequirePacked(fused));
  const int64_t t = residual.dim(0), h = residual.dim(1);
  const int64_t hq = p.num_q_heads, hk = p.num_kv_heads, d = p.head_dim;
  if (hq < 1 || hk < 1 || d < 1 || hq % hk != 0) {
    return InvalidArgument("params give Hq = ", hq, ", Hk = ", hk, ", D = ", d,
                           "; they must be >= 1 with Hq % Hk == 0");
  }
  const int64_t nqkv = (hq + 2 * hk) * d;
  TSR_KIT_RETURN_IF_ERROR(
      RequireDim(in[kDlWQkv], "w_qkv", 0, nqkv, "(Hq + 2 Hk) D from the params"));
  const bool w4a8 = fused.version == 4;  // weights packed 4-bit: K / 2 bytes a row
  TSR_KIT_RETURN_IF_ERROR(RequireDim(in[kDlWO], "w_o", 1, w4a8 ? hq * d / 2 : hq * d,
                                     w4a8 ? "Hq D / 2 from the params" : "Hq D from the params"));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(k_cache, "k_cache", 1, hk, "Hk from the params"));
  if (Present(in[kDlQNorm]) != Present(in[kDlKNorm])) {
    return InvalidArgument("q_norm and k_norm must be both present or both absent");
  }
  if (!std::isfinite(p.rms_norm_eps) || p.rms_norm_eps < 0.0f) {
    return InvalidArgument("rms_norm_eps = ", p.rms_norm_eps, " must be a finite number >= 0");
  }
  const tsr_dtype x = residual.dtype, kv = k_cache.dtype;
  const int64_t inter = in[kDlWGateUp].dim(0) / 2;
  const int32_t g = p.weight_group_size;
  const tsr_rms_norm_params norm{sizeof(tsr_rms_norm_params), p.rms_norm_eps};
  const tsr_rope_params rope{sizeof(tsr_rope_params), p.rope_style};
  tsr_paged_attention_params pa{};
  pa.struct_size = sizeof(pa);
  pa.scale = p.attn_scale;
  pa.page_size = p.page_size;
  pa.sliding_window = p.sliding_window;
  pa.logit_softcap = p.logit_softcap;

  plan->steps.clear();
  plan->steps.reserve(18);
  plan->scratch_bytes = 0;
  const bool w8a8 = fused.version == 3;
  if (w8a8 && in[kDlWQkv].dtype != TSR_DTYPE_I8) {
    return InvalidArgument("decoder_layer v3 (w8a8) takes int8 weights only, not ",
                           DTypeName(in[kDlWQkv].dtype));
  }
  if (w4a8 && in[kDlWQkv].dtype != TSR_DTYPE_U8) {
    return InvalidArgument("decoder_layer v4 (w4a8) takes packed 4-bit weights (U8) only, not ",
                           DTypeName(in[kDlWQkv].dtype));
  }
  if (!w4a8 && in[kDlWQkv].dtype == TSR_DTYPE_U8) {
    return InvalidArgument("U8 (packed 4-bit) weights need decoder_layer v4, not v",
                           fused.version);
  }
  const bool quantized = in[kDlWQkv].dtype == TSR_DTYPE_I8 || in[kDlWQkv].dtype == TSR_DTYPE_U8;
  if (quantized && (w8a8 || w4a8 ? g < 0 : g < 1)) {
    return InvalidArgument("params.weight_group_size = ", g, " must be >= 1",
                           w8a8 || w4a8 ? " (or 0 in v3/v4: per channel)" : "",
                           " for quantised weights");
  }
  plan->comm = fused.version >= 2 ? p.comm : nullptr;
  Planner pl(plan, w4a8 ? 4 : (w8a8 ? 3 : 2));
  const TensorView normed = pl.Scratch(x, {t, h});
  const TensorView qkv = pl.Scratch(x, {t, nqkv});
  const TensorView qkv_kv = kv == x ? qkv : pl.Scratch(kv, {t, nqkv});
  const TensorView attn_kv = pl.Scratch(kv, {t, hq, d});
  const TensorView attn = kv == x ? Flat(attn_kv) : pl.Scratch(x, {t, hq * d});
  const TensorView hidden = pl.Scratch(x, {t, h});
  const TensorView gate_up = pl.Scratch(x, {t, 2 * inter});
  const TensorView act = pl.Scratch(x, {t, inter});
  const TensorView q = Heads(qkv, 0, hq, d), k = Heads(qkv, hq * d, hk, d);

  TSR_KIT_RETURN_IF_ERROR(pl.Step("input_layernorm", TSR_OP_RMS_NORM, 1,
                                  {residual, in[kDlInputNorm]}, {normed}, &norm, sizeof(norm),
                                  CheckRmsNorm));
  TSR_KIT_RETURN_IF_ERROR(pl.Linear("qkv projection", normed, in[kDlWQkv], in[kDlWQkvScale],
                                    in[kDlQkvBias], qkv, g));
  if (Present(in[kDlQNorm])) {
    TSR_KIT_RETURN_IF_ERROR(pl.Step("q_norm", TSR_OP_RMS_NORM, 1, {q, in[kDlQNorm]}, {q}, &norm,
                                    sizeof(norm), CheckRmsNorm));
    TSR_KIT_RETURN_IF_ERROR(pl.Step("k_norm", TSR_OP_RMS_NORM, 1, {k, in[kDlKNorm]}, {k}, &norm,
                                    sizeof(norm), CheckRmsNorm));
  }
  TSR_KIT_RETURN_IF_ERROR(pl.Step("rope", TSR_OP_ROPE, 1,
                                  {in[kDlPositions], in[kDlInvFreq], q, k}, {q, k}, &rope,
                                  sizeof(rope), CheckRope));
  if (kv != x) {
    TSR_KIT_RETURN_IF_ERROR(pl.Step("qkv to the KV dtype", TSR_OP_CAST, 1, {qkv}, {qkv_kv},
                                    nullptr, 0, CheckCast));
  }
  TSR_KIT_RETURN_IF_ERROR(pl.Step(
      "kv_store", TSR_OP_KV_STORE, 1,
      {Heads(qkv_kv, hq * d, hk, d), Heads(qkv_kv, (hq + hk) * d, hk, d), in[kDlSlots]},
      {k_cache, v_cache}, nullptr, 0, CheckKvStore));
  TSR_KIT_RETURN_IF_ERROR(pl.Step("paged_attention", TSR_OP_PAGED_ATTENTION, 1,
                                  {Heads(qkv_kv, 0, hq, d), k_cache, v_cache, in[kDlBlockTable],
                                   in[kDlSeqLens], in[kDlQueryStart]},
                                  {attn_kv}, &pa, sizeof(pa), CheckPagedAttention));
  if (kv != x) {
    TSR_KIT_RETURN_IF_ERROR(pl.Step("attention from the KV dtype", TSR_OP_CAST, 1,
                                    {Flat(attn_kv)}, {attn}, nullptr, 0, CheckCast));
  }
  TSR_KIT_RETURN_IF_ERROR(
      pl.Linear("o projection", attn, in[kDlWO], in[kDlWOScale], in[kDlOBias], hidden, g));
  if (plan->comm != nullptr) pl.AllReduce("o projection all_reduce", hidden);
  // residual_out holds the post-attention residual, then the layer's output.
  TSR_KIT_RETURN_IF_ERROR(pl.Step("post_attention_layernorm", TSR_OP_ADD_RMS_NORM, 1,
                                  {hidden, residual, in[kDlPostNorm]}, {normed, residual_out},
                                  &norm, sizeof(norm), CheckAddRmsNorm));
  const TensorView none;
  TSR_KIT_RETURN_IF_ERROR(pl.Linear("gate_up projection", normed, in[kDlWGateUp],
                                    in[kDlWGateUpScale], none, gate_up, g));
  TSR_KIT_RETURN_IF_ERROR(pl.Step("silu_and_mul", TSR_OP_SILU_AND_MUL, 1, {gate_up}, {act},
                                  nullptr, 0, CheckSiluAndMul));
  TSR_KIT_RETURN_IF_ERROR(
      pl.Linear("down projection", act, in[kDlWDown], in[kDlWDownScale], none, hidden, g));
  if (plan->comm != nullptr) pl.AllReduce("down projection all_reduce", hidden);
  return pl.Step("residual add", TSR_OP_ADD, 1, {hidden, residual_out}, {residual_out}, nullptr,
                 0, CheckAdd);
}

Status CheckDecoderLayer(const OpCall& call) {
  thread_local DecoderLayerPlan plan;  // keeps its steps' storage
  return PlanDecoderLayer(call, &plan);
}

}  // namespace tessera::plugin_kit
