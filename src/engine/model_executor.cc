#include "engine/model_executor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/sequence.h"

namespace tessera::engine {

TokenLogprobs ComputeLogprobs(std::span<const float> row, int32_t id,
                              int32_t k) {
  float max = -std::numeric_limits<float>::infinity();
  for (float x : row) max = std::max(max, x);
  double sum = 0;
  for (float x : row) sum += std::exp(static_cast<double>(x) - max);
  const double lse = max + std::log(sum);
  TokenLogprobs out;
  out.id = id;
  out.logprob = static_cast<float>(row[id] - lse);
  if (k > 0) {
    std::vector<int32_t> idx(row.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>(i);
    const size_t kk = std::min<size_t>(static_cast<size_t>(k), idx.size());
    auto better = [&](int32_t a, int32_t b) {
      return row[a] > row[b] || (row[a] == row[b] && a < b);
    };
    std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(), better);
    for (size_t i = 0; i < kk; ++i) {
      out.top.emplace_back(idx[i], static_cast<float>(row[idx[i]] - lse));
    }
  }
  return out;
}

ModelExecutor::ModelExecutor(model::ModelRunner& runner)
    : runner_(runner),
      sampler_(runner.runtime(), runner.device(), runner.stream()) {}

StatusOr<StepResult> ModelExecutor::Run(const ScheduledBatch& batch) {
  model::Batch input;
  input.sequences.reserve(batch.rows.size());
  bool host = false;
  for (const BatchRow& r : batch.rows) {
    const Sequence& s = *r.seq;
    input.sequences.push_back(
        {std::span<const int32_t>(s.tokens).subspan(s.kv_len, r.n), s.kv_len,
         s.kv.pages});
    host |= r.sample && s.needs_host_logits();
  }

  tsr_tensor logits{};
  model::Logits host_logits;
  if (host) {
    TSR_ASSIGN_OR_RETURN(host_logits, runner_.Forward(input));
    for (size_t i = 0; i < batch.rows.size(); ++i) {
      const BatchRow& r = batch.rows[i];
      if (r.sample && r.seq->processor.active()) {
        r.seq->processor.Apply(std::span<float>(host_logits.data)
                                   .subspan(i * host_logits.vocab,
                                            host_logits.vocab));
      }
    }
    TSR_ASSIGN_OR_RETURN(logits, runner_.UploadLogits(host_logits));
  } else {
    TSR_ASSIGN_OR_RETURN(logits, runner_.ForwardOnDevice(input));
  }

  std::vector<model::SampleRow> sample_rows(batch.rows.size());
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const BatchRow& r = batch.rows[i];
    if (!r.sample) continue;  // greedy placeholder, result unused
    sample_rows[i].params = r.seq->request.sampling;
    sample_rows[i].rng = &r.seq->rng;
  }
  StepResult result;
  TSR_ASSIGN_OR_RETURN(result.ids, sampler_.Sample(logits, sample_rows));
  result.logprobs.resize(batch.rows.size());
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const BatchRow& r = batch.rows[i];
    if (r.sample && r.seq->request.top_logprobs >= 0) {
      result.logprobs[i] =
          ComputeLogprobs(host_logits.Row(static_cast<int64_t>(i)),
                          result.ids[i], r.seq->request.top_logprobs);
    }
  }
  return result;
}

}  // namespace tessera::engine
