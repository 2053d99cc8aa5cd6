#include "model/model_runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "base/logging.h"
#include "base/progress.h"
#include "model/rope.h"
#include "runtime/op_names.h"
#include "runtime/tensor.h"

namespace tessera::model {
namespace {

using runtime::Buffer;
using runtime::BufferPtr;

// A strided view: `shape` / `strides` in elements, `offset` in bytes.
tsr_tensor StridedView(const Buffer& buffer, DType dtype, uint64_t offset,
                       std::initializer_list<int64_t> shape,
                       std::initializer_list<int64_t> strides) {
  tsr_tensor t = buffer.View(dtype, shape, offset);
  int i = 0;
  for (int64_t s : strides) t.strides[i++] = s;
  return t;
}

// Grows `buffer` to at least `bytes` (contents are not kept). Before an
// existing buffer is released, `before_release` runs (the caller synchronises
// the stream and drops the graphs that recorded the old buffers, so no graph
// outlives a buffer it uses).
Status Reserve(runtime::Device& device, const std::function<Status()>& before_release,
               BufferPtr& buffer, uint64_t bytes, const char* what) {
  if (buffer != nullptr && buffer->size() >= bytes) return OkStatus();
  if (buffer != nullptr) TSR_RETURN_IF_ERROR(before_release());
  buffer.reset();
  auto fresh = device.Allocate(bytes);
  if (!fresh.ok()) {
    return fresh.status().WithContext(fmt::format(
        "cannot allocate the {} workspace ({} bytes) on {}; lower the batch "
        "token budget",
        what, bytes, device.Label()));
  }
  buffer = std::move(fresh).value();
  return OkStatus();
}


}  // namespace

// Scratch activations and metadata of one step, sized for the largest step
// so far. All activation buffers are in the activation dtype X.
struct ModelRunner::Workspace {
  int64_t tokens = 0;  // token capacity of the [T, ..] buffers
  BufferPtr meta;      // I32, see UploadMetadata for the layout
  BufferPtr residual;  // [T, H]
  BufferPtr hidden;    // [T, H]
  BufferPtr normed;    // [T, H]
  BufferPtr qkv;       // [T, (Hq + 2 Hk) * D]
  BufferPtr attn;      // [T, Hq, D]
  // Only when the KV cache dtype K differs from X: qkv cast to K after
  // rope, and the attention output in K before its cast back to X.
  BufferPtr qkv_kv;    // [T, (Hq + 2 Hk) * D] K
  BufferPtr attn_kv;   // [T, Hq, D] K
  BufferPtr gate_up;   // [T, 2 I]
  BufferPtr act;       // [T, I]
  BufferPtr rows_h;    // [B, H] last rows of each sequence
  BufferPtr logits;    // [rows, V] X
  BufferPtr logits_f32;  // [rows, V] F32 (X != F32 only)
  // Vocabulary-parallel lm_head only: this rank's [rows, V/n] and the
  // all-gathered [n, rows, V/n].
  BufferPtr logits_local;
  BufferPtr logits_gathered;
  // Byte offsets of the metadata arrays inside `meta`, this step.
  uint64_t ids = 0, positions = 0, slots = 0, seq_lens = 0, query_start = 0,
           last_rows = 0, block_table = 0;
};

ModelRunner::ModelRunner(runtime::Runtime& runtime, runtime::Device& device,
                         const ModelConfig& config,
                         const ArchitectureSpec& arch, DType act_dtype,
                         DType kv_dtype)
    : runtime_(runtime),
      device_(device),
      config_(config),
      arch_(&arch),
      act_dtype_(act_dtype),
      kv_dtype_(kv_dtype),
      ws_(std::make_unique<Workspace>()) {}

ModelRunner::~ModelRunner() {
  if (stream_ != nullptr) {
    Status s = stream_->Synchronize();
    if (!s.ok()) TSR_LOG_WARN("model runner: {}", s.ToString());
  }
  DestroyGraphs();
}

void ModelRunner::DestroyGraphs() {
  for (auto& [key, graph] : graphs_) {
    Status s = runtime_.plugin().DestroyGraph(graph);
    if (!s.ok()) TSR_LOG_WARN("model runner: {}", s.ToString());
  }
  graphs_.clear();
}

int64_t DecodeGraphBucket(int64_t batch) {
  if (batch < 1) return 0;
  // SGLang's capture sizes: 1, 2, 4, 8, 16, 24, 32, then every 16.
  for (int64_t b : {1, 2, 4, 8, 16, 24, 32}) {
    if (batch <= b) return b;
  }
  return (batch + 15) / 16 * 16;
}

int64_t ModelRunner::GraphBucket(int64_t batch) const {
  if (graph_max_batch_ <= 0 || batch < 1) return 0;
  const int64_t bucket = DecodeGraphBucket(batch);
  return bucket <= graph_max_batch_ ? bucket : 0;
}

StatusOr<std::unique_ptr<ModelRunner>> ModelRunner::Create(
    runtime::Runtime& runtime, const Checkpoint& checkpoint,
    const ModelRunnerOptions& options) {
  TSR_RETURN_IF_ERROR(runtime.CheckUsable());
  if (options.device < 0 || options.device >= runtime.num_devices()) {
    return InvalidArgumentError(fmt::format(
        "device {} does not exist: plugin {} has {} device(s)", options.device,
        runtime.plugin().name(), runtime.num_devices()));
  }
  runtime::Device& device = runtime.device(options.device);
  const ModelConfig& config = checkpoint.config();
  TSR_ASSIGN_OR_RETURN(const ArchitectureSpec* arch,
                       ArchitectureForConfig(config));
  if (options.embedding_only) {
    // The output head is not used: a base-model export has none.
    TSR_RETURN_IF_ERROR(checkpoint.Validate(ExpectedEmbeddingWeights(config)));
  } else {
    TSR_RETURN_IF_ERROR(checkpoint.Validate());
  }

  DType act = TSR_DTYPE_BF16;
  if (options.activation_dtype.has_value()) {
    act = *options.activation_dtype;
  } else {
    TSR_ASSIGN_OR_RETURN(TensorRef embed, checkpoint.Get(kEmbedTokensName));
    // F32 weights run in F32; a block-quantized GGUF (decoded as F32)
    // runs in BF16 like any reduced-precision checkpoint.
    if (embed.dtype() == TSR_DTYPE_F32 && embed.raw()) act = TSR_DTYPE_F32;
  }
  if (act != TSR_DTYPE_F32 && act != TSR_DTYPE_BF16) {
    return InvalidArgumentError(fmt::format(
        "activation dtype {} is not supported; use f32 or bf16",
        DTypeName(act)));
  }
  const uint64_t mask = device.properties().dtype_mask;
  if (mask != 0 && (mask & (uint64_t{1} << act)) == 0) {
    return UnimplementedError(fmt::format(
        "{} does not support {} activations; choose another activation dtype",
        device.Label(), DTypeName(act)));
  }

  const DType kv_dtype = options.kv_cache_dtype.value_or(act);
  if (kv_dtype != TSR_DTYPE_F32 && kv_dtype != TSR_DTYPE_BF16) {
    return InvalidArgumentError(fmt::format(
        "KV cache dtype {} is not supported; use auto, f32 or bf16",
        DTypeName(kv_dtype)));
  }
  if (mask != 0 && (mask & (uint64_t{1} << kv_dtype)) == 0) {
    return UnimplementedError(fmt::format(
        "{} does not support {} tensors; choose another --kv-cache-dtype",
        device.Label(), DTypeName(kv_dtype)));
  }

  std::unique_ptr<ModelRunner> r(
      new ModelRunner(runtime, device, config, *arch, act, kv_dtype));
  if (options.comm != nullptr) {
    if (options.comm->device() != options.device) {
      return InvalidArgumentError(fmt::format(
          "the tensor-parallel communicator's rank lives on device {}, the "
          "runner on device {}",
          options.comm->device(), options.device));
    }
    r->comm_ = options.comm;
    TSR_ASSIGN_OR_RETURN(r->tp_, PlanTpShard(config, options.comm->rank(),
                                             options.comm->size()));
  } else {
    TSR_ASSIGN_OR_RETURN(r->tp_, PlanTpShard(config, 0, 1));
  }
  {
    ProgressReporter progress(
        "loading weights",
        ProgressReporter::ModeForStderr(options.show_progress));
    if ((options.int8_activations &&
         options.quantization == WeightQuantization::kInt8) ||
        options.quantization == WeightQuantization::kInt4) {
      r->int8_linear_version_ = 3;  // w8a8 (int4: its int8 weights)
    }
    WeightLoadOptions load;
    load.activation_dtype = act;
    load.keep_f16_linear = options.keep_f16_linear;
    load.quantization = options.quantization;
    load.int8_group_size = options.int8_group_size;
    load.tp = r->tp_;
    load.skip_lm_head = options.embedding_only;
    // A GGUF Q6_K head runs as linear v5 (its own blocks) where linear v3
    // would run an int8 one and the plugin has v5 for these activations.
    const tsr_dtype head_sig[] = {act, TSR_DTYPE_U8, TSR_DTYPE_F16, act};
    load.q6_k_head =
        options.q6_k_head && r->int8_linear_version_ == 3 &&
        runtime.plugin().ListsSignature(runtime::MakeSignature(TSR_OP_LINEAR, 5, head_sig));
    load.progress = [&progress](uint64_t done, uint64_t total) {
      progress.Update(done, total);
    };
    TSR_ASSIGN_OR_RETURN(r->weights_,
                         ModelWeights::Load(device, checkpoint, *arch, load));
    if (r->weights_->lm_head().q6_k) {
      TSR_LOG_INFO("{}: the q6_k output head runs on the file's own blocks (linear v5, "
                   "w6a8: 6.5 bits a weight, activations quantised per 32)",
                   checkpoint.dir());
    }
  }

  const std::vector<float> inv_freq = RopeInvFreq(config);
  TSR_ASSIGN_OR_RETURN(r->inv_freq_,
                       device.AllocateUncached(inv_freq.size() * sizeof(float)));
  TSR_RETURN_IF_ERROR(r->inv_freq_->CopyFromHost(
      0, inv_freq.data(), inv_freq.size() * sizeof(float)));

  kv::KvPoolOptions kv;
  kv.num_layers = config.num_hidden_layers;
  kv.num_kv_heads = r->tp_.kv_heads;  // this rank's heads
  kv.head_dim = config.head_dim;
  kv.dtype = kv_dtype;
  kv.page_size = options.page_size;
  if (options.kv_memory_fraction > 0) {
    TSR_ASSIGN_OR_RETURN(runtime::DeviceMemoryFigures used,
                         device.plugin().MemoryFigures(device.ordinal()));
    const double total = double(device.properties().memory_total);
    const double budget = options.kv_memory_fraction * total - double(used.in_use_bytes);
    constexpr double kGiB = 1073741824.0;
    if (budget < 1) {
      return ResourceExhaustedError(fmt::format(
          "a memory fraction of {} of {}'s {:.2f} GiB leaves no room for the "
          "KV cache: the device already holds {:.2f} GiB (the weights); raise "
          "--mem-fraction-static or give --max-total-tokens",
          options.kv_memory_fraction, device.Label(), total / kGiB,
          used.in_use_bytes / kGiB));
    }
    kv.memory_budget_bytes = static_cast<uint64_t>(budget);
    TSR_LOG_INFO("KV cache: {:.3g} x {:.2f} GiB less {:.2f} GiB in use on {} ({}) = "
                 "{:.2f} GiB",
                 options.kv_memory_fraction, total / kGiB, used.in_use_bytes / kGiB,
                 device.Label(),
                 used.from_plugin ? "the plugin's memory_stats" : "the host's count",
                 budget / kGiB);
  } else if (options.kv_memory_budget_bytes > 0) {
    kv.memory_budget_bytes = options.kv_memory_budget_bytes;
  } else {
    kv.capacity_tokens = options.kv_capacity_tokens;
  }
  TSR_ASSIGN_OR_RETURN(r->kv_pool_, kv::KvPool::Create(device, kv));
  TSR_ASSIGN_OR_RETURN(r->stream_, device.CreateStream());
  if (options.copy_stream) {
    TSR_ASSIGN_OR_RETURN(r->copy_stream_, device.CreateStream());
  }
  r->meta_upload_ = std::make_unique<runtime::StagedUpload>(
      device, *r->stream_, r->copy_stream());
  r->ws_->tokens = std::max<int64_t>(options.max_batch_tokens, 1);
  r->pages_allocated_elsewhere_ = options.pages_allocated_elsewhere;
  r->embedding_only_ = options.embedding_only;
  // Tensor parallelism fuses the layers with decoder_layer v2 (ABI 1.4: the
  // rank's shard, its two all-reduces inside) where the plugin lists it,
  // else runs them as op sequences with an all_reduce after o and down;
  // decode graphs capture the collectives with the rest (every rank
  // captures and replays the same buckets in step).
  if (options.fused_decoder_layer) r->ResolveFusedLayer();
  if (options.graph_max_batch > 0 && runtime.plugin().HasGraphs()) {
    r->graph_max_batch_ = options.graph_max_batch;
    r->scratch_pages_ = {r->kv_pool_->scratch_page()};
    // Tensor parallelism captures lazily: every rank captures a bucket when
    // the first step of it reaches them all.
    if (options.graph_capture_context > 0 && !r->tp_.enabled()) {
      TSR_RETURN_IF_ERROR(r->CaptureDecodeGraphs(options.graph_capture_context));
    }
  }
  TSR_LOG_DEBUG(
      "model runner: {} on {}{}, {} activations, weights {:.1f} MiB, KV pool "
      "{} pages x {} slots ({:.1f} MiB), layers {}",
      arch->class_name, device.Label(),
      r->tp_.enabled() ? fmt::format(" (tensor parallel rank {} of {})",
                                     r->tp_.rank, r->tp_.size)
                       : std::string(),
      DTypeName(act),
      r->weights_->device_bytes() / 1048576.0, r->kv_pool_->num_pages(),
      r->kv_pool_->page_size(), r->kv_pool_->total_bytes() / 1048576.0,
      r->uses_fused_layers() ? "fused (decoder_layer)" : "as op sequences");
  return r;
}

Status ModelRunner::ValidateBatch(const Batch& batch, StepShape& shape) const {
  if (batch.sequences.empty()) {
    return InvalidArgumentError("a batch needs at least one sequence");
  }
  const int64_t page_size = kv_pool_->page_size();
  shape = StepShape{};
  shape.sequences = static_cast<int64_t>(batch.sequences.size());
  for (size_t b = 0; b < batch.sequences.size(); ++b) {
    const SequenceInput& s = batch.sequences[b];
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    if (n == 0) {
      return InvalidArgumentError(fmt::format(
          "sequence {} of the batch has no new tokens; every sequence needs "
          "at least one",
          b));
    }
    if (s.cached_len < 0) {
      return InvalidArgumentError(fmt::format(
          "sequence {} has a negative cached length {}", b, s.cached_len));
    }
    const int64_t len = s.cached_len + n;
    if (static_cast<int64_t>(s.pages.size()) * page_size < len) {
      return InvalidArgumentError(fmt::format(
          "sequence {} needs {} KV positions but its {} page(s) of {} hold "
          "{}; allocate pages with KvPool::EnsureCapacity first",
          b, len, s.pages.size(), page_size, s.pages.size() * page_size));
    }
    for (int32_t page : s.pages) {
      if (pages_allocated_elsewhere_
              ? page < 0 || page >= kv_pool_->num_pages()
              : !kv_pool_->IsAllocated(page)) {
        return InvalidArgumentError(fmt::format(
            "sequence {} lists KV page {}, which is not an allocated page of "
            "the pool (0..{})",
            b, page, kv_pool_->num_pages() - 1));
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      if (s.tokens[j] < 0 || s.tokens[j] >= config_.vocab_size) {
        return InvalidArgumentError(fmt::format(
            "sequence {} token {} is id {}, outside the vocabulary [0, {})", b,
            j, s.tokens[j], config_.vocab_size));
      }
    }
    shape.tokens += n;
    shape.max_pages = std::max<int64_t>(shape.max_pages, s.pages.size());
  }
  if (shape.tokens > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError("a batch holds more than 2^31 tokens");
  }
  shape.rows = 0;
  for (const SequenceInput& s : batch.sequences) {
    shape.rows += batch.all_logits || s.all_rows
                      ? static_cast<int64_t>(s.tokens.size())
                      : 1;
  }
  return OkStatus();
}

Status ModelRunner::EnsureWorkspace(const StepShape& shape) {
  Workspace& w = *ws_;
  bool synced = false;
  // Once per call, before the first old buffer goes: wait for the work that
  // uses it, then drop every graph (they recorded the old buffers).
  const std::function<Status()> release = [&]() -> Status {
    if (synced) return OkStatus();
    if (stream_ != nullptr) TSR_RETURN_IF_ERROR(stream_->Synchronize());
    synced = true;
    DestroyGraphs();
    return OkStatus();
  };
  const uint64_t es = DTypeSize(act_dtype_);
  const int64_t h = config_.hidden_size;
  const int64_t qkv_dim =
      (tp_.q_heads + 2 * tp_.kv_heads) *
      config_.head_dim;
  const int64_t q_dim = tp_.q_heads * config_.head_dim;
  const int64_t inter = tp_.inter;
  // Token capacity: grows to the step (rounded to 64) and never shrinks.
  if (shape.tokens > w.tokens || w.residual == nullptr) {
    w.tokens = std::max(w.tokens, (shape.tokens + 63) / 64 * 64);
  }
  const uint64_t t = static_cast<uint64_t>(w.tokens);
  TSR_RETURN_IF_ERROR(Reserve(device_, release, w.residual, t * h * es, "residual"));
  TSR_RETURN_IF_ERROR(Reserve(device_, release, w.normed, t * h * es, "normed"));
  // Fused layers keep their intermediates inside the plugin.
  if (fused_layer_ == nullptr) {
    TSR_RETURN_IF_ERROR(Reserve(device_, release, w.hidden, t * h * es, "hidden"));
    TSR_RETURN_IF_ERROR(Reserve(device_, release, w.qkv, t * qkv_dim * es, "qkv"));
    TSR_RETURN_IF_ERROR(Reserve(device_, release, w.attn, t * q_dim * es, "attention"));
    if (kv_dtype_ != act_dtype_) {
      const uint64_t ks = DTypeSize(kv_dtype_);
      TSR_RETURN_IF_ERROR(Reserve(device_, release, w.qkv_kv, t * qkv_dim * ks, "qkv"));
      TSR_RETURN_IF_ERROR(
          Reserve(device_, release, w.attn_kv, t * q_dim * ks, "attention"));
    }
    TSR_RETURN_IF_ERROR(Reserve(device_, release, w.gate_up, t * 2 * inter * es, "mlp"));
    TSR_RETURN_IF_ERROR(Reserve(device_, release, w.act, t * inter * es, "mlp"));
  }
  TSR_RETURN_IF_ERROR(Reserve(device_, release, w.rows_h,
                              std::max(shape.rows, shape.sequences) * h * es,
                              "last rows"));
  const uint64_t v = embedding_only_ ? 0 : static_cast<uint64_t>(config_.vocab_size);
  TSR_RETURN_IF_ERROR(Reserve(device_, release, w.logits, shape.rows * v * es, "logits"));
  if (tp_.vocab_split) {
    // This rank's [rows, V / n] and everyone's, gathered rank-major.
    const uint64_t vl = static_cast<uint64_t>(tp_.vocab);
    TSR_RETURN_IF_ERROR(
        Reserve(device_, release, w.logits_local, shape.rows * vl * es, "logits"));
    TSR_RETURN_IF_ERROR(Reserve(device_, release, w.logits_gathered,
                                shape.rows * v * es, "logits"));
  }
  if (act_dtype_ != TSR_DTYPE_F32) {
    TSR_RETURN_IF_ERROR(
        Reserve(device_, release, w.logits_f32, shape.rows * v * 4, "logits"));
  }
  const uint64_t meta_ints = 3 * shape.tokens + 2 * shape.sequences + 1 +
                             std::max(shape.rows, shape.sequences) +
                             shape.sequences * shape.max_pages;
  TSR_RETURN_IF_ERROR(Reserve(device_, release, w.meta, meta_ints * 4, "metadata"));
  return OkStatus();
}

// Metadata layout (I32, back to back): ids [T], positions [T], slots [T],
// seq_lens [B], query_start [B + 1], last_rows [R] (the token rows the
// logits come from: each sequence's last, or all of an all_rows sequence's),
// block_table [B, P].
Status ModelRunner::UploadMetadata(const Batch& batch, const StepShape& shape) {
  const int64_t t = shape.tokens, b = shape.sequences, p = shape.max_pages;
  const int64_t r = std::max(shape.rows, b);
  TSR_ASSIGN_OR_RETURN(
      std::span<int32_t> host_meta,
      meta_upload_->Host<int32_t>(static_cast<size_t>(3 * t + 2 * b + 1 + r + b * p)));
  int32_t* ids = host_meta.data();
  int32_t* positions = ids + t;
  int32_t* slots = positions + t;
  int32_t* seq_lens = slots + t;
  int32_t* query_start = seq_lens + b;
  int32_t* last_rows = query_start + b + 1;
  int32_t* block_table = last_rows + r;
  int64_t row = 0;
  int64_t out_row = 0;
  for (int64_t s = 0; s < b; ++s) {
    const SequenceInput& seq = batch.sequences[s];
    const int64_t n = static_cast<int64_t>(seq.tokens.size());
    query_start[s] = static_cast<int32_t>(row);
    for (int64_t j = 0; j < n; ++j, ++row) {
      const int64_t pos = seq.cached_len + j;
      ids[row] = seq.tokens[j];
      positions[row] = static_cast<int32_t>(pos);
      slots[row] = kv_pool_->SlotOf(seq.pages, pos);
    }
    seq_lens[s] = static_cast<int32_t>(seq.cached_len + n);
    if (seq.all_rows && !batch.all_logits) {
      for (int64_t j = n; j > 0; --j) last_rows[out_row++] = static_cast<int32_t>(row - j);
    } else {
      last_rows[out_row++] = static_cast<int32_t>(row - 1);
    }
    for (size_t k = 0; k < seq.pages.size(); ++k) {
      block_table[s * p + static_cast<int64_t>(k)] = seq.pages[k];
    }
  }
  query_start[b] = static_cast<int32_t>(row);
  SetMetadataLayout(shape);
  return meta_upload_->Commit(*ws_->meta, 0);
}

void ModelRunner::SetMetadataLayout(const StepShape& shape) {
  const int64_t t = shape.tokens, b = shape.sequences;
  const int64_t r = std::max(shape.rows, b);
  Workspace& w = *ws_;
  w.ids = 0;
  w.positions = 4 * t;
  w.slots = 8 * t;
  w.seq_lens = 12 * t;
  w.query_start = w.seq_lens + 4 * b;
  w.last_rows = w.query_start + 4 * (b + 1);
  w.block_table = w.last_rows + 4 * r;
}

Status ModelRunner::ResolveDeviceTokens(const Batch& batch,
                                        const StepShape& shape) {
  if (batch.device_tokens.empty()) return OkStatus();
  if (batch.token_source == nullptr) {
    return InvalidArgumentError("a batch with device tokens needs a source");
  }
  const Workspace& w = *ws_;
  // Runs of consecutive tokens with consecutive sources become one copy
  // (the usual case: the decode rows keep their order between steps).
  const auto& dt = batch.device_tokens;
  size_t i = 0;
  while (i < dt.size()) {
    size_t j = i + 1;
    while (j < dt.size() && dt[j].token == dt[j - 1].token + 1 &&
           dt[j].source == dt[j - 1].source + 1) {
      ++j;
    }
    if (dt[i].token < 0 || dt[j - 1].token >= shape.tokens || dt[i].source < 0 ||
        batch.token_source_offset + (dt[j - 1].source + 1) * 4 >
            batch.token_source->size()) {
      return InvalidArgumentError("a device token is out of range");
    }
    TSR_RETURN_IF_ERROR(stream_->CopyDeviceToDevice(
        *w.meta, w.ids + static_cast<uint64_t>(dt[i].token) * 4,
        *batch.token_source,
        batch.token_source_offset + static_cast<uint64_t>(dt[i].source) * 4,
        static_cast<uint64_t>(j - i) * 4));
    i = j;
  }
  return OkStatus();
}

Status ModelRunner::Launch(tsr_op_id op, std::span<const tsr_tensor> inputs,
                           std::span<const tsr_tensor> outputs,
                           const void* params, size_t params_size,
                           int64_t layer, const char* what,
                           uint32_t version) {
  Status s = runtime_.dispatcher().Launch(*stream_, op, inputs, outputs,
                                          params, params_size, version);
  if (s.ok()) return s;
  return s.WithContext(layer >= 0 ? fmt::format("{} layer {}: {}",
                                                arch_->class_name, layer, what)
                                  : fmt::format("{}: {}", arch_->class_name,
                                                what));
}

Status ModelRunner::LaunchLinear(const tsr_tensor& x, const DeviceWeight& w,
                                 const DeviceWeight& bias,
                                 const tsr_tensor& out, int64_t layer,
                                 const char* what) {
  std::vector<tsr_tensor> in = {x, w.View()};
  tsr_tensor outs[] = {out};
  if (!w.quantized()) {
    if (bias.present()) in.push_back(bias.View());
    return Launch(TSR_OP_LINEAR, in, outs, nullptr, 0, layer, what);
  }
  in.push_back(w.ScaleView());
  if (bias.present()) in.push_back(bias.View());
  const tsr_linear_w8_params params{sizeof(tsr_linear_w8_params),
                                    static_cast<int32_t>(w.group_size)};
  // Q6_K: linear v5 (w6a8); 4-bit weights: v4 (w4a8); int8: v2 or v3.
  return Launch(TSR_OP_LINEAR, in, outs, &params, sizeof(params), layer, what,
                w.q6_k ? 5u : w.packed4 ? 4u : int8_linear_version_);
}

tsr_paged_attention_params ModelRunner::AttentionParams() const {
  tsr_paged_attention_params pa{};
  pa.struct_size = sizeof(pa);
  pa.scale = static_cast<float>(
      1.0 / std::sqrt(static_cast<double>(config_.head_dim)));
  pa.page_size = kv_pool_->page_size();
  return pa;
}

Status ModelRunner::RunLayer(int64_t l, const StepShape& shape) {
  const Workspace& w = *ws_;
  const LayerWeights& lw = weights_->layer(l);
  const DType x = act_dtype_;
  const uint64_t es = DTypeSize(x);
  const int64_t t = shape.tokens, b = shape.sequences;
  const int64_t h = config_.hidden_size, d = config_.head_dim;
  const int64_t hq = tp_.q_heads;  // this rank's heads (all without TP)
  const int64_t hk = tp_.kv_heads;
  const int64_t qkv_dim = (hq + 2 * hk) * d;
  const int64_t inter = tp_.inter;
  const tsr_rms_norm_params norm{sizeof(tsr_rms_norm_params),
                                 static_cast<float>(config_.rms_norm_eps)};

  const tsr_tensor residual = w.residual->View(x, {t, h});
  const tsr_tensor hidden = w.hidden->View(x, {t, h});
  const tsr_tensor normed = w.normed->View(x, {t, h});

  // Input norm; from layer 1 on it also adds the previous MLP output.
  if (l == 0) {
    tsr_tensor in[] = {residual, lw.input_norm.View()};
    tsr_tensor out[] = {normed};
    TSR_RETURN_IF_ERROR(Launch(TSR_OP_RMS_NORM, in, out, &norm, sizeof(norm),
                               l, "input_layernorm"));
  } else {
    tsr_tensor in[] = {hidden, residual, lw.input_norm.View()};
    tsr_tensor out[] = {normed, residual};
    TSR_RETURN_IF_ERROR(Launch(TSR_OP_ADD_RMS_NORM, in, out, &norm,
                               sizeof(norm), l, "input_layernorm"));
  }

  // qkv = normed @ w_qkv^T (+ bias): [T, (Hq + 2 Hk) D].
  const tsr_tensor qkv = w.qkv->View(x, {t, qkv_dim});
  TSR_RETURN_IF_ERROR(
      LaunchLinear(normed, lw.qkv, lw.qkv_bias, qkv, l, "qkv projection"));
  // Head views into qkv: q [T, Hq, D], k and v [T, Hk, D], row stride
  // (Hq + 2 Hk) D.
  const tsr_tensor q =
      StridedView(*w.qkv, x, 0, {t, hq, d}, {qkv_dim, d, 1});
  const tsr_tensor k =
      StridedView(*w.qkv, x, hq * d * es, {t, hk, d}, {qkv_dim, d, 1});
  const tsr_tensor v =
      StridedView(*w.qkv, x, (hq + hk) * d * es, {t, hk, d}, {qkv_dim, d, 1});

  if (arch_->qk_norm) {
    tsr_tensor qin[] = {q, lw.q_norm.View()};
    tsr_tensor qout[] = {q};
    TSR_RETURN_IF_ERROR(
        Launch(TSR_OP_RMS_NORM, qin, qout, &norm, sizeof(norm), l, "q_norm"));
    tsr_tensor kin[] = {k, lw.k_norm.View()};
    tsr_tensor kout[] = {k};
    TSR_RETURN_IF_ERROR(
        Launch(TSR_OP_RMS_NORM, kin, kout, &norm, sizeof(norm), l, "k_norm"));
  }

  {
    const tsr_rope_params rope{sizeof(tsr_rope_params), arch_->rope_style};
    tsr_tensor in[] = {w.meta->View(TSR_DTYPE_I32, {t}, w.positions),
                       inv_freq_->View(TSR_DTYPE_F32, {d / 2}), q, k};
    tsr_tensor out[] = {q, k};
    TSR_RETURN_IF_ERROR(
        Launch(TSR_OP_ROPE, in, out, &rope, sizeof(rope), l, "rope"));
  }
  // Attention runs in the KV cache dtype: q/k/v cast to it when it is
  // not X (one cast of the whole qkv row block), the output cast back.
  const bool cast_kv = kv_dtype_ != x;
  const DType kvt = kv_dtype_;
  const uint64_t ks = DTypeSize(kvt);
  if (cast_kv) {
    tsr_tensor in[] = {qkv};
    tsr_tensor out[] = {w.qkv_kv->View(kvt, {t, qkv_dim})};
    TSR_RETURN_IF_ERROR(Launch(TSR_OP_CAST, in, out, nullptr, 0, l, "qkv to KV dtype"));
  }
  const runtime::Buffer& qkv_a = cast_kv ? *w.qkv_kv : *w.qkv;
  const tsr_tensor qa = cast_kv ? StridedView(qkv_a, kvt, 0, {t, hq, d}, {qkv_dim, d, 1}) : q;
  const tsr_tensor ka =
      cast_kv ? StridedView(qkv_a, kvt, hq * d * ks, {t, hk, d}, {qkv_dim, d, 1}) : k;
  const tsr_tensor va =
      cast_kv ? StridedView(qkv_a, kvt, (hq + hk) * d * ks, {t, hk, d}, {qkv_dim, d, 1}) : v;
  {
    tsr_tensor in[] = {ka, va, w.meta->View(TSR_DTYPE_I32, {t}, w.slots)};
    tsr_tensor out[] = {kv_pool_->KCache(l), kv_pool_->VCache(l)};
    TSR_RETURN_IF_ERROR(
        Launch(TSR_OP_KV_STORE, in, out, nullptr, 0, l, "kv_store"));
  }
  const tsr_tensor attn = w.attn->View(x, {t, hq, d});
  const tsr_tensor attn_a = cast_kv ? w.attn_kv->View(kvt, {t, hq, d}) : attn;
  {
    const tsr_paged_attention_params pa = AttentionParams();
    tsr_tensor in[] = {
        qa,
        kv_pool_->KCache(l),
        kv_pool_->VCache(l),
        w.meta->View(TSR_DTYPE_I32, {b, shape.max_pages}, w.block_table),
        w.meta->View(TSR_DTYPE_I32, {b}, w.seq_lens),
        w.meta->View(TSR_DTYPE_I32, {b + 1}, w.query_start)};
    tsr_tensor out[] = {attn_a};
    TSR_RETURN_IF_ERROR(Launch(TSR_OP_PAGED_ATTENTION, in, out, &pa,
                               sizeof(pa), l, "paged_attention"));
  }
  if (cast_kv) {
    tsr_tensor in[] = {attn_a};
    tsr_tensor out[] = {attn};
    TSR_RETURN_IF_ERROR(Launch(TSR_OP_CAST, in, out, nullptr, 0, l, "attention from KV dtype"));
  }
  TSR_RETURN_IF_ERROR(LaunchLinear(w.attn->View(x, {t, hq * d}), lw.o_proj,
                                   lw.o_bias, hidden, l, "o projection"));
  TSR_RETURN_IF_ERROR(AllReduce(hidden, l, "o projection"));
  {
    tsr_tensor in[] = {hidden, residual, lw.post_norm.View()};
    tsr_tensor out[] = {normed, residual};
    TSR_RETURN_IF_ERROR(Launch(TSR_OP_ADD_RMS_NORM, in, out, &norm,
                               sizeof(norm), l, "post_attention_layernorm"));
  }
  const tsr_tensor gate_up = w.gate_up->View(x, {t, 2 * inter});
  const tsr_tensor act = w.act->View(x, {t, inter});
  TSR_RETURN_IF_ERROR(LaunchLinear(normed, lw.gate_up, DeviceWeight{}, gate_up,
                                   l, "gate_up projection"));
  {
    tsr_tensor in[] = {gate_up};
    tsr_tensor out[] = {act};
    TSR_RETURN_IF_ERROR(
        Launch(TSR_OP_SILU_AND_MUL, in, out, nullptr, 0, l, "silu_and_mul"));
  }
  TSR_RETURN_IF_ERROR(LaunchLinear(act, lw.down, DeviceWeight{}, hidden, l,
                                   "down projection"));
  return AllReduce(hidden, l, "down projection");
}

void ModelRunner::ResolveFusedLayer() {
  // Hiding one of the layer's ops (TESSERA_DISABLE_OPS=paged_attention, to
  // route around a suspect kernel) hides the fused layer that contains it.
  for (tsr_op_id op :
       {TSR_OP_RMS_NORM, TSR_OP_ADD_RMS_NORM, TSR_OP_LINEAR, TSR_OP_ROPE,
        TSR_OP_KV_STORE, TSR_OP_PAGED_ATTENTION, TSR_OP_SILU_AND_MUL,
        TSR_OP_ADD, TSR_OP_CAST}) {
    if (runtime_.dispatcher().IsDisabled(op)) {
      TSR_LOG_DEBUG(
          "model runner: layers run as op sequences (TESSERA_DISABLE_OPS "
          "hides {}, which decoder_layer contains)",
          runtime::OpName(op));
      return;
    }
  }
  // One weight dtype and int8 group size for every layer's projections —
  // or, for w8a8 (decoder_layer v3), every int8 weight per channel (G = its
  // K), passed as weight_group_size 0. 4-bit weights (U8) run as
  // decoder_layer v4.
  const LayerWeights& first = weights_->layer(0);
  const DType w = first.qkv.dtype;
  const bool w8a8 = w == TSR_DTYPE_I8 && int8_linear_version_ == 3;
  const bool w4a8 = w == TSR_DTYPE_U8 && first.qkv.packed4;
  bool same_group = true, per_channel = true;
  for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
    const LayerWeights& lw = weights_->layer(l);
    for (const DeviceWeight* dw : {&lw.qkv, &lw.o_proj, &lw.gate_up, &lw.down}) {
      if (dw->dtype != w) {
        TSR_LOG_DEBUG("model runner: layers run unfused (mixed weight dtypes)");
        return;
      }
      same_group = same_group && dw->group_size == first.qkv.group_size;
      per_channel = per_channel && dw->group_size == dw->shape[1];
    }
  }
  if ((w == TSR_DTYPE_I8 || w4a8) && !same_group && !(w8a8 && per_channel)) {
    TSR_LOG_DEBUG("model runner: layers run unfused (mixed quantisation group sizes)");
    return;
  }
  fused_group_size_ = w8a8 && per_channel ? 0 : first.qkv.group_size;
  const tsr_dtype classes[] = {act_dtype_, w, kv_dtype_};  // (X, W, KV)
  // v4 for w4a8 and v3 for w8a8 (their comm may be NULL), v2 for a
  // tensor-parallel rank.
  const tsr_op_signature sig = runtime::MakeSignature(
      TSR_OP_DECODER_LAYER, w4a8 ? 4 : (w8a8 ? 3 : (tp_.enabled() ? 2 : 1)), classes);
  auto resolved = runtime_.dispatcher().ResolveFused(device_.ordinal(), sig);
  if (!resolved.ok()) {
    TSR_LOG_DEBUG("model runner: layers run as op sequences ({})",
                  resolved.status().message());
    return;
  }
  fused_layer_ = *resolved;
}

Status ModelRunner::RunFusedLayer(int64_t l, const StepShape& shape) {
  const Workspace& w = *ws_;
  const LayerWeights& lw = weights_->layer(l);
  const DType x = act_dtype_;
  const int64_t t = shape.tokens, b = shape.sequences;
  const int64_t h = config_.hidden_size, d = config_.head_dim;
  tsr_tensor absent{};
  absent.struct_size = sizeof(absent);
  absent.dtype = TSR_DTYPE_INVALID;
  auto optional = [&](const DeviceWeight& dw) {
    return dw.present() ? dw.View() : absent;
  };
  auto scale = [&](const DeviceWeight& dw) {
    return dw.quantized() ? dw.ScaleView() : absent;
  };
  const tsr_tensor residual = w.residual->View(x, {t, h});
  const tsr_tensor in[TSR_DECODER_LAYER_NUM_INPUTS] = {
      residual,
      w.meta->View(TSR_DTYPE_I32, {t}, w.positions),
      w.meta->View(TSR_DTYPE_I32, {t}, w.slots),
      w.meta->View(TSR_DTYPE_I32, {b, shape.max_pages}, w.block_table),
      w.meta->View(TSR_DTYPE_I32, {b}, w.seq_lens),
      w.meta->View(TSR_DTYPE_I32, {b + 1}, w.query_start),
      inv_freq_->View(TSR_DTYPE_F32, {d / 2}),
      lw.input_norm.View(),
      lw.qkv.View(),
      scale(lw.qkv),
      optional(lw.qkv_bias),
      optional(lw.q_norm),
      optional(lw.k_norm),
      lw.o_proj.View(),
      scale(lw.o_proj),
      optional(lw.o_bias),
      lw.post_norm.View(),
      lw.gate_up.View(),
      scale(lw.gate_up),
      lw.down.View(),
      scale(lw.down)};
  const tsr_tensor out[TSR_DECODER_LAYER_NUM_OUTPUTS] = {
      residual, kv_pool_->KCache(l), kv_pool_->VCache(l)};
  tsr_decoder_layer_params p{};
  p.struct_size = sizeof(p);
  p.rms_norm_eps = static_cast<float>(config_.rms_norm_eps);
  p.rope_style = arch_->rope_style;
  p.num_q_heads = static_cast<int32_t>(tp_.q_heads);
  p.num_kv_heads = static_cast<int32_t>(tp_.kv_heads);
  p.head_dim = static_cast<int32_t>(d);
  p.weight_group_size = static_cast<int32_t>(fused_group_size_);
  const tsr_paged_attention_params pa = AttentionParams();
  p.attn_scale = pa.scale;
  p.page_size = pa.page_size;
  p.sliding_window = pa.sliding_window;
  p.logit_softcap = pa.logit_softcap;
  p.comm = tp_.enabled() ? comm_->handle() : nullptr;  // v2, v3
  Status s = runtime_.dispatcher().Launch(*fused_layer_, *stream_, in, out, &p,
                                          sizeof(p));
  if (s.ok()) return s;
  return s.WithContext(
      fmt::format("{} layer {}: decoder_layer", arch_->class_name, l));
}

StatusOr<tsr_tensor> ModelRunner::ForwardOnDevice(const Batch& batch) {
  if (embedding_only_) {
    return FailedPreconditionError(
        "this model runner serves embeddings (--is-embedding): it has no "
        "output head and computes no logits");
  }
  StepShape shape;
  TSR_RETURN_IF_ERROR(ValidateBatch(batch, shape));
  if (!batch.all_logits && shape.tokens == shape.sequences &&
      GraphBucket(shape.sequences) > 0) {
    return ForwardWithGraph(batch, shape);
  }
  TSR_RETURN_IF_ERROR(EnsureWorkspace(shape));
  TSR_RETURN_IF_ERROR(UploadMetadata(batch, shape));
  TSR_RETURN_IF_ERROR(ResolveDeviceTokens(batch, shape));
  if (batch.after_layer) shape.after_layer = &batch.after_layer;
  return EnqueueModel(shape, batch.all_logits);
}

StatusOr<tsr_tensor> ModelRunner::ForwardWithGraph(const Batch& batch,
                                                   const StepShape& shape) {
  // Pad to the bucket with one-token rows at position 0 of the scratch
  // page, and the block table to a power-of-two width.
  static const int32_t kPadToken = 0;
  const int64_t bucket = GraphBucket(shape.sequences);
  int64_t width = 1;
  while (width < shape.max_pages) width *= 2;
  Batch padded;
  padded.sequences = batch.sequences;
  padded.sequences.resize(static_cast<size_t>(bucket),
                          SequenceInput{std::span<const int32_t>(&kPadToken, 1),
                                        0, scratch_pages_});
  StepShape pshape;
  pshape.tokens = bucket;
  pshape.sequences = bucket;
  pshape.max_pages = width;
  pshape.rows = bucket;
  TSR_RETURN_IF_ERROR(EnsureWorkspace(pshape));
  TSR_RETURN_IF_ERROR(UploadMetadata(padded, pshape));
  TSR_RETURN_IF_ERROR(ResolveDeviceTokens(batch, pshape));

  auto it = graphs_.find(std::make_pair(bucket, width));
  if (it == graphs_.end()) {
    const Status captured = CaptureDecodeGraph(bucket, width);
    if (!captured.ok()) {
      DisableGraphs(captured);
      TSR_RETURN_IF_ERROR(EnqueueModel(pshape, false).status());
      return ForwardLogitsView(shape.sequences);
    }
    it = graphs_.find(std::make_pair(bucket, width));
  }
  TSR_RETURN_IF_ERROR(runtime_.plugin().LaunchGraph(it->second,
                                                    stream_->handle()));
  ++graph_replays_;
  return ForwardLogitsView(shape.sequences);
}

Status ModelRunner::CaptureDecodeGraph(int64_t bucket, int64_t width) {
  StepShape pshape;
  pshape.tokens = bucket;
  pshape.sequences = bucket;
  pshape.max_pages = width;
  pshape.rows = bucket;
  SetMetadataLayout(pshape);  // the views the graph fixes (contents later)
  const auto start = std::chrono::steady_clock::now();
  runtime::Plugin& plugin = runtime_.plugin();
  const uint64_t fallbacks_before = FallbackLaunches();
  TSR_RETURN_IF_ERROR(plugin.BeginCapture(stream_->handle()));
  StatusOr<tsr_tensor> captured = EnqueueModel(pshape, false);
  StatusOr<tsr_graph> graph = plugin.EndCapture(stream_->handle());
  if (captured.ok() && graph.ok() && FallbackLaunches() != fallbacks_before) {
    // An op fell back to the cpu plugin: that work ran outside the graph
    // (and is counted per launch in tessera:op_fallback_total).
    (void)plugin.DestroyGraph(*graph);
    graph = FailedPreconditionError(
        "an op of the step falls back to the cpu plugin");
  }
  if (!captured.ok() || !graph.ok()) {
    if (graph.ok()) (void)plugin.DestroyGraph(*graph);
    return !captured.ok() ? captured.status() : graph.status();
  }
  graphs_.emplace(std::make_pair(bucket, width), *graph);
  ++graphs_captured_;
  TSR_LOG_DEBUG("captured the decode graph for batch {} (block table {} "
                "pages) in {:.2f} ms; {} graphs",
                bucket, width,
                std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count(),
                graphs_.size());
  return OkStatus();
}

void ModelRunner::DisableGraphs(const Status& why) {
  TSR_LOG_WARN(
      "decode graphs are off ({}); decode steps run eagerly from now on",
      why.ToString());
  DestroyGraphs();
  graph_max_batch_ = 0;
}

std::vector<int64_t> ModelRunner::GraphBuckets() const {
  std::vector<int64_t> buckets;
  for (int64_t b = 1; GraphBucket(b) > 0; b = GraphBucket(b) + 1) {
    buckets.push_back(GraphBucket(b));
  }
  return buckets;
}

Status ModelRunner::CaptureDecodeGraphs(int64_t context_tokens) {
  const std::vector<int64_t> buckets = GraphBuckets();
  if (buckets.empty()) return OkStatus();
  const int64_t pages = std::max<int64_t>(
      1, (context_tokens + kv_pool_->page_size() - 1) / kv_pool_->page_size());
  int64_t max_width = 1;
  while (max_width < pages) max_width *= 2;
  // One workspace for every graph and the steps to come: a larger step
  // later would reallocate it and drop the graphs.
  StepShape largest;
  largest.tokens = std::max(ws_->tokens, buckets.back());
  largest.sequences = buckets.back();
  largest.max_pages = max_width;
  largest.rows = buckets.back();
  TSR_RETURN_IF_ERROR(EnsureWorkspace(largest));
  const runtime::MemoryStats before =
      device_.plugin().accounting().Get(device_.ordinal(), TSR_MEM_DEVICE);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t bucket : buckets) {
    for (int64_t width = 1; width <= max_width; width *= 2) {
      if (graphs_.count(std::make_pair(bucket, width)) > 0) continue;
      Status s = CaptureDecodeGraph(bucket, width);
      if (!s.ok()) {
        DisableGraphs(s);
        return OkStatus();
      }
    }
  }
  const runtime::MemoryStats after =
      device_.plugin().accounting().Get(device_.ordinal(), TSR_MEM_DEVICE);
  TSR_LOG_INFO(
      "captured {} decode graphs (batch buckets {}..{} x block tables "
      "1..{} pages) in {:.0f} ms; device memory {:+.1f} MiB while capturing, "
      "{:.1f} MiB in use",
      graphs_.size(), buckets.front(), buckets.back(), max_width,
      std::chrono::duration<double, std::milli>(
          std::chrono::steady_clock::now() - start)
          .count(),
      (static_cast<double>(after.reserved_bytes) -
       static_cast<double>(before.reserved_bytes)) / 1048576.0,
      after.reserved_bytes / 1048576.0);
  return OkStatus();
}

