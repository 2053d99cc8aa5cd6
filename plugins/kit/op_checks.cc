#include "op_checks.h"

#include <cmath>

namespace tessera::plugin_kit {
namespace {

Status CheckEps(const OpCall& call) {
  float eps = call.params.rms_norm.eps;
  if (!std::isfinite(eps) || eps < 0.0f) {
    return InvalidArgument("eps = ", eps, " must be a finite number >= 0 (e.g. 1e-6)");
  }
  return OkStatus();
}

Status CheckRowsOfLogits(const TensorView& logits, const char* name) {
  TSR_KIT_RETURN_IF_ERROR(RequireRank(logits, name, 2));
  if (logits.dim(0) > 0 && logits.dim(1) < 1) {
    return InvalidArgument(name, " has shape ", ShapeString(logits),
                           "; a row needs at least one entry (V >= 1)");
  }
  return OkStatus();
}

Status CheckPerRow(const TensorView& t, const char* name, int64_t b) {
  TSR_KIT_RETURN_IF_ERROR(RequireRank(t, name, 1));
  return RequireDim(t, name, 0, b, "B (logits' dim 0)");
}

}  // namespace

Status CheckRmsNorm(const OpCall& call) {
  const TensorView& x = call.in[0];
  TSR_KIT_RETURN_IF_ERROR(RequireMinRank(x, "x", 1));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(call.in[1], "w", 1));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(call.in[1], "w", 0, x.cols(), "H (x's last dim)"));
  TSR_KIT_RETURN_IF_ERROR(RequireSameShape(x, "x", call.out[0], "y"));
  return CheckEps(call);
}

Status CheckAddRmsNorm(const OpCall& call) {
  const TensorView& x = call.in[0];
  TSR_KIT_RETURN_IF_ERROR(RequireMinRank(x, "x", 1));
  TSR_KIT_RETURN_IF_ERROR(RequireSameShape(x, "x", call.in[1], "residual"));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(call.in[2], "w", 1));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(call.in[2], "w", 0, x.cols(), "H (x's last dim)"));
  TSR_KIT_RETURN_IF_ERROR(RequireSameShape(x, "x", call.out[0], "y"));
  TSR_KIT_RETURN_IF_ERROR(RequireSameShape(x, "x", call.out[1], "residual_out"));
  return CheckEps(call);
}

Status CheckEmbedding(const OpCall& call) {
  const TensorView &ids = call.in[0], &table = call.in[1], &y = call.out[0];
  TSR_KIT_RETURN_IF_ERROR(RequireRank(ids, "ids", 1));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(table, "table", 2));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(y, "y", 2));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(y, "y", 0, ids.dim(0), "T (ids' length)"));
  return RequireDim(y, "y", 1, table.dim(1), "H (table's dim 1)");
}

Status CheckEmbeddingShard(const OpCall& call) {
  TSR_KIT_RETURN_IF_ERROR(CheckEmbedding(call));
  if (call.params.embedding_shard.row_begin < 0) {
    return InvalidArgument("params.row_begin ", call.params.embedding_shard.row_begin,
                           " must be >= 0 (the shard's first vocabulary row)");
  }
  return OkStatus();
}

Status CheckSiluAndMul(const OpCall& call) {
  const TensorView &x = call.in[0], &y = call.out[0];
  TSR_KIT_RETURN_IF_ERROR(RequireMinRank(x, "x", 1));
  if (x.cols() % 2 != 0) {
    return InvalidArgument("x has shape ", ShapeString(x),
                           " but its last dim must be even (2I: gate then up)");
  }
  if (y.ndim != x.ndim) {
    return InvalidArgument("y has shape ", ShapeString(y), " but must have x's rank ", x.ndim);
  }
  for (int i = 0; i + 1 < x.ndim; ++i) {
    TSR_KIT_RETURN_IF_ERROR(RequireDim(y, "y", i, x.dim(i), "x's matching dim"));
  }
  return RequireDim(y, "y", -1, x.cols() / 2, "I (half of x's last dim)");
}

