// Engine: the serving core on one device — continuous batching over a
// ModelRunner with a paged KV pool and a radix prefix cache, driven by one
// scheduler thread.
//
// The loop (Engine::Loop), one step per iteration on the scheduler thread:
//   batch = scheduler.Schedule();                 bookkeeping only
//   executor.Launch(batch);                       forward + sampler, queued
//   scheduler.Postprocess(oldest, executor.Collect());
// with new requests, cancellations and tasks taken in between (AwaitWork).
// Overlap scheduling (max_inflight_launches 2, the default): step n + 1 is
// scheduled and launched before step n is collected, so the device runs
// while the host detokenizes, checks stops and builds the next batch; the
// tokens step n samples reach step n + 1 on the device. With 1 the loop is
// serial: launch, collect, postprocess.
// What a step does, in order (SGLang's event loop):
//   1. Schedule: drop cancelled requests (client gone, /abort_request),
//      freeing their KV;
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
//   4. Run: one forward pass over the mixed batch (prefill chunks and decode
//      tokens together; the paged_attention op reads cached prefixes), then
//      sampling (host logit processors and logprobs only for the rows that
//      need them);
//   5. Postprocess: per sequence, detokenize, stop tokens / strings /
//      length, push a RequestOutput; finished sequences give their KV to
//      the radix cache (prompt and generated tokens).
// A status line goes to the log every log_interval_s while busy
// (StatusReporter).
//
// n > 1: SubmitGroup's requests share a prompt; the followers wait until
// the leader's prompt KV is cached and then reuse it.
//
// Thread-safety: Submit*, Abort, Stats, RunOnScheduler and Shutdown may be
// called from any thread; the state they share with the scheduler thread is
// guarded by mu_ (annotated, checked by clang's -Wthread-safety). Everything
// else (runner, pool, cache, sequences) belongs to the scheduler thread.
#ifndef TESSERA_ENGINE_ENGINE_H_
#define TESSERA_ENGINE_ENGINE_H_

#include <atomic>
#include <chrono>
#include <optional>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "engine/engine_options.h"
#include "engine/executor.h"
#include "engine/request.h"
#include "engine/status_reporter.h"
#include "grammar/token_mask.h"
#include "model/model_runner.h"
#include "tokenizer/tokenizer.h"

namespace tessera::engine {

class Scheduler;
struct Sequence;
using SteadyClock = std::chrono::steady_clock;

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
  // (flush_cache, integrity checks). Unavailable once the loop has ended
  // (a task is either run or refused, never left waiting).
  Status RunOnScheduler(std::function<Status()> task);
  // Drops every unlocked radix-cache entry of every tier, or of `tier`
  // (device, host, storage: KvCacheManager::FlushTier); FailedPrecondition
  // while requests run.
  Status FlushCache(std::string_view tier = {});
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
  // The tokenizer's vocabulary as bytes for grammar masks, built on first
  // use (structured output) and shared by every sequence after.
  std::shared_ptr<const grammar::TokenVocabulary> GrammarVocabulary()
      TSR_EXCLUDES(vocab_mu_);
  // Called by the scheduler once per finished sequence.
  void OnFinished(const Sequence& seq) TSR_EXCLUDES(mu_);

  // Schedule -> Run -> Postprocess until AwaitWork says stop.
  void Loop();
  // Between steps: publishes the stats, waits for work (not at all while
  // sequences run), hands new requests to the scheduler, runs tasks,
  // applies the shutdown grace. False when the loop must end; then every
  // request and task still queued has been answered and later ones are
  // refused.
  // `busy`: a batch is in flight (never wait, never stop).
  bool AwaitWork(bool busy) TSR_EXCLUDES(mu_);
  void CheckDeviceAfterFailure() TSR_EXCLUDES(mu_);
  void PublishStats() TSR_EXCLUDES(mu_);
  // The loop's last act: answers what is still queued, refuses the rest.
  void CloseInbox() TSR_EXCLUDES(mu_);

  model::ModelRunner& runner_;
  const Tokenizer& tokenizer_;
  EngineOptions options_;
  // Scheduler-thread state.
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Executor> executor_;
  StatusReporter reporter_;
  std::optional<SteadyClock::time_point> stop_at_;  // shutdown deadline
  uint64_t waited_ns_ = 0;  // the loop's time waiting for work

  Mutex vocab_mu_;
  std::shared_ptr<const grammar::TokenVocabulary> grammar_vocab_
      TSR_GUARDED_BY(vocab_mu_);

  mutable Mutex mu_;
  CondVar cv_;  // inbox_, tasks_ or stop_ changed
  std::deque<std::unique_ptr<Sequence>> inbox_ TSR_GUARDED_BY(mu_);
  std::deque<std::function<void()>> tasks_ TSR_GUARDED_BY(mu_);
  std::map<std::string, std::weak_ptr<RequestStream>> live_ TSR_GUARDED_BY(mu_);
  std::function<void(const RequestTiming&)> observer_ TSR_GUARDED_BY(mu_);
  EngineStats stats_ TSR_GUARDED_BY(mu_);
  int64_t queued_ TSR_GUARDED_BY(mu_) = 0;  // inbox + waiting (max_queued)
  bool accepting_ TSR_GUARDED_BY(mu_) = true;
  // Set once when a failed step left the device unable to run (see
  // CheckDeviceAfterFailure); "" while healthy.
  std::string failure_ TSR_GUARDED_BY(mu_);
  bool stop_ TSR_GUARDED_BY(mu_) = false;
  double shutdown_grace_s_ TSR_GUARDED_BY(mu_) = 0;
  bool loop_done_ TSR_GUARDED_BY(mu_) = false;  // CloseInbox ran

  std::atomic<uint64_t> next_rid_{1};
  std::thread thread_;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_ENGINE_H_