uint64_t ModelRunner::FallbackLaunches() const {
  uint64_t n = 0;
  for (const auto& c : runtime_.dispatcher().Counters()) n += c.fallbacks;
  return n;
}

tsr_tensor ModelRunner::ForwardLogitsView(int64_t rows) const {
  return F32Logits()->View(TSR_DTYPE_F32, {rows, config_.vocab_size});
}

StatusOr<HiddenStates> ModelRunner::ForwardHidden(const Batch& batch) {
  StepShape shape;
  TSR_RETURN_IF_ERROR(ValidateBatch(batch, shape));
  TSR_RETURN_IF_ERROR(EnsureWorkspace(shape));
  TSR_RETURN_IF_ERROR(UploadMetadata(batch, shape));
  TSR_RETURN_IF_ERROR(ResolveDeviceTokens(batch, shape));
  TSR_RETURN_IF_ERROR(EnqueueHidden(shape, batch.all_logits).status());
  const int64_t h = config_.hidden_size;
  const uint64_t es = DTypeSize(act_dtype_);
  // The rows start at offset 0 of normed (every token) or rows_h (gathered).
  const Buffer& src = batch.all_logits ? *ws_->normed : *ws_->rows_h;
  std::vector<std::byte> raw(static_cast<size_t>(shape.rows * h) * es);
  TSR_RETURN_IF_ERROR(stream_->CopyDeviceToHost(raw.data(), src, 0, raw.size()));
  TSR_RETURN_IF_ERROR(stream_->Synchronize());
  HiddenStates out;
  out.rows = shape.rows;
  out.hidden = h;
  out.data.resize(static_cast<size_t>(shape.rows * h));
  if (act_dtype_ == TSR_DTYPE_F32) {
    std::memcpy(out.data.data(), raw.data(), raw.size());
  } else {
    for (size_t i = 0; i < out.data.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, raw.data() + 2 * i, 2);
      out.data[i] = Bf16ToFloat(bits);
    }
  }
  return out;
}