Status CheckAdd(const OpCall& call) {
  TSR_KIT_RETURN_IF_ERROR(RequireSameShape(call.in[0], "a", call.in[1], "b"));
  return RequireSameShape(call.in[0], "a", call.out[0], "y");
}

Status CheckCast(const OpCall& call) {
  return RequireSameShape(call.in[0], "x", call.out[0], "y");
}

namespace {

// x [T, K] and w [N, K] with a unit innermost stride (linear v1 and v2).
// `packed4`: w is linear v4's U8 [N, K / 2] (two 4-bit weights a byte).
Status RequireLinearXW(const TensorView& x, const TensorView& w, bool packed4 = false) {
  TSR_KIT_RETURN_IF_ERROR(RequireRank(x, "x", 2));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(w, "w", 2));
  if (packed4) {
    if (x.dim(1) % 32 != 0) {
      return InvalidArgument("K = ", x.dim(1),
                             " (x's dim 1) must be a multiple of 32 for 4-bit weights");
    }
    TSR_KIT_RETURN_IF_ERROR(RequireDim(w, "w", 1, x.dim(1) / 2, "K / 2 (x's dim 1, packed)"));
  } else {
    TSR_KIT_RETURN_IF_ERROR(RequireDim(w, "w", 1, x.dim(1), "K (x's dim 1)"));
  }
  if (w.dim(1) > 1 && w.stride(1) != 1) {
    return InvalidArgument("w must have a unit innermost stride, but its strides are [",
                           w.stride(0), ", ", w.stride(1), "]");
  }
  return OkStatus();
}

// Optional bias [N] and y [T, N] (linear v1 and v2).
Status RequireLinearBiasY(const TensorView* bias, const TensorView& x, const TensorView& w,
                          const TensorView& y) {
  if (bias != nullptr) {
    TSR_KIT_RETURN_IF_ERROR(RequireRank(*bias, "bias", 1));
    TSR_KIT_RETURN_IF_ERROR(RequireDim(*bias, "bias", 0, w.dim(0), "N (w's dim 0)"));
  }
  TSR_KIT_RETURN_IF_ERROR(RequireRank(y, "y", 2));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(y, "y", 0, x.dim(0), "T (x's dim 0)"));
  return RequireDim(y, "y", 1, w.dim(0), "N (w's dim 0)");
}

}  // namespace

Status CheckLinear(const OpCall& call) {
  const TensorView &x = call.in[0], &w = call.in[1], &y = call.out[0];
  TSR_KIT_RETURN_IF_ERROR(RequireLinearXW(x, w));
  return RequireLinearBiasY(call.num_inputs == 3 ? &call.in[2] : nullptr, x, w, y);
}

// linear v5's x and w: K % 256 == 0, w [N, K / 256 * 208] (Q6_K
// super-blocks without their d).
Status RequireLinearW6(const TensorView& x, const TensorView& w) {
  TSR_KIT_RETURN_IF_ERROR(RequireRank(x, "x", 2));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(w, "w", 2));
  if (x.dim(1) % 256 != 0) {
    return InvalidArgument("K = ", x.dim(1),
                           " (x's dim 1) must be a multiple of 256 for Q6_K weights (linear v5)");
  }
  TSR_KIT_RETURN_IF_ERROR(
      RequireDim(w, "w", 1, x.dim(1) / 256 * 208, "K / 256 * 208 (x's dim 1, Q6_K blocks)"));
  if (w.dim(1) > 1 && w.stride(1) != 1) {
    return InvalidArgument("w must have a unit innermost stride, but its strides are [",
                           w.stride(0), ", ", w.stride(1), "]");
  }
  return OkStatus();
}

