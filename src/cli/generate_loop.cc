#include "cli/generate_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "tokenizer/incremental_detokenizer.h"

namespace tessera::cli {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Returns a sequence's KV pages to the pool when it goes out of scope.
class PageLease {
 public:
  explicit PageLease(kv::KvPool& pool) : pool_(pool) {}
  ~PageLease() {
    if (!pages_.empty()) (void)pool_.Release(pages_);
  }
  PageLease(const PageLease&) = delete;
  PageLease& operator=(const PageLease&) = delete;

  // Grows the page list to cover `num_tokens` positions.
  Status Cover(int64_t num_tokens) {
    Status status = pool_.EnsureCapacity(pages_, num_tokens);
    if (!status.ok()) {
      return status.WithContext(
          fmt::format("KV cache for {} positions (pages of {} slots)",
                      num_tokens, pool_.page_size()));
    }
    return OkStatus();
  }
  const std::vector<int32_t>& pages() const { return pages_; }

 private:
  kv::KvPool& pool_;
  std::vector<int32_t> pages_;
};

}  // namespace

StatusOr<GenerateResult> Generate(
    model::ModelRunner& runner, const Tokenizer& tokenizer,
    std::span<const int32_t> prompt_ids, const GenerateParams& params,
    const std::function<void(std::string_view)>& on_text) {
  if (prompt_ids.empty()) {
    return InvalidArgumentError("the prompt encodes to no tokens; give text");
  }
  if (params.max_new_tokens < 1 || params.prefill_chunk_tokens < 1) {
    return InvalidArgumentError(
        "max_new_tokens and prefill_chunk_tokens must be at least 1");
  }
  const int64_t vocab = runner.config().vocab_size;
  for (int32_t id : prompt_ids) {
    if (id < 0 || id >= vocab) {
      return InvalidArgumentError(fmt::format(
          "prompt token id {} is outside the model's vocabulary [0, {}); "
          "the tokenizer does not match the model",
          id, vocab));
    }
  }

  model::Sampler sampler(runner.runtime(), runner.device(), runner.stream());
  model::SamplerRng rng(params.seed);
  const std::vector<model::SampleRow> rows = {
      {params.sampling, params.sampling.greedy() ? nullptr : &rng}};
  IncrementalDetokenizer detokenizer(tokenizer, params.skip_special_tokens);
  detokenizer.Prime(prompt_ids);
  PageLease lease(runner.kv_pool());
  GenerateResult result;

  // Adds a sampled id; returns true when generation is finished.
  auto accept = [&](int32_t id) {
    result.output_ids.push_back(id);
    std::string piece = detokenizer.Add(id);
    const bool eos = std::find(params.eos_ids.begin(), params.eos_ids.end(),
                               id) != params.eos_ids.end();
    const bool full =
        int64_t(result.output_ids.size()) >= params.max_new_tokens;
    if (eos || full) {
      piece += detokenizer.Flush();
      result.finish_reason = eos ? "stop" : "length";
    }
    if (!piece.empty()) {
      result.text += piece;
      if (on_text) on_text(piece);
    }
    return eos || full;
  };

  // Prefill: chunks over the growing cached prefix; the last chunk's
  // logits row gives the first token.
  const auto prefill_start = Clock::now();
  const int64_t prompt_len = int64_t(prompt_ids.size());
  tsr_tensor logits{};
  for (int64_t begin = 0; begin < prompt_len;
       begin += params.prefill_chunk_tokens) {
    const int64_t count =
        std::min(params.prefill_chunk_tokens, prompt_len - begin);
    TSR_RETURN_IF_ERROR(lease.Cover(begin + count));
    model::Batch batch;
    batch.sequences.push_back(
        {prompt_ids.subspan(begin, count), begin, lease.pages()});
    TSR_ASSIGN_OR_RETURN(logits, runner.ForwardOnDevice(batch));
  }
  TSR_ASSIGN_OR_RETURN(std::vector<int32_t> first,
                       sampler.Sample(logits, rows));
  result.prefill_tokens = prompt_len;
  result.prefill_seconds = SecondsSince(prefill_start);
  if (accept(first[0])) return result;

  // Decode: feed the last token at position cached, sample the next.
  const auto decode_start = Clock::now();
  int32_t last = first[0];
  while (true) {
    const int64_t cached = prompt_len + int64_t(result.output_ids.size()) - 1;
    TSR_RETURN_IF_ERROR(lease.Cover(cached + 1));
    model::Batch batch;
    batch.sequences.push_back(
        {std::span<const int32_t>(&last, 1), cached, lease.pages()});
    TSR_ASSIGN_OR_RETURN(logits, runner.ForwardOnDevice(batch));
    TSR_ASSIGN_OR_RETURN(std::vector<int32_t> next,
                         sampler.Sample(logits, rows));
    ++result.decode_tokens;
    last = next[0];
    if (accept(last)) break;
  }
  result.decode_seconds = SecondsSince(decode_start);
  return result;
}

}  // namespace tessera::cli
