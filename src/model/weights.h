// ModelWeights: a checkpoint's tensors uploaded to one device, in the form
// the forward pass consumes them.
//
// At load time
//   - q_proj, k_proj and v_proj are stacked into one qkv weight
//     [(Hq + 2 Hk) * D, H] (q rows, then k, then v) and their biases into
//     [(Hq + 2 Hk) * D], so attention's input projection is one linear;
//   - gate_proj and up_proj are stacked into gate_up [2 I, H] (gate rows
//     first, as silu_and_mul expects);
//   - every tensor is converted to the activation dtype, except linear
//     weights stored as F16, which stay F16 when keep_f16_linear (the linear
//     op takes F16 weights with F32 or BF16 activations);
//   - a tied lm_head reuses the embedding table (a copy in the file is
//     ignored, as Hugging Face does);
//   - with WeightQuantization::kInt8, the decoder layers' linear weights
//     (qkv, o_proj, gate_up, down; not the embeddings, not lm_head) are
//     quantised on the host (quantize.h) to I8 [N, K] plus F32 scales
//     [N, K / G], for linear v2; device_bytes() counts those bytes;
//   - with WeightQuantization::kInt4, those of them whose K is a multiple
//     of 32 become packed 4-bit instead (quantize.h: U8 [N, K / 2] with an
//     F16 scale per 32, for linear v4); the others and the head are int8;
//   - with WeightLoadOptions::q6_k_head, a head stored as GGUF Q6_K (llama.cpp
//     files' usual output tensor) is uploaded as its own blocks for linear
//     v5 (w6a8): U8 [N, K / 256 * 208] and its F16 d's [N, K / 256] — 6.56
//     bits a weight, the file's numbers — instead of being re-quantised to
//     int8 (9 bits);
//   - with a tensor-parallel shard (WeightLoadOptions::tp, see
//     tensor_parallel.h) only the rank's slices are read and uploaded: qkv
//     holds its heads' rows, gate_up its [I/n] gate rows then up rows,
//     o_proj and down their input columns, the embedding and lm_head their
//     vocabulary rows when the vocabulary splits (a tied lm_head is then
//     the rank's embedding shard), and the biases of row-parallel linears
//     live on rank 0 only.
// The checkpoint must already have passed Checkpoint::Validate().
// Conversion runs on the host in bounded chunks straight from the mapped
// files; weights go into uncached device buffers (large, long-lived).
//
// Thread-safety: immutable after Load(); views may be taken from any thread.
#ifndef TESSERA_MODEL_WEIGHTS_H_
#define TESSERA_MODEL_WEIGHTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "model/arch_registry.h"
#include "model/checkpoint.h"
#include "model/quantize.h"
#include "model/tensor_parallel.h"
#include "runtime/buffer.h"
#include "runtime/device.h"

namespace tessera::model {

// One weight on the device; absent when buffer is null. An int8 weight
// (dtype I8) also has per-group scales: F32 [shape[0], shape[1] / group_size].
// A 4-bit weight (packed4, dtype U8) is the same with its [N, K] (shape)
// weights packed two per byte (linear v4's layout): U8 [N, K / 2], and F16
// scales. A Q6_K weight (q6_k, dtype U8) holds linear v5's super-blocks,
// U8 [N, K / 256 * 208], and F16 d's [N, K / 256]; its group_size is the
// activations' block (32).
struct DeviceWeight {
  runtime::BufferPtr buffer;
  DType dtype = TSR_DTYPE_INVALID;
  std::vector<int64_t> shape;  // logical: [N, K] also when packed4 / q6_k
  runtime::BufferPtr scale;  // int8 / 4-bit / Q6_K weights only
  int64_t group_size = 0;    // int8 / 4-bit weights only: G, divides shape[1]
  bool packed4 = false;      // 4-bit: the buffer holds [N, K / 2] bytes
  bool q6_k = false;         // Q6_K: [N, K / 256 * 208] bytes (linear v5)

