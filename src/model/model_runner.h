// ModelRunner: one model's forward pass on one device, built only from v1
// ops through the runtime's OpDispatcher, with K/V in a paged KvPool.
//
// A Batch is B sequences; each brings its new tokens, how many of its
// tokens are already in the KV cache (the cached prefix) and its page list
// (block table). Prefill (possibly over a cached prefix, e.g. a chunked
// prefill's second chunk) and decode (one new token) mix freely in one
// call. The caller allocates the pages first (KvPool::EnsureCapacity on
// kv_pool()), so the pages cover cached_len + new tokens positions.
//
// Per step, all ops on the runner's stream (T = total new tokens), with
// every decoder layer as ONE fused decoder_layer launch (ABI 1.2) when the
// plugin offers it for the model's (activation, weight, KV) dtypes and
// ModelRunnerOptions::fused_decoder_layer is on (TESSERA_DISABLE_OPS naming
// decoder_layer, or any op of the sequence, turns it off); otherwise as
// this v1 op sequence:
//   embedding(ids) -> residual [T, H]
//   per layer: rms_norm / add_rms_norm (residual fused) -> normed [T, H]
//              linear qkv (+ bias)        -> qkv [T, (Hq + 2 Hk) D]
//              (every layer linear is linear v2 on int8 weights when the
//              runner was created with WeightQuantization::kInt8, v3
//              — w8a8 — with int8_activations too; linear v4 — w4a8 —
//              on the 4-bit weights of kInt4)
//              [q/k norm] rms_norm over q [T, Hq, D] and k [T, Hk, D] views
//              rope (positions per token) -> q, k in place
//              kv_store(k, v, slots)      -> this layer's K/V slabs
//              paged_attention            -> attn [T, Hq, D]
//              linear o_proj (+ bias)     -> hidden [T, H]
//              add_rms_norm               -> normed, residual
//              linear gate_up, silu_and_mul, linear down -> hidden [T, H]
//   add_rms_norm -> normed (fused layers: rms_norm of the residual, which
//   the fused op keeps complete); embedding(last row of each sequence, normed)
//   -> rows [B, H]; linear lm_head -> logits [B, V]; cast to F32 if needed.
// Scratch activations live in a workspace sized for the largest batch seen
// so far (grown on demand, never per op; with fused layers only residual,
// normed, the last rows and the logits — the plugin holds the layer's
// intermediates); metadata (ids, positions, slots,
// block table, ...) goes up in one host-to-device copy.
//
// Thread-safety: not thread-safe; one thread drives a runner (its stream
// is used from one thread at a time). The Runtime and the Checkpoint must
// outlive it (weights are copied to the device; the checkpoint is only
// read during Create).
#ifndef TESSERA_MODEL_MODEL_RUNNER_H_
#define TESSERA_MODEL_MODEL_RUNNER_H_

#include <cstdint>
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "kv/kv_pool.h"
#include "model/arch_registry.h"
#include "model/checkpoint.h"
#include "model/quantize.h"
#include "model/tensor_parallel.h"
#include "model/weights.h"
#include "runtime/communicator.h"
#include "runtime/runtime.h"
#include "runtime/staged_upload.h"

