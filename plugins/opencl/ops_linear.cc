// linear: x A [T, K] (any strides), w W [N, K] (unit inner stride), optional
// bias A [N] -> y A [T, N] (any strides); y = x w^T (+ bias), f32
// accumulation. Kernels and their work split: kernels/linear.cl.
//
// The host side only picks the launch shape:
//  - TR (rows kept in registers per work-item): 1 for T == 1, 2 for T == 2,
//    else 4;
//  - x is first widened into a dense f32 [T, K] pack in scratch slot 0
//    (linear_pack_x_<A>) when its rows are not unit-stride (K > 1), or when
//    it is bf16 and T >= 3 (prefill: one widening instead of one per block
//    of 4 weight rows); decode reads bf16 x in place. bf16 x bf16 with
//    T >= 3 and 32-bit aligned weight rows uses the pairs kernel and its
//    own pack (even/odd-split chunks; see linear.cl);
//  - one grid row of work-items covers up to kRowsPerItem rows of x: decode
//    (small T) uses one, so each weight row is streamed exactly once;
//    prefill splits T into blocks so that both compute units get work and a
//    block of x stays in cache while the weights stream past it.
#include <algorithm>
#include <string>

#include "cl_ops.h"

namespace tessera::opencl {
namespace {

constexpr int64_t kColsPerItem = 4;   // TSR_LINEAR_COLS in linear.cl
constexpr int64_t kRowsPerItem = 64;  // rows of x per grid row (multiple of 4)
constexpr size_t kGroupItems = 16;    // work-items (column blocks) per group

int RowsInRegisters(int64_t t_count) {
  return t_count == 1 ? 1 : t_count == 2 ? 2 : 4;
}

}  // namespace

Status EnqueueLinear(const OpCall& call, LaunchContext& ctx) {
  const TensorView &x = call.in[0], &w = call.in[1], &y = call.out[0];
  const bool has_bias = call.num_inputs == 3;
  const int64_t t_count = x.dim(0), k = x.dim(1), n = w.dim(0);
  if (t_count == 0 || n == 0) return OkStatus();
  const char* a_suffix = DTypeSuffix(x.dtype);

  // x as (buffer, offset, row stride) with unit-stride rows.
  const int tr = RowsInRegisters(t_count);
  const bool strided = k > 1 && x.stride(1) != 1;
  const bool pack =
      k > 0 && (strided || (x.dtype == TSR_DTYPE_BF16 && tr == 4));
  // bf16 weights on 32-bit aligned rows: the pairs kernel (linear.cl).
  const cl_long w_off = LayoutOf(w).offset;
  const bool pairs = pack && tr == 4 && w.dtype == TSR_DTYPE_BF16 &&
                     w_off % 2 == 0 && (w.stride(0) % 2 == 0 || n == 1);
  cl_mem x_mem = MemOf(x);
  cl_long x_off = LayoutOf(x).offset, ldx = x.stride(0);
  if (pack) {
    TSR_CL_RETURN_IF_ERROR(ctx.Scratch(
        static_cast<size_t>(t_count * k) * sizeof(float), 0, &x_mem));
    KernelArgs pack_args;
    pack_args.Tensor(x).Mem(x_mem);
    const int64_t chunk = pairs ? 32 : 16;  // elements per work-item
    TSR_CL_RETURN_IF_ERROR(
        ctx.Enqueue(pairs ? std::string("linear_pack_x_pairs_bf16")
                          : KernelName("linear_pack_x", x.dtype),
                    pack_args,
                    NdRange::Grid2(static_cast<size_t>((k + chunk - 1) / chunk),
                                   static_cast<size_t>(t_count))));
    x_off = 0;
    ldx = k;
  }

  const int64_t rows_per_item =
      t_count <= kRowsPerItem ? t_count : kRowsPerItem;
  const int64_t row_blocks = (t_count + rows_per_item - 1) / rows_per_item;
  const int64_t col_items = (n + kColsPerItem - 1) / kColsPerItem;
  const bool xf32 = pack && x.dtype != TSR_DTYPE_F32;
  const std::string name =
      pairs ? std::string("linear_bf16_bf16_r4_pairs")
            : StrCat("linear_", a_suffix, "_", DTypeSuffix(w.dtype), "_r", tr,
                     xf32 ? "_xf32" : "");
  // Enough groups to keep every compute unit busy, as large as that allows.
  const size_t units = std::max<size_t>(1, ctx.ComputeUnits());
  size_t local = kGroupItems;
  while (local > 1 &&
         static_cast<size_t>(col_items * row_blocks) < 4 * units * local)
    local /= 2;
  local = std::min(local, std::max<size_t>(1, ctx.MaxWorkGroupSize(name)));

  KernelArgs args;
  args.Mem(x_mem).Long(x_off).Long(ldx);
  args.Mem(MemOf(w)).Long(w_off).Long(w.stride(0));
  args.Tensor(has_bias ? call.in[2] : y).Int(has_bias ? 1 : 0);
  args.Tensor(y).Long(t_count).Long(n).Long(k).Long(rows_per_item);
  return ctx.Enqueue(name, args,
                     NdRange::Grid2(static_cast<size_t>(col_items),
                                    static_cast<size_t>(row_blocks), local, 1));
}

}  // namespace tessera::opencl
