#include "engine/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "base/logging.h"

namespace tessera::engine {
namespace {

// Prefill keeps at least this much room per step when decode rows fill the
// budget, so queued prompts are never starved by a large decode batch.
constexpr int64_t kMinPrefillBudget = 64;
// Above this many waiting requests lpm falls back to arrival order (the
// prefix lookups would cost more than they save), as SGLang does.
constexpr size_t kLpmMaxQueue = 128;
// In-batch prefix sharing: a waiting request whose not-yet-cached prompt
// starts with at least this many tokens of a prompt admitted in the same
// step waits one step and then reuses that prompt's KV from the cache
// (SGLang's in-batch prefix caching check uses the same idea).
constexpr int64_t kInBatchShareTokens = 32;
// Prompt logprobs bring a logits row per prompt token to the host: their
// prompts are computed in chunks of at most this many tokens, so a step's
// logits stay [decode rows + 512, V].
constexpr int64_t kPromptLogprobChunk = 512;

// A request that scores its prompt: computed whole, in capped chunks.
bool ScoresPrompt(const Sequence& s) {
  return s.request.prompt_logprobs >= 0;
}

int64_t CommonPrefix(const std::vector<int32_t>& a,
                     const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

// The prompt positions a sequence must have in the KV cache before it
// decodes: all tokens except a pending sampled one.
int64_t PrefillTarget(const Sequence& s) {
  return static_cast<int64_t>(s.tokens.size()) - (s.generated() > 0 ? 1 : 0);
}

}  // namespace

Scheduler::Scheduler(kv::KvPool& pool, const EngineOptions& options,
                     FinishFn on_finish)
    : options_(options),
      on_finish_(std::move(on_finish)),
      cache_(kv::RadixCacheOptions{pool.page_size(),
                                   options.disable_radix_cache}),
      kv_(pool, cache_) {}

void Scheduler::Enqueue(std::unique_ptr<Sequence> seq) {
  waiting_.push_back(std::move(seq));
}

void Scheduler::Finish(Sequence* seq, RequestOutput last) {
  if (seq->kv_progress != nullptr) {
    // Ended before its step was collected: the sender stops streaming.
    seq->kv_progress->Finish(
        AbortedError("the request ended before its KV was written"));
    seq->kv_progress.reset();
  }
  if (seq->transfer != Sequence::Transfer::kNone) {
    const uint64_t room = seq->request.bootstrap->room;
    transfers_.erase(room);
    // Decode side: the prefill server may still write these pages. Prefill
    // side: layers may be on the wire (Cancel is false), being read. Either
    // way the pages are held until the transfer engine reports the room.
    if (seq->transfer == Sequence::Transfer::kAwaiting ||
        !options_.kv_sender->Cancel(room)) {
      Quarantined q;
      q.cached.assign(seq->tokens.begin(), seq->tokens.begin() + seq->kv_len);
      q.kv = std::move(seq->kv);
      seq->kv = SequenceKv{};
      quarantine_[room] = std::move(q);
    }
    seq->transfer = Sequence::Transfer::kNone;
  }
  if (!seq->kv.pages.empty() || seq->kv.lock_node != nullptr) {
    Status released = kv_.Release(
        std::span<const int32_t>(seq->tokens).first(seq->kv_len), seq->kv);
    if (!released.ok()) {
      TSR_LOG_ERROR("releasing the KV of request {}: {}", seq->stream->rid(),
                    released.ToString());
    }
  }
  seq->kv_len = 0;
  if (chunked_ == seq) chunked_ = nullptr;
  if (seq->group_leader && seq->group) seq->group->leader_prefilled = true;
  seq->finished = true;
  // Bookkeeping first, so a client that sees the last output sees the
  // request gone (e.g. /abort_request answers "not found").
  on_finish_(*seq);
  seq->stream->Push(std::move(last));
}

void Scheduler::RemoveFinished() {
  auto done = std::stable_partition(
      running_.begin(), running_.end(),
      [](const std::unique_ptr<Sequence>& s) { return !s->finished; });
  for (auto it = done; it != running_.end(); ++it) {
    retired_.push_back(std::move(*it));
  }
  running_.erase(done, running_.end());
}

void Scheduler::ReapCancelled() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    Sequence* s = it->get();
    if (s->stream->cancelled()) {
      Finish(s, s->AbortOutput(s->stream->cancel_cause(), s->stream->cancel_reason()));
      retired_.push_back(std::move(*it));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& s : running_) {
    if (!s->stream->cancelled() || s->finished) continue;
    // A prefill request whose KV is on the wire ends now too: Finish holds
    // its pages until the sender reports the room.
    Finish(s.get(), s->AbortOutput(s->stream->cancel_cause(), s->stream->cancel_reason()));
  }
  RemoveFinished();
}

void Scheduler::AbortAll(AbortCause cause, const std::string& why) {
  for (auto& s : waiting_) {
    Finish(s.get(), s->AbortOutput(cause, why));
    retired_.push_back(std::move(s));
  }
  waiting_.clear();
  for (auto& s : running_) {
    if (!s->finished) Finish(s.get(), s->AbortOutput(cause, why));
  }
  RemoveFinished();
  chunked_ = nullptr;
}

void Scheduler::Retract(Sequence* seq) {
  // A prompt being scored is scored again from its start when it resumes.
  if (seq->generated() == 0) seq->prompt_logprobs.clear();
  Status released = kv_.Release(
      std::span<const int32_t>(seq->tokens).first(seq->kv_len), seq->kv);
  if (!released.ok()) {
    TSR_LOG_ERROR("retracting request {}: {}", seq->stream->rid(),
                  released.ToString());
  }
  seq->kv_len = 0;
  if (chunked_ == seq) chunked_ = nullptr;
  auto it = std::find_if(running_.begin(), running_.end(),
                         [&](const auto& p) { return p.get() == seq; });
  waiting_.push_front(std::move(*it));
  running_.erase(it);
  ++retractions_;
}

bool Scheduler::ReserveDecode(std::vector<Sequence*>& decode) {
  size_t i = 0;
  while (i < decode.size()) {
    Sequence* s = decode[i];
    if (kv_.Reserve(s->kv, s->kv_len + 1).ok()) {
      ++i;
      continue;
    }
    // Retraction needs every token on the host: wait for the batch in
    // flight (the slots reserved so far stay reserved for the next try).
    if (inflight_ > 0) return false;
    if (running_.size() == 1) {
      // Alone and still out of room: the pool cannot hold this sequence
      // (Submit bounds prompt + max tokens by the pool, so only a pool
      // shared with something else gets here).
      Finish(s, s->AbortOutput(AbortCause::kError, "the KV cache pool is too small for this "
                               "request; start the server with a larger "
                               "--max-total-tokens"));
      decode.erase(decode.begin() + static_cast<std::ptrdiff_t>(i));
      RemoveFinished();
      continue;
    }
    // The most recently admitted sequence that is not mid KV transfer
    // (those pages are being read or written by another server).
    Sequence* victim = nullptr;
    for (auto r = running_.rbegin(); r != running_.rend(); ++r) {
      if ((*r)->transfer == Sequence::Transfer::kNone) {
        victim = r->get();
        break;
      }
    }
    if (victim == nullptr) return false;  // wait for the transfers
    TSR_LOG_DEBUG("KV pool full: retracting request {} ({} tokens)",
                  victim->stream->rid(), victim->tokens.size());
    Retract(victim);
    auto it = std::find(decode.begin(), decode.end(), victim);
    if (it != decode.end()) decode.erase(it);
  }
  return true;
}

void Scheduler::SortWaiting() {
  if (options_.policy != SchedulePolicy::kLongestPrefixMatch ||
      cache_.disabled() || waiting_.size() < 2 ||
      waiting_.size() > kLpmMaxQueue) {
    return;
  }
  std::vector<std::pair<int64_t, size_t>> keys;
  keys.reserve(waiting_.size());
  for (size_t i = 0; i < waiting_.size(); ++i) {
    const auto& t = waiting_[i]->tokens;
    keys.emplace_back(
        cache_.PrefixLength(std::span<const int32_t>(t).first(t.size() - 1)),
        i);
  }
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    return a.first > b.first;
  });
  std::deque<std::unique_ptr<Sequence>> sorted;
  for (const auto& k : keys) sorted.push_back(std::move(waiting_[k.second]));
  waiting_ = std::move(sorted);
}