namespace tessera::model {

struct ModelRunnerOptions {
  // F32 or BF16; default: F32 for an F32 checkpoint, BF16 otherwise.
  std::optional<DType> activation_dtype;
  // The KV cache's dtype (F32 or BF16); default: the activation dtype.
  // When it differs, each layer casts q/k/v to it after rope (kv_store and
  // paged_attention run in it) and casts the attention output back: a BF16
  // cache halves the KV memory of an F32 model (--kv-cache-dtype).
  std::optional<DType> kv_cache_dtype;
  int32_t device = 0;       // ordinal among the selected plugin's devices
  int32_t page_size = 16;   // KV slots per page
  // KV pool size: a token capacity, or (when positive) a memory budget.
  int64_t kv_capacity_tokens = 4096;
  uint64_t kv_memory_budget_bytes = 0;
  // When positive (SGLang's --mem-fraction-static), instead of both: the
  // pool takes this fraction of the device's memory_total less what the
  // device holds once the weights are loaded (the plugin's memory_stats, or
  // the host's count of its buffers there); what stays free is left for the
  // workspace, graphs and the plugin's scratch.
  double kv_memory_fraction = 0;
  // Initial workspace size (tokens per step); grows when a batch needs more.
  int64_t max_batch_tokens = 256;
  // Linear weights stored as F16 stay F16 (see weights.h).
  bool keep_f16_linear = true;
  // kInt8: the decoder layers' linear weights become int8 with per-group
  // scales at load and run through linear v2 (weights.h, quantize.h).
  WeightQuantization quantization = WeightQuantization::kNone;
  int64_t int8_group_size = kDefaultInt8GroupSize;  // see WeightLoadOptions
  // With kInt8: the int8 linears (layers and head) run as linear v3 (ABI
  // 1.5, w8a8: activations quantised to int8 per row in blocks of the
  // weights' group size, int8 dot products, as llama.cpp's Q8_0) and the
  // fused layer as decoder_layer v3; --quantization w8a8_int8. Otherwise
  // linear v2 (weight-only: activations stay floating point).
  // kInt4 (4-bit layer weights, linear v4 / decoder_layer v4) always
  // quantises activations: its int8 weights (the head, K % 32 != 0) run as
  // linear v3.
  bool int8_activations = false;
  // Where linear v3 would run an int8 head, a GGUF Q6_K head keeps its own
  // blocks and runs as linear v5 (w6a8) when the plugin lists it
  // (WeightLoadOptions::q6_k_head); false re-quantises it to int8.
  bool q6_k_head = true;
  // Weight-upload progress on stderr, only when stderr is a terminal.
  bool show_progress = true;
  // Use the plugin's fused decoder_layer op when it offers one.
  bool fused_decoder_layer = true;
  // Graph replay of decode steps (plugins with the graph table): a step
  // whose sequences each bring one token runs as a replay of the graph
  // captured for its batch-size bucket (1, 2, 4, 8, 16, 24, 32, then every
  // 16 up to graph_max_batch) and block-table width (a power of two),
  // padded to the bucket. 0 or a plugin without graphs: every step eager.
  int64_t graph_max_batch = 160;
  // When positive: Create captures every decode graph up front, each batch
  // bucket with each block-table width up to one covering this many tokens
  // (the context length), and sizes the workspace for the largest, so no
  // step later captures or reallocates (a longer step than the workspace's
  // tokens, e.g. a bigger prefill, still does). 0: each graph is captured
  // when a step first needs it. Tensor parallelism always captures lazily.
  int64_t graph_capture_context = 0;
  // Host-to-device uploads (the step's metadata, the sampler's parameters)
  // and the sampled ids' read-back run on a second stream of the device,
  // ordered against the compute stream with events (staged_upload.h), so
  // no copy queues behind a running step. false: one stream carries all.
  bool copy_stream = true;
  // Tensor parallelism: this runner is rank comm->rank() of comm->size()
  // (tensor_parallel.h says what it holds); every rank must run the same
  // batches in the same order (the collectives pair up by order). The
  // communicator's rank must live on `device` and outlive the runner.
  // NULL: the whole model. TP runs the layers as op sequences, eagerly.
  runtime::Communicator* comm = nullptr;
  // A tensor-parallel worker: rank 0's scheduler allocates the pages (the
  // same ids in every rank's pool), so a batch's pages are only checked to
  // lie inside this pool, not to be allocated in it.
  bool pages_allocated_elsewhere = false;
  // An embedding model (--is-embedding): no lm_head is loaded (a base-model
  // export has none) and no logits buffer exists; only ForwardHidden runs.
  bool embedding_only = false;
};

// The decode-graph batch bucket `batch` sequences pad to (SGLang's sizes:
// 1, 2, 4, 8, 16, 24, 32, then every 16); 0 for batch < 1.
int64_t DecodeGraphBucket(int64_t batch);

// One sequence of a Batch. The spans are borrowed for the Forward call.
struct SequenceInput {
  std::span<const int32_t> tokens;  // new tokens (>= 1)
  int64_t cached_len = 0;           // tokens already in the KV cache
  std::span<const int32_t> pages;   // covers cached_len + tokens.size()
  // One logits row per new token of this sequence (prompt logprobs), where
  // Batch::all_logits is false; otherwise its last token's row only.
  bool all_rows = false;
};

// A new token whose id is still on the device (sampled by an earlier step
// on the runner's stream, not read back yet): token `token` of the step
// (index into the sequences' new tokens, concatenated) takes the I32 at
// index `source` of the batch's token_source. Its host value in
// `sequences` is a placeholder and is ignored.
struct DeviceToken {
  int64_t token = 0;
  int64_t source = 0;
};

struct Batch {
  std::vector<SequenceInput> sequences;
  // false: one logits row per sequence (its last new token), or per new
  // token for a sequence with all_rows; sequences in order.
  // true: one row per new token, sequences in order.
  bool all_logits = false;
  // Overlap scheduling: ids of this step that the previous step sampled
  // (Sampler::Enqueue's DeviceIds, I32 [n] at token_source_offset). The
  // runner copies them into the step's ids on the stream, after the
  // metadata upload and before the embedding reads them.
  std::vector<DeviceToken> device_tokens;
  const runtime::Buffer* token_source = nullptr;
  uint64_t token_source_offset = 0;  // bytes
  // Called on the host after each decoder layer's work is enqueued on
  // stream() (layer 0, 1, ...; eager steps only: a graph replay calls it
  // never), e.g. to record an event that says when that layer's KV is
  // written. An error fails the forward.
  std::function<Status(int64_t layer)> after_layer;
};

// Logits copied to the host: rows x vocab, F32, row-major.
struct Logits {
  int64_t rows = 0;
  int64_t vocab = 0;
  std::vector<float> data;
  std::span<const float> Row(int64_t r) const {
    return std::span<const float>(data).subspan(r * vocab, vocab);
  }
};

// Final hidden states (after the final norm) copied to the host: rows x
// hidden, F32, row-major; rows as Batch::all_logits says (one per sequence,
// its last new token, or one per new token).
struct HiddenStates {
  int64_t rows = 0;
  int64_t hidden = 0;
  std::vector<float> data;
  std::span<const float> Rows(int64_t begin, int64_t end) const {
    return std::span<const float>(data).subspan(begin * hidden,
                                                (end - begin) * hidden);
  }
};

class ModelRunner {
 public:
  // Validates the checkpoint against its architecture, uploads the weights
  // and the rope frequencies and creates the KV pool and a stream.
  static StatusOr<std::unique_ptr<ModelRunner>> Create(
      runtime::Runtime& runtime, const Checkpoint& checkpoint,
      const ModelRunnerOptions& options = {});
  ~ModelRunner();
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  // Runs the batch and leaves F32 logits [rows, V] on the device (rows as
  // Batch::all_logits says). Enqueues only (it waits for the stream just
  // when the workspace must grow): the view stays valid until the next
  // Forward; work may still be queued on stream() (stream order makes it
  // safe to use there).
  StatusOr<tsr_tensor> ForwardOnDevice(const Batch& batch);
  // ForwardOnDevice, then copies the logits to the host (synchronous).
  // `while_running`, when set, is host work done while the device computes
  // (called once the forward and the copy are queued, before the wait):
  // e.g. structured output's token masks for this very step.
  StatusOr<Logits> Forward(const Batch& batch,
                           const std::function<void()>& while_running = {});
  // The forward pass up to the final norm (no lm_head), for embedding
  // models: the hidden rows copied to the host (synchronous).
  StatusOr<HiddenStates> ForwardHidden(const Batch& batch);
  // Copies host logits (e.g. Forward's, adjusted by logit processors) back
  // into the device logits buffer and returns its F32 [rows, V] view, for
  // the sampler. `logits` must have the shape of the last Forward's.
  StatusOr<tsr_tensor> UploadLogits(const Logits& logits);

