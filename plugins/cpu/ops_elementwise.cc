// Row-wise and elementwise ops:
//   embedding     ids I32 (T), table (V, H) -> y (T, H)
//   silu_and_mul  x (.., 2I) -> y (.., I)
//   add           a, b (shape) -> y (shape); y may alias a or b exactly
//   cast          x X (shape) -> y Y (shape), X, Y in {f32, bf16, f16}
#include <cmath>
#include <cstring>

#include "ops.h"
#include "ops_common.h"

namespace tessera::cpu {
namespace {

// Calls fn(row_x, row_y..) over matching rows of same-shaped tensors; the
// contiguous case becomes one flat row split into chunks.
template <typename Fn>
void ForEachRowPair(ExecContext& ctx, const TensorView& a, const TensorView& b, Fn&& fn) {
  // fn(a_offset, a_stride, b_offset, b_stride, count)
  if (a.IsContiguous() && b.IsContiguous()) {
    ctx.pool->ParallelFor(a.numel(), 32768, [&](int64_t begin, int64_t end) {
      fn(begin, 1, begin, 1, end - begin);
    });
    return;
  }
  const int64_t cols = a.cols();
  ctx.pool->ParallelFor(a.rows(), RowGrain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      fn(a.RowOffset(r), a.col_stride(), b.RowOffset(r), b.col_stride(), cols);
    }
  });
}

template <typename T>
void AddRows(ExecContext& ctx, const TensorView& a, const TensorView& b, const TensorView& y) {
  const int64_t cols = a.cols();
  auto row = [&](const T* pa, int64_t sa, const T* pb, int64_t sb, T* py, int64_t sy,
                 int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      py[i * sy] = FromF32<T>(ToF32(pa[i * sa]) + ToF32(pb[i * sb]));
    }
  };
  if (a.IsContiguous() && b.IsContiguous() && y.IsContiguous()) {
    ctx.pool->ParallelFor(a.numel(), 32768, [&](int64_t begin, int64_t end) {
      row(a.as<T>() + begin, 1, b.as<T>() + begin, 1, y.as<T>() + begin, 1, end - begin);
    });
    return;
  }
  ctx.pool->ParallelFor(a.rows(), RowGrain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      row(a.as<T>() + a.RowOffset(r), a.col_stride(), b.as<T>() + b.RowOffset(r),
          b.col_stride(), y.as<T>() + y.RowOffset(r), y.col_stride(), cols);
    }
  });
}

template <typename X, typename Y>
void CastRows(ExecContext& ctx, const TensorView& x, const TensorView& y) {
  ForEachRowPair(ctx, x, y, [&](int64_t xo, int64_t sx, int64_t yo, int64_t sy, int64_t n) {
    const X* px = x.as<X>() + xo;
    Y* py = y.as<Y>() + yo;
    if constexpr (std::is_same_v<X, Y>) {
      if (sx == 1 && sy == 1) {
        std::memmove(py, px, static_cast<size_t>(n) * sizeof(X));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) py[i * sy] = FromF32<Y>(ToF32(px[i * sx]));
  });
}

// y[t] = table[row] (both [.., H], any strides; same dtype).
void CopyTableRow(const TensorView& table, int64_t row, const TensorView& y, int64_t t) {
  const size_t esize = DTypeSize(table.dtype);
  const int64_t h = table.dim(1);
  const char* src = table.data + row * table.stride(0) * esize;
  char* dst = y.data + t * y.stride(0) * esize;
  if (table.stride(1) == 1 && y.stride(1) == 1) {
    std::memcpy(dst, src, static_cast<size_t>(h) * esize);
    return;
  }
  for (int64_t i = 0; i < h; ++i) {
    std::memcpy(dst + i * y.stride(1) * esize, src + i * table.stride(1) * esize, esize);
  }
}

}  // namespace

Status RunEmbedding(const OpCall& call, ExecContext& ctx) {
  const TensorView &ids = call.in[0], &table = call.in[1], &y = call.out[0];
  const int64_t t_count = ids.dim(0), vocab = table.dim(0), h = table.dim(1);
  const int32_t* id = ids.as<int32_t>();
  for (int64_t t = 0; t < t_count; ++t) {
    int64_t v = id[t * ids.stride(0)];
    if (v < 0 || v >= vocab) {
      return InvalidArgument("ids[", t, "] = ", v, " is outside the table's rows [0, ", vocab,
                             "); token ids must be below the vocabulary size");
    }
  }
  ctx.pool->ParallelFor(t_count, RowGrain(h), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) CopyTableRow(table, id[t * ids.stride(0)], y, t);
  });
  return OkStatus();
}

// embedding v2: rows of a vocabulary shard, zeros for ids outside it.
Status RunEmbeddingShard(const OpCall& call, ExecContext& ctx) {
  const TensorView &ids = call.in[0], &table = call.in[1], &y = call.out[0];
  const int64_t t_count = ids.dim(0), rows = table.dim(0), h = table.dim(1);
  const int64_t begin_row = call.params.embedding_shard.row_begin;
  const int32_t* id = ids.as<int32_t>();
  const size_t esize = DTypeSize(table.dtype);
  ctx.pool->ParallelFor(t_count, RowGrain(h), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t local = static_cast<int64_t>(id[t * ids.stride(0)]) - begin_row;
      if (local >= 0 && local < rows) {
        CopyTableRow(table, local, y, t);
        continue;
      }
      char* dst = y.data + t * y.stride(0) * esize;
      for (int64_t i = 0; i < h; ++i) std::memset(dst + i * y.stride(1) * esize, 0, esize);
    }
  });
  return OkStatus();
}

Status RunSiluAndMul(const OpCall& call, ExecContext& ctx) {
  const TensorView &x = call.in[0], &y = call.out[0];
  const int64_t inter = y.cols();
  return DispatchFloat(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    ctx.pool->ParallelFor(x.rows(), RowGrain(inter), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* xr = x.as<T>() + x.RowOffset(r);
        T* yr = y.as<T>() + y.RowOffset(r);
        const int64_t sx = x.col_stride(), sy = y.col_stride();
        for (int64_t i = 0; i < inter; ++i) {
          float a = ToF32(xr[i * sx]);
          float b = ToF32(xr[(i + inter) * sx]);
          yr[i * sy] = FromF32<T>(a / (1.0f + std::exp(-a)) * b);
        }
      }
    });
    return OkStatus();
  });
}

Status RunAdd(const OpCall& call, ExecContext& ctx) {
  return DispatchFloat(call.in[0].dtype, [&](auto tag) {
    AddRows<decltype(tag)>(ctx, call.in[0], call.in[1], call.out[0]);
    return OkStatus();
  });
}

Status RunCast(const OpCall& call, ExecContext& ctx) {
  return DispatchFloat(call.in[0].dtype, [&](auto xtag) {
    return DispatchFloat(call.out[0].dtype, [&](auto ytag) {
      CastRows<decltype(xtag), decltype(ytag)>(ctx, call.in[0], call.out[0]);
      return OkStatus();
    });
  });
}

}  // namespace tessera::cpu
