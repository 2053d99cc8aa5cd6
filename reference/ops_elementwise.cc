// embedding, silu_and_mul, add and cast (tessera_plugin.h).
#include <cmath>
#include <vector>

#include "reference/ops_internal.h"

namespace tessera::reference::internal {

// in ids I32 [T], table X [V, H]; out y X [T, H]. y[t] = table[ids[t]].
Status Embedding(const OpCall& call) {
  const HostTensor& ids = call.in[0];
  const HostTensor& table = call.in[1];
  const HostTensor& y = call.out[0];
  TSR_RETURN_IF_ERROR(ExpectRank(call, ids, "ids", 1, "[T]"));
  TSR_RETURN_IF_ERROR(ExpectRank(call, table, "table", 2, "[V, H]"));
  const int64_t tokens = ids.shape[0];
  const int64_t vocab = table.shape[0], hidden = table.shape[1];
  TSR_RETURN_IF_ERROR(ExpectShape(call, y, "y", {tokens, hidden},
                                  "[T, H]: T from ids, H from table"));
  if (!call.execute) return OkStatus();

  for (int64_t t = 0; t < tokens; ++t) {
    int64_t id = ids.LoadInt(t * ids.strides[0]);
    if (id < 0 || id >= vocab) {
      return InvalidArgumentError(fmt::format(
          "embedding: ids[{}] = {} is outside [0, {}) (the table's rows)", t,
          id, vocab));
    }
  }
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t id = ids.LoadInt(t * ids.strides[0]);
    for (int64_t h = 0; h < hidden; ++h) {
      y.Store(t * y.strides[0] + h * y.strides[1],
              table.Load(id * table.strides[0] + h * table.strides[1]));
    }
  }
  return OkStatus();
}

// embedding v2: in ids I32 [T], table X [S, H] (vocabulary rows
// [row_begin, row_begin + S)); out y X [T, H]. Rows outside the shard are 0.
Status EmbeddingShard(const OpCall& call) {
  const HostTensor& ids = call.in[0];
  const HostTensor& table = call.in[1];
  const HostTensor& y = call.out[0];
  TSR_RETURN_IF_ERROR(ExpectRank(call, ids, "ids", 1, "[T]"));
  TSR_RETURN_IF_ERROR(ExpectRank(call, table, "table", 2, "[S, H]"));
  const int64_t tokens = ids.shape[0];
  const int64_t rows = table.shape[0], hidden = table.shape[1];
  TSR_RETURN_IF_ERROR(ExpectShape(call, y, "y", {tokens, hidden},
                                  "[T, H]: T from ids, H from table"));
  TSR_ASSIGN_OR_RETURN(auto p, ReadParams<tsr_embedding_shard_params>(
                                   call, sizeof(tsr_embedding_shard_params)));
  if (p.row_begin < 0) {
    return InvalidArgumentError(fmt::format(
        "embedding v2: params.row_begin {} must be >= 0", p.row_begin));
  }
  if (!call.execute) return OkStatus();
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t local = ids.LoadInt(t * ids.strides[0]) - p.row_begin;
    const bool inside = local >= 0 && local < rows;
    for (int64_t h = 0; h < hidden; ++h) {
      y.Store(t * y.strides[0] + h * y.strides[1],
              inside ? table.Load(local * table.strides[0] + h * table.strides[1])
                     : 0.0);
    }
  }
  return OkStatus();
}

// in x X [.., 2I]; out y X [.., I]. y = silu(x[.., :I]) * x[.., I:].
Status SiluAndMul(const OpCall& call) {
  const HostTensor& x = call.in[0];
  const HostTensor& y = call.out[0];
  if (x.ndim() < 1 || x.shape.back() % 2 != 0) {
    return InvalidArgumentError(fmt::format(
        "silu_and_mul: x has shape {}; it needs a last dim of even size 2I",
        ShapeString(x.shape)));
  }
  std::vector<int64_t> want = x.shape;
  const int64_t inter = x.shape.back() / 2;
  want.back() = inter;
  TSR_RETURN_IF_ERROR(ExpectShape(call, y, "y", want,
                                  "the shape of x with the last dim halved"));
  if (!call.execute) return OkStatus();

  std::vector<int64_t> x_rows = RowOffsets(x), y_rows = RowOffsets(y);
  const int64_t sx = x.strides.back(), sy = y.strides.back();
  for (size_t r = 0; r < x_rows.size(); ++r) {
    for (int64_t i = 0; i < inter; ++i) {
      double a = x.Load(x_rows[r] + i * sx);
      double b = x.Load(x_rows[r] + (i + inter) * sx);
      y.Store(y_rows[r] + i * sy, a / (1.0 + std::exp(-a)) * b);
    }
  }
  return OkStatus();
}

// in a, b X [shape]; out y X [shape]. y may alias a or b exactly.
Status Add(const OpCall& call) {
  const HostTensor& a = call.in[0];
  const HostTensor& b = call.in[1];
  const HostTensor& y = call.out[0];
  TSR_RETURN_IF_ERROR(ExpectShape(call, b, "b", a.shape, "the shape of a"));
  TSR_RETURN_IF_ERROR(ExpectShape(call, y, "y", a.shape, "the shape of a"));
  if (!call.execute) return OkStatus();

  std::vector<int64_t> ao = ElementOffsets(a), bo = ElementOffsets(b),
                       yo = ElementOffsets(y);
  for (size_t i = 0; i < ao.size(); ++i) {
    double sum = a.Load(ao[i]) + b.Load(bo[i]);
    y.Store(yo[i], sum);
  }
  return OkStatus();
}

// in x X [shape]; out y Y [shape]. Round to nearest even.
Status Cast(const OpCall& call) {
  const HostTensor& x = call.in[0];
  const HostTensor& y = call.out[0];
  TSR_RETURN_IF_ERROR(ExpectShape(call, y, "y", x.shape, "the shape of x"));
  if (!call.execute) return OkStatus();

  std::vector<int64_t> xo = ElementOffsets(x), yo = ElementOffsets(y);
  for (size_t i = 0; i < xo.size(); ++i) {
    // Every F32/F16/BF16 value is exactly a float, so double -> float is
    // exact here and StoreFromDouble's float -> Y rounding is the only one.
    y.Store(yo[i], x.Load(xo[i]));
  }
  return OkStatus();
}

}  // namespace tessera::reference::internal
