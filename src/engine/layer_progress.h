// LayerProgress: how far a launched step has written one prompt's KV, layer
// by layer — what lets a prefill server put layer l's KV on the wire while
// the device computes layer l + 1 (PD disaggregation, kv_sender.h).
//
//   scheduler  creates it when it schedules the row that completes the
//              prompt, and hands it to the executor (BatchRow::kv_progress)
//              and to the KV sender (KvBeginJob::layers);
//   executor   Attach()es a waiter once the step is launched, when it can
//              say per layer when the KV is written (device events recorded
//              after each layer); an executor that cannot attaches nothing;
//   scheduler  Finish()es it when the step is collected (OK: every layer is
//              written) or the request ends without it (the error);
//   sender     WaitForLayer(l) on its own thread, in layer order.
//
// Thread-safety: every method may be called from any thread. Finish waits
// for WaitForLayer calls running the waiter to return, then drops the
// waiter, so what the waiter holds (device events) is released on the
// finishing thread and never used after Finish returns.
#ifndef TESSERA_ENGINE_LAYER_PROGRESS_H_
#define TESSERA_ENGINE_LAYER_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <functional>

#include "base/mutex.h"
#include "base/status.h"

namespace tessera::engine {

class LayerProgress {
 public:
  // Blocks until layer `l`'s KV writes are complete; their error otherwise.
  using Waiter = std::function<Status(int64_t layer)>;

  explicit LayerProgress(int64_t num_layers) : num_layers_(num_layers) {}
  LayerProgress(const LayerProgress&) = delete;
  LayerProgress& operator=(const LayerProgress&) = delete;

  int64_t num_layers() const { return num_layers_; }

  // Once, after the step's launch; ignored after Finish.
  void Attach(Waiter waiter);
  // Every layer is written (OK) or never will be (the error). The first
  // call wins; later ones are ignored.
  void Finish(Status status);

  // OK once layer `l` (0 <= l < num_layers) is written; the step's or
  // Finish's error; Unavailable when neither a waiter nor Finish came
  // by `deadline`.
  Status WaitForLayer(int64_t l, std::chrono::steady_clock::time_point deadline);

  // Whether a waiter was attached (tests, logs).
  bool attached() const;

 private:
  const int64_t num_layers_;
  mutable Mutex mu_;
  CondVar cv_;
  Waiter waiter_ TSR_GUARDED_BY(mu_);
  bool was_attached_ TSR_GUARDED_BY(mu_) = false;
  bool finished_ TSR_GUARDED_BY(mu_) = false;
  Status final_ TSR_GUARDED_BY(mu_);
  int waiting_calls_ TSR_GUARDED_BY(mu_) = 0;  // running waiter_ unlocked
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_LAYER_PROGRESS_H_
