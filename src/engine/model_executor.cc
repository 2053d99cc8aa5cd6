#include "engine/model_executor.h"

#include <fmt/format.h>

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

ModelExecutor::ModelExecutor(model::ModelRunner& runner, TpLeader* tp,
                             std::optional<model::PoolingConfig> pooling)
    : runner_(runner),
      tp_(tp),
      pooling_(pooling),
      sampler_(runner.runtime(), runner.device(), runner.stream(),
               &runner.copy_stream()) {}

void ModelExecutor::Launch(const ScheduledBatch& batch) {
  InFlight f;
  f.rows = batch.size();
  if (inflight_.size() >= 2) {
    f.status = InternalError("more than two launches outstanding");
  } else if (pooling_) {
    StatusOr<StepResult> r = EmbedStep(batch);
    if (r.ok()) {
      f.embedded = std::move(r).value();
    } else {
      f.status = r.status();
    }
  } else {
    f.status = LaunchStep(batch, f);
  }
  inflight_.push_back(std::move(f));
}

StatusOr<StepResult> ModelExecutor::Collect() {
  if (inflight_.empty()) return InternalError("Collect without a Launch");
  InFlight f = std::move(inflight_.front());
  inflight_.pop_front();
  TSR_RETURN_IF_ERROR(f.status);
  if (f.embedded) return std::move(*f.embedded);
  TSR_RETURN_IF_ERROR(
      model::Sampler::WaitReadBack(*ids_copied_[f.staging], *ids_computed_[f.staging]));
  const std::vector<int32_t>& ids = host_ids_[f.staging];
  StepResult result;
  result.prompt_logprobs = std::move(f.prompt_logprobs);
  result.ids.assign(ids.begin(), ids.begin() + f.rows);
  result.logprobs.resize(static_cast<size_t>(f.rows));
  for (size_t i = 0; i < f.top_logprobs.size(); ++i) {
    if (f.top_logprobs[i] >= 0) {
      result.logprobs[i] =
          ComputeLogprobs(f.host_logits.Row(static_cast<int64_t>(i)),
                          result.ids[i], f.top_logprobs[i]);
    }
  }
  return result;
}

Status ModelExecutor::Health() {
  for (runtime::Stream* s : {&runner_.stream(), &runner_.copy_stream()}) {
    StatusOr<bool> idle = s->IsIdle();  // the sticky error, if any
    if (!idle.ok()) return idle.status();
  }
  return OkStatus();
}

std::optional<uint64_t> ModelExecutor::DeviceBusyNs() {
  auto busy = runner_.device().plugin().StreamBusyNs(runner_.stream().handle());
  return busy.ok() ? *busy : std::nullopt;
}

StatusOr<model::Logits> ModelExecutor::ScorePrompts(
    const ScheduledBatch& batch, const model::Batch& input,
    model::Logits logits,
    std::vector<std::vector<TokenLogprobs>>* prompt_logprobs) {
  prompt_logprobs->assign(batch.rows.size(), {});
  model::Logits last;
  last.rows = static_cast<int64_t>(batch.rows.size());
  last.vocab = logits.vocab;
  last.data.resize(static_cast<size_t>(last.rows * last.vocab));
  int64_t row = 0;  // the first logits row of batch row i
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const BatchRow& r = batch.rows[i];
    const int64_t rows = input.sequences[i].all_rows ? r.n : 1;
    if (input.sequences[i].all_rows) {
      // Row j predicts the token at position kv_start + j + 1.
      const Sequence& s = *r.seq;
      for (int64_t j = 0; j < r.n; ++j) {
        const int64_t next = r.kv_start + j + 1;
        if (next >= s.prompt_len()) break;
        (*prompt_logprobs)[i].push_back(ComputeLogprobs(
            logits.Row(row + j), s.request.prompt_ids[next],
            s.request.prompt_logprobs));
      }
    }
    const std::span<const float> src = logits.Row(row + rows - 1);
    std::copy(src.begin(), src.end(),
              last.data.begin() + static_cast<int64_t>(i) * last.vocab);
    row += rows;
  }
  if (row != logits.rows) {
    return InternalError(fmt::format(
        "the step brought {} logits rows, its batch asked for {}", logits.rows,
        row));
  }
  return last;
}