void Scheduler::SchedulePrefill(int64_t budget, ScheduledBatch& batch) {
  // A prefill row samples when it completes a fresh prompt (a resumed
  // sequence already has its pending token).
  auto add_row = [&batch](Sequence* s, int64_t n) {
    const bool completes = s->kv_len + n >= PrefillTarget(*s);
    batch.rows.push_back({s, n, 0, completes && s->generated() == 0, true, -1});
  };
  if (chunked_ != nullptr) {
    Sequence* s = chunked_;
    int64_t n = std::min(PrefillTarget(*s) - s->kv_len, budget);
    if (ScoresPrompt(*s)) n = std::min(n, kPromptLogprobChunk);
    if (n > 0 && kv_.Reserve(s->kv, s->kv_len + n).ok()) {
      add_row(s, n);
      budget -= n;
      if (s->kv_len + n >= PrefillTarget(*s)) chunked_ = nullptr;
    }
    if (chunked_ != nullptr) return;  // one chunked prompt at a time
  }
  if (waiting_.empty() || budget <= 0) return;
  SortWaiting();
  const auto now = SteadyClock::now();
  std::vector<const Sequence*> admitted;  // this step, prompts computing
  auto it = waiting_.begin();
  while (it != waiting_.end() && budget > 0 &&
         static_cast<int64_t>(running_.size()) <
             options_.max_running_requests) {
    Sequence* s = it->get();
    if (s->group && !s->group_leader && !s->group->leader_prefilled &&
        !cache_.disabled()) {
      ++it;  // wait for the leader's prompt KV
      continue;
    }
    const auto& t = s->tokens;
    if (!cache_.disabled() && !ScoresPrompt(*s) &&
        (!admitted.empty() || !prefills_in_flight_.empty())) {
      const int64_t cached = cache_.PrefixLength(
          std::span<const int32_t>(t).first(t.size() - 1));
      const int64_t share = std::max<int64_t>(kInBatchShareTokens,
                                              cache_.page_size());
      bool defer = false;
      for (const Sequence* other : admitted) {
        defer = defer || CommonPrefix(t, other->tokens) - cached >= share;
      }
      // Also prompts computed by the batch in flight: their KV reaches the
      // cache when it is postprocessed.
      for (const Sequence* other : prefills_in_flight_) {
        defer = defer || CommonPrefix(t, other->tokens) - cached >= share;
      }
      if (defer) {
        ++it;  // next step its prefix is in the cache
        continue;
      }
    }
    // Host tier: a prefix held on the host comes back first; the request
    // waits for that load while the others run.
    if (!ScoresPrompt(*s) &&
        kv_.StartLoad(std::span<const int32_t>(t).first(t.size() - 1))) {
      ++it;
      continue;
    }
    if (ReceivesKv(*s)) {
      if (!AdmitAwaitingKv(s)) break;
      running_.push_back(std::move(*it));
      it = waiting_.erase(it);
      continue;
    }
    // A scored prompt needs the logits of every position: no cached prefix.
    const int64_t matched =
        ScoresPrompt(*s) ? 0
                         : kv_.MatchAndLock(
                               std::span<const int32_t>(t).first(t.size() - 1),
                               s->kv);
    s->kv_len = matched;
    const int64_t target = PrefillTarget(*s);
    const int64_t remaining = target - matched;
    int64_t n = std::min(remaining, budget);
    if (ScoresPrompt(*s)) n = std::min(n, kPromptLogprobChunk);
    // Admit only when the whole remaining prompt and its first decode slot
    // fit now; chunked prompts keep their room across steps.
    if (!kv_.CanReserve(s->kv, target + 1) ||
        !kv_.Reserve(s->kv, s->kv_len + n).ok()) {
      (void)kv_.Release(std::span<const int32_t>(t).first(matched), s->kv);
      s->kv_len = 0;
      break;
    }
    if (!s->admitted_once) {
      s->admitted_once = true;
      s->cached_tokens = std::min(matched, s->prompt_len());
      s->first_admit = now;
    }
    running_.push_back(std::move(*it));
    it = waiting_.erase(it);
    if (n > 0) admitted.push_back(s);
    if (n > 0) {
      add_row(s, n);
      budget -= n;
      if (s->kv_len + n < target) {
        chunked_ = s;
        break;
      }
    }
  }
}

