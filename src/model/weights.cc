#include "model/weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "model/quantize.h"

namespace tessera::model {
namespace {

constexpr int64_t kChunkElements = int64_t{1} << 21;  // conversion staging
// Rows a core decodes to f32 before quantising them: staging that stays in
// its L2 (K = 3072: 192 KiB).
constexpr int64_t kRowsPerPass = 16;

// Runs fn(begin, end) over [0, rows) split into one contiguous range per
// host core (at most 8; one range when the work is small). Decoding,
// widening and quantizing weights at load is CPU work that would otherwise
// use one core of the machine.
void ParallelRows(int64_t rows, int64_t cols,
                  const std::function<void(int64_t, int64_t)>& fn) {
  static const int64_t kCores = std::clamp<int64_t>(
      int64_t(std::thread::hardware_concurrency()), 1, 8);
  const int64_t parts =
      rows * cols < (int64_t{1} << 16) ? 1 : std::min(kCores, rows);
  if (parts <= 1) {
    fn(0, rows);
    return;
  }
  std::vector<std::thread> threads;
  const int64_t step = (rows + parts - 1) / parts;
  for (int64_t begin = step; begin < rows; begin += step) {
    threads.emplace_back(fn, begin, std::min(rows, begin + step));
  }
  fn(0, std::min(rows, step));
  for (std::thread& t : threads) t.join();
}

}  // namespace

// A row block (and column range) of one checkpoint tensor: what a
// tensor-parallel rank reads of it. rows / cols < 0: all.
struct TensorSlice {
  std::string name;
  int64_t row0 = 0, rows = -1;
  int64_t col0 = 0, cols = -1;
};

class ModelWeights::Loader {
 public:
  Loader(runtime::Device& device, const Checkpoint& checkpoint,
         const WeightLoadOptions& options, ModelWeights& weights)
      : device_(device),
        checkpoint_(checkpoint),
        options_(options),
        weights_(weights),
        total_bytes_(checkpoint.total_tensor_bytes()) {}

  // The slices stacked along their first dimension into one device weight.
  // `linear`: a weight of the linear op (may stay F16). `quantizable`: a
  // decoder-layer linear weight or the head (int8 when asked for);
  // `int4_ok`: 4-bit under kInt4 when its K is a multiple of 32 (the
  // decoder layers' weights; the head stays int8, as llama.cpp keeps its
  // output tensor at higher precision).
  StatusOr<DeviceWeight> Stacked(const std::vector<TensorSlice>& slices,
                                 bool linear, bool quantizable = false,
                                 bool int4_ok = true, bool q6_k_ok = false) {
    std::vector<Part> parts;
    for (const TensorSlice& slice : slices) {
      TSR_ASSIGN_OR_RETURN(TensorRef ref, checkpoint_.Get(slice.name));
      TSR_ASSIGN_OR_RETURN(Part part, MakePart(ref, slice));
      parts.push_back(part);
    }
    if (q6_k_ok && quantizable && options_.q6_k_head &&
        options_.quantization != WeightQuantization::kNone && parts.size() == 1 &&
        parts[0].ref.raw_q6_k() && parts[0].cols == parts[0].width &&
        parts[0].cols % 256 == 0) {
      return Q6KWeight(parts[0]);
    }
    if (quantizable && options_.quantization != WeightQuantization::kNone &&
        parts[0].ref.shape().size() == 2) {
      return QuantizedStack(parts, int4_ok &&
                                       options_.quantization == WeightQuantization::kInt4 &&
                                       parts[0].cols % kInt4GroupSize == 0);
    }
    DeviceWeight weight;
    weight.shape = parts[0].ref.shape();
    weight.shape[0] = 0;
    if (weight.shape.size() == 2) weight.shape[1] = parts[0].cols;
    bool all_f16 = true;
    for (const Part& part : parts) {
      weight.shape[0] += part.rows;
      all_f16 = all_f16 && part.ref.dtype() == TSR_DTYPE_F16;
    }
    weight.dtype = linear && options_.keep_f16_linear && all_f16
                       ? TSR_DTYPE_F16
                       : options_.activation_dtype;
    const uint64_t bytes = static_cast<uint64_t>(NumElements(weight.shape)) *
                           DTypeSize(weight.dtype);
    auto buffer = device_.AllocateUncached(bytes);
    if (!buffer.ok()) {
      return buffer.status().WithContext(fmt::format(
          "cannot hold weight {} ({} bytes) on {}", slices[0].name, bytes,
          device_.Label()));
    }
    weight.buffer = std::move(buffer).value();
    uint64_t offset = 0;
    for (const Part& part : parts) {
      TSR_RETURN_IF_ERROR(Upload(*weight.buffer, offset, part, weight.dtype));
      offset += static_cast<uint64_t>(part.rows * part.cols) *
                DTypeSize(weight.dtype);
    }
    weights_.device_bytes_ += bytes;
    return weight;
  }

