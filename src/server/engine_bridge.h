// The bridge between the protocol layer and the engine: parsed sampling
// options become EngineRequests (one per choice for n > 1, seeded
// seed + i so choices differ but stay reproducible), a set of request
// streams is drained together, and engine logprobs become token texts.
//
// Thread-safety: functions are stateless; a StreamSet belongs to the one
// handler thread that created it.
#ifndef TESSERA_SERVER_ENGINE_BRIDGE_H_
#define TESSERA_SERVER_ENGINE_BRIDGE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "tokenizer/tokenizer.h"

namespace tessera::server {

// `n` EngineRequests for one prompt; rids are `rid_prefix`-<i>.
// `top_logprobs`: -1 none, else how many alternatives per token;
// `prompt_logprobs` the same for the prompt's tokens.
std::vector<engine::EngineRequest> BuildEngineRequests(
    const SamplingOptions& sampling, const std::vector<int32_t>& prompt_ids,
    int32_t top_logprobs, const std::string& rid_prefix,
    int32_t prompt_logprobs = -1);

// A prompt's logprobs as the API shows them: its first token (no logprob)
// then engine::RequestOutput::prompt_logprobs (tokens 1 ..).
std::vector<TokenLogprob> PromptTokenLogprobs(
    const std::vector<int32_t>& prompt_ids,
    const std::vector<engine::TokenLogprobs>& scored,
    const Tokenizer& tokenizer);

// Engine logprobs with their tokens' texts (special tokens kept).
TokenLogprob ToTokenLogprob(const engine::TokenLogprobs& lp,
                            const Tokenizer& tokenizer);

// "cmpl-", "chatcmpl-" ... followed by 24 random hex digits.
std::string NewResponseId(const std::string& prefix);

// The choices of one response, drained together. Index i is choice i.
class StreamSet {
 public:
  struct Event {
    size_t index;
    engine::RequestOutput output;
  };

  void Add(std::shared_ptr<engine::RequestStream> stream);
  size_t size() const { return streams_.size(); }
  bool all_finished() const;
  // The outputs that have arrived on unfinished streams, in arrival order
  // per stream, without waiting (SetListener says when to call it).
  std::vector<Event> TakeReady();
  // Cancels every unfinished stream (client gone, error).
  void CancelAll(engine::AbortCause cause, const std::string& why);
  // Calls `listener` whenever any stream receives an output (see
  // RequestStream::SetListener); TakeReady then takes it.
  void SetListener(const std::function<void()>& listener);

 private:
  std::vector<std::shared_ptr<engine::RequestStream>> streams_;
  std::vector<bool> done_;
};

// Submits one group per prompt (n choices each) and returns all streams in
// choice order; on an error the already submitted ones are cancelled.
MaybeApiError SubmitAll(
    engine::Engine& engine,
    const std::vector<std::vector<engine::EngineRequest>>& groups,
    StreamSet* out);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_ENGINE_BRIDGE_H_
