// Engine: the serving core on one device — continuous batching over a
// ModelRunner with a paged KV pool and a radix prefix cache, driven by one
// scheduler thread.
//
// Each scheduler step (SGLang's event loop, in one thread):
//   1. take new requests from the inbox; drop cancelled ones (client gone,
//      /abort_request), freeing their KV;
//   2. decode: every running sequence whose prompt is done gets one slot for
//      its next token; when the pool (after evicting unlocked cache leaves)
//      cannot provide it, the most recently admitted sequence is RETRACTED:
//      its KV goes to the radix cache, it returns to the head of the queue
//      with its output kept, and resumes later (usually reusing that KV);
//   3. prefill under the token budget (--chunked-prefill-size, decode tokens
//      included): first the sequence whose prompt is being chunked, then
//      waiting requests in policy order (lpm: longest cached prefix first;
//      fcfs: arrival), each reusing its cached prefix, while
//      --max-running-requests and the pool allow; a request whose uncached
//      prompt starts like one admitted in the same step waits one step and
//      then reuses that one's KV (in-batch prefix sharing); a prompt longer
//      than the remaining budget is split into chunks over later steps;
//   4. one forward pass over the mixed batch (prefill chunks and decode
//      tokens together; the paged_attention op reads cached prefixes);
//   5. sampling (host logit processors and logprobs only for the rows that
//      need them), then per sequence: detokenize, stop tokens / strings /
//      length, push a RequestOutput; finished sequences give their KV to
//      the radix cache (prompt and generated tokens).
// A status line goes to the log every log_interval_s while busy.
//
// n > 1: SubmitGroup's requests share a prompt; the followers wait until
// the leader's prompt KV is cached and then reuse it.
//
// Thread-safety: Submit*, Abort, Stats, RunOnScheduler and Shutdown may be
// called from any thread. Everything else (runner, pool, cache, sequences)
// belongs to the scheduler thread.
#ifndef TESSERA_ENGINE_ENGINE_H_
#define TESSERA_ENGINE_ENGINE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "engine/request.h"
#include "model/model_runner.h"
#include "tokenizer/tokenizer.h"

namespace tessera::engine {

class Scheduler;
struct Sequence;

enum class SchedulePolicy { kLongestPrefixMatch, kFirstComeFirstServed };
StatusOr<SchedulePolicy> ParseSchedulePolicy(std::string_view name);

struct EngineOptions {
  int64_t context_length = 0;           // 0: the model's
  int64_t chunked_prefill_size = 2048;  // tokens per step; <= 0: no chunking
  int64_t max_running_requests = 256;
  int64_t max_queued_requests = 0;  // 0: unlimited
  SchedulePolicy policy = SchedulePolicy::kLongestPrefixMatch;
  bool disable_radix_cache = false;
  double log_interval_s = 5.0;   // <= 0: no periodic status line
  std::vector<int32_t> eos_ids;  // the model's EOS ids
};

// Per-request timing for latency histograms, reported once per request.
struct RequestTiming {
  double queue_s = 0;         // arrival to first admission
  double ttft_s = -1;         // arrival to first token (-1: none)
  double e2e_s = 0;           // arrival to finish
  std::vector<double> itl_s;  // gaps between consecutive tokens
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  bool aborted = false;
};

// A consistent snapshot, refreshed every scheduler step.
struct EngineStats {
  bool ready = false;
  int64_t running = 0;
  int64_t queued = 0;
  int64_t last_batch_size = 0;
  int64_t kv_capacity_tokens = 0;
  int64_t kv_used_tokens = 0;    // live sequences + locked cache
  int64_t kv_cached_tokens = 0;  // in the radix cache (locked or not)
  double cache_hit_rate = 0;     // matched / queried prompt tokens
  double gen_throughput = 0;     // tokens/s over the last interval
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  int64_t cached_tokens_total = 0;
  int64_t requests_total = 0;
  int64_t aborted_total = 0;
  int64_t retractions_total = 0;
};

class Engine {
 public:
  // The runner and tokenizer must outlive the engine. Starts the scheduler
  // thread and warms up (one short request) before returning.
  static StatusOr<std::unique_ptr<Engine>> Create(model::ModelRunner& runner,
                                                  const Tokenizer& tokenizer,
                                                  EngineOptions options);
  ~Engine();  // Shutdown(0)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues one request. InvalidArgument for a request that
  // can never run (empty prompt, ids outside the vocabulary, prompt plus
  // max_new_tokens beyond the context or the KV pool, bad stop strings or
  // logit settings, a group larger than max_queued_requests);
  // ResourceExhausted when the queue is full; Unavailable
  // while shutting down.
  StatusOr<std::shared_ptr<RequestStream>> Submit(EngineRequest request);
  // Several requests with the same prompt (n > 1): all or none are queued.
  StatusOr<std::vector<std::shared_ptr<RequestStream>>> SubmitGroup(
      std::vector<EngineRequest> requests);

  // Cancels the live request with this rid and every live request whose
  // rid is derived from it ("<rid>-<suffix>": the choices and prompts the
  // server split one HTTP request into). False when none matched.
  bool Abort(const std::string& rid);

  // Runs `task` on the scheduler thread between steps and waits for it
  // (flush_cache, integrity checks). Unavailable after shutdown.
  Status RunOnScheduler(std::function<Status()> task);
  // Drops every unlocked radix-cache entry; FailedPrecondition while
  // requests run.
  Status FlushCache();
  // KV pool + radix tree invariants, checked on the scheduler thread.
  Status CheckIntegrity();

  EngineStats Stats() const;
  // Called on the scheduler thread once per finished request.
  void SetTimingObserver(std::function<void(const RequestTiming&)> observer);

  // Stops accepting requests, lets running ones finish for up to `grace_s`
  // seconds, aborts the rest and joins the scheduler thread. Idempotent.
  void Shutdown(double grace_s);

  const EngineOptions& options() const { return options_; }
  int64_t context_length() const { return options_.context_length; }
  int64_t vocab_size() const;
  model::ModelRunner& runner() const { return runner_; }

 private:
  Engine(model::ModelRunner& runner, const Tokenizer& tokenizer,
         EngineOptions options);
  StatusOr<std::unique_ptr<Sequence>> Prepare(EngineRequest request);
  void Loop();

  model::ModelRunner& runner_;
  const Tokenizer& tokenizer_;
  EngineOptions options_;
  std::unique_ptr<Scheduler> scheduler_;  // scheduler-thread state

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Sequence>> inbox_;
  std::deque<std::function<void()>> tasks_;
  std::map<std::string, std::weak_ptr<RequestStream>> live_;
  std::function<void(const RequestTiming&)> observer_;
  EngineStats stats_;
  int64_t queued_ = 0;  // inbox + waiting, for max_queued_requests
  bool accepting_ = true;
  bool stop_ = false;
  double shutdown_grace_s_ = 0;  // Shutdown's grace for running requests

  std::atomic<uint64_t> next_rid_{1};
  std::thread thread_;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_ENGINE_H_
