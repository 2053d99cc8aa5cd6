// Scheduler: the scheduler thread's state and one step of continuous
// batching (see engine.h for the step, in order). It owns the radix cache,
// the KV cache manager, the sampler and the waiting / running sequences;
// the ModelRunner (and its KV pool) belongs to the Engine's caller.
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
#include <memory>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "engine/kv_cache_manager.h"
#include "engine/sequence.h"
#include "kv/radix_cache.h"
#include "model/model_runner.h"
#include "model/sampler.h"

namespace tessera::engine {

class Scheduler {
 public:
  // Called once per finished sequence (after its last output was pushed).
  using FinishFn = std::function<void(const Sequence&)>;

  Scheduler(model::ModelRunner& runner, const EngineOptions& options,
            FinishFn on_finish);

  void Enqueue(std::unique_ptr<Sequence> seq);
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }

  // One step; returns false when there was nothing to run. An error is a
  // device/model failure: the caller aborts everything with its message.
  StatusOr<bool> Step();

  // Finishes every sequence with an abort output carrying `why`.
  void AbortAll(const std::string& why);

  // Fills the scheduler's part of the stats.
  void FillStats(EngineStats& stats) const;

  KvCacheManager& kv() { return kv_; }
  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  int64_t last_batch_size() const { return last_batch_size_; }
  int64_t retractions() const { return retractions_; }
  int64_t generated_total() const { return generated_total_; }

 private:
  // Drops cancelled sequences (pushing their abort output).
  void ReapCancelled();
  // Gives each decoding sequence a slot for its next token, retracting the
  // most recently admitted ones when the pool runs out.
  void ReserveDecode(std::vector<Sequence*>& decode);
  void Retract(Sequence* seq);
  // Admits waiting sequences / continues the chunked one under `budget`.
  void SchedulePrefill(int64_t budget, std::vector<std::pair<Sequence*, int64_t>>& prefill);
  void SortWaiting();
  Status RunBatch(const std::vector<Sequence*>& decode,
                  const std::vector<std::pair<Sequence*, int64_t>>& prefill);
  void Finish(Sequence* seq, RequestOutput last);
  void RemoveFinished();

  model::ModelRunner& runner_;
  const EngineOptions& options_;
  FinishFn on_finish_;
  kv::RadixCache cache_;
  KvCacheManager kv_;
  model::Sampler sampler_;

  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order
  Sequence* chunked_ = nullptr;  // running, prompt split over steps
  int64_t last_batch_size_ = 0;
  int64_t retractions_ = 0;
  int64_t generated_total_ = 0;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_SCHEDULER_H_
