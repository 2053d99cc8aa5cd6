#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <random>
#include <utility>

#include "base/logging.h"
#include "engine/model_executor.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"

namespace tessera::engine {
namespace {

double SecondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

uint64_t RandomSeed() {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  return gen();
}

}  // namespace

StatusOr<DisaggMode> ParseDisaggMode(std::string_view name) {
  if (name == "null") return DisaggMode::kNull;
  if (name == "prefill") return DisaggMode::kPrefill;
  if (name == "decode") return DisaggMode::kDecode;
  return InvalidArgumentError(fmt::format(
      "unknown --disaggregation-mode '{}'; use null, prefill or decode", name));
}

const char* DisaggModeName(DisaggMode mode) {
  switch (mode) {
    case DisaggMode::kPrefill:
      return "prefill";
    case DisaggMode::kDecode:
      return "decode";
    case DisaggMode::kNull:
      break;
  }
  return "null";
}

StatusOr<SchedulePolicy> ParseSchedulePolicy(std::string_view name) {
  if (name == "lpm") return SchedulePolicy::kLongestPrefixMatch;
  if (name == "fcfs") return SchedulePolicy::kFirstComeFirstServed;
  return InvalidArgumentError(
      fmt::format("unknown --schedule-policy '{}'; use lpm or fcfs", name));
}

Engine::Engine(model::ModelRunner& runner, const Tokenizer& tokenizer,
               EngineOptions options)
    : runner_(runner),
      tokenizer_(tokenizer),
      options_(std::move(options)),
      reporter_(options_.log_interval_s) {}

Engine::~Engine() { Shutdown(0); }

int64_t Engine::vocab_size() const { return runner_.config().vocab_size; }

StatusOr<std::unique_ptr<Engine>> Engine::Create(model::ModelRunner& runner,
                                                 const Tokenizer& tokenizer,
                                                 EngineOptions options) {
  const int64_t model_ctx = runner.config().max_position_embeddings;
  if (options.context_length <= 0) options.context_length = model_ctx;
  if (options.context_length <= 1) {
    return InvalidArgumentError(
        "the model's context length is unknown; pass --context-length");
  }
  if (options.max_running_requests < 1) {
    return InvalidArgumentError("--max-running-requests must be at least 1");
  }
  if (options.pooling) {
    if (options.tp != nullptr) {
      return InvalidArgumentError(
          "--is-embedding does not run with --tp-size > 1 yet; serve the "
          "embedding model on one device");
    }
    if (options.disagg_mode != DisaggMode::kNull) {
      return InvalidArgumentError(
          "--is-embedding has no decode phase to disaggregate; drop "
          "--disaggregation-mode");
    }
    if (options.pooling->mode != model::PoolingMode::kLast &&
        !options.disable_radix_cache) {
      // A cached prefix has K/V but no hidden states to pool.
      TSR_LOG_INFO("{} pooling reads every prompt token's hidden state: the "
                   "radix cache's prefix reuse is off",
                   model::PoolingModeName(options.pooling->mode));
      options.disable_radix_cache = true;
    }
  }
  if (options.max_inflight_launches < 1 || options.max_inflight_launches > 2) {
    return InvalidArgumentError(fmt::format(
        "--max-inflight-launches {} must be 1 (serial) or 2 (overlap)",
        options.max_inflight_launches));
  }
  std::unique_ptr<Engine> engine(
      new Engine(runner, tokenizer, std::move(options)));
  Engine* e = engine.get();
  e->scheduler_ = std::make_unique<Scheduler>(
      runner.kv_pool(), e->options_,
      [e](const Sequence& seq) { e->OnFinished(seq); });
  if (e->options_.hicache.enabled) {
    if (e->options_.tp != nullptr) {
      return InvalidArgumentError(
          "--enable-hierarchical-cache does not run with --tp-size > 1 yet "
          "(each rank's KV shard would need its own host tier); drop one of "
          "them");
    }
    TSR_ASSIGN_OR_RETURN(
        std::unique_ptr<HiCache> hicache,
        HiCache::Create(runner.device(), runner.kv_pool(),
                        e->scheduler_->kv().cache(), e->options_.hicache));
    e->scheduler_->kv().AttachHostTier(std::move(hicache));
  }
  e->executor_ = std::make_unique<ModelExecutor>(runner, e->options_.tp,
                                                 e->options_.pooling);
  e->thread_ = std::thread([e] { e->Loop(); });

  // Warm-up: one short request through the whole path (allocates the
  // workspace, resolves every op), then a clean cache and statistics.
  EngineRequest warm;
  warm.rid = "warmup";
  warm.prompt_ids = {0, std::min<int32_t>(1, e->vocab_size() - 1)};
  warm.max_new_tokens = 2;
  warm.ignore_eos = true;
  TSR_ASSIGN_OR_RETURN(std::shared_ptr<RequestStream> stream,
                       e->Submit(std::move(warm)));
  const RequestOutput warmed = stream->WaitFinal();
  if (warmed.finish.server_abort()) {
    return InternalError(fmt::format(
        "the warm-up request through the model failed: {}; run `tessera "
        "doctor` to check the device",
        warmed.finish.message));
  }
  TSR_RETURN_IF_ERROR(e->RunOnScheduler(
      [e] { return e->scheduler_->kv().Flush(/*include_storage=*/false); }));
  {
    MutexLock lock(&e->mu_);
    e->stats_ = EngineStats{};
    e->stats_.ready = true;
  }
  return engine;
}

void Engine::OnFinished(const Sequence& seq) {
  RequestTiming t;
  t.queue_s = seq.first_admit ? std::chrono::duration<double>(
                                    *seq.first_admit - seq.arrival)
                                    .count()
                              : SecondsSince(seq.arrival);
  t.ttft_s = seq.ttft_s;
  t.e2e_s = SecondsSince(seq.arrival);
  t.itl_s = seq.itl_s;
  t.prompt_tokens = seq.prompt_len();
  t.completion_tokens = seq.generated();
  t.cached_tokens = seq.cached_tokens;
  t.aborted = seq.stream->cancelled() || !seq.last_token;
  std::function<void(const RequestTiming&)> observer;
  {
    MutexLock lock(&mu_);
    live_.erase(seq.stream->rid());
    stats_.prompt_tokens_total += t.prompt_tokens;
    stats_.cached_tokens_total += t.cached_tokens;
    stats_.requests_total += 1;
    if (seq.stream->cancelled()) stats_.aborted_total += 1;
    observer = observer_;
  }
  if (observer) observer(t);
}

std::shared_ptr<const grammar::TokenVocabulary> Engine::GrammarVocabulary() {
  MutexLock lock(&vocab_mu_);
  if (grammar_vocab_ == nullptr) {
    const auto start = SteadyClock::now();
    grammar_vocab_ = grammar::TokenVocabulary::Build(tokenizer_);
    TSR_LOG_INFO(
        "structured output: the vocabulary's {} tokens as bytes in {:.0f} ms "
        "(once per server)",
        grammar_vocab_->size(),
        std::chrono::duration<double, std::milli>(SteadyClock::now() - start)
            .count());
  }
  return grammar_vocab_;
}

StatusOr<std::unique_ptr<Sequence>> Engine::Prepare(EngineRequest request) {
  const int64_t vocab = vocab_size();
  const int64_t prompt_len = static_cast<int64_t>(request.prompt_ids.size());
  if (prompt_len == 0) {
    return InvalidArgumentError("the prompt is empty; give at least one token");
  }
  for (int32_t id : request.prompt_ids) {
    if (id < 0 || id >= vocab) {
      return InvalidArgumentError(fmt::format(
          "prompt token id {} is outside the vocabulary [0, {})", id, vocab));
    }
  }
  const int64_t ctx = options_.context_length;
  const int64_t pool = runner_.kv_pool().num_slots();
  // 0: score the prompt only (its logprobs), as OpenAI's echo allows.
  const int64_t min_new = request.prompt_logprobs >= 0 ? 0 : 1;
  if (request.max_new_tokens && *request.max_new_tokens < min_new) {
    return InvalidArgumentError(
        min_new == 0 ? "max_tokens must not be negative"
                     : "max_tokens must be at least 1");
  }
  if (request.prompt_logprobs >= 0 && request.bootstrap) {
    return InvalidArgumentError(
        "prompt logprobs are not supported with PD disaggregation");
  }
  if (prompt_len + request.max_new_tokens.value_or(1) > ctx) {
    return InvalidArgumentError(fmt::format(
        "This model's maximum context length is {} tokens. However, you "
        "requested {} tokens ({} in the prompt, {} for the completion). "
        "Please reduce the prompt or max_tokens.",
        ctx, prompt_len + request.max_new_tokens.value_or(1), prompt_len,
        request.max_new_tokens.value_or(1)));
  }
  int64_t max_new = request.max_new_tokens.value_or(ctx - prompt_len);
  if (request.bootstrap) {
    if (options_.disagg_mode == DisaggMode::kNull) {
      return InvalidArgumentError(
          "bootstrap_host/bootstrap_room are for PD disaggregation; this "
          "server was started without --disaggregation-mode");
    }
    // A prefill server computes the prompt and the first token only.
    if (options_.disagg_mode == DisaggMode::kPrefill) max_new = 1;
  }
  if (prompt_len + max_new > pool) {
    if (request.max_new_tokens || prompt_len + 1 > pool) {
      return InvalidArgumentError(fmt::format(
          "the KV cache pool holds {} tokens but this request needs up to {} "
          "({} in the prompt, {} for the completion); lower max_tokens or "
          "start the server with a larger --max-total-tokens",
          pool, prompt_len + max_new, prompt_len, max_new));
    }
    max_new = pool - prompt_len;
  }
  TSR_ASSIGN_OR_RETURN(
      StopTokens stops,
      StopTokens::Create(options_.eos_ids, request.stop_token_ids,
                         request.ignore_eos, vocab));
  TSR_ASSIGN_OR_RETURN(StopMatcher matcher, StopMatcher::Create(request.stop));
  request.logit.min_tokens_stop_ids = stops.ActiveIds();
  TSR_ASSIGN_OR_RETURN(
      LogitProcessor processor,
      LogitProcessor::Create(request.logit, vocab, request.prompt_ids));
  if (request.rid.empty()) {
    request.rid = fmt::format("req-{}", next_rid_.fetch_add(1));
  }
  const uint64_t seed = request.seed ? *request.seed : RandomSeed();
  auto seq = std::make_unique<Sequence>(std::move(request), tokenizer_,
                                        std::move(stops), std::move(matcher),
                                        std::move(processor), seed, max_new);
  if (options_.pooling) {
    seq->max_new_tokens = 1;  // the embedding takes the first token's place
    seq->pooler.emplace(*options_.pooling, runner_.config().hidden_size);
  }
  if (seq->request.grammar != nullptr) {
    seq->grammar_vocab = GrammarVocabulary();
    seq->grammar_matcher =
        std::make_unique<grammar::GrammarMatcher>(seq->request.grammar);
    seq->grammar_stop_ids = seq->stop_tokens.ActiveIds();
    if (seq->request.grammar_after_reasoning) {
      seq->grammar_phase = seq->request.grammar_after_reasoning->opens
                               ? Sequence::GrammarPhase::kMayReason
                               : Sequence::GrammarPhase::kReasoning;
    }
  }
  seq->stream = std::make_shared<RequestStream>(seq->request.rid);
  return seq;
}

StatusOr<std::shared_ptr<RequestStream>> Engine::Submit(EngineRequest request) {
  std::vector<EngineRequest> one;
  one.push_back(std::move(request));
  TSR_ASSIGN_OR_RETURN(auto streams, SubmitGroup(std::move(one)));
  return streams[0];
}

StatusOr<std::vector<std::shared_ptr<RequestStream>>> Engine::SubmitGroup(
    std::vector<EngineRequest> requests) {
  if (requests.size() > 1) {
    for (const EngineRequest& r : requests) {
      if (r.bootstrap) {
        return InvalidArgumentError(
            "n > 1 is not supported with PD disaggregation (one bootstrap "
            "room per request); send n separate requests");
      }
    }
  }
  if (requests.empty()) return InvalidArgumentError("no requests");
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (EngineRequest& r : requests) {
    TSR_ASSIGN_OR_RETURN(std::unique_ptr<Sequence> seq, Prepare(std::move(r)));
    seqs.push_back(std::move(seq));
  }
  if (seqs.size() > 1) {
    auto group = std::make_shared<SequenceGroup>();
    for (size_t i = 0; i < seqs.size(); ++i) {
      seqs[i]->group = group;
      seqs[i]->group_leader = i == 0;
    }
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  {
    MutexLock lock(&mu_);
    if (!accepting_) {
      return UnavailableError("the server is shutting down");
    }
    if (!failure_.empty()) return UnavailableError(failure_);
    const int64_t max_q = options_.max_queued_requests;
    if (max_q > 0 && static_cast<int64_t>(seqs.size()) > max_q) {
      // Retrying cannot help: the group needs more slots than exist.
      return InvalidArgumentError(fmt::format(
          "this request needs {} queue slots at once (one per choice) but "
          "the server queues at most {} (--max-queued-requests); lower 'n'",
          seqs.size(), max_q));
    }
    if (max_q > 0 &&
        queued_ + static_cast<int64_t>(inbox_.size() + seqs.size()) > max_q) {
      return ResourceExhaustedError(fmt::format(
          "the request queue is full ({} waiting, --max-queued-requests "
          "{}); retry later",
          queued_ + static_cast<int64_t>(inbox_.size()), max_q));
    }
    for (auto& seq : seqs) {
      if (live_.count(seq->request.rid) != 0) {
        return InvalidArgumentError(fmt::format(
            "a request with rid '{}' is already running; rids must be "
            "unique",
            seq->request.rid));
      }
    }
    for (auto& seq : seqs) {
      live_[seq->request.rid] = seq->stream;
      streams.push_back(seq->stream);
      inbox_.push_back(std::move(seq));
    }
  }
  cv_.SignalAll();
  return streams;
}

bool Engine::Abort(const std::string& rid) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  {
    MutexLock lock(&mu_);
    // live_ is ordered: rid and "rid-..." follow each other from rid on.
    for (auto it = live_.lower_bound(rid);
         it != live_.end() && it->first.compare(0, rid.size(), rid) == 0;
         ++it) {
      const bool derived =
          it->first.size() > rid.size() && it->first[rid.size()] == '-';
      if (it->first.size() != rid.size() && !derived) continue;
      if (auto stream = it->second.lock()) streams.push_back(stream);
    }
  }
  for (auto& stream : streams) stream->Cancel(AbortCause::kAbortRequest, "aborted by /abort_request");
  if (!streams.empty()) cv_.SignalAll();
  return !streams.empty();
}

Status Engine::RunOnScheduler(std::function<Status()> task) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> result = promise->get_future();
  {
    MutexLock lock(&mu_);
    if (loop_done_) return UnavailableError("the engine has stopped");
    // The stats a caller reads after the task reflect it (e.g. a flush).
    tasks_.push_back([this, task = std::move(task), promise] {
      Status status = task();
      PublishStats();
      promise->set_value(std::move(status));
    });
  }
  cv_.SignalAll();
  return result.get();
}

