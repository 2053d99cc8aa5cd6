// Attention-side ops (kernels: kernels/attention.cl):
//   rope             positions I32 [T], inv_freq F32 [R/2], q X [T, Hq, D],
//                    k X [T, Hk, D] -> q_out, k_out (may alias q, k exactly)
//   kv_store         k, v X [T, Hk, D], slots I32 [T] -> k_cache, v_cache
//                    X [S, Hk, D], rows named by slots written in place
//   paged_attention  q X [T, Hq, D], k_cache/v_cache X [S, Hk, D],
//                    block_table I32 [B, P], seq_lens I32 [B],
//                    query_start I32 [B+1] -> o X [T, Hq, D]
// The I32 inputs live in device memory, so every data-dependent error
// (a slot outside the pool, a bad query range, seq_len or page) is found by
// the kernels and fails the stream (tsr_fail kinds TSR_FAIL_KV_SLOT and
// TSR_FAIL_ATTN_*), as the cpu plugin's synchronous checks would.
// paged_attention is two kernels: paged_attention_validate (one work-item,
// sequences in order, so the first bad sequence is the one reported), then
// one work-item per (query row, head): the register kernel for head dims 64
// and 128 with unit-stride q/K/V rows, else the generic one.
#include <algorithm>
#include <string>

#include "cl_ops.h"

namespace tessera::opencl {
namespace {

// Work-items per paged_attention group: each needs 2 * D floats of local
// memory (its q row in f32 and its output accumulator).
constexpr size_t kAttentionGroupItems = 8;
constexpr size_t kAttentionLocalBytes = 256 * 1024;

}  // namespace

Status EnqueueRope(const OpCall& call, LaunchContext& ctx) {
  const TensorView &pos = call.in[0], &inv = call.in[1], &q = call.in[2],
                   &k = call.in[3];
  const int64_t t_count = q.dim(0), d = q.dim(2), half = inv.dim(0);
  if (t_count == 0 || d == 0) return OkStatus();
  KernelArgs args;
  args.Tensor(pos)
      .Tensor(inv)
      .Tensor(q)
      .Tensor(k)
      .Tensor(call.out[0])
      .Tensor(call.out[1]);
  args.Int(call.params.rope.style == TSR_ROPE_NEOX ? 1 : 0);
  // Work-item (i, t): i < R/2 rotates pair i, the rest copy dims R..D-1.
  return ctx.Enqueue(KernelName("rope", q.dtype), args,
                     NdRange::Grid2(static_cast<size_t>(d - half),
                                    static_cast<size_t>(t_count)));
}

Status EnqueueKvStore(const OpCall& call, LaunchContext& ctx) {
  const TensorView &k = call.in[0], &v = call.in[1], &slots = call.in[2];
  const int64_t t_count = k.dim(0), row = k.dim(1) * k.dim(2);
  if (t_count == 0 || row == 0) return OkStatus();
  KernelArgs args;
  args.Tensor(k)
      .Tensor(v)
      .Tensor(slots)
      .Tensor(call.out[0])
      .Tensor(call.out[1]);
  return ctx.Enqueue(
      KernelName("kv_store", k.dtype), args,
      NdRange::Grid2(static_cast<size_t>(row), static_cast<size_t>(t_count)));
}

Status EnqueuePagedAttention(const OpCall& call, LaunchContext& ctx) {
  const TensorView &q = call.in[0], &kc = call.in[1], &vc = call.in[2];
  const TensorView &table = call.in[3], &lens = call.in[4],
                   &starts = call.in[5];
  const TensorView& o = call.out[0];
  const tsr_paged_attention_params& p = call.params.attention;
  const int64_t t_count = q.dim(0), hq = q.dim(1), d = q.dim(2);

  // Validation runs even when no row is computed: a bad query_start,
  // seq_lens or block_table is an error whatever T is.
  KernelArgs check;
  check.Tensor(table)
      .Tensor(lens)
      .Tensor(starts)
      .Long(t_count)
      .Long(kc.dim(0))
      .Int(p.page_size);
  TSR_CL_RETURN_IF_ERROR(
      ctx.Enqueue("paged_attention_validate", check, NdRange::Linear(1)));
  if (t_count == 0 || hq == 0) return OkStatus();

  const size_t items = static_cast<size_t>(t_count * hq);
  const size_t units = std::max<size_t>(1, ctx.ComputeUnits());
  KernelArgs args;
  args.Tensor(q)
      .Tensor(kc)
      .Tensor(vc)
      .Tensor(table)
      .Tensor(lens)
      .Tensor(starts)
      .Tensor(o);
  args.Int(p.page_size)
      .Int(p.sliding_window)
      .Float(p.scale)
      .Float(p.logit_softcap);

  // Head dims 64 and 128 with unit-stride q/K/V rows: registers only.
  if ((d == 64 || d == 128) && q.stride(2) == 1 && kc.stride(2) == 1 &&
      vc.stride(2) == 1) {
    const std::string name =
        StrCat(KernelName("paged_attention", q.dtype), "_d", d);
    size_t local = kAttentionGroupItems;
    while (local > 1 && items < 2 * units * local) local /= 2;
    local = std::min(local, std::max<size_t>(1, ctx.MaxWorkGroupSize(name)));
    return ctx.Enqueue(name, args,
                       NdRange::Groups((items + local - 1) / local, local));
  }

  const std::string name = KernelName("paged_attention", q.dtype);
  const size_t item_bytes =
      static_cast<size_t>(std::max<int64_t>(d, 1)) * 2 * sizeof(float);
  if (item_bytes > kAttentionLocalBytes) {
    return Unsupported(
        "paged_attention: head dim D = ", d, " needs ", item_bytes,
        " bytes of local memory per query head, more than the ",
        kAttentionLocalBytes, " this plugin uses; use a head dim <= ",
        kAttentionLocalBytes / (2 * sizeof(float)));
  }
  size_t local =
      std::min(kAttentionGroupItems, kAttentionLocalBytes / item_bytes);
  while (local > 1 && items < 2 * units * local) local /= 2;
  local = std::min(local, std::max<size_t>(1, ctx.MaxWorkGroupSize(name)));
  args.Local(local * item_bytes);
  return ctx.Enqueue(name, args,
                     NdRange::Groups((items + local - 1) / local, local));
}

}  // namespace tessera::opencl
