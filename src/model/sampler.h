// Sampler: turns a batch of F32 logits on the device into next-token ids
// with the argmax and sample ops, one row per sequence.
//
// Each row has its own SamplingParams and, unless it is greedy, its own
// SamplerRng (a request's seeded generator). Every non-greedy row draws
// exactly one uniform per call from its generator, so a seeded request
// samples the same tokens whatever else shares its batch. When every row is
// greedy (temperature <= 0) the argmax op runs alone; otherwise the sample
// op (which treats temperature <= 0 rows as argmax, ties to the lowest id).
//
// Thread-safety: not thread-safe; use one Sampler per stream and thread.
// The Runtime and the stream must outlive it.
#ifndef TESSERA_MODEL_SAMPLER_H_
#define TESSERA_MODEL_SAMPLER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "runtime/runtime.h"
#include "runtime/staged_upload.h"

namespace tessera::model {

struct SamplingParams {
  float temperature = 0.0f;  // <= 0: greedy
  int32_t top_k = 0;         // <= 0: all
  float top_p = 1.0f;        // >= 1: all
  float min_p = 0.0f;        // <= 0: none
  bool greedy() const { return temperature <= 0.0f; }
};

// A small seeded generator (splitmix64): the same seed gives the same
// sequence of uniforms on every machine.
class SamplerRng {
 public:
  explicit SamplerRng(uint64_t seed) : state_(seed) {}
  uint64_t NextU64();
  // Uniform in [0, 1), 24 bits of resolution (exact in F32).
  float Uniform();

 private:
  uint64_t state_;
};

struct SampleRow {
  SamplingParams params;
  SamplerRng* rng = nullptr;  // required unless params.greedy()
};

// Sampled ids still on the device: I32 [rows] at `offset` of `buffer`.
// They stay there until the stream passes the sampler's next Enqueue (a
// later step may read them on the same stream, e.g. as its input tokens).
struct DeviceIds {
  const runtime::Buffer* buffer = nullptr;
  uint64_t offset = 0;  // bytes
  int64_t rows = 0;
};

class Sampler {
 public:
  // `stream` runs the sampling ops (the compute stream). `copy_stream`,
  // when given and different, carries the parameter uploads and the ids'
  // read-back, ordered against `stream` with events (staged_upload.h).
  Sampler(runtime::Runtime& runtime, runtime::Device& device,
          runtime::Stream& stream, runtime::Stream* copy_stream = nullptr);

  // `logits`: F32 [B, V] on the device, B == rows.size(). Enqueues on the
  // stream and waits for the ids.
  StatusOr<std::vector<int32_t>> Sample(const tsr_tensor& logits,
                                        std::span<const SampleRow> rows);

  // Enqueues the sampling and returns at once; the ids stay on the device.
  // Draws each non-greedy row's uniform now (so a seeded request gets the
  // same draws whether or not its steps overlap). Host staging is double
  // buffered: two Enqueues may be outstanding.
  StatusOr<DeviceIds> Enqueue(const tsr_tensor& logits,
                              std::span<const SampleRow> rows);

  // Records `computed` on the compute stream, then enqueues a copy of `ids`
  // (after `computed`) into `host` (resized to ids.rows) on the copy stream
  // and records `done` there; `host` must stay untouched until `done`. The
  // next Enqueue's writes to the ids wait for `done` on the compute stream,
  // so `done` must live until then. Wait for the result with WaitReadBack.
  Status ReadBack(const DeviceIds& ids, std::vector<int32_t>& host,
                  runtime::Event& done, runtime::Event& computed);
  // Waits for a ReadBack's copy, then returns the compute stream's error at
  // the sampling: a kernel that failed before `computed` is that stream's
  // sticky error, which the copy stream's wait does not carry (the ids in
  // `host` are then meaningless).
  static Status WaitReadBack(runtime::Event& done, runtime::Event& computed);

  runtime::Stream& copy_stream() const { return copy_stream_; }

 private:
  runtime::Runtime& runtime_;
  runtime::Device& device_;
  runtime::Stream& stream_;
  runtime::Stream& copy_stream_;
  runtime::BufferPtr params_;  // I32/F32 [6, B] (see Enqueue)
  // Buffers replaced by a larger one; queued work may still read them, so
  // they live as long as the sampler (they grow geometrically: few).
  std::vector<runtime::BufferPtr> retired_;
  // The sampling parameters' uploads (double-buffered host staging).
  runtime::StagedUpload params_upload_;
  // The last ReadBack's `done`: the next Enqueue's writes wait for it.
  runtime::Event* last_read_ = nullptr;
  std::vector<int32_t> host_ids_;
  runtime::EventPtr sample_done_;      // Sample()'s read-back (copy stream)
  runtime::EventPtr sample_computed_;  // and its compute-stream event
};

}  // namespace tessera::model

#endif  // TESSERA_MODEL_SAMPLER_H_