  StatusOr<DeviceWeight> Single(const TensorSlice& slice, bool linear,
                                bool quantizable = false, bool int4_ok = true,
                                bool q6_k_ok = false) {
    return Stacked({slice}, linear, quantizable, int4_ok, q6_k_ok);
  }

 private:
  // A slice resolved against its tensor: rows x cols elements, row r at
  // element (row0 + r) * width + col0 (1-D tensors: width 1, cols 1).
  struct Part {
    TensorRef ref;
    int64_t row0 = 0, rows = 0, col0 = 0, cols = 0, width = 1;
  };

  static StatusOr<Part> MakePart(const TensorRef& ref,
                                 const TensorSlice& slice) {
    Part p{ref};
    const Shape& shape = ref.shape();
    const int64_t n = shape.empty() ? 1 : shape[0];
    p.width = shape.size() == 2 ? shape[1] : 1;
    p.row0 = slice.row0;
    p.rows = slice.rows < 0 ? n - slice.row0 : slice.rows;
    p.col0 = shape.size() == 2 ? slice.col0 : 0;
    p.cols = shape.size() == 2 ? (slice.cols < 0 ? p.width - p.col0 : slice.cols)
                               : 1;
    if (p.row0 < 0 || p.rows < 0 || p.row0 + p.rows > n || p.col0 < 0 ||
        p.cols < 0 || p.col0 + p.cols > p.width) {
      return InternalError(fmt::format(
          "slice rows [{}, +{}) cols [{}, +{}) is outside {} (shape [{}, {}])",
          p.row0, p.rows, p.col0, p.cols, ref.name(), n, p.width));
    }
    return p;
  }

  // Converts rows [r, r + nr) of `part` into `out` (dst dtype), row-major
  // [nr, cols], the rows split over the host's cores.
  static void ConvertRows(const Part& part, int64_t r, int64_t nr,
                          DType dst_dtype, void* out) {
    const size_t row_bytes = size_t(part.cols) * DTypeSize(dst_dtype);
    ParallelRows(nr, part.cols, [&](int64_t begin, int64_t end) {
      part.ref.ReadRows(part.row0 + r + begin, end - begin, part.col0,
                        part.cols, dst_dtype,
                        static_cast<char*>(out) + size_t(begin) * row_bytes);
    });
  }