StatusOr<tsr_tensor> ModelRunner::EnqueueHidden(const StepShape& shape,
                                                bool all_rows) {
  const Workspace& w = *ws_;
  const DType x = act_dtype_;
  const int64_t t = shape.tokens, h = config_.hidden_size;
  const tsr_tensor residual = w.residual->View(x, {t, h});
  const tsr_tensor normed = w.normed->View(x, {t, h});
  {
    tsr_tensor in[] = {w.meta->View(TSR_DTYPE_I32, {t}, w.ids),
                       weights_->embed().View()};
    tsr_tensor out[] = {residual};
    if (tp_.vocab_split) {
      // Vocabulary-parallel: this rank's rows (zeros for the others'
      // ids, embedding v2), summed over the ranks.
      tsr_embedding_shard_params ep{};
      ep.struct_size = sizeof(ep);
      ep.row_begin = tp_.vocab_begin;
      TSR_RETURN_IF_ERROR(Launch(TSR_OP_EMBEDDING, in, out, &ep, sizeof(ep), -1,
                                 "embed_tokens (vocabulary shard)", 2));
      Status s = comm_->AllReduce(*stream_, residual, residual);
      if (!s.ok()) {
        return s.WithContext(fmt::format("{}: all_reduce after embed_tokens (tensor parallel "
                                         "rank {} of {})",
                                         arch_->class_name, tp_.rank, tp_.size));
      }
    } else {
      TSR_RETURN_IF_ERROR(
          Launch(TSR_OP_EMBEDDING, in, out, nullptr, 0, -1, "embed_tokens"));
    }
  }
  const tsr_rms_norm_params norm{sizeof(tsr_rms_norm_params),
                                 static_cast<float>(config_.rms_norm_eps)};
  if (fused_layer_ != nullptr) {
    // Each fused layer leaves the complete hidden state in `residual`.
    for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
      TSR_RETURN_IF_ERROR(RunFusedLayer(l, shape));
      if (shape.after_layer != nullptr) TSR_RETURN_IF_ERROR((*shape.after_layer)(l));
    }
    tsr_tensor in[] = {residual, weights_->final_norm().View()};
    tsr_tensor out[] = {normed};
    TSR_RETURN_IF_ERROR(Launch(TSR_OP_RMS_NORM, in, out, &norm, sizeof(norm),
                               -1, "final norm"));
  } else {
    for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
      TSR_RETURN_IF_ERROR(RunLayer(l, shape));
      if (shape.after_layer != nullptr) TSR_RETURN_IF_ERROR((*shape.after_layer)(l));
    }
    tsr_tensor in[] = {w.hidden->View(x, {t, h}), residual,
                       weights_->final_norm().View()};
    tsr_tensor out[] = {normed, residual};
    TSR_RETURN_IF_ERROR(Launch(TSR_OP_ADD_RMS_NORM, in, out, &norm,
                               sizeof(norm), -1, "final norm"));
  }
  // The rows the logits come from: every token, or the last of each
  // sequence gathered with the embedding op (a row gather).
  tsr_tensor rows = normed;
  if (!all_rows) {
    rows = w.rows_h->View(x, {shape.rows, h});
    tsr_tensor in[] = {
        w.meta->View(TSR_DTYPE_I32, {shape.rows}, w.last_rows), normed};
    tsr_tensor out[] = {rows};
    TSR_RETURN_IF_ERROR(Launch(TSR_OP_EMBEDDING, in, out, nullptr, 0, -1,
                               "gather last rows"));
  }
  return rows;
}

