// Sequence: the scheduler's state for one generated sequence — its tokens,
// KV pages, and the per-request output pipeline a sampled token goes
// through: logit processor bookkeeping, stop tokens, incremental
// detokenization, stop strings, length limit, then one RequestOutput on the
// request's stream.
//
// Token bookkeeping: tokens = prompt + generated; kv_len = how many of them
// have K/V in the pool. While prefilling kv_len < tokens.size() - 0; once
// the prompt is done and a token is sampled, decode steps feed
// tokens.back() at position kv_len == tokens.size() - 1. A retracted
// sequence keeps its tokens and prefills them again (mostly from the radix
// cache) when it is admitted again.
//
// Thread-safety: owned and used by the scheduler thread only (the stream is
// the thread-safe part).
#ifndef TESSERA_ENGINE_SEQUENCE_H_
#define TESSERA_ENGINE_SEQUENCE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv_cache_manager.h"
#include "engine/layer_progress.h"
#include "engine/logit_processor.h"
#include "engine/request.h"
#include "engine/stop_matcher.h"
#include "engine/stop_tokens.h"
#include "grammar/earley_matcher.h"
#include "grammar/token_mask.h"
#include "model/pooling_config.h"
#include "model/sampler.h"
#include "tokenizer/incremental_detokenizer.h"

namespace tessera::engine {

using SteadyClock = std::chrono::steady_clock;

// Shared by the sequences of one SubmitGroup (n > 1): followers are not
// admitted until the leader's prompt is in the cache (or the leader is
// gone), so the prompt is computed once.
struct SequenceGroup {
  bool leader_prefilled = false;
};

struct Sequence {
  Sequence(EngineRequest req, const Tokenizer& tokenizer, StopTokens stops,
           StopMatcher matcher, LogitProcessor processor, uint64_t seed,
           int64_t max_new);

  // Records a sampled token and returns the output to push. `logprobs` is
  // set when the request asked for them.
  RequestOutput AcceptToken(int32_t id, std::optional<TokenLogprobs> logprobs);
  // The final output of a sequence that ends without a new token.
  RequestOutput AbortOutput(AbortCause cause, const std::string& why);
  // Embedding engines: the final output once the prompt is computed (the
  // pooled vector, no tokens).
  RequestOutput EmbeddingOutput();
  // max_new_tokens 0 (prompt logprobs only): the final output once the
  // prompt is computed (finish "length", no tokens).
  RequestOutput PromptOnlyOutput();
  // The final output of a sequence that ends once its prompt is computed.
  RequestOutput EndAfterPrompt(FinishReason::Kind kind);

  bool prefilling() const {
    return kv_len < static_cast<int64_t>(tokens.size()) - (generated() > 0);
  }
  int64_t prompt_len() const { return static_cast<int64_t>(request.prompt_ids.size()); }
  int64_t generated() const {
    return static_cast<int64_t>(tokens.size()) - prompt_len();
  }
  // Rows that need host logits: logit processors, logprobs or a grammar.
  bool needs_host_logits() const {
    return processor.active() || request.top_logprobs >= 0 ||
           grammar_matcher != nullptr || request.prompt_logprobs >= 0;
  }
  // Structured output, in two halves so the first can run while the
  // device computes the step: ComputeGrammarMask finds the tokens the
  // grammar allows next; ApplyGrammarMask sets every other logit to -inf
  // (`logits`: F32 [V] host row). When no token at all is allowed (the
  // vocabulary cannot spell what the grammar needs), the row is left alone
  // and the next AcceptToken ends the request with an error.
  void ComputeGrammarMask();
  void ApplyGrammarMask(std::span<float> logits) const;

  EngineRequest request;
  std::shared_ptr<RequestStream> stream;
  std::shared_ptr<SequenceGroup> group;
  bool group_leader = false;

  std::vector<int32_t> tokens;  // prompt + generated
  int64_t kv_len = 0;
  SequenceKv kv;
  int64_t max_new_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens matched at first admission
  // Overlap: row `pending_row` of batch `pending_batch` samples this
  // sequence's next token, not accepted yet (-1: none pending). Then
  // kv_len == tokens.size() (the pending token's position is next).
  uint64_t pending_batch = 0;
  int64_t pending_row = -1;
  // PD disaggregation: kSending (prefill) — from the scheduling of the
  // prompt's last chunk, whose KV streams to the decode server layer by
  // layer (`kv_progress`); once the first token is sampled `parked` holds
  // the final output until the KV reached the decode server; kAwaiting
  // (decode) — pages reserved, waiting for the prefill server's KV and
  // first token. Neither gets rows after that.
  enum class Transfer { kNone, kSending, kAwaiting };
  Transfer transfer = Transfer::kNone;
  std::shared_ptr<LayerProgress> kv_progress;
  RequestOutput parked;
  bool admitted_once = false;
  bool finished = false;

  StopTokens stop_tokens;
  StopMatcher stop_matcher;
  LogitProcessor processor;
  model::SamplerRng rng;
  IncrementalDetokenizer detokenizer;
  // Structured output (request.grammar set): the grammar's state after the
  // generated text; the vocabulary's bytes; the ids that end the output
  // (allowed only where the grammar can end); mask scratch.
  std::unique_ptr<grammar::GrammarMatcher> grammar_matcher;
  std::shared_ptr<const grammar::TokenVocabulary> grammar_vocab;
  std::vector<int32_t> grammar_stop_ids;
  std::vector<uint8_t> grammar_mask;
  bool grammar_dead_end = false;
  // With request.grammar_after_reasoning: kMayReason (first token: the
  // grammar or the block's start), kReasoning (unconstrained until the
  // block's end), then kActive.
  enum class GrammarPhase { kActive, kMayReason, kReasoning };
  GrammarPhase grammar_phase = GrammarPhase::kActive;
  // Embedding engines: the prompt's hidden states pooled as they arrive.
  std::optional<model::HiddenPooler> pooler;
  // prompt_logprobs: gathered chunk by chunk, handed out with the first
  // output.
  std::vector<TokenLogprobs> prompt_logprobs;

  SteadyClock::time_point arrival;
  std::optional<SteadyClock::time_point> first_admit;
  std::optional<SteadyClock::time_point> last_token;
  double ttft_s = -1;
  std::vector<double> itl_s;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_SEQUENCE_H_