  // `parts` ([N_i, K] each) stacked into one I8 [sum N_i, K] weight with
  // F32 scales [sum N_i, K / G] — or, `int4`, packed 4-bit U8
  // [sum N_i, K / 2] with F16 scales [sum N_i, K / 32] — quantised row
  // block by row block.
  StatusOr<DeviceWeight> QuantizedStack(const std::vector<Part>& parts, bool int4) {
    DeviceWeight weight;
    weight.dtype = int4 ? TSR_DTYPE_U8 : TSR_DTYPE_I8;
    weight.packed4 = int4;
    weight.shape = {0, parts[0].cols};
    for (const Part& part : parts) weight.shape[0] += part.rows;
    const int64_t n = weight.shape[0], k = weight.shape[1];
    weight.group_size = int4 ? kInt4GroupSize : Int8GroupFor(k, options_.int8_group_size);
    const int64_t groups = k / weight.group_size;
    const int64_t row_bytes = int4 ? k / 2 : k;  // of the quantised weight
    const uint64_t q_bytes = static_cast<uint64_t>(n * row_bytes);
    const uint64_t scale_size = int4 ? sizeof(uint16_t) : sizeof(float);  // f16 / f32
    const uint64_t s_bytes = static_cast<uint64_t>(n * groups) * scale_size;
    for (bool scales : {false, true}) {
      auto buffer = device_.AllocateUncached(scales ? s_bytes : q_bytes);
      if (!buffer.ok()) {
        return buffer.status().WithContext(fmt::format(
            "cannot hold {} weight {} ({} + {} bytes of scales) on {}",
            int4 ? "4-bit" : "int8", parts[0].ref.name(), q_bytes, s_bytes,
            device_.Label()));
      }
      (scales ? weight.scale : weight.buffer) = std::move(buffer).value();
    }
    // Rows per block: about upload_block_bytes of quantised weight, so an
    // upload (the cpu plugin's copies of 4 MiB and more) is split over the
    // device's threads with its pages populated at once rather than
    // faulted in one at a time.
    const int64_t block_bytes = std::max<int64_t>(1, options_.upload_block_bytes);
    const int64_t block = std::max<int64_t>(1, block_bytes / std::max<int64_t>(row_bytes, 1));
    std::vector<int8_t>& rows_q = rows_q_;
    std::vector<float>& rows_s = rows_s_;
    std::vector<uint16_t>& rows_s16 = rows_s16_;  // int4's f16 scales
    int64_t row0 = 0;         // the part's first row in the weight
    int64_t staged_from = 0;  // the weight's first row not yet uploaded
    for (const Part& part : parts) {
      // Whole rows of GGUF Q4_0 blocks load as they are (the same layout).
      const bool raw_q4_0 = int4 && part.ref.raw_q4_0() && part.cols == part.width;
      // And GGUF Q8_0 blocks as int8 with groups of 32: the same numbers
      // (the f16 scale widened), where decoding and quantising again would
      // cost most of such a file's load and could move a weight.
      const bool raw_q8_0 = !int4 && weight.group_size == gguf::kQ8_0BlockElements &&
                            part.ref.raw_q8_0() && part.cols == part.width;
      for (int64_t r = 0; r < part.rows; r += block) {
        const int64_t nr = std::min(block, part.rows - r);
        // This block's rows in the staging, after those not yet uploaded.
        const int64_t at = row0 + r - staged_from;
        rows_q.resize(static_cast<size_t>((at + nr) * row_bytes));
        if (int4) {
          rows_s16.resize(static_cast<size_t>((at + nr) * groups));
        } else {
          rows_s.resize(static_cast<size_t>((at + nr) * groups));
        }
        int8_t* const q_at = rows_q.data() + at * row_bytes;
        float* const s_at = int4 ? nullptr : rows_s.data() + at * groups;
        uint16_t* const s16_at = int4 ? rows_s16.data() + at * groups : nullptr;
        if (raw_q4_0) {
          // Each block's f16 scale and 16 bytes of nibbles split, nothing
          // decoded.
          const size_t block_bytes = gguf::BlockBytes(gguf::TensorType::kQ4_0);
          constexpr size_t kNibbleBytes = kInt4GroupSize / 2;
          const std::byte* src =
              part.ref.data() + static_cast<size_t>((part.row0 + r) * groups) * block_bytes;
          auto* q = reinterpret_cast<uint8_t*>(q_at);
          for (int64_t b = 0; b < nr * groups; ++b) {
            const std::byte* blk = src + b * block_bytes;
            std::memcpy(&s16_at[b], blk, sizeof(uint16_t));
            std::memcpy(q + b * kNibbleBytes, blk + sizeof(uint16_t), kNibbleBytes);
          }
        } else if (raw_q8_0) {
          constexpr size_t kBlockBytes = gguf::kQ8_0BlockBytes;
          constexpr int64_t kWeights = gguf::kQ8_0BlockElements;
          const std::byte* src =
              part.ref.data() + static_cast<size_t>((part.row0 + r) * groups) * kBlockBytes;
          ParallelRows(nr * groups, kWeights, [&](int64_t begin, int64_t end) {
            for (int64_t b = begin; b < end; ++b) {
              const std::byte* blk = src + b * kBlockBytes;
              uint16_t d = 0;
              std::memcpy(&d, blk, sizeof(d));
              s_at[b] = F16ToFloat(d);
              std::memcpy(q_at + b * kWeights, blk + sizeof(d), kWeights);
            }
          });
        } else {
          // Each core decodes kRowsPerPass rows to f32 and quantises them
          // while they are in its cache.
          ParallelRows(nr, k, [&](int64_t begin, int64_t end) {
            std::vector<float> f32(static_cast<size_t>(std::min(kRowsPerPass, end - begin) * k));
            for (int64_t i = begin; i < end; i += kRowsPerPass) {
              const int64_t n_rows = std::min(kRowsPerPass, end - i);
              part.ref.ReadRows(part.row0 + r + i, n_rows, part.col0, part.cols,
                                TSR_DTYPE_F32, f32.data());
              if (int4) {
                QuantizeInt4Rows(f32.data(), n_rows, k,
                                 reinterpret_cast<uint8_t*>(q_at) + i * row_bytes,
                                 s16_at + i * groups);
              } else {
                QuantizeInt8Rows(f32.data(), n_rows, k, weight.group_size,
                                 q_at + i * k, s_at + i * groups);
              }
            }
          });
        }
        // Upload once the staging holds a block's bytes (blocks of the
        // stacked parts gather: q, k and v are a few MiB each) or the
        // weight is complete.
        const int64_t staged = at + nr;
        if (staged * row_bytes < block_bytes && row0 + r + nr < n) continue;
        Status status = weight.buffer->CopyFromHost(
            static_cast<uint64_t>(staged_from * row_bytes), rows_q.data(), staged * row_bytes);
        if (status.ok()) {
          status = weight.scale->CopyFromHost(
              static_cast<uint64_t>(staged_from * groups) * scale_size,
              int4 ? static_cast<const void*>(rows_s16.data()) : rows_s.data(),
              staged * groups * scale_size);
        }
        staged_from += staged;
        if (!status.ok()) {
          return status.WithContext(fmt::format("uploading {} {} from {}",
                                                int4 ? "4-bit" : "int8",
                                                part.ref.name(), part.ref.path()));
        }
      }
      row0 += part.rows;
      done_bytes_ += part.ref.size_bytes();
      if (options_.progress) options_.progress(done_bytes_, total_bytes_);
    }
    weights_.device_bytes_ += q_bytes + s_bytes;
    return weight;
  }

