// The generation loop of `tessera generate`: one prompt, one sequence, on a
// ModelRunner — prefill the prompt (in chunks of at most
// prefill_chunk_tokens, the later chunks over the cached prefix), then
// decode one token per step through the paged KV cache until an EOS id is
// sampled ("stop") or max_new_tokens are generated ("length").
//
// Text streams through an IncrementalDetokenizer primed with the prompt ids,
// so each piece handed to on_text is whole UTF-8 and the concatenation of
// all pieces is the continuation of the prompt (result.text). Sampling draws
// from a SamplerRng seeded with params.seed: the same seed, prompt and
// parameters give the same tokens. The EOS token that stops generation is
// part of output_ids (its text is dropped when it is a special token).
//
// Timing: prefill covers the prompt's forward passes and the first sampled
// token; decode covers every later step (one token each). Both wait for the
// device (the sampler reads the ids back), so the clocks are honest.
//
// The KV pages taken for the sequence are returned to the runner's pool
// before Generate returns, also on error. Not thread-safe: drives the
// runner's stream from the calling thread.
#ifndef TESSERA_CLI_GENERATE_LOOP_H_
#define TESSERA_CLI_GENERATE_LOOP_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model_runner.h"
#include "model/sampler.h"
#include "tokenizer/tokenizer.h"

namespace tessera::cli {

struct GenerateParams {
  int64_t max_new_tokens = 128;  // >= 1
  model::SamplingParams sampling;
  uint64_t seed = 0;
  std::vector<int32_t> eos_ids;         // any of them stops generation
  int64_t prefill_chunk_tokens = 2048;  // >= 1
  bool skip_special_tokens = true;      // for the streamed text
};

struct GenerateResult {
  std::vector<int32_t> output_ids;  // generated ids, the prompt excluded
  std::string text;                 // their text, continuing the prompt
  std::string finish_reason;        // "stop" or "length"
  int64_t prefill_tokens = 0;       // prompt tokens run
  double prefill_seconds = 0.0;
  int64_t decode_tokens = 0;  // tokens from decode steps
  double decode_seconds = 0.0;

  double prefill_tokens_per_s() const {
    return prefill_seconds > 0 ? prefill_tokens / prefill_seconds : 0.0;
  }
  double decode_tokens_per_s() const {
    return decode_seconds > 0 ? decode_tokens / decode_seconds : 0.0;
  }
};

// `on_text` (may be empty) receives each completed piece of text as soon as
// its token is sampled. `prompt_ids` must be non-empty. The runner's KV
// pool must hold prompt_ids.size() + max_new_tokens - 1 positions.
StatusOr<GenerateResult> Generate(
    model::ModelRunner& runner, const Tokenizer& tokenizer,
    std::span<const int32_t> prompt_ids, const GenerateParams& params,
    const std::function<void(std::string_view)>& on_text);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_GENERATE_LOOP_H_