StatusOr<tsr_tensor> ModelRunner::EnqueueModel(const StepShape& shape,
                                               bool all_logits) {
  TSR_ASSIGN_OR_RETURN(tsr_tensor rows, EnqueueHidden(shape, all_logits));
  const Workspace& w = *ws_;
  const DType x = act_dtype_;
  const int64_t v = config_.vocab_size;
  if (tp_.vocab_split) {
    // Each rank computes its vocabulary rows; all_gather stacks them
    // rank-major [n, rows, V/n]; one cast reads that as [rows, n, V/n]
    // (strided) into the F32 logits [rows, V].
    const int64_t n = tp_.size, vl = tp_.vocab, r = shape.rows;
    const tsr_tensor local = w.logits_local->View(x, {r, vl});
    TSR_RETURN_IF_ERROR(LaunchLinear(rows, weights_->lm_head(), DeviceWeight{}, local,
                                     -1, "lm_head (vocabulary shard)"));
    TSR_RETURN_IF_ERROR(comm_->AllGather(*stream_, w.logits_local->View(x, {r * vl}),
                                         w.logits_gathered->View(x, {n * r * vl}))
                            .WithContext("lm_head: all_gather of the logits"));
    const tsr_tensor f32 = F32Logits()->View(TSR_DTYPE_F32, {r, v});
    tsr_tensor in[] = {StridedView(*w.logits_gathered, x, 0, {r, n, vl}, {vl, r * vl, 1})};
    tsr_tensor out[] = {F32Logits()->View(TSR_DTYPE_F32, {r, n, vl})};
    TSR_RETURN_IF_ERROR(
        Launch(TSR_OP_CAST, in, out, nullptr, 0, -1, "logits from vocabulary shards"));
    return f32;
  }
  tsr_tensor logits = w.logits->View(x, {shape.rows, v});
  TSR_RETURN_IF_ERROR(
      LaunchLinear(rows, weights_->lm_head(), DeviceWeight{}, logits, -1, "lm_head"));
  if (x != TSR_DTYPE_F32) {
    tsr_tensor f32 = w.logits_f32->View(TSR_DTYPE_F32, {shape.rows, v});
    tsr_tensor in[] = {logits};
    tsr_tensor out[] = {f32};
    TSR_RETURN_IF_ERROR(
        Launch(TSR_OP_CAST, in, out, nullptr, 0, -1, "logits to f32"));
    logits = f32;
  }
  return logits;
}

