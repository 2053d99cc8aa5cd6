// ScheduledBatch and StepResult: what one engine step hands from the
// scheduler to the executor and back.
//
//   Scheduler::Schedule()        -> ScheduledBatch (KV already reserved)
//   Executor::Run(batch)         -> StepResult (one sampled id per row)
//   Scheduler::Postprocess(batch, result)
//
// A row is one sequence's part of the step: decode rows (one new token at
// position kv_len) come first, then prefill rows (n prompt tokens from
// kv_len on, a whole prompt or one chunk). Only rows with `sample` get a
// token: decode rows, and the prefill row that completes a fresh prompt.
//
// Thread-safety: plain values; the Sequence pointers belong to the
// scheduler thread and are valid until Postprocess returns.
#ifndef TESSERA_ENGINE_STEP_BATCH_H_
#define TESSERA_ENGINE_STEP_BATCH_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/request.h"

namespace tessera::engine {

struct Sequence;

struct BatchRow {
  Sequence* seq = nullptr;
  int64_t n = 1;        // new tokens: seq->tokens[kv_len, kv_len + n)
  bool sample = true;   // a token is sampled for this row
  bool prefill = false;  // a prompt row (its KV goes to the radix cache)
};

struct ScheduledBatch {
  std::vector<BatchRow> rows;  // decode rows, then prefill rows
  int64_t num_decode = 0;      // rows[0, num_decode) are decode rows

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
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_STEP_BATCH_H_
