// Host side of the sampling ops (kernels/sampling.cl), one work-group of
// kSamplingGroup items per row of logits:
//   argmax    logits X [B, V] (X in {F32, BF16}) -> ids I32 [B]
//   sample    logits F32 [B, V], temperature F32, top_k I32, top_p F32,
//             min_p F32, uniform F32 [B] -> ids I32 [B]
//   logprobs  logits F32 [B, V], ids I32 [B] -> logprob F32 [B]
//             [, top_ids I32 [B, K], top_logprobs F32 [B, K]]
// The per-row inputs live in device memory, so an id outside [0, V) given
// to logprobs is found by the kernel and fails the stream
// (TSR_FAIL_LOGPROBS_ID), where the cpu plugin fails the launch.
#include <algorithm>
#include <string>

#include "cl_ops.h"

namespace tessera::opencl {
namespace {

constexpr size_t kSamplingGroup = 128;  // TSR_SMP_GROUP in sampling.cl
constexpr size_t kSamplingRun = 16;     // TSR_SMP_RUN in sampling.cl
// sample keeps the candidates of its searches in a scratch list of
// (id, value, probability) int triples, up to this many bytes for a launch.
constexpr size_t kSampleListEntryBytes = 12;
constexpr size_t kSampleListBudget = size_t{64} << 20;

// The kernels reduce over exactly kSamplingGroup items per row.
Status CheckGroupSize(LaunchContext& ctx, const std::string& name) {
  const size_t max_items = ctx.MaxWorkGroupSize(name);
  // 1 also stands for "kernel not found", which Enqueue reports better.
  if (max_items > 1 && max_items < kSamplingGroup) {
    return Unsupported(name, " needs work-groups of ", kSamplingGroup,
                       " items but this device allows only ", max_items,
                       " for it; use another device (or the cpu plugin)");
  }
  return OkStatus();
}

}  // namespace

Status EnqueueArgmax(const OpCall& call, LaunchContext& ctx) {
  const TensorView &logits = call.in[0], &ids = call.out[0];
  const int64_t rows = logits.dim(0);
  if (rows == 0) return OkStatus();
  const std::string name = KernelName("argmax", logits.dtype);
  TSR_CL_RETURN_IF_ERROR(CheckGroupSize(ctx, name));
  KernelArgs args;
  args.Tensor(logits).Tensor(ids);
  return ctx.Enqueue(
      name, args, NdRange::Groups(static_cast<size_t>(rows), kSamplingGroup));
}

Status EnqueueSample(const OpCall& call, LaunchContext& ctx) {
  const TensorView& logits = call.in[0];
  const int64_t rows = logits.dim(0);
  if (rows == 0) return OkStatus();
  const std::string name = KernelName("sample", logits.dtype);
  TSR_CL_RETURN_IF_ERROR(CheckGroupSize(ctx, name));
  // List entries per work-item: its whole share of a row (so each search
  // reads the row once) unless that exceeds the budget; fewer only cost
  // passes over the row.
  const size_t vocab = static_cast<size_t>(logits.dim(1));
  const size_t share = (vocab + kSamplingGroup * kSamplingRun - 1) /
                       (kSamplingGroup * kSamplingRun) * kSamplingRun;
  const size_t per_item_budget =
      kSampleListBudget /
      (static_cast<size_t>(rows) * kSamplingGroup * kSampleListEntryBytes);
  const size_t list_cap =
      std::max<size_t>(std::min(share, per_item_budget), kSamplingRun);
  cl_mem list = nullptr;
  TSR_CL_RETURN_IF_ERROR(
      ctx.Scratch(static_cast<size_t>(rows) * kSamplingGroup * list_cap *
                      kSampleListEntryBytes,
                  0, &list));
  KernelArgs args;
  // logits, temperature, top_k, top_p, min_p, uniform; ids; the list.
  for (size_t i = 0; i < 6; ++i) args.Tensor(call.in[i]);
  args.Tensor(call.out[0]).Mem(list).Int(static_cast<cl_int>(list_cap));
  return ctx.Enqueue(
      name, args, NdRange::Groups(static_cast<size_t>(rows), kSamplingGroup));
}

Status EnqueueLogprobs(const OpCall& call, LaunchContext& ctx) {
  const TensorView &logits = call.in[0], &ids = call.in[1],
                   &logprob = call.out[0];
  const int64_t rows = logits.dim(0);
  if (rows == 0) return OkStatus();
  const std::string name = KernelName("logprobs", logits.dtype);
  TSR_CL_RETURN_IF_ERROR(CheckGroupSize(ctx, name));
  const bool with_top = call.num_outputs == 3;
  const int64_t k = with_top ? call.out[1].dim(1) : 0;
  KernelArgs args;
  args.Tensor(logits).Tensor(ids).Tensor(logprob);
  // Without top outputs (or K == 0) the kernel never touches the top
  // tensors; logprob stands in for them.
  args.Tensor(with_top ? call.out[1] : logprob)
      .Tensor(with_top ? call.out[2] : logprob);
  args.Long(k);
  return ctx.Enqueue(
      name, args, NdRange::Groups(static_cast<size_t>(rows), kSamplingGroup));
}

}  // namespace tessera::opencl
