#include "engine/sequence.h"

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

  std::string piece = detokenizer.Add(id);
  const TokenStopReason reason = stop_tokens.Check(id);
  if (reason != TokenStopReason::kNone) {
    out.finished = true;
    out.finish.kind = FinishReason::Kind::kStop;
    out.finish.matched_token = id;
  } else if (generated() >= max_new_tokens) {
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