Status CheckLinearW8(const OpCall& call) {
  const TensorView &x = call.in[0], &w = call.in[1], &scale = call.in[2], &y = call.out[0];
  const int32_t g = call.params.linear_w8.group_size;
  if (call.version == 5) {  // linear v5: w6a8
    TSR_KIT_RETURN_IF_ERROR(RequireLinearW6(x, w));
    if (g != 32 && g != 64 && g != 128 && g != 256) {
      return InvalidArgument("params.group_size = ", g,
                             " must be 32, 64, 128 or 256 for Q6_K weights (linear v5)");
    }
    TSR_KIT_RETURN_IF_ERROR(RequireRank(scale, "w_scale", 2));
    TSR_KIT_RETURN_IF_ERROR(RequireDim(scale, "w_scale", 0, w.dim(0), "N (w's dim 0)"));
    TSR_KIT_RETURN_IF_ERROR(RequireDim(scale, "w_scale", 1, x.dim(1) / 256, "K / 256"));
    return RequireLinearBiasY(call.num_inputs == 4 ? &call.in[3] : nullptr, x, w, y);
  }
  const bool packed4 = call.version == 4;  // linear v4: w4a8
  TSR_KIT_RETURN_IF_ERROR(RequireLinearXW(x, w, packed4));
  const int64_t k = x.dim(1);
  if (g < 1 || (k > 0 && k % g != 0)) {
    return InvalidArgument("params.group_size = ", g, " must be >= 1 and divide K = ", k,
                           " (use K for one scale per output channel)");
  }
  if (packed4 && g % 32 != 0) {
    return InvalidArgument("params.group_size = ", g,
                           " must be a multiple of 32 for 4-bit weights (linear v4)");
  }
  TSR_KIT_RETURN_IF_ERROR(RequireRank(scale, "w_scale", 2));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(scale, "w_scale", 0, w.dim(0), "N (w's dim 0)"));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(scale, "w_scale", 1, k / g, "K / group_size"));
  return RequireLinearBiasY(call.num_inputs == 4 ? &call.in[3] : nullptr, x, w, y);
}

Status CheckRope(const OpCall& call) {
  const TensorView &pos = call.in[0], &inv = call.in[1], &q = call.in[2], &k = call.in[3];
  TSR_KIT_RETURN_IF_ERROR(RequireRank(pos, "positions", 1));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(inv, "inv_freq", 1));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(q, "q", 3));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(k, "k", 3));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(q, "q", 0, pos.dim(0), "T (positions' length)"));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(k, "k", 0, pos.dim(0), "T (positions' length)"));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(k, "k", 2, q.dim(2), "D (q's head dim)"));
  if (2 * inv.dim(0) > q.dim(2)) {
    return InvalidArgument("inv_freq has ", inv.dim(0), " entries, so the rotary dims R = ",
                           2 * inv.dim(0), " exceed the head dim D = ", q.dim(2));
  }
  TSR_KIT_RETURN_IF_ERROR(RequireSameShape(q, "q", call.out[0], "q_out"));
  TSR_KIT_RETURN_IF_ERROR(RequireSameShape(k, "k", call.out[1], "k_out"));
  tsr_rope_style style = call.params.rope.style;
  if (style != TSR_ROPE_NEOX && style != TSR_ROPE_INTERLEAVED) {
    return InvalidArgument("rope style ", style,
                           " is not TSR_ROPE_NEOX (0) or TSR_ROPE_INTERLEAVED (1)");
  }
  return OkStatus();
}

Status CheckKvStore(const OpCall& call) {
  const TensorView &k = call.in[0], &v = call.in[1], &slots = call.in[2];
  const TensorView &kc = call.out[0], &vc = call.out[1];
  TSR_KIT_RETURN_IF_ERROR(RequireRank(k, "k", 3));
  TSR_KIT_RETURN_IF_ERROR(RequireSameShape(k, "k", v, "v"));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(slots, "slots", 1));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(slots, "slots", 0, k.dim(0), "T (k's dim 0)"));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(kc, "k_cache", 3));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(kc, "k_cache", 1, k.dim(1), "Hk (k's dim 1)"));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(kc, "k_cache", 2, k.dim(2), "D (k's dim 2)"));
  return RequireSameShape(kc, "k_cache", vc, "v_cache");
}