  // A GGUF Q6_K tensor's whole rows [part.row0, + part.rows) as linear
  // v5's weight: each 210-byte block split into its 208 bytes of ql, qh and
  // sc and its f16 d, nothing decoded; uploaded in blocks of about
  // upload_block_bytes.
  StatusOr<DeviceWeight> Q6KWeight(const Part& part) {
    constexpr int64_t kFileBlock = 210, kBody = 208;
    DeviceWeight weight;
    weight.dtype = TSR_DTYPE_U8;
    weight.q6_k = true;
    weight.shape = {part.rows, part.cols};
    weight.group_size = kInt4GroupSize;  // the activations' blocks of 32
    const int64_t n = part.rows, supers = part.cols / 256;
    const uint64_t q_bytes = static_cast<uint64_t>(n * supers * kBody);
    const uint64_t s_bytes = static_cast<uint64_t>(n * supers) * sizeof(uint16_t);
    for (bool scales : {false, true}) {
      auto buffer = device_.AllocateUncached(scales ? s_bytes : q_bytes);
      if (!buffer.ok()) {
        return buffer.status().WithContext(fmt::format(
            "cannot hold Q6_K weight {} ({} + {} bytes of scales) on {}", part.ref.name(),
            q_bytes, s_bytes, device_.Label()));
      }
      (scales ? weight.scale : weight.buffer) = std::move(buffer).value();
    }
    const int64_t row_bytes = supers * kBody;
    const int64_t block = std::max<int64_t>(
        1, std::max<int64_t>(1, options_.upload_block_bytes) / std::max<int64_t>(row_bytes, 1));
    std::vector<uint8_t> body;
    std::vector<uint16_t> d;
    for (int64_t r = 0; r < n; r += block) {
      const int64_t nr = std::min(block, n - r);
      body.resize(static_cast<size_t>(nr * row_bytes));
      d.resize(static_cast<size_t>(nr * supers));
      const std::byte* src =
          part.ref.data() + static_cast<size_t>((part.row0 + r) * supers * kFileBlock);
      ParallelRows(nr * supers, 256, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          const std::byte* blk = src + b * kFileBlock;
          std::memcpy(body.data() + b * kBody, blk, kBody);
          std::memcpy(&d[b], blk + kBody, sizeof(uint16_t));
        }
      });
      Status status = weight.buffer->CopyFromHost(static_cast<uint64_t>(r * row_bytes),
                                                  body.data(), nr * row_bytes);
      if (status.ok()) {
        status = weight.scale->CopyFromHost(static_cast<uint64_t>(r * supers) * sizeof(uint16_t),
                                            d.data(), nr * supers * sizeof(uint16_t));
      }
      if (!status.ok()) {
        return status.WithContext(
            fmt::format("uploading Q6_K {} from {}", part.ref.name(), part.ref.path()));
      }
    }
    done_bytes_ += part.ref.size_bytes();
    if (options_.progress) options_.progress(done_bytes_, total_bytes_);
    weights_.device_bytes_ += q_bytes + s_bytes;
    return weight;
  }

  Status Upload(runtime::Buffer& dst, uint64_t dst_offset, const Part& part,
                DType dst_dtype) {
    const size_t dst_size = DTypeSize(dst_dtype);
    Status status;
    if (part.ref.raw() && part.ref.dtype() == dst_dtype &&
        part.cols == part.width) {
      // Whole rows in the right dtype: straight from the mapped file.
      status = dst.CopyFromHost(
          dst_offset, part.ref.data() + part.row0 * part.width * dst_size,
          static_cast<uint64_t>(part.rows * part.cols) * dst_size);
    } else {
      const int64_t block =
          std::max<int64_t>(1, kChunkElements / std::max<int64_t>(part.cols, 1));
      staging_.resize(static_cast<size_t>(std::min(part.rows, block) * part.cols) *
                      dst_size);
      for (int64_t r = 0; r < part.rows && status.ok(); r += block) {
        const int64_t nr = std::min(block, part.rows - r);
        ConvertRows(part, r, nr, dst_dtype, staging_.data());
        status = dst.CopyFromHost(dst_offset + r * part.cols * dst_size,
                                  staging_.data(), nr * part.cols * dst_size);
      }
    }
    if (!status.ok()) {
      return status.WithContext(fmt::format("uploading {} from {}",
                                            part.ref.name(), part.ref.path()));
    }
    done_bytes_ += part.ref.size_bytes();
    if (options_.progress) options_.progress(done_bytes_, total_bytes_);
    return OkStatus();
  }

  runtime::Device& device_;
  const Checkpoint& checkpoint_;
  const WeightLoadOptions& options_;
  ModelWeights& weights_;
  const uint64_t total_bytes_;
  uint64_t done_bytes_ = 0;
  std::vector<std::byte> staging_;
  // QuantizedStack's upload staging, kept across weights (a fresh vector
  // per weight would be a fresh zeroed mapping, faulted in page by page).
  std::vector<int8_t> rows_q_;
  std::vector<float> rows_s_;
  std::vector<uint16_t> rows_s16_;
};

