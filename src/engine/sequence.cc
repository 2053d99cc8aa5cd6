#include "engine/sequence.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace tessera::engine {

Sequence::Sequence(EngineRequest req, const Tokenizer& tokenizer,
                   StopTokens stops, StopMatcher matcher,
                   LogitProcessor logit_processor, uint64_t seed,
                   int64_t max_new)
    : request(std::move(req)),
      tokens(request.prompt_ids),
      max_new_tokens(max_new),
      stop_tokens(std::move(stops)),
      stop_matcher(std::move(matcher)),
      processor(std::move(logit_processor)),
      rng(seed),
      detokenizer(tokenizer, request.skip_special_tokens),
      arrival(SteadyClock::now()) {
  detokenizer.Prime(request.prompt_ids);
}

RequestOutput Sequence::AcceptToken(int32_t id,
                                    std::optional<TokenLogprobs> logprobs) {
  const auto now = SteadyClock::now();
  if (last_token) {
    itl_s.push_back(std::chrono::duration<double>(now - *last_token).count());
  } else {
    ttft_s = std::chrono::duration<double>(now - arrival).count();
  }
  last_token = now;

  tokens.push_back(id);
  processor.AddOutputToken(id);
  RequestOutput out;
  out.token_ids.push_back(id);
  if (logprobs) out.logprobs.push_back(std::move(*logprobs));
  if (generated() == 1) out.prompt_logprobs = std::move(prompt_logprobs);

  std::string piece = detokenizer.Add(id);
  const TokenStopReason reason = stop_tokens.Check(id);
  bool grammar_done = false;
  // A reasoning block: unconstrained until it closes.
  bool grammar_applies = grammar_phase == GrammarPhase::kActive;
  if (grammar_matcher != nullptr && request.grammar_after_reasoning) {
    const auto& r = *request.grammar_after_reasoning;
    if (grammar_phase == GrammarPhase::kMayReason) {
      grammar_phase = id == r.start ? GrammarPhase::kReasoning : GrammarPhase::kActive;
      grammar_applies = grammar_phase == GrammarPhase::kActive;
    } else if (grammar_phase == GrammarPhase::kReasoning && id == r.end) {
      grammar_phase = GrammarPhase::kActive;  // from the next token on
    }
  }
  if (grammar_matcher != nullptr && grammar_applies &&
      reason == TokenStopReason::kNone) {
    if (grammar_dead_end ||
        !grammar_matcher->AcceptString(grammar_vocab->bytes(id))) {
      out.finished = true;
      out.finish.kind = FinishReason::Kind::kAbort;
      out.finish.cause = AbortCause::kError;
      out.finish.message =
          "structured output: no token of the vocabulary continues the "
          "grammar here (it needs text the tokenizer cannot produce)";
    } else {
      // Complete and nothing may follow: done, as if EOS came.
      grammar_done =
          grammar_matcher->CanEnd() && !grammar_matcher->CanContinue();
    }
  }
  if (!out.finished && (reason != TokenStopReason::kNone || grammar_done)) {
    out.finished = true;
    out.finish.kind = FinishReason::Kind::kStop;
    if (!grammar_done) out.finish.matched_token = id;
  } else if (!out.finished && generated() >= max_new_tokens) {
    out.finished = true;
    out.finish.kind = FinishReason::Kind::kLength;
    out.finish.length = generated();
  }
  if (out.finished) piece += detokenizer.Flush();
  StopMatch match = stop_matcher.Add(piece);
  out.text = std::move(match.text);
  if (match.stopped) {
    out.finished = true;
    out.finish = FinishReason{};
    out.finish.kind = FinishReason::Kind::kStop;
    out.finish.matched_text = stop_matcher.stops()[match.stop_index];
    if (request.no_stop_trim) out.text += *out.finish.matched_text;
  } else if (out.finished) {
    out.text += stop_matcher.Flush();
  }
  finished = out.finished;
  out.prompt_tokens = prompt_len();
  out.completion_tokens = generated();
  out.cached_tokens = cached_tokens;
  return out;
}

void Sequence::ComputeGrammarMask() {
  if (grammar_matcher == nullptr || grammar_phase == GrammarPhase::kReasoning) {
    return;
  }
  const int64_t allowed = grammar::ComputeTokenMask(
      *grammar_matcher, *grammar_vocab, grammar_stop_ids, &grammar_mask);
  grammar_dead_end = allowed == 0;
}

void Sequence::ApplyGrammarMask(std::span<float> logits) const {
  if (grammar_matcher == nullptr || grammar_dead_end ||
      grammar_phase == GrammarPhase::kReasoning) {
    return;
  }
  const size_t n = std::min(logits.size(), grammar_mask.size());
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  // The first token may open the reasoning block instead.
  std::optional<std::pair<size_t, float>> keep;
  if (grammar_phase == GrammarPhase::kMayReason) {
    const size_t start =
        static_cast<size_t>(request.grammar_after_reasoning->start);
    if (start < logits.size()) keep.emplace(start, logits[start]);
  }
  for (size_t t = 0; t < n; ++t) {
    if (!grammar_mask[t]) logits[t] = kMasked;
  }
  // Ids beyond the tokenizer's vocabulary (padded embedding rows).
  for (size_t t = n; t < logits.size(); ++t) logits[t] = kMasked;
  if (keep) logits[keep->first] = keep->second;
}

RequestOutput Sequence::EndAfterPrompt(FinishReason::Kind kind) {
  const auto now = SteadyClock::now();
  ttft_s = std::chrono::duration<double>(now - arrival).count();
  last_token = now;
  RequestOutput out;
  out.finished = true;
  out.finish.kind = kind;
  out.prompt_tokens = prompt_len();
  out.cached_tokens = cached_tokens;
  finished = true;
  return out;
}

RequestOutput Sequence::EmbeddingOutput() {
  RequestOutput out = EndAfterPrompt(FinishReason::Kind::kStop);
  if (pooler) out.embedding = pooler->Finish();
  return out;
}

RequestOutput Sequence::PromptOnlyOutput() {
  RequestOutput out = EndAfterPrompt(FinishReason::Kind::kLength);
  out.finish.length = 0;
  out.prompt_logprobs = std::move(prompt_logprobs);
  return out;
}

RequestOutput Sequence::AbortOutput(AbortCause cause, const std::string& why) {
  RequestOutput out;
  out.finished = true;
  out.finish.kind = FinishReason::Kind::kAbort;
  out.finish.cause = cause;
  out.finish.message = why;
  out.prompt_tokens = prompt_len();
  out.completion_tokens = generated();
  out.cached_tokens = cached_tokens;
  finished = true;
  return out;
}

}  // namespace tessera::engine