  const ModelConfig& config() const { return config_; }
  const ArchitectureSpec& architecture() const { return *arch_; }
  DType activation_dtype() const { return act_dtype_; }
  DType kv_cache_dtype() const { return kv_dtype_; }
  kv::KvPool& kv_pool() { return *kv_pool_; }
  const ModelWeights& weights() const { return *weights_; }
  // This rank's shard (size 1 without tensor parallelism).
  const TpShard& tp() const { return tp_; }
  // True when each decoder layer runs as one fused decoder_layer launch.
  bool uses_fused_layers() const { return fused_layer_ != nullptr; }
  // Decode steps replayed from captured graphs (0 when graphs are off).
  bool uses_graphs() const { return graph_max_batch_ > 0; }
  int64_t graph_replays() const { return graph_replays_; }
  int64_t graphs_captured() const { return graphs_captured_; }
  // The batch-size bucket a decode step of `batch` sequences is padded to
  // (0: above the largest bucket, run eagerly).
  int64_t GraphBucket(int64_t batch) const;
  // Every bucket, ascending (empty when graphs are off).
  std::vector<int64_t> GraphBuckets() const;
  // Captures the decode graphs of every bucket and block-table width up to
  // one covering `context_tokens` (see graph_capture_context); logs the
  // count, time and memory. A capture that fails turns graphs off (a
  // warning), as at a step.
  Status CaptureDecodeGraphs(int64_t context_tokens);
  runtime::Runtime& runtime() const { return runtime_; }
  runtime::Device& device() const { return device_; }
  runtime::Stream& stream() const { return *stream_; }
  // The stream host copies run on: a second stream of the device ordered
  // against stream() with events (ModelRunnerOptions::copy_stream), else
  // stream() itself.
  runtime::Stream& copy_stream() const {
    return copy_stream_ != nullptr ? *copy_stream_ : *stream_;
  }

