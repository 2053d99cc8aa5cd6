// argmax, sample and logprobs (tessera_plugin.h).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "reference/ops_internal.h"
#include "reference/sampling.h"

namespace tessera::reference::internal {
namespace {

std::vector<double> LoadRow(const HostTensor& t, int64_t row) {
  std::vector<double> out(t.shape[1]);
  for (int64_t i = 0; i < t.shape[1]; ++i) {
    out[i] = t.Load(row * t.strides[0] + i * t.strides[1]);
  }
  return out;
}

// Checks logits [B, V] with V >= 1; returns B.
StatusOr<int64_t> CheckLogits(const OpCall& call, const HostTensor& logits) {
  TSR_RETURN_IF_ERROR(ExpectRank(call, logits, "logits", 2, "[B, V]"));
  if (logits.shape[1] < 1) {
    return InvalidArgumentError(
        fmt::format("{}: logits has shape {}; the vocabulary V must be >= 1",
                    call.op_name, ShapeString(logits.shape)));
  }
  return logits.shape[0];
}

}  // namespace

// in logits X [B, V]; out ids I32 [B]. Ties go to the lowest index.
Status Argmax(const OpCall& call) {
  const HostTensor& logits = call.in[0];
  const HostTensor& ids = call.out[0];
  TSR_ASSIGN_OR_RETURN(int64_t batch, CheckLogits(call, logits));
  TSR_RETURN_IF_ERROR(ExpectShape(call, ids, "ids", {batch}, "[B]"));
  if (!call.execute) return OkStatus();
  for (int64_t b = 0; b < batch; ++b) {
    ids.StoreInt(b * ids.strides[0], ArgmaxRow(LoadRow(logits, b)));
  }
  return OkStatus();
}

// in logits F32 [B, V], temperature, top_k (I32), top_p, min_p, uniform
// [B]; out ids I32 [B]. See SampleRow for the rules.
Status Sample(const OpCall& call) {
  const HostTensor& logits = call.in[0];
  TSR_ASSIGN_OR_RETURN(int64_t batch, CheckLogits(call, logits));
  static constexpr const char* kNames[] = {"",      "temperature", "top_k",
                                           "top_p", "min_p",       "uniform"};
  for (int i = 1; i <= 5; ++i) {
    TSR_RETURN_IF_ERROR(
        ExpectShape(call, call.in[i], kNames[i], {batch}, "[B]"));
  }
  const HostTensor& ids = call.out[0];
  TSR_RETURN_IF_ERROR(ExpectShape(call, ids, "ids", {batch}, "[B]"));
  if (!call.execute) return OkStatus();
  for (int64_t b = 0; b < batch; ++b) {
    SampleRowParams p;
    p.temperature = call.in[1].Load(b * call.in[1].strides[0]);
    p.top_k = call.in[2].LoadInt(b * call.in[2].strides[0]);
    p.top_p = call.in[3].Load(b * call.in[3].strides[0]);
    p.min_p = call.in[4].Load(b * call.in[4].strides[0]);
    p.uniform = call.in[5].Load(b * call.in[5].strides[0]);
    ids.StoreInt(b * ids.strides[0], SampleRow(LoadRow(logits, b), p));
  }
  return OkStatus();
}

// in logits F32 [B, V], ids I32 [B]; out logprob F32 [B], optionally
// top_ids I32 [B, K] and top_logprobs F32 [B, K] (descending, ties to the
// lower id).
Status Logprobs(const OpCall& call) {
  const HostTensor& logits = call.in[0];
  const HostTensor& ids = call.in[1];
  TSR_ASSIGN_OR_RETURN(int64_t batch, CheckLogits(call, logits));
  const int64_t vocab = logits.shape[1];
  TSR_RETURN_IF_ERROR(ExpectShape(call, ids, "ids", {batch}, "[B]"));
  const HostTensor& logprob = call.out[0];
  TSR_RETURN_IF_ERROR(ExpectShape(call, logprob, "logprob", {batch}, "[B]"));
  const bool with_top = call.out.size() == 3;
  int64_t top = 0;
  if (with_top) {
    const HostTensor& top_ids = call.out[1];
    TSR_RETURN_IF_ERROR(ExpectRank(call, top_ids, "top_ids", 2, "[B, K]"));
    top = top_ids.shape[1];
    TSR_RETURN_IF_ERROR(
        ExpectShape(call, top_ids, "top_ids", {batch, top}, "[B, K]"));
    TSR_RETURN_IF_ERROR(ExpectShape(call, call.out[2], "top_logprobs",
                                    {batch, top}, "[B, K], K from top_ids"));
    if (top > vocab) {
      return InvalidArgumentError(fmt::format(
          "logprobs: K = {} top entries asked for but V = {}", top, vocab));
    }
  }
  if (!call.execute) return OkStatus();

  for (int64_t b = 0; b < batch; ++b) {
    int64_t id = ids.LoadInt(b * ids.strides[0]);
    if (id < 0 || id >= vocab) {
      return InvalidArgumentError(fmt::format(
          "logprobs: ids[{}] = {} is outside [0, {})", b, id, vocab));
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> row = LoadRow(logits, b);
    double max_logit = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (double v : row) sum += std::exp(v - max_logit);
    const double lse = max_logit + std::log(sum);
    int64_t id = ids.LoadInt(b * ids.strides[0]);
    logprob.Store(b * logprob.strides[0], row[id] - lse);
    if (!with_top) continue;
    std::vector<int64_t> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t c) { return row[a] > row[c]; });
    const HostTensor& top_ids = call.out[1];
    const HostTensor& top_lp = call.out[2];
    for (int64_t k = 0; k < top; ++k) {
      top_ids.StoreInt(b * top_ids.strides[0] + k * top_ids.strides[1],
                       order[k]);
      top_lp.Store(b * top_lp.strides[0] + k * top_lp.strides[1],
                   row[order[k]] - lse);
    }
  }
  return OkStatus();
}

}  // namespace tessera::reference::internal