StatusOr<StepResult> ModelExecutor::EmbedStep(const ScheduledBatch& batch) {
  const model::PoolingMode mode = pooling_->mode;
  model::Batch input;
  // Last-token pooling needs each row's last hidden state only.
  input.all_logits = mode != model::PoolingMode::kLast;
  for (const BatchRow& r : batch.rows) {
    if (r.input_from >= 0) {
      return InternalError("an embedding step has a decode row");
    }
    const Sequence& s = *r.seq;
    input.sequences.push_back(
        {std::span<const int32_t>(s.tokens).subspan(r.kv_start, r.n),
         r.kv_start, s.kv.pages});
  }
  TSR_ASSIGN_OR_RETURN(model::HiddenStates hidden, runner_.ForwardHidden(input));
  StepResult result;
  result.ids.assign(batch.rows.size(), 0);
  result.logprobs.resize(batch.rows.size());
  result.hidden.resize(batch.rows.size());
  int64_t first_row = 0;  // this row's first row in `hidden`
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const BatchRow& r = batch.rows[i];
    const model::RowRange need =
        model::PoolingRows(mode, r.kv_start, r.n, r.seq->prompt_len());
    if (need.end > need.begin) {
      const auto rows =
          input.all_logits
              ? hidden.Rows(first_row + need.begin, first_row + need.end)
              : hidden.Rows(static_cast<int64_t>(i), static_cast<int64_t>(i) + 1);
      result.hidden[i].assign(rows.begin(), rows.end());
    }
    first_row += input.all_logits ? r.n : 1;
  }
  return result;
}

