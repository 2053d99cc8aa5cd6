// Scheduler: the scheduler thread's state and the bookkeeping halves of
// one step of continuous batching (see engine.h for the step, in order):
//   Schedule()             reap cancelled requests, reserve decode slots
//                          (retracting when the pool runs out), admit and
//                          chunk prefills under the token budget;
//   Postprocess(b, result) advance KV lengths, cache computed prompts,
//                          accept sampled tokens (stops, detokenization),
//                          finish and release.
// It owns the radix cache, the KV cache manager and the waiting / running
// sequences; it never touches the device (the Executor runs the batch), so
// it can be tested with a fake executor. The KV pool belongs to the
// Engine's caller.
//
// Invariants between steps: every running sequence holds KV for its first
// kv_len tokens (seq.kv covers them); waiting sequences hold no KV; at most
// one running sequence is mid-prompt beyond one step (`chunked_`); the
// pool's used pages == own pages of running sequences + cached pages.
//
// Thread-safety: scheduler thread only.
#ifndef TESSERA_ENGINE_SCHEDULER_H_
#define TESSERA_ENGINE_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "base/status.h"
#include "engine/engine_options.h"
#include "engine/kv_cache_manager.h"
#include "engine/sequence.h"
#include "engine/step_batch.h"
#include "kv/kv_pool.h"
#include "kv/radix_cache.h"

namespace tessera::engine {

class Scheduler {
 public:
  // Called once per finished sequence (after its last output was pushed).
  using FinishFn = std::function<void(const Sequence&)>;

  Scheduler(kv::KvPool& pool, const EngineOptions& options,
            FinishFn on_finish);

  void Enqueue(std::unique_ptr<Sequence> seq);
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }

  // The next batch, its KV reserved and its rows committed (kv_len
  // advanced). Empty when nothing can run now (no work; only queued
  // requests that do not fit; a resumed request whose whole prompt was
  // cached, which decodes from the next step on), and empty with
  // `blocked` when it needs the batch in flight postprocessed first (a
  // retraction, or a logit processor that must see the pending token).
  //
  // Overlap: Schedule may run while the previous batch is in flight (not
  // yet postprocessed). A sequence whose token that batch is sampling gets
  // a decode row reading that token on the device (input_from); a
  // sequence that reaches its length with that token gets none.
  ScheduledBatch Schedule();

  // Applies the executor's result to `batch` (the oldest scheduled batch
  // not yet postprocessed): caches computed prompts, accepts sampled tokens
  // (a token for a sequence that ended meanwhile, e.g. at a stop string
  // the step before, is discarded; its KV slot goes with the sequence). A
  // failed step aborts every request with the error (the device state of
  // the batch is unknown).
  void Postprocess(const ScheduledBatch& batch, StatusOr<StepResult> result);

  // Finishes every sequence with an abort output carrying `cause`, `why`.
  void AbortAll(AbortCause cause, const std::string& why);

  // Fills the scheduler's part of the stats.
  void FillStats(EngineStats& stats) const;

  KvCacheManager& kv() { return kv_; }
  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  // Running sequences that wait for a KV transfer (no rows).
  int64_t transferring() const {
    return static_cast<int64_t>(transfers_.size());
  }
  int64_t last_batch_size() const { return last_batch_size_; }
  int64_t retractions() const { return retractions_; }
  int64_t generated_total() const { return generated_total_; }

 private:
  // Drops cancelled sequences (pushing their abort output).
  void ReapCancelled();
  // Gives each decoding sequence a slot for its next token, retracting the
  // most recently admitted ones when the pool runs out. False when that
  // would need a retraction while a batch is in flight.
  bool ReserveDecode(std::vector<Sequence*>& decode);
  void Retract(Sequence* seq);
  // Admits waiting sequences / continues the chunked one under `budget`.
  void SchedulePrefill(int64_t budget, ScheduledBatch& batch);
  void SortWaiting();
  // PD disaggregation (engine/disagg.h).
  bool SendsKv(const Sequence& s) const;
  // Prefill server, as the row completing a prompt is committed: the KV
  // sender starts streaming its layers (row.kv_progress says when each is
  // written).
  void BeginKvSend(BatchRow& row);
  bool ReceivesKv(const Sequence& s) const;
  // Decode: reserves `s`'s prompt pages and asks the receiver for its KV.
  // False when the pool cannot hold it now (nothing changed).
  bool AdmitAwaitingKv(Sequence* s);
  // Applies the sender's / receiver's finished rooms.
  void PollTransfers();
  void CountTransfer(const KvTransferResult& r);
  void Finish(Sequence* seq, RequestOutput last);
  void RemoveFinished();

  const EngineOptions& options_;
  FinishFn on_finish_;
  kv::RadixCache cache_;
  KvCacheManager kv_;

  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order
  // Finished sequences a launched batch may still point at; freed by the
  // Postprocess after the next.
  std::vector<std::unique_ptr<Sequence>> retired_;
  Sequence* chunked_ = nullptr;  // running, prompt split over steps
  // Overlap: scheduled batches not yet postprocessed, the last one's id,
  // and the sequences whose prompt rows they compute.
  int64_t inflight_ = 0;
  uint64_t last_batch_id_ = 0;
  std::vector<const Sequence*> prefills_in_flight_;
  int64_t last_batch_size_ = 0;
  // PD disaggregation: running sequences by room (sending or awaiting KV),
  // and the pages of abandoned requests, held until their room is reported
  // (decode side: a late prefill server may still write them; prefill
  // side: layers on the wire are still being read).
  struct Quarantined {
    std::vector<int32_t> cached;  // the prefix the cache already held
    SequenceKv kv;
  };
  std::map<uint64_t, Sequence*> transfers_;
  std::map<uint64_t, Quarantined> quarantine_;
  int64_t transfers_done_ = 0;
  int64_t transfer_failures_ = 0;
  uint64_t transfer_bytes_ = 0;
  double transfer_seconds_ = 0;
  int64_t retractions_ = 0;
  int64_t generated_total_ = 0;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_SCHEDULER_H_