 private:
  struct Workspace;
  struct StepShape {
    int64_t tokens = 0;     // T
    int64_t sequences = 0;  // B
    int64_t max_pages = 0;  // P (block table width)
    int64_t rows = 0;       // logits rows
    const std::function<Status(int64_t)>* after_layer = nullptr;  // Batch's
  };

  ModelRunner(runtime::Runtime& runtime, runtime::Device& device,
              const ModelConfig& config, const ArchitectureSpec& arch,
              DType act_dtype, DType kv_dtype);

  Status ValidateBatch(const Batch& batch, StepShape& shape) const;
  // Grows the workspace for `shape`; waits for queued work first when a
  // buffer must be replaced (queued steps still use the old ones).
  Status EnsureWorkspace(const StepShape& shape);
  Status UploadMetadata(const Batch& batch, const StepShape& shape);
  // The metadata offsets (ids, positions, ...) of a step of `shape`.
  void SetMetadataLayout(const StepShape& shape);
  // Captures the decode graph of (bucket, width) into graphs_.
  Status CaptureDecodeGraph(int64_t bucket, int64_t width);
  // After a failed capture: warns with `why`, drops every graph, and runs
  // decode steps eagerly from then on.
  void DisableGraphs(const Status& why);
  // Copies the batch's device tokens into the uploaded ids.
  Status ResolveDeviceTokens(const Batch& batch, const StepShape& shape);
  // Enqueues the model from the embedding to the F32 logits [shape.rows,
  // V] over the uploaded metadata.
  StatusOr<tsr_tensor> EnqueueModel(const StepShape& shape, bool all_logits);
  // The layers and the final norm: the normed rows [shape.rows, H] in the
  // activation dtype (every token, or each sequence's last).
  StatusOr<tsr_tensor> EnqueueHidden(const StepShape& shape, bool all_rows);
  // A decode step as a graph replay: pads `batch` to its bucket, uploads,
  // captures the bucket's graph on first use, replays it.
  StatusOr<tsr_tensor> ForwardWithGraph(const Batch& batch,
                                        const StepShape& shape);
  void DestroyGraphs();
  // Launches the dispatcher handed to the cpu fallback so far.
  uint64_t FallbackLaunches() const;
  // The first `rows` rows of the F32 logits buffer, [rows, V].
  tsr_tensor ForwardLogitsView(int64_t rows) const;
  // Attention's params (scale 1/sqrt(D), the pool's page size), shared by
  // paged_attention and the fused decoder_layer.
  tsr_paged_attention_params AttentionParams() const;
  Status RunLayer(int64_t layer, const StepShape& shape);
  // The layer as one decoder_layer launch (fused_layer_ set).
  Status RunFusedLayer(int64_t layer, const StepShape& shape);
  // Resolves decoder_layer for this model's dtypes, or leaves it unset
  // (with a debug log saying why).
  void ResolveFusedLayer();
  // The F32 logits buffer of the workspace: `logits` itself for F32
  // activations, else the cast target `logits_f32` (null before a Forward).
  runtime::Buffer* F32Logits() const;
  Status Launch(tsr_op_id op, std::span<const tsr_tensor> inputs,
                std::span<const tsr_tensor> outputs, const void* params,
                size_t params_size, int64_t layer, const char* what,
                uint32_t version = 1);
  // With tensor parallelism: sums `hidden` (a row-parallel linear's partial
  // output) over the ranks, in place; a no-op otherwise.
  Status AllReduce(const tsr_tensor& hidden, int64_t layer, const char* after);
  // out = x w^T (+ bias): linear v1, or v2 when `w` is an int8 weight.
  Status LaunchLinear(const tsr_tensor& x, const DeviceWeight& w,
                      const DeviceWeight& bias, const tsr_tensor& out,
                      int64_t layer, const char* what);