Status Engine::FlushCache(std::string_view tier) {
  return RunOnScheduler([this, tier = std::string(tier)]() -> Status {
    if (scheduler_->has_work()) {
      return FailedPreconditionError(
          "cache not flushed: requests are still running or queued");
    }
    if (tier.empty()) return scheduler_->kv().Flush();
    return scheduler_->kv().FlushTier(tier);
  });
}

Status Engine::CheckIntegrity() {
  return RunOnScheduler([this] {
    // Transfers in flight hold locks; settle them so the check sees the
    // tree at rest.
    scheduler_->kv().DrainTransfers();
    return scheduler_->kv().CheckIntegrity();
  });
}

EngineStats Engine::Stats() const {
  MutexLock lock(&mu_);
  EngineStats out = stats_;
  out.failure = failure_;  // at once, not at the next publication
  return out;
}

void Engine::SetTimingObserver(
    std::function<void(const RequestTiming&)> observer) {
  MutexLock lock(&mu_);
  observer_ = std::move(observer);
}

void Engine::Shutdown(double grace_s) {
  {
    MutexLock lock(&mu_);
    accepting_ = false;
    if (!stop_) {
      stop_ = true;
      shutdown_grace_s_ = grace_s;
    }
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void Engine::Loop() {
  std::deque<ScheduledBatch> inflight;  // launched, not yet postprocessed
  const size_t max_inflight = static_cast<size_t>(options_.max_inflight_launches);
  while (AwaitWork(!inflight.empty())) {
    ScheduledBatch batch = scheduler_->Schedule();
    const bool launched = !batch.empty();
    if (launched) {
      executor_->Launch(batch);
      inflight.push_back(std::move(batch));
    }
    // Postprocess the oldest batch once the next is on its way (or when
    // nothing new could be launched).
    if (!inflight.empty() && (inflight.size() >= max_inflight || !launched)) {
      StatusOr<StepResult> result = executor_->Collect();
      // Before the failed step's requests see their abort, so whoever they
      // tell already finds the engine's verdict.
      if (!result.ok()) CheckDeviceAfterFailure();
      scheduler_->Postprocess(inflight.front(), std::move(result));
      inflight.pop_front();
    }
  }
  CloseInbox();
}

// A step failed (Scheduler::Postprocess then aborts every request). If the
// device cannot run another step (a sticky stream error), the engine stops
// for good: /health answers 503 with the reason, new requests are refused,
// and an orchestrator restarts the server. Otherwise it serves on.
void Engine::CheckDeviceAfterFailure() {
  Status health = executor_->Health();
  if (health.ok()) return;
  const std::string why = fmt::format(
      "the device failed ({}); the engine stopped serving: restart the server",
      health.ToString());
  MutexLock lock(&mu_);
  if (!failure_.empty()) return;  // said once
  failure_ = why;
  TSR_LOG_ERROR("{}", why);
}

bool Engine::AwaitWork(bool busy) {
  PublishStats();
  std::deque<std::unique_ptr<Sequence>> incoming;
  std::deque<std::function<void()>> tasks;
  bool stopping = false;
  std::string failure;  // failure_, read with the rest
  {
    MutexLock lock(&mu_);
    if (inbox_.empty() && tasks_.empty() && !stop_) {
      // Running sequences or a batch in flight: no wait. Only queued ones
      // that cannot start (waiting for pages or a group leader): poll every
      // 2 ms. Idle: until woken (the 100 ms bound keeps the stats fresh).
      const bool runnable =
          busy || scheduler_->running() > scheduler_->transferring();
      if (!runnable) {
        const auto wait = scheduler_->has_work()
                              ? std::chrono::milliseconds(2)
                              : std::chrono::milliseconds(100);
        const auto wait_start = SteadyClock::now();
        cv_.WaitFor(&mu_, wait);
        waited_ns_ += static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(
                SteadyClock::now() - wait_start)
                .count());
      }
    }
    incoming.swap(inbox_);
    tasks.swap(tasks_);
    stopping = stop_;
    failure = failure_;
    if (stopping && !stop_at_) {
      stop_at_ = SteadyClock::now() +
                 std::chrono::duration_cast<SteadyClock::duration>(
                     std::chrono::duration<double>(
                         std::max(0.0, shutdown_grace_s_)));
    }
  }
  for (auto& seq : incoming) scheduler_->Enqueue(std::move(seq));
  for (auto& task : tasks) task();
  // Requests that slipped in while the device failed.
  if (!failure.empty() && scheduler_->has_work()) {
    scheduler_->AbortAll(AbortCause::kError, failure);
  }
  if (stopping && SteadyClock::now() >= *stop_at_ && scheduler_->has_work()) {
    scheduler_->AbortAll(AbortCause::kShutdown, "the server is shutting down");
  }
  return busy || !(stopping && !scheduler_->has_work());
}

void Engine::PublishStats() {
  MutexLock lock(&mu_);
  scheduler_->FillStats(stats_);
  stats_.queued = scheduler_->waiting() + static_cast<int64_t>(inbox_.size());
  queued_ = scheduler_->waiting();
  // The plugin is asked for its busy time once per rate interval only.
  reporter_.Update(stats_, [this] { return executor_->DeviceBusyNs(); },
                   waited_ns_);
}

void Engine::CloseInbox() {
  std::deque<std::unique_ptr<Sequence>> late;
  std::deque<std::function<void()>> tasks;
  {
    MutexLock lock(&mu_);
    loop_done_ = true;  // from here on RunOnScheduler refuses
    late.swap(inbox_);
    tasks.swap(tasks_);
  }
  for (auto& seq : late) {
    seq->stream->Push(seq->AbortOutput(AbortCause::kShutdown,
                                       "the server is shutting down"));
  }
  for (auto& task : tasks) task();
  PublishStats();
}

}  // namespace tessera::engine
