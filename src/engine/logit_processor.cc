#include "engine/logit_processor.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <limits>

namespace tessera::engine {
namespace {

constexpr float kMaxPenalty = 2.0f;  // OpenAI's presence/frequency range
constexpr float kMaxBias = 100.0f;   // OpenAI's logit_bias range

}  // namespace

Status ValidateLogitParams(const LogitParams& p, int64_t vocab_size) {
  if (vocab_size <= 0) {
    return InvalidArgumentError(
        fmt::format("vocab_size {} must be positive", vocab_size));
  }
  if (!std::isfinite(p.repetition_penalty) || p.repetition_penalty <= 0.0f) {
    return InvalidArgumentError(fmt::format(
        "repetition_penalty {} must be a finite number > 0 (1 turns it off)",
        p.repetition_penalty));
  }
  if (!(std::fabs(p.presence_penalty) <= kMaxPenalty)) {
    return InvalidArgumentError(
        fmt::format("presence_penalty {} must be in [-2, 2] (0 turns it off)",
                    p.presence_penalty));
  }
  if (!(std::fabs(p.frequency_penalty) <= kMaxPenalty)) {
    return InvalidArgumentError(
        fmt::format("frequency_penalty {} must be in [-2, 2] (0 turns it off)",
                    p.frequency_penalty));
  }
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0 || id >= vocab_size) {
      return InvalidArgumentError(fmt::format(
          "logit_bias: token id {} is outside the vocabulary [0, {}); use ids "
          "the model's tokenizer produces",
          id, vocab_size));
    }
    if (!(std::fabs(bias) <= kMaxBias)) {
      return InvalidArgumentError(fmt::format(
          "logit_bias: bias {} for token id {} must be in [-100, 100]", bias,
          id));
    }
  }
  if (p.min_tokens < 0) {
    return InvalidArgumentError(fmt::format(
        "min_tokens {} must be >= 0 (0 turns it off)", p.min_tokens));
  }
  for (int32_t id : p.min_tokens_stop_ids) {
    if (id < 0 || id >= vocab_size) {
      return InvalidArgumentError(fmt::format(
          "min_tokens: stop token id {} is outside the vocabulary [0, {})", id,
          vocab_size));
    }
  }
  return OkStatus();
}

StatusOr<LogitProcessor> LogitProcessor::Create(
    LogitParams params, int64_t vocab_size,
    std::span<const int32_t> prompt_ids) {
  TSR_RETURN_IF_ERROR(ValidateLogitParams(params, vocab_size));
  for (size_t i = 0; i < prompt_ids.size(); ++i) {
    if (prompt_ids[i] < 0 || prompt_ids[i] >= vocab_size) {
      return InvalidArgumentError(fmt::format(
          "prompt token {} (position {}) is outside the vocabulary [0, {})",
          prompt_ids[i], i, vocab_size));
    }
  }
  LogitProcessor proc(std::move(params), vocab_size);
  if (proc.params_.repetition_penalty != 1.0f) {
    for (int32_t id : prompt_ids) proc.MarkSeen(id);
  }
  return proc;
}

LogitProcessor::LogitProcessor(LogitParams params, int64_t vocab_size)
    : params_(std::move(params)), vocab_size_(vocab_size) {
  std::unordered_map<int32_t, size_t> index;
  for (const auto& [id, bias] : params_.logit_bias) {
    auto [it, inserted] = index.emplace(id, bias_.size());
    if (inserted) {
      bias_.emplace_back(id, bias);
    } else {
      bias_[it->second].second += bias;
    }
  }
}

void LogitProcessor::MarkSeen(int32_t id) {
  if (seen_set_.insert(id).second) seen_.push_back(id);
}

void LogitProcessor::AddOutputToken(int32_t id) {
  assert(id >= 0 && id < vocab_size_);
  ++output_len_;
  if (params_.repetition_penalty != 1.0f) MarkSeen(id);
  if (counts_[id]++ == 0) output_distinct_.push_back(id);
}

int32_t LogitProcessor::OutputCount(int32_t id) const {
  const auto it = counts_.find(id);
  return it == counts_.end() ? 0 : it->second;
}

bool LogitProcessor::active() const {
  return !bias_.empty() || params_.repetition_penalty != 1.0f ||
         params_.presence_penalty != 0.0f ||
         params_.frequency_penalty != 0.0f ||
         (output_len_ < params_.min_tokens &&
          !params_.min_tokens_stop_ids.empty());
}

void LogitProcessor::Apply(std::span<float> logits) const {
  assert(static_cast<int64_t>(logits.size()) == vocab_size_);
  for (const auto& [id, bias] : bias_) logits[id] += bias;

  const float r = params_.repetition_penalty;
  if (r != 1.0f) {
    for (int32_t id : seen_) {
      float& x = logits[id];
      x = x > 0.0f ? x / r : x * r;
    }
  }

  const float p = params_.presence_penalty;
  const float f = params_.frequency_penalty;
  if (p != 0.0f || f != 0.0f) {
    for (int32_t id : output_distinct_) {
      const int32_t c = counts_.at(id);
      logits[id] -= f * static_cast<float>(c) + p;
    }
  }

  if (output_len_ < params_.min_tokens) {
    for (int32_t id : params_.min_tokens_stop_ids) {
      logits[id] = -std::numeric_limits<float>::infinity();
    }
  }
}

Status ApplyLogitProcessors(std::span<float> logits, int64_t vocab_size,
                            std::span<const LogitProcessor* const> processors) {
  const auto rows = static_cast<int64_t>(processors.size());
  if (vocab_size <= 0 ||
      static_cast<int64_t>(logits.size()) != rows * vocab_size) {
    return InvalidArgumentError(fmt::format(
        "logits hold {} floats but {} rows x vocab {} were expected",
        logits.size(), rows, vocab_size));
  }
  for (int64_t b = 0; b < rows; ++b) {
    const LogitProcessor* proc = processors[b];
    if (proc == nullptr) continue;
    if (proc->vocab_size() != vocab_size) {
      return InvalidArgumentError(fmt::format(
          "row {}: its processor was made for vocab {}, the logits have {}", b,
          proc->vocab_size(), vocab_size));
    }
    proc->Apply(logits.subspan(b * vocab_size, vocab_size));
  }
  return OkStatus();
}

}  // namespace tessera::engine