  bool present() const { return buffer != nullptr; }
  bool quantized() const { return scale != nullptr; }
  // The contiguous view of the whole weight (packed4: U8 [N, K / 2]).
  tsr_tensor View() const {
    if (packed4) return buffer->View(dtype, {shape[0], shape[1] / 2});
    if (q6_k) return buffer->View(dtype, {shape[0], shape[1] / 256 * 208});
    return buffer->View(dtype, shape);
  }
  // The scales' contiguous view (quantized() only): F32, or F16 for 4-bit
  // weights (Q4_0's) and Q6_K's d's.
  tsr_tensor ScaleView() const {
    if (q6_k) return scale->View(TSR_DTYPE_F16, {shape[0], shape[1] / 256});
    return scale->View(packed4 ? TSR_DTYPE_F16 : TSR_DTYPE_F32,
                       {shape[0], shape[1] / group_size});
  }
};

struct LayerWeights {
  DeviceWeight input_norm;  // [H]
  DeviceWeight qkv;         // [(Hq + 2 Hk) * D, H]
  DeviceWeight qkv_bias;    // [(Hq + 2 Hk) * D], or absent
  DeviceWeight q_norm;      // [D] (qk_norm architectures), or absent
  DeviceWeight k_norm;      // [D], or absent
  DeviceWeight o_proj;      // [H, Hq * D]
  DeviceWeight o_bias;      // [H], or absent
  DeviceWeight post_norm;   // [H]
  DeviceWeight gate_up;     // [2 I, H]
  DeviceWeight down;        // [H, I]
};

enum class WeightQuantization {
  kNone,  // weights in the activation dtype (or F16, see keep_f16_linear)
  kInt8,  // decoder-layer linear weights and the output head as int8 +
          // per-group F32 scales (a tied head gets its own int8 copy of the
          // embedding table; the table itself stays in the activation
          // dtype for the lookup)
  kInt4,  // as kInt8, but decoder-layer linear weights whose K is a
          // multiple of 32 are packed 4-bit with a scale per 32 (Q4_0)
};

struct WeightLoadOptions {
  DType activation_dtype = TSR_DTYPE_F32;  // F32 or BF16
  bool keep_f16_linear = true;
  WeightQuantization quantization = WeightQuantization::kNone;
  // kInt8: weights per scale along K; a size that does not divide a
  // weight's K (or <= 0) means one scale per output channel for it.
  int64_t int8_group_size = kDefaultInt8GroupSize;
  // This rank's shard (size 1: the whole model).
  TpShard tp;
  // A GGUF Q6_K head (quantization kInt8 or kInt4, K % 256 == 0, whole
  // rows) keeps its blocks for linear v5 instead of becoming int8. The
  // runner sets it where linear v3 would run the head and the plugin lists
  // linear v5.
  bool q6_k_head = false;
  // Embedding models: lm_head.weight is not loaded (lm_head() is then the
  // embedding table, and unused).
  bool skip_lm_head = false;
  // Called after each tensor: (source bytes read so far, total).
  std::function<void(uint64_t, uint64_t)> progress;
  // Quantised weights are uploaded in pieces of about this many bytes (at
  // least the cpu plugin's 4 MiB for a parallel, pre-populated copy); tests
  // make it small to split weights and their stacked parts anywhere.
  int64_t upload_block_bytes = int64_t{8} << 20;
};

class ModelWeights {
 public:
  static StatusOr<std::unique_ptr<ModelWeights>> Load(
      runtime::Device& device, const Checkpoint& checkpoint,
      const ArchitectureSpec& arch, const WeightLoadOptions& options);

  const DeviceWeight& embed() const { return embed_; }  // [V, H], or [V/n, H] (a shard)
  const LayerWeights& layer(int64_t l) const { return layers_[l]; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  const DeviceWeight& final_norm() const { return final_norm_; }  // [H]
  // [V, H] (a TP rank's [V / n, H] vocabulary slice when split): the
  // embedding table when tied and not split.
  const DeviceWeight& lm_head() const {
    return lm_head_.present() ? lm_head_ : embed_;
  }
  bool tied() const { return !lm_head_.present(); }
  // Bytes of device memory the weights occupy.
  uint64_t device_bytes() const { return device_bytes_; }
  // Bytes a decode step reads: all of them, but the embedding table when
  // the head is a separate weight (the lookup reads a row per token).
  uint64_t step_bytes() const {
    if (tied() || embed_.buffer == nullptr) return device_bytes_;
    return device_bytes_ -
           uint64_t(NumElements(embed_.shape)) * DTypeSize(embed_.dtype);
  }

 private:
  class Loader;
  ModelWeights() = default;

  DeviceWeight embed_;
  std::vector<LayerWeights> layers_;
  DeviceWeight final_norm_;
  DeviceWeight lm_head_;
  uint64_t device_bytes_ = 0;
};

}  // namespace tessera::model

#endif  // TESSERA_MODEL_WEIGHTS_H_