  runtime::Runtime& runtime_;
  runtime::Device& device_;
  const ModelConfig config_;
  const ArchitectureSpec* arch_;
  const DType act_dtype_;
  const DType kv_dtype_;
  std::unique_ptr<ModelWeights> weights_;
  TpShard tp_;                              // size 1: the whole model
  bool pages_allocated_elsewhere_ = false;
  bool embedding_only_ = false;
  runtime::Communicator* comm_ = nullptr;  // set when tp_.enabled()
  runtime::BufferPtr inv_freq_;  // F32 [D / 2]
  std::unique_ptr<kv::KvPool> kv_pool_;
  runtime::StreamPtr stream_;       // compute: the step's launches
  runtime::StreamPtr copy_stream_;  // uploads and read-backs (may be null:
                                    // then stream_ carries them)
  // The step's metadata, uploaded on the copy stream (staged_upload.h).
  std::unique_ptr<runtime::StagedUpload> meta_upload_;
  std::unique_ptr<Workspace> ws_;
  const runtime::ResolvedOp* fused_layer_ = nullptr;  // null: op sequence
  uint32_t int8_linear_version_ = 2;  // linear v2, or v3 (int8_activations)
  // decoder_layer's weight_group_size (0: v3 per channel, G = each K).
  int64_t fused_group_size_ = 0;
  // Captured decode graphs by (batch bucket, block-table width); they use
  // the workspace's buffers, so growing the workspace drops them.
  int64_t graph_max_batch_ = 0;  // 0: graphs off
  std::map<std::pair<int64_t, int64_t>, tsr_graph> graphs_;
  std::vector<int32_t> scratch_pages_;  // {kv_pool_->scratch_page()}
  int64_t graph_replays_ = 0;
  int64_t graphs_captured_ = 0;
};

}  // namespace tessera::model

#endif  // TESSERA_MODEL_MODEL_RUNNER_H_