ScheduledBatch Scheduler::Schedule() {
  kv_.PollTransfers();
  PollTransfers();
  ReapCancelled();
  ScheduledBatch batch;
  last_batch_size_ = 0;
  if (!has_work()) return batch;
  auto blocked = [&batch] {
    batch.rows.clear();
    batch.num_decode = 0;
    batch.blocked = true;
    return batch;
  };
  std::vector<Sequence*> decode;
  for (auto& s : running_) {
    if (s->prefilling() || s->transfer != Sequence::Transfer::kNone) continue;
    if (s->pending_row >= 0) {
      // Its next token is being sampled by the batch in flight.
      if (s->pending_batch != last_batch_id_ || s->needs_host_logits()) {
        return blocked();  // logit processors need that token on the host
      }
      if (s->generated() + 1 >= s->max_new_tokens) continue;  // its last
    }
    decode.push_back(s.get());
  }
  if (!ReserveDecode(decode)) return blocked();
  for (Sequence* s : decode) {
    batch.rows.push_back({s, 1, 0, true, false, -1});
  }
  batch.num_decode = static_cast<int64_t>(decode.size());
  int64_t budget = std::numeric_limits<int64_t>::max();
  if (options_.chunked_prefill_size > 0) {
    budget = std::max(
        options_.chunked_prefill_size - static_cast<int64_t>(decode.size()),
        std::min(kMinPrefillBudget, options_.chunked_prefill_size));
  }
  SchedulePrefill(budget, batch);
  if (batch.empty()) return batch;

  // Commit: the rows' positions now count as computed (stream order makes
  // them so before any later step reads them).
  batch.id = ++last_batch_id_;
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    BatchRow& row = batch.rows[i];
    Sequence* s = row.seq;
    if (s->pending_row >= 0) row.input_from = s->pending_row;
    row.kv_start = s->kv_len;
    s->kv_len += row.n;
    if (row.sample) {
      s->pending_batch = batch.id;
      s->pending_row = static_cast<int64_t>(i);
    }
    if (row.prefill) prefills_in_flight_.push_back(s);
    if (row.prefill && row.sample && SendsKv(*s) && s->max_new_tokens != 0 &&
        !s->pooler) {
      BeginKvSend(row);
    }
  }
  ++inflight_;
  last_batch_size_ = batch.size();
  return batch;
}