StatusOr<std::unique_ptr<ModelWeights>> ModelWeights::Load(
    runtime::Device& device, const Checkpoint& checkpoint,
    const ArchitectureSpec& arch, const WeightLoadOptions& options) {
  if (options.activation_dtype != TSR_DTYPE_F32 &&
      options.activation_dtype != TSR_DTYPE_BF16) {
    return InvalidArgumentError(fmt::format(
        "activation dtype must be f32 or bf16, got {}",
        DTypeName(options.activation_dtype)));
  }
  const ModelConfig& config = checkpoint.config();
  std::unique_ptr<ModelWeights> w(new ModelWeights());
  Loader load(device, checkpoint, options, *w);

  const TpShard& tp = options.tp;
  const bool sharded = tp.enabled();
  const int64_t d = config.head_dim;
  auto whole = [](std::string name) { return TensorSlice{std::move(name)}; };
  // Rows [begin, begin + count) of a tensor (all rows when not sharded).
  auto rows = [sharded](std::string name, int64_t begin, int64_t count) {
    return sharded ? TensorSlice{std::move(name), begin, count}
                   : TensorSlice{std::move(name)};
  };
  // Columns [begin, begin + count), every row.
  auto cols = [sharded](std::string name, int64_t begin, int64_t count) {
    return sharded ? TensorSlice{std::move(name), 0, -1, begin, count}
                   : TensorSlice{std::move(name)};
  };
  const int64_t q0 = tp.q_head_begin * d, qn = tp.q_heads * d;
  const int64_t k0 = tp.kv_head_begin * d, kn = tp.kv_heads * d;
  const int64_t i0 = tp.inter_begin, in = tp.inter;

  // Vocabulary-parallel with lm_head when the vocabulary splits: this
  // rank's rows only (embedding v2 looks them up).
  TSR_ASSIGN_OR_RETURN(
      w->embed_, load.Single(tp.vocab_split
                                 ? rows(std::string(kEmbedTokensName), tp.vocab_begin, tp.vocab)
                                 : whole(std::string(kEmbedTokensName)),
                             false));
  w->layers_.resize(static_cast<size_t>(config.num_hidden_layers));
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    LayerWeights& lw = w->layers_[l];
    auto name = [l](std::string_view suffix) {
      return LayerTensorName(l, suffix);
    };
    TSR_ASSIGN_OR_RETURN(lw.input_norm,
                         load.Single(whole(name("input_layernorm.weight")), false));
    TSR_ASSIGN_OR_RETURN(
        lw.qkv, load.Stacked({rows(name("self_attn.q_proj.weight"), q0, qn),
                              rows(name("self_attn.k_proj.weight"), k0, kn),
                              rows(name("self_attn.v_proj.weight"), k0, kn)},
                             true, true));
    if (arch.HasQkvBias(config)) {
      TSR_ASSIGN_OR_RETURN(
          lw.qkv_bias, load.Stacked({rows(name("self_attn.q_proj.bias"), q0, qn),
                                     rows(name("self_attn.k_proj.bias"), k0, kn),
                                     rows(name("self_attn.v_proj.bias"), k0, kn)},
                                    false));
    }
    if (arch.qk_norm) {
      TSR_ASSIGN_OR_RETURN(lw.q_norm,
                           load.Single(whole(name("self_attn.q_norm.weight")), false));
      TSR_ASSIGN_OR_RETURN(lw.k_norm,
                           load.Single(whole(name("self_attn.k_norm.weight")), false));
    }
    TSR_ASSIGN_OR_RETURN(
        lw.o_proj, load.Single(cols(name("self_attn.o_proj.weight"), q0, qn), true, true));
    // A row-parallel linear's bias is added once: on rank 0.
    if (arch.HasOBias(config) && tp.rank == 0) {
      TSR_ASSIGN_OR_RETURN(lw.o_bias,
                           load.Single(whole(name("self_attn.o_proj.bias")), false));
    }
    TSR_ASSIGN_OR_RETURN(
        lw.post_norm, load.Single(whole(name("post_attention_layernorm.weight")), false));
    TSR_ASSIGN_OR_RETURN(lw.gate_up,
                         load.Stacked({rows(name("mlp.gate_proj.weight"), i0, in),
                                       rows(name("mlp.up_proj.weight"), i0, in)},
                                      true, true));
    TSR_ASSIGN_OR_RETURN(
        lw.down, load.Single(cols(name("mlp.down_proj.weight"), i0, in), true, true));
  }
  TSR_ASSIGN_OR_RETURN(w->final_norm_,
                       load.Single(whole(std::string(kFinalNormName)), false));
  // A tied head is the embedding table — this rank's shard of it when the
  // vocabulary splits (the same rows) — unless int8 is asked for: the head
  // then gets its own int8 copy (per decode step it streams the whole
  // table, so it is the biggest single weight read; the lookup reads a
  // few rows and keeps the exact table).
  const bool int8_head = options.quantization != WeightQuantization::kNone;
  if ((!config.tie_word_embeddings || int8_head) && !options.skip_lm_head) {
    const std::string head(config.tie_word_embeddings ? kEmbedTokensName
                                                      : kLmHeadName);
    TSR_ASSIGN_OR_RETURN(
        w->lm_head_,
        load.Single(tp.vocab_split ? rows(head, tp.vocab_begin, tp.vocab) : whole(head),
                    true, int8_head, /*int4_ok=*/false, /*q6_k_ok=*/true));
  }
  return w;
}

}  // namespace tessera::model