Status ModelExecutor::LaunchStep(const ScheduledBatch& batch, InFlight& f) {
  static const int32_t kPlaceholder = 0;
  model::Batch input;
  input.sequences.reserve(batch.rows.size());
  bool host = false;
  bool any_scored = false;  // a row brings a logits row per token
  int64_t token = 0;
  for (const BatchRow& r : batch.rows) {
    const Sequence& s = *r.seq;
    std::span<const int32_t> tokens;
    if (r.input_from >= 0) {
      if (last_ids_.buffer == nullptr || r.input_from >= last_ids_.rows) {
        return InternalError(
            "a row feeds a token the previous launch did not sample");
      }
      input.device_tokens.push_back({token, r.input_from});
      tokens = std::span<const int32_t>(&kPlaceholder, 1);
    } else {
      tokens = std::span<const int32_t>(s.tokens).subspan(r.kv_start, r.n);
    }
    const bool scored = r.prefill && s.request.prompt_logprobs >= 0;
    input.sequences.push_back({tokens, r.kv_start, s.kv.pages, scored});
    token += r.n;
    host |= (r.sample && s.needs_host_logits()) || scored;
    any_scored |= scored;
  }
  if (!input.device_tokens.empty()) {
    input.token_source = last_ids_.buffer;
    input.token_source_offset = last_ids_.offset;
  }

  std::vector<model::SampleRow> sample_rows(batch.rows.size());
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const BatchRow& r = batch.rows[i];
    if (!r.sample) continue;  // greedy placeholder, result unused
    sample_rows[i].params = r.seq->request.sampling;
    sample_rows[i].rng = &r.seq->rng;
  }

  // PD prefill rows: an event recorded after each layer says when that
  // layer's KV is written, so the KV sender streams it while the device
  // computes the next (layer_progress.h).
  std::shared_ptr<LayerEvents> layer_events;
  const bool streams_kv =
      std::any_of(batch.rows.begin(), batch.rows.end(),
                  [](const BatchRow& r) { return r.kv_progress != nullptr; });
  if (streams_kv && tp_ == nullptr) {
    layer_events = std::make_shared<LayerEvents>();
    runtime::Stream& compute = runner_.stream();
    input.after_layer = [&compute, layer_events](int64_t l) -> Status {
      if (l != static_cast<int64_t>(layer_events->size())) {
        return InternalError("layers enqueued out of order");
      }
      TSR_ASSIGN_OR_RETURN(runtime::EventPtr e,
                           runtime::Event::Create(compute.plugin(), compute.device()));
      TSR_RETURN_IF_ERROR(e->Record(compute));
      layer_events->push_back(std::move(e));
      return OkStatus();
    };
  }

  if (tp_ != nullptr) {
    TSR_RETURN_IF_ERROR(tp_->SendStep(input, static_cast<int64_t>(batch.rows.size())));
  }
  tsr_tensor logits{};
  if (host) {
    // Logit processors and logprobs need the logits on the host (Forward
    // waits for the stream); the adjusted rows go back for the sampler.
    // Grammar masks depend only on tokens already accepted: computed on
    // the host while the device runs this step.
    auto masks = [&batch] {
      for (const BatchRow& r : batch.rows) {
        if (r.sample) r.seq->ComputeGrammarMask();
      }
    };
    TSR_ASSIGN_OR_RETURN(f.host_logits, runner_.Forward(input, masks));
    if (any_scored) {
      TSR_ASSIGN_OR_RETURN(f.host_logits,
                           ScorePrompts(batch, input, std::move(f.host_logits),
                                        &f.prompt_logprobs));
    }
    f.top_logprobs.assign(batch.rows.size(), -1);
    for (size_t i = 0; i < batch.rows.size(); ++i) {
      const BatchRow& r = batch.rows[i];
      if (!r.sample) continue;
      const std::span<float> row = std::span<float>(f.host_logits.data)
                                       .subspan(i * f.host_logits.vocab,
                                                f.host_logits.vocab);
      if (r.seq->processor.active()) r.seq->processor.Apply(row);
      // Last: nothing after it may lift a masked token.
      r.seq->ApplyGrammarMask(row);
      f.top_logprobs[i] = r.seq->request.top_logprobs;
    }
    TSR_ASSIGN_OR_RETURN(logits, runner_.UploadLogits(f.host_logits));
  } else {
    TSR_ASSIGN_OR_RETURN(logits, runner_.ForwardOnDevice(input));
  }
  TSR_ASSIGN_OR_RETURN(last_ids_, sampler_.Enqueue(logits, sample_rows));
  if (tp_ != nullptr) TSR_RETURN_IF_ERROR(tp_->BroadcastIds(runner_.stream(), last_ids_));
  const int k = next_staging_;
  next_staging_ ^= 1;
  runtime::Stream& copy = runner_.copy_stream();
  if (ids_copied_[k] == nullptr) {
    TSR_ASSIGN_OR_RETURN(ids_copied_[k], runtime::Event::Create(
                                             copy.plugin(), copy.device()));
    TSR_ASSIGN_OR_RETURN(ids_computed_[k],
                         runtime::Event::Create(runner_.stream().plugin(),
                                                runner_.stream().device()));
  }
  TSR_RETURN_IF_ERROR(sampler_.ReadBack(last_ids_, host_ids_[k], *ids_copied_[k],
                                        *ids_computed_[k]));
  f.staging = k;
  if (layer_events != nullptr &&
      static_cast<int64_t>(layer_events->size()) ==
          runner_.config().num_hidden_layers) {
    // Every layer has its event (a graph replay records none: then the
    // scheduler's Finish at Postprocess says the KV is complete).
    f.layer_events = layer_events;  // recorded work outlives no event
    for (const BatchRow& r : batch.rows) {
      if (r.kv_progress == nullptr) continue;
      r.kv_progress->Attach([layer_events](int64_t l) {
        return (*layer_events)[static_cast<size_t>(l)]->Synchronize();
      });
    }
  }
  return OkStatus();
}

}  // namespace tessera::engine