void Scheduler::Postprocess(const ScheduledBatch& batch,
                            StatusOr<StepResult> result) {
  // Sequences retired before this call may still be referenced by this
  // batch (and no later one): they go when it is done.
  std::vector<std::unique_ptr<Sequence>> done_with;
  done_with.swap(retired_);
  --inflight_;
  for (const BatchRow& row : batch.rows) {
    if (!row.prefill) continue;
    auto it = std::find(prefills_in_flight_.begin(), prefills_in_flight_.end(),
                        row.seq);
    if (it != prefills_in_flight_.end()) prefills_in_flight_.erase(it);
  }
  if (result.ok() && result->ids.size() != batch.rows.size()) {
    result = InternalError(fmt::format("the executor returned {} ids for {} rows",
                                       result->ids.size(), batch.rows.size()));
  }
  if (!result.ok()) {
    TSR_LOG_ERROR("model step failed: {}; aborting the batch",
                  result.status().ToString());
    AbortAll(AbortCause::kError,
             "internal error: " + result.status().ToString());
    return;
  }
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const BatchRow& row = batch.rows[i];
    Sequence* s = row.seq;
    if (row.sample && s->pending_batch == batch.id &&
        s->pending_row == static_cast<int64_t>(i)) {
      s->pending_row = -1;  // the token arrives now
    }
    if (s->finished) continue;  // ended meanwhile: the token is discarded
    // A prompt streaming to a decode server is cached when its transfer
    // ends (Finish's Release): caching now could swap its pages for a
    // duplicate's and free them while the sender still reads them.
    if (row.prefill && s->transfer != Sequence::Transfer::kSending) {
      Status cached = kv_.CacheComputed(
          std::span<const int32_t>(s->tokens).first(row.kv_start + row.n),
          s->kv);
      if (!cached.ok()) {
        TSR_LOG_WARN("caching the prompt of {}: {}", s->stream->rid(),
                     cached.ToString());
      }
      if (row.kv_start + row.n >= PrefillTarget(*s) && s->group_leader &&
          s->group) {
        s->group->leader_prefilled = true;
      }
    }
    if (s->pooler && i < result->hidden.size() && !result->hidden[i].empty()) {
      s->pooler->Add(result->hidden[i]);
    }
    if (i < result->prompt_logprobs.size()) {
      for (TokenLogprobs& lp : result->prompt_logprobs[i]) {
        s->prompt_logprobs.push_back(std::move(lp));
      }
    }
    if (!row.sample) continue;
    if (s->pooler) {
      Finish(s, s->EmbeddingOutput());
      continue;
    }
    if (s->max_new_tokens == 0) {
      Finish(s, s->PromptOnlyOutput());
      continue;
    }
    ++generated_total_;
    RequestOutput out = s->AcceptToken(
        result->ids[i], i < result->logprobs.size()
                            ? std::move(result->logprobs[i])
                            : std::nullopt);
    if (SendsKv(*s) && s->generated() == 1) {
      // Prefill server: the prompt's KV (streaming since BeginKvSend) and
      // this token go to the decode server; the request ends when they
      // have arrived.
      if (s->kv_progress != nullptr) {
        s->kv_progress->Finish(OkStatus());  // every layer is written
        s->kv_progress.reset();
      }
      // BeginKvSend gave the sender the prompt and its slots and put the
      // sequence in transfers_ (kSending); only the first token is new.
      KvSendJob job;
      job.room = s->request.bootstrap->room;
      job.first_token = result->ids[i];
      if (!out.logprobs.empty()) job.first_logprobs = out.logprobs.front();
      s->parked = std::move(out);
      // AcceptToken marked it finished (max_new_tokens is 1 here), but it
      // stays in running_ until the transfer ends: Finish sets it again.
      s->finished = false;
      options_.kv_sender->Send(std::move(job));
      continue;
    }
    if (out.finished) {
      Finish(s, std::move(out));
    } else {
      s->stream->Push(std::move(out));
    }
  }
  RemoveFinished();
}