Status CheckPagedAttention(const OpCall& call) {
  const TensorView &q = call.in[0], &kc = call.in[1], &vc = call.in[2];
  const TensorView &table = call.in[3], &lens = call.in[4], &starts = call.in[5];
  TSR_KIT_RETURN_IF_ERROR(RequireRank(q, "q", 3));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(kc, "k_cache", 3));
  TSR_KIT_RETURN_IF_ERROR(RequireSameShape(kc, "k_cache", vc, "v_cache"));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(kc, "k_cache", 2, q.dim(2), "D (q's head dim)"));
  if (kc.dim(1) < 1 || q.dim(1) % kc.dim(1) != 0) {
    return InvalidArgument("q has ", q.dim(1), " heads and k_cache ", kc.dim(1),
                           "; the KV heads must be >= 1 and divide the query heads (GQA)");
  }
  TSR_KIT_RETURN_IF_ERROR(RequireRank(table, "block_table", 2));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(lens, "seq_lens", 1));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(lens, "seq_lens", 0, table.dim(0), "B (block_table's dim 0)"));
  TSR_KIT_RETURN_IF_ERROR(RequireRank(starts, "query_start", 1));
  TSR_KIT_RETURN_IF_ERROR(RequireDim(starts, "query_start", 0, table.dim(0) + 1, "B + 1"));
  TSR_KIT_RETURN_IF_ERROR(RequireSameShape(q, "q", call.out[0], "o"));
  const tsr_paged_attention_params& p = call.params.attention;
  if (p.page_size < 1) {
    return InvalidArgument("page_size = ", p.page_size, " must be >= 1");
  }
  if (p.sliding_window < 0) {
    return InvalidArgument("sliding_window = ", p.sliding_window, " must be >= 0 (0: none)");
  }
  if (!std::isfinite(p.scale)) return InvalidArgument("scale = ", p.scale, " is not finite");
  if (!std::isfinite(p.logit_softcap) || p.logit_softcap < 0.0f) {
    return InvalidArgument("logit_softcap = ", p.logit_softcap, " must be >= 0 (0: none)");
  }
  return OkStatus();
}

Status CheckArgmax(const OpCall& call) {
  TSR_KIT_RETURN_IF_ERROR(CheckRowsOfLogits(call.in[0], "logits"));
  return CheckPerRow(call.out[0], "ids", call.in[0].dim(0));
}

Status CheckSample(const OpCall& call) {
  TSR_KIT_RETURN_IF_ERROR(CheckRowsOfLogits(call.in[0], "logits"));
  const int64_t b = call.in[0].dim(0);
  const char* names[] = {"temperature", "top_k", "top_p", "min_p", "uniform"};
  for (int i = 0; i < 5; ++i) TSR_KIT_RETURN_IF_ERROR(CheckPerRow(call.in[1 + i], names[i], b));
  return CheckPerRow(call.out[0], "ids", b);
}

Status CheckLogprobs(const OpCall& call) {
  const TensorView& logits = call.in[0];
  TSR_KIT_RETURN_IF_ERROR(CheckRowsOfLogits(logits, "logits"));
  const int64_t b = logits.dim(0);
  TSR_KIT_RETURN_IF_ERROR(CheckPerRow(call.in[1], "ids", b));
  TSR_KIT_RETURN_IF_ERROR(CheckPerRow(call.out[0], "logprob", b));
  if (call.num_outputs == 3) {
    const TensorView &top_ids = call.out[1], &top_lp = call.out[2];
    TSR_KIT_RETURN_IF_ERROR(RequireRank(top_ids, "top_ids", 2));
    TSR_KIT_RETURN_IF_ERROR(RequireDim(top_ids, "top_ids", 0, b, "B (logits' dim 0)"));
    TSR_KIT_RETURN_IF_ERROR(RequireSameShape(top_ids, "top_ids", top_lp, "top_logprobs"));
    if (top_ids.dim(1) > logits.dim(1)) {
      return InvalidArgument("top_ids asks for K = ", top_ids.dim(1),
                             " entries but a row has only V = ", logits.dim(1));
    }
  }
  return OkStatus();
}

}  // namespace tessera::plugin_kit
