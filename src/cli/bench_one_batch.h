// The one-batch benchmark of `tessera bench --one-batch`: the ModelRunner
// timed alone (no scheduler, no tokenizer, no server), in the manner of
// SGLang's bench_one_batch.
//
// For one batch size B: B prompts of input_len random token ids (a
// std::mt19937_64 seeded with `seed`, uniform over the vocabulary) are
// prefilled in ONE forward pass and the first token of each is sampled
// greedily (the prefill clock); then output_len decode steps run, each one
// forward pass over all B sequences (one new token each) plus a greedy
// sample (one clock per step, from one read-back of sampled ids to the
// next). Serial (overlap false): each step's ids are read back before the
// next step is built. Overlap (as the engine serves by default): step s + 1
// is launched with step s's ids still on the device (Batch::device_tokens)
// and step s's ids are read back after that launch, so the device does not
// wait while the host builds the next step.
//
// Per step: host_ms_mean is the host's time building and launching a step
// (without waiting for the device); where the plugin reports its stream's
// busy time (ABI 1.1 stream_busy_ns), device_busy_ms_mean is the kernels'
// time and device_idle_fraction = 1 - busy / wall over the decode steps.
//
// Bytes read per decode step (the memory-roofline model): every weight byte
// once (ModelWeights::device_bytes) plus, per sequence, its K and V at the
// mean context length of the decode steps,
//   kv_bytes = B * layers * 2 * kv_heads * head_dim * dtype_size * mean_ctx,
//   mean_ctx = input_len + (output_len + 1) / 2.
// Given a read bandwidth (GB/s), the roofline decode rate is
//   read_gbps * 1e9 / bytes_per_step * B   tokens/s.
//
// Time outside kernels: each decode step's wall time minus the busy time it
// added is the time the device waited for the host (building the batch,
// launching ops, sampling glue); its mean is outside_kernels_ms_mean.
//
// The KV pages taken are returned to the pool before RunOneBatch returns,
// also on error. Not thread-safe: drives the runner's stream from the
// calling thread.
#ifndef TESSERA_CLI_BENCH_ONE_BATCH_H_
#define TESSERA_CLI_BENCH_ONE_BATCH_H_

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "engine/tp_ranks.h"
#include "model/model_runner.h"

namespace tessera::cli {

struct OneBatchParams {
  int64_t batch_size = 1;   // B >= 1
  int64_t input_len = 512;  // prompt tokens per sequence, >= 1
  int64_t output_len = 32;  // decode steps, >= 1
  uint64_t seed = 0;        // for the random prompt ids
  bool overlap = true;      // launch step s + 1 before reading step s back
};

struct OneBatchResult {
  OneBatchParams params;
  double prefill_seconds = 0.0;       // B * input_len tokens + first sample
  double prefill_tokens_per_s = 0.0;  // B * input_len / prefill_seconds
  double decode_seconds = 0.0;        // all output_len steps
  double decode_tokens_per_s = 0.0;   // B * output_len / decode_seconds
  double step_ms_mean = 0.0;          // per decode step, milliseconds
  double step_ms_p50 = 0.0;
  double step_ms_p99 = 0.0;
  // Mean per decode step of wall time minus stream busy time; nullopt when
  // the plugin does not report busy time.
  std::optional<double> outside_kernels_ms_mean;
  double host_ms_mean = 0.0;  // building and launching one step
  std::optional<double> device_busy_ms_mean;   // kernels per step
  std::optional<double> device_idle_fraction;  // 1 - busy / wall
  uint64_t weight_bytes = 0;       // read once per step
  uint64_t kv_bytes_per_step = 0;  // all B sequences at mean_ctx
  uint64_t bytes_per_step = 0;     // weight_bytes + kv_bytes_per_step
  double mean_context = 0.0;       // mean_ctx above
  // Set by ApplyRoofline.
  std::optional<double> roofline_tokens_per_s;
  std::optional<double> roofline_fraction;  // decode_tokens_per_s / roofline
};

// KV positions one batch needs: B * (input_len + output_len), in whole
// pages per sequence.
int64_t OneBatchKvPagesNeeded(const OneBatchParams& params, int32_t page_size);

// Runs the benchmark. InvalidArgument for bad sizes or a context longer
// than the model's; ResourceExhausted (naming the pages needed and held)
// when the runner's KV pool is too small; device errors as they come.
StatusOr<OneBatchResult> RunOneBatch(model::ModelRunner& runner,
                                     const OneBatchParams& params,
                                     engine::TpLeader* tp = nullptr);

// Fills roofline_tokens_per_s and roofline_fraction from a read bandwidth.
void ApplyRoofline(OneBatchResult& result, double read_gbps);

nlohmann::ordered_json OneBatchResultToJson(const OneBatchResult& result);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_BENCH_ONE_BATCH_H_