void Scheduler::BeginKvSend(BatchRow& row) {
  Sequence* s = row.seq;
  auto progress = std::make_shared<LayerProgress>(kv_.pool().num_layers());
  KvBeginJob job;
  job.room = s->request.bootstrap->room;
  job.prompt_ids = s->request.prompt_ids;
  job.slots.reserve(s->request.prompt_ids.size());
  for (int64_t p = 0; p < s->prompt_len(); ++p) {
    job.slots.push_back(kv_.pool().SlotOf(s->kv.pages, p));
  }
  job.layers = progress;
  row.kv_progress = progress;
  s->kv_progress = std::move(progress);
  s->transfer = Sequence::Transfer::kSending;
  transfers_[job.room] = s;
  options_.kv_sender->Begin(std::move(job));
}

bool Scheduler::SendsKv(const Sequence& s) const {
  return options_.disagg_mode == DisaggMode::kPrefill &&
         options_.kv_sender != nullptr && s.request.bootstrap.has_value();
}

bool Scheduler::ReceivesKv(const Sequence& s) const {
  return options_.disagg_mode == DisaggMode::kDecode &&
         options_.kv_receiver != nullptr && s.request.bootstrap.has_value() &&
         s.generated() == 0 && !s.admitted_once;
}

bool Scheduler::AdmitAwaitingKv(Sequence* s) {
  const std::span<const int32_t> prompt(s->request.prompt_ids);
  const int64_t len = s->prompt_len();
  const int64_t matched = kv_.MatchAndLock(prompt, s->kv);
  // The whole prompt and the first decode slot, reserved before the
  // transfer starts.
  if (!kv_.CanReserve(s->kv, len + 1) || !kv_.Reserve(s->kv, len).ok()) {
    (void)kv_.Release(prompt.first(matched), s->kv);
    return false;
  }
  s->admitted_once = true;
  s->cached_tokens = matched;
  s->first_admit = SteadyClock::now();
  s->kv_len = matched;
  s->transfer = Sequence::Transfer::kAwaiting;
  KvRecvJob job;
  job.bootstrap = *s->request.bootstrap;
  job.prompt_ids = s->request.prompt_ids;
  job.cached = matched;
  job.slots.reserve(static_cast<size_t>(len));
  for (int64_t p = 0; p < len; ++p) {
    job.slots.push_back(kv_.pool().SlotOf(s->kv.pages, p));
  }
  transfers_[job.bootstrap.room] = s;
  options_.kv_receiver->Expect(std::move(job));
  return true;
}

void Scheduler::CountTransfer(const KvTransferResult& r) {
  if (r.status.ok()) {
    ++transfers_done_;
    transfer_bytes_ += r.bytes;
    transfer_seconds_ += r.seconds;
  } else {
    ++transfer_failures_;
  }
}

