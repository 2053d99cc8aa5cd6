// decoder_layer v1 (tessera_plugin.h, TSR_OP_DECODER_LAYER, ABI 1.2): the
// fused op, computed literally as its spec's sequence of v1 reference ops,
// each intermediate held in a host tensor of its dtype (so rounded as the
// unfused sequence rounds it).
#include <cstddef>
#include <vector>

#include "reference/ops_internal.h"
#include "reference/reference_ops.h"

namespace tessera::reference::internal {
namespace {

constexpr size_t kDecoderLayerParamsSize =
    offsetof(tsr_decoder_layer_params, logit_softcap) + sizeof(float);

// Argument positions (tessera_plugin.h).
enum : int {
  kResidual, kPositions, kSlots, kBlockTable, kSeqLens, kQueryStart, kInvFreq,
  kInputNorm, kWQkv, kWQkvScale, kQkvBias, kQNorm, kKNorm, kWO, kWOScale,
  kOBias, kPostNorm, kWGateUp, kWGateUpScale, kWDown, kWDownScale
};

bool Present(const HostTensor& t) { return t.dtype != TSR_DTYPE_INVALID; }

// A [rows, cols] column block of a contiguous [rows, width] tensor, seen as
// [rows, heads, d].
HostTensor HeadView(const HostTensor& whole, int64_t col0, int64_t heads,
                    int64_t d) {
  HostTensor v;
  v.dtype = whole.dtype;
  v.data = static_cast<char*>(whole.data) + col0 * DTypeSize(whole.dtype);
  v.shape = {whole.shape[0], heads, d};
  v.strides = {whole.strides[0], d, 1};
  return v;
}

Status Run(tsr_op_id op, uint32_t version, std::vector<HostTensor> in,
           std::vector<HostTensor> out, const void* params) {
  return RunReferenceOp(op, version, in, out, params);
}

// linear v1 (W float) or, for quantised W (I8, or U8 in decoder_layer v4),
// `quantized_version` (v2, v3 or v4): y = x w^T (+ bias).
Status RunLinear(const HostTensor& x, const HostTensor& w,
                 const HostTensor& scale, const HostTensor& bias,
                 const HostTensor& y, int32_t group_size,
                 uint32_t quantized_version) {
  const bool quantized = w.dtype == TSR_DTYPE_I8 || w.dtype == TSR_DTYPE_U8;
  std::vector<HostTensor> in = {x, w};
  if (quantized) in.push_back(scale);
  if (Present(bias)) in.push_back(bias);
  if (!quantized) return Run(TSR_OP_LINEAR, 1, in, {y}, nullptr);
  // group_size 0 (decoder_layer v3/v4, per channel): G is this projection's K.
  const int32_t g = group_size > 0 ? group_size : static_cast<int32_t>(x.shape[1]);
  const tsr_linear_w8_params p{sizeof(tsr_linear_w8_params), g};
  return Run(TSR_OP_LINEAR, quantized_version, in, {y}, &p);
}

// decoder_layer v1/v2 (`version` 1, 2), v3 (W must be I8) and v4 (W must
// be U8: packed 4-bit).
Status DecoderLayerImpl(const OpCall& call, uint32_t version) {
  const bool w8a8 = version == kDecoderLayerW8A8Version;
  const bool w4a8 = version == kDecoderLayerW4A8Version;
  const uint32_t linear_version =
      w4a8 ? kLinearW4A8Version : (w8a8 ? kLinearW8A8Version : kLinearW8Version);
  const auto& in = call.in;
  const HostTensor& residual = in[kResidual];
  const HostTensor& residual_out = call.out[0];
  const HostTensor& k_cache = call.out[1];
  const HostTensor& v_cache = call.out[2];
  TSR_ASSIGN_OR_RETURN(auto p, ReadParams<tsr_decoder_layer_params>(
                                   call, kDecoderLayerParamsSize));
  const DType x = residual.dtype, w = in[kWQkv].dtype, kv = k_cache.dtype;
  const bool quantized = w4a8 ? w == TSR_DTYPE_U8 : w == TSR_DTYPE_I8;
  if (w8a8 && !quantized) {
    return InvalidArgumentError(fmt::format(
        "{} v3 (w8a8) takes int8 weights only, not {}", call.op_name,
        DTypeName(w)));
  }
  if (w4a8 && !quantized) {
    return InvalidArgumentError(fmt::format(
        "{} v4 (w4a8) takes packed 4-bit weights (U8) only, not {}",
        call.op_name, DTypeName(w)));
  }
  TSR_RETURN_IF_ERROR(
      ExpectRank(call, residual, "residual", 2, "[T, H]"));
  const int64_t t = residual.shape[0], h = residual.shape[1];
  const int64_t hq = p.num_q_heads, hk = p.num_kv_heads, d = p.head_dim;
  if (hq < 1 || hk < 1 || d < 1 || hq % hk != 0) {
    return InvalidArgumentError(fmt::format(
        "{}: params give Hq {}, Hk {}, D {}; they must be >= 1 with Hq % Hk "
        "== 0",
        call.op_name, hq, hk, d));
  }
  // v3 and v4 also take 0: per channel (each projection's G is its K).
  const bool per_channel = (w8a8 || w4a8) && p.weight_group_size == 0;
  if (quantized && p.weight_group_size < 1 && !per_channel) {
    return InvalidArgumentError(fmt::format(
        "{}: quantised weights need params.weight_group_size >= 1{}, not {}",
        call.op_name, w8a8 || w4a8 ? " (or 0 in v3/v4: per channel)" : "",
        p.weight_group_size));
  }
  const int64_t nqkv = (hq + 2 * hk) * d;
  TSR_RETURN_IF_ERROR(ExpectRank(call, in[kWGateUp], "w_gate_up", 2, "[2 I, H]"));
  const int64_t inter = in[kWGateUp].shape[0] / 2;
  // Each float argument's dtype (the signature's class) and shape.
  struct Want {
    int arg;
    const char* name;
    DType dtype;
    std::vector<int64_t> shape;
    bool present;  // must be present (true) / absent (false)
  };
  const bool qk_norm = Present(in[kQNorm]);
  // A weight's columns for K inputs: K, or K / 2 bytes packed 4-bit (v4,
  // whose scales are F16: Q4_0's).
  auto cols = [&](int64_t k) { return w4a8 ? k / 2 : k; };
  const DType sdt = w4a8 ? TSR_DTYPE_F16 : TSR_DTYPE_F32;
  auto scale_shape = [&](int64_t n, int64_t k) {
    if (per_channel) return std::vector<int64_t>{n, 1};
    return std::vector<int64_t>{n, p.weight_group_size > 0 ? k / p.weight_group_size : 0};
  };
  const std::vector<Want> wants = {
      {kInputNorm, "input_norm", x, {h}, true},
      {kWQkv, "w_qkv", w, {nqkv, cols(h)}, true},
      {kWQkvScale, "w_qkv_scale", sdt, scale_shape(nqkv, h), quantized},
      {kQNorm, "q_norm", x, {d}, qk_norm},
      {kKNorm, "k_norm", x, {d}, qk_norm},
      {kWO, "w_o", w, {h, cols(hq * d)}, true},
      {kWOScale, "w_o_scale", sdt, scale_shape(h, hq * d), quantized},
      {kPostNorm, "post_norm", x, {h}, true},
      {kWGateUp, "w_gate_up", w, {2 * inter, cols(h)}, true},
      {kWGateUpScale, "w_gate_up_scale", sdt, scale_shape(2 * inter, h), quantized},
      {kWDown, "w_down", w, {h, cols(inter)}, true},
      {kWDownScale, "w_down_scale", sdt, scale_shape(h, inter), quantized},
  };
  for (const Want& want : wants) {
    const HostTensor& a = in[want.arg];
    if (Present(a) != want.present) {
      return InvalidArgumentError(fmt::format(
          "{}: {} is {} but must be {} here (scales come with int8 weights; "
          "q_norm and k_norm come together)",
          call.op_name, want.name, Present(a) ? "present" : "absent",
          want.present ? "present" : "absent"));
    }
    if (!want.present) continue;
    if (a.dtype != want.dtype) {
      return InvalidArgumentError(fmt::format(
          "{}: {} is {}, expected {}", call.op_name, want.name,
          DTypeName(a.dtype), DTypeName(want.dtype)));
    }
    TSR_RETURN_IF_ERROR(ExpectShape(call, a, want.name, want.shape,
                                    "from residual, the params and w_gate_up"));
  }
  for (int arg : {kQkvBias, kOBias}) {
    const HostTensor& b = in[arg];
    if (!Present(b)) continue;
    const char* name = arg == kQkvBias ? "qkv_bias" : "o_bias";
    if (b.dtype != x) {
      return InvalidArgumentError(fmt::format("{}: {} is {}, expected {}",
                                              call.op_name, name,
                                              DTypeName(b.dtype), DTypeName(x)));
    }
    TSR_RETURN_IF_ERROR(ExpectShape(
        call, b, name, {arg == kQkvBias ? nqkv : h}, "the projection's N"));
  }
  if (residual_out.dtype != x || v_cache.dtype != kv) {
    return InvalidArgumentError(fmt::format(
        "{}: residual_out must be X ({}) and v_cache KV ({})", call.op_name,
        DTypeName(x), DTypeName(kv)));
  }
  TSR_RETURN_IF_ERROR(ExpectShape(call, residual_out, "residual_out", {t, h},
                                  "the shape of residual"));
  if (!call.execute) return OkStatus();

  const tsr_rms_norm_params norm{sizeof(tsr_rms_norm_params), p.rms_norm_eps};
  const int32_t g = p.weight_group_size;
  OwnedTensor n(x, {t, h}), qkv(x, {t, nqkv});
  TSR_RETURN_IF_ERROR(
      Run(TSR_OP_RMS_NORM, 1, {residual, in[kInputNorm]}, {n.view()}, &norm));
  TSR_RETURN_IF_ERROR(RunLinear(n.view(), in[kWQkv], in[kWQkvScale],
                                in[kQkvBias], qkv.view(), g, linear_version));
  const HostTensor q = HeadView(qkv.view(), 0, hq, d);
  const HostTensor k = HeadView(qkv.view(), hq * d, hk, d);
  const HostTensor v = HeadView(qkv.view(), (hq + hk) * d, hk, d);
  if (qk_norm) {
    TSR_RETURN_IF_ERROR(Run(TSR_OP_RMS_NORM, 1, {q, in[kQNorm]}, {q}, &norm));
    TSR_RETURN_IF_ERROR(Run(TSR_OP_RMS_NORM, 1, {k, in[kKNorm]}, {k}, &norm));
  }
  const tsr_rope_params rope{sizeof(tsr_rope_params), p.rope_style};
  TSR_RETURN_IF_ERROR(Run(TSR_OP_ROPE, 1,
                          {in[kPositions], in[kInvFreq], q, k}, {q, k}, &rope));
  // Attention in the cache dtype.
  OwnedTensor qkv_cast = kv == x ? OwnedTensor() : OwnedTensor(kv, {t, nqkv});
  if (kv != x) {
    TSR_RETURN_IF_ERROR(
        Run(TSR_OP_CAST, 1, {qkv.view()}, {qkv_cast.view()}, nullptr));
  }
  const HostTensor& qkv_kv = kv == x ? qkv.view() : qkv_cast.view();
  TSR_RETURN_IF_ERROR(Run(TSR_OP_KV_STORE, 1,
                          {HeadView(qkv_kv, hq * d, hk, d),
                           HeadView(qkv_kv, (hq + hk) * d, hk, d), in[kSlots]},
                          {k_cache, v_cache}, nullptr));
  tsr_paged_attention_params pa{};
  pa.struct_size = sizeof(pa);
  pa.scale = p.attn_scale;
  pa.page_size = p.page_size;
  pa.sliding_window = p.sliding_window;
  pa.logit_softcap = p.logit_softcap;
  OwnedTensor attn_kv(kv, {t, hq, d});
  TSR_RETURN_IF_ERROR(Run(TSR_OP_PAGED_ATTENTION, 1,
                          {HeadView(qkv_kv, 0, hq, d), k_cache, v_cache,
                           in[kBlockTable], in[kSeqLens], in[kQueryStart]},
                          {attn_kv.view()}, &pa));
  HostTensor attn_flat = attn_kv.view();  // [T, Hq D]
  attn_flat.shape = {t, hq * d};
  attn_flat.strides = {hq * d, 1};
  OwnedTensor attn_cast = kv == x ? OwnedTensor() : OwnedTensor(x, {t, hq * d});
  if (kv != x) {
    TSR_RETURN_IF_ERROR(
        Run(TSR_OP_CAST, 1, {attn_flat}, {attn_cast.view()}, nullptr));
  }
  const HostTensor& attn = kv == x ? attn_flat : attn_cast.view();
  OwnedTensor hidden(x, {t, h}), n2(x, {t, h}), r(x, {t, h});
  TSR_RETURN_IF_ERROR(RunLinear(attn, in[kWO], in[kWOScale], in[kOBias],
                                hidden.view(), g, linear_version));
  TSR_RETURN_IF_ERROR(Run(TSR_OP_ADD_RMS_NORM, 1,
                          {hidden.view(), residual, in[kPostNorm]},
                          {n2.view(), r.view()}, &norm));
  OwnedTensor gate_up(x, {t, 2 * inter}), act(x, {t, inter}), down(x, {t, h});
  const HostTensor none;
  TSR_RETURN_IF_ERROR(RunLinear(n2.view(), in[kWGateUp], in[kWGateUpScale],
                                none, gate_up.view(), g, linear_version));
  TSR_RETURN_IF_ERROR(
      Run(TSR_OP_SILU_AND_MUL, 1, {gate_up.view()}, {act.view()}, nullptr));
  TSR_RETURN_IF_ERROR(RunLinear(act.view(), in[kWDown], in[kWDownScale], none,
                                down.view(), g, linear_version));
  return Run(TSR_OP_ADD, 1, {down.view(), r.view()}, {residual_out}, nullptr);
}

}  // namespace

Status DecoderLayer(const OpCall& call) { return DecoderLayerImpl(call, kOpVersion); }
Status DecoderLayerW8A8(const OpCall& call) {
  return DecoderLayerImpl(call, kDecoderLayerW8A8Version);
}
Status DecoderLayerW4A8(const OpCall& call) {
  return DecoderLayerImpl(call, kDecoderLayerW4A8Version);
}

}  // namespace tessera::reference::internal
