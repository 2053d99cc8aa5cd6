// ScheduledBatch and StepResult: what one engine step hands from the
// scheduler to the executor and back.
//
//   Scheduler::Schedule()        -> ScheduledBatch (KV already reserved)
//   Executor::Run(batch)         -> StepResult (one sampled id per row)
//   Scheduler::Postprocess(batch, result)
//
// A row is one sequence's part of the step: decode rows (one new token at
// position kv_start) come first, then prefill rows (n prompt tokens from
// kv_start on, a whole prompt or one chunk). Only rows with `sample` get a
// token: decode rows, and the prefill row that completes a fresh prompt.
// Schedule has already advanced each sequence's kv_len past its rows.
//
// Thread-safety: plain values; the Sequence pointers belong to the
// scheduler thread and are valid until Postprocess returns.
#ifndef TESSERA_ENGINE_STEP_BATCH_H_
#define TESSERA_ENGINE_STEP_BATCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/layer_progress.h"
#include "engine/request.h"

namespace tessera::engine {

struct Sequence;

struct BatchRow {
  Sequence* seq = nullptr;
  int64_t n = 1;         // new tokens: positions [kv_start, kv_start + n)
  int64_t kv_start = 0;  // the sequence's KV length before this row
  bool sample = true;    // a token is sampled for this row
  bool prefill = false;  // a prompt row (its KV goes to the radix cache)
  // Overlap: this decode row's input token is the one row `input_from` of
  // the previous batch sampled, still on the device (-1: seq->tokens has
  // it, at kv_start).
  int64_t input_from = -1;
  // Prefill server (PD): the row completes a prompt whose KV streams to a
  // decode server; the executor attaches per-layer readiness to it.
  std::shared_ptr<LayerProgress> kv_progress;
};

struct ScheduledBatch {
  uint64_t id = 0;             // increasing per scheduled batch
  std::vector<BatchRow> rows;  // decode rows, then prefill rows
  int64_t num_decode = 0;      // rows[0, num_decode) are decode rows
  // Empty because scheduling must wait for the batch in flight to be
  // postprocessed (its tokens are needed on the host first).
  bool blocked = false;

  bool empty() const { return rows.empty(); }
  int64_t size() const { return static_cast<int64_t>(rows.size()); }
  int64_t num_tokens() const {
    int64_t t = 0;
    for (const BatchRow& r : rows) t += r.n;
    return t;
  }
};

struct StepResult {
  // One per row; only rows with `sample` are meaningful.
  std::vector<int32_t> ids;
  // One per row; set for sampled rows whose request asked for logprobs.
  std::vector<std::optional<TokenLogprobs>> logprobs;
  // Embedding engines (nothing sampled, ids unused): per row, the final
  // hidden rows its sequence's pooler needs (model::PoolingRows), [k, H]
  // row-major; empty when it needs none from this row.
  std::vector<std::vector<float>> hidden;
  // Per row; for prefill rows of requests with prompt_logprobs: the
  // logprobs of the prompt tokens at positions kv_start + 1 .. kv_start + n
  // that lie inside the prompt.
  std::vector<std::vector<TokenLogprobs>> prompt_logprobs;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_STEP_BATCH_H_