void Scheduler::PollTransfers() {
  if (options_.kv_sender != nullptr) {
    for (KvTransferResult& r : options_.kv_sender->Poll()) {
      CountTransfer(r);
      auto q = quarantine_.find(r.room);
      if (q != quarantine_.end()) {  // its request ended meanwhile
        (void)kv_.Release(q->second.cached, q->second.kv);
        quarantine_.erase(q);
        continue;
      }
      auto it = transfers_.find(r.room);
      if (it == transfers_.end()) continue;
      Sequence* s = it->second;
      transfers_.erase(it);
      s->transfer = Sequence::Transfer::kNone;
      if (r.status.ok()) {
        Finish(s, std::move(s->parked));
      } else {
        TSR_LOG_WARN("request {}: KV transfer to the decode server failed: {}",
                     s->stream->rid(), r.status.ToString());
        Finish(s, s->AbortOutput(AbortCause::kError,
                                 "the KV transfer to the decode server "
                                 "failed: " + r.status.message()));
      }
    }
  }
  if (options_.kv_receiver != nullptr) {
    for (KvTransferResult& r : options_.kv_receiver->Poll()) {
      CountTransfer(r);
      auto q = quarantine_.find(r.room);
      if (q != quarantine_.end()) {
        (void)kv_.Release(q->second.cached, q->second.kv);
        quarantine_.erase(q);
        continue;
      }
      auto it = transfers_.find(r.room);
      if (it == transfers_.end()) continue;
      Sequence* s = it->second;
      transfers_.erase(it);
      s->transfer = Sequence::Transfer::kNone;
      if (!r.status.ok()) {
        TSR_LOG_WARN("request {}: no KV from the prefill server: {}",
                     s->stream->rid(), r.status.ToString());
        Finish(s, s->AbortOutput(AbortCause::kError,
                                 "the KV transfer from the prefill server "
                                 "failed: " + r.status.message()));
        continue;
      }
      s->kv_len = s->prompt_len();
      Status cached = kv_.CacheComputed(s->request.prompt_ids, s->kv);
      if (!cached.ok()) {
        TSR_LOG_WARN("caching the prompt of {}: {}", s->stream->rid(),
                     cached.ToString());
      }
      ++generated_total_;
      RequestOutput out =
          s->AcceptToken(r.first_token, std::move(r.first_logprobs));
      if (out.finished) {
        Finish(s, std::move(out));
      } else {
        s->stream->Push(std::move(out));
      }
    }
  }
  RemoveFinished();
}

void Scheduler::FillStats(EngineStats& stats) const {
  stats.disagg_transfers_total = transfers_done_;
  stats.disagg_transfer_failures_total = transfer_failures_;
  stats.disagg_transfer_bytes_total = transfer_bytes_;
  stats.disagg_transfer_seconds_total = transfer_seconds_;
  stats.disagg_awaiting_kv = 0;
  for (const auto& [room, s] : transfers_) {
    stats.disagg_awaiting_kv += s->transfer == Sequence::Transfer::kAwaiting;
  }
  stats.running = static_cast<int64_t>(running_.size());
  stats.last_batch_size = last_batch_size_;
  stats.kv_capacity_tokens = kv_.CapacityTokens();
  stats.kv_used_tokens = kv_.UsedTokens();
  stats.kv_cached_tokens = cache_.total_size();
  stats.cache_hit_rate = cache_.hit_rate();
  if (const HiCache* hc = kv_.hicache()) {
    const HiCacheStats h = hc->Stats();
    stats.hicache_enabled = true;
    stats.host_capacity_tokens = h.host_capacity_tokens;
    stats.host_cached_tokens = h.host_cached_tokens;
    stats.host_hit_tokens_total = h.host_hit_tokens;
    stats.hicache_backup_bytes_total = h.backup_bytes;
    stats.hicache_load_bytes_total = h.load_bytes;
    stats.hicache_backup_seconds_total = h.backup_seconds;
    stats.hicache_load_seconds_total = h.load_seconds;
    stats.hicache_backup_pages_total = h.backup_pages;
    stats.hicache_load_pages_total = h.load_pages;
    stats.hicache_transfer_failures_total = h.transfer_failures;
    stats.storage_enabled = h.storage_enabled;
    stats.storage_hit_tokens_total = h.storage_hit_tokens;
    stats.storage_objects = h.storage_objects;
    stats.storage_pages_written_total = h.storage.pages_written;
    stats.storage_pages_read_total = h.storage.pages_read;
    stats.storage_bytes_written_total = h.storage.bytes_written;
    stats.storage_bytes_read_total = h.storage.bytes_read;
    stats.storage_read_seconds_total = h.storage.read_seconds;
    stats.storage_failures_total = h.storage.failures;
    stats.storage_corrupt_pages_total = h.storage.corrupt_pages;
    stats.storage_dropped_writes_total = h.storage.dropped_writes;
  }
  stats.retractions_total = retractions_;
  stats.generation_tokens_total = generated_total_;
}

}  // namespace tessera::engine