Status ModelRunner::AllReduce(const tsr_tensor& hidden, int64_t layer,
                              const char* after) {
  if (!tp_.enabled()) return OkStatus();
  Status s = comm_->AllReduce(*stream_, hidden, hidden);
  if (s.ok()) return s;
  return s.WithContext(fmt::format("{} layer {}: all_reduce after the {} (tensor parallel rank {} of {})",
                                   arch_->class_name, layer, after, tp_.rank, tp_.size));
}

StatusOr<Logits> ModelRunner::Forward(
    const Batch& batch, const std::function<void()>& while_running) {
  TSR_ASSIGN_OR_RETURN(tsr_tensor device_logits, ForwardOnDevice(batch));
  Logits out;
  out.rows = device_logits.shape[0];
  out.vocab = device_logits.shape[1];
  out.data.resize(static_cast<size_t>(out.rows * out.vocab));
  TSR_RETURN_IF_ERROR(stream_->CopyDeviceToHost(
      out.data.data(), *F32Logits(), 0, out.data.size() * sizeof(float)));
  if (while_running) while_running();
  TSR_RETURN_IF_ERROR(stream_->Synchronize());
  return out;
}

runtime::Buffer* ModelRunner::F32Logits() const {
  if (ws_ == nullptr) return nullptr;
  const BufferPtr& b = act_dtype_ == TSR_DTYPE_F32 ? ws_->logits : ws_->logits_f32;
  return b.get();
}

StatusOr<tsr_tensor> ModelRunner::UploadLogits(const Logits& logits) {
  Buffer* dst_buffer = F32Logits();
  const uint64_t bytes = static_cast<uint64_t>(logits.rows * logits.vocab) * 4;
  if (dst_buffer == nullptr || logits.vocab != config_.vocab_size ||
      logits.rows < 1 || bytes > dst_buffer->size() ||
      logits.data.size() != static_cast<size_t>(logits.rows * logits.vocab)) {
    return InvalidArgumentError(
        "UploadLogits needs logits shaped as the last Forward's");
  }
  Buffer& dst = *dst_buffer;
  TSR_RETURN_IF_ERROR(stream_->CopyHostToDevice(
      dst, 0, logits.data.data(), logits.data.size() * sizeof(float)));
  // The copy reads `logits` asynchronously: wait before the caller may
  // free or change it.
  TSR_RETURN_IF_ERROR(stream_->Synchronize());
  return dst.View(TSR_DTYPE_F32, {logits.rows, logits.vocab});
}

}  // namespace tessera::model
