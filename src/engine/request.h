// What a client asks the engine for (EngineRequest) and what comes back
// (RequestOutput), through a RequestStream: the one channel between an HTTP
// handler thread and the scheduler thread for one generated sequence.
//
// Flow: the handler builds an EngineRequest (token ids already, sampling and
// stop settings already validated by the protocol layer), Engine::Submit
// returns a RequestStream, the scheduler Push()es outputs as tokens are
// sampled (text deltas already stop-string filtered), the last one with
// finished = true. The handler Wait()s and drains. A handler that loses its
// client calls Cancel(); the scheduler notices at its next step, frees the
// request's KV and pushes a final kAbort output.
//
// Thread-safety: RequestStream is safe between one producer (the scheduler)
// and any number of consumer threads; everything else here is a plain
// value type.
#ifndef TESSERA_ENGINE_REQUEST_H_
#define TESSERA_ENGINE_REQUEST_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/finish_reason.h"
#include "engine/logit_processor.h"
#include "model/sampler.h"

namespace tessera::grammar {
class Grammar;
}

namespace tessera::engine {

// PD disaggregation: where the prefill server's bootstrap service is and
// the room that pairs the prefill and decode copies of one request
// (engine/disagg.h).
struct BootstrapInfo {
  std::string host;
  int port = 0;
  uint64_t room = 0;
};

struct EngineRequest {
  std::string rid;                  // unique; the engine assigns one if empty
  std::vector<int32_t> prompt_ids;  // >= 1 token, all < vocab size
  model::SamplingParams sampling;
  std::optional<uint64_t> seed;  // nullopt: a random seed per request
  LogitParams logit;             // penalties, logit_bias, min_tokens
  std::vector<std::string> stop;        // stop strings
  std::vector<int32_t> stop_token_ids;  // request stop ids
  bool ignore_eos = false;
  std::optional<int64_t> max_new_tokens;  // nullopt: up to the context
  // Log-probabilities of sampled tokens: -1 none; K >= 0 also the K most
  // likely alternatives per position.
  int32_t top_logprobs = -1;
  // Log-probabilities of the prompt's tokens (each given the ones before
  // it; OpenAI's echo + logprobs, SGLang's input_token_logprobs): -1 none;
  // K >= 0 with the K most likely alternatives. The prompt is then computed
  // whole (no cached prefix: its logits are needed), and max_new_tokens may
  // be 0 (score the prompt only).
  int32_t prompt_logprobs = -1;
  bool skip_special_tokens = true;
  // A matched stop string stays at the end of the text (SGLang's
  // no_stop_trim); by default it is cut.
  bool no_stop_trim = false;
  // Structured output: the output must be a sentence of this grammar
  // (grammar/grammar.h); null: unconstrained.
  std::shared_ptr<const grammar::Grammar> grammar;
  // A reasoning model (--reasoning-parser): the grammar constrains the
  // answer, not the thinking. With `opens`, the first token may be `start`
  // (the model opens its reasoning block) instead of following the
  // grammar; without, the output starts inside the block (the template
  // opened it). Inside the block nothing is constrained; the grammar starts
  // after `end`.
  struct ReasoningTokens {
    int32_t start = 0;
    int32_t end = 0;
    bool opens = true;
  };
  std::optional<ReasoningTokens> grammar_after_reasoning;
  std::optional<BootstrapInfo> bootstrap;  // PD disaggregation only
};

// Log-probability of one sampled token (natural log), with the top
// alternatives at its position, most likely first.
struct TokenLogprobs {
  int32_t id = 0;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};

// One increment of a sequence's output. `token_ids` are the tokens sampled
// since the previous output; `text` is the text that became safe to emit
// (held-back stop-string prefixes are released later or dropped).
struct RequestOutput {
  std::vector<int32_t> token_ids;
  std::string text;
  std::vector<TokenLogprobs> logprobs;  // one per token when requested
  // With EngineRequest::prompt_logprobs, on the first output: prompt
  // tokens 1 .. L-1 (token 0 has nothing before it).
  std::vector<TokenLogprobs> prompt_logprobs;
  bool finished = false;
  FinishReason finish;  // valid when finished
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // so far
  int64_t cached_tokens = 0;      // prompt tokens served from the cache
  // Embedding engines: the prompt's pooled vector [H], on the final output.
  std::vector<float> embedding;
};

class RequestStream {
 public:
  explicit RequestStream(std::string rid) : rid_(std::move(rid)) {}

  const std::string& rid() const { return rid_; }

  // Scheduler side. Outputs after a finished one are ignored.
  void Push(RequestOutput output);

  // Consumer side: waits up to `timeout` for outputs and returns all that
  // arrived (in order; empty on timeout).
  std::vector<RequestOutput> Wait(std::chrono::milliseconds timeout);
  // Waits for the end of the sequence, dropping intermediate outputs, and
  // returns the final (finished) one. For callers that only need the end.
  RequestOutput WaitFinal();
  // Consumer side: `listener` is called after every later Push (on the
  // scheduler's thread, with no lock held), so that a consumer can wait
  // without a thread of its own and take the outputs with Wait(0). It must
  // be cheap and must not call Push. Replaces any earlier listener.
  void SetListener(std::function<void()> listener);
  bool finished() const { return finished_.load(); }

  // Asks the scheduler to abort (client went away, /abort_request,
  // shutdown). The first call wins; later ones are ignored.
  void Cancel(AbortCause cause = AbortCause::kClientGone,
              std::string why = "aborted by the client");
  bool cancelled() const { return cancelled_.load(); }
  // The first Cancel's cause and message.
  AbortCause cancel_cause() const;
  std::string cancel_reason() const;

 private:
  const std::string rid_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestOutput> pending_;
  std::shared_ptr<const std::function<void()>> listener_;  // guarded by mu_
  AbortCause cancel_cause_ = AbortCause::kClientGone;
  std::string cancel_reason_;
  std::atomic<bool> finished_{false};
  std::atomic<bool> cancelled_{false};
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_REQUEST_H_
