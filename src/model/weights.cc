#include "model/weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "model/quantize.h"

namespace tessera::model {
namespace {

constexpr int64_t kChunkElements = int64_t{1} << 21;  // conversion staging

float LoadFloat(const std::byte* src, DType dtype, int64_t i) {
  switch (dtype) {
    case TSR_DTYPE_F32: {
      float v;
      std::memcpy(&v, src + 4 * i, 4);
      return v;
    }
    case TSR_DTYPE_BF16: {
      uint16_t b;
      std::memcpy(&b, src + 2 * i, 2);
      return Bf16ToFloat(b);
    }
    default: {
      uint16_t b;
      std::memcpy(&b, src + 2 * i, 2);
      return F16ToFloat(b);
    }
  }
}

}  // namespace

void ConvertFloatElements(const std::byte* src, DType src_dtype, void* dst,
                          DType dst_dtype, int64_t count) {
  if (src_dtype == dst_dtype) {
    std::memcpy(dst, src, static_cast<size_t>(count) * DTypeSize(src_dtype));
    return;
  }
  switch (dst_dtype) {
    case TSR_DTYPE_F32: {
      auto* out = static_cast<float*>(dst);
      for (int64_t i = 0; i < count; ++i) out[i] = LoadFloat(src, src_dtype, i);
      break;
    }
    case TSR_DTYPE_BF16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) {
        out[i] = FloatToBf16(LoadFloat(src, src_dtype, i));
      }
      break;
    }
    default: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) {
        out[i] = FloatToF16(LoadFloat(src, src_dtype, i));
      }
      break;
    }
  }
}

class ModelWeights::Loader {
 public:
  Loader(runtime::Device& device, const Checkpoint& checkpoint,
         const WeightLoadOptions& options, ModelWeights& weights)
      : device_(device),
        checkpoint_(checkpoint),
        options_(options),
        weights_(weights),
        total_bytes_(checkpoint.total_tensor_bytes()) {}

  // The tensors `names` stacked along their first dimension into one
  // device weight. `linear`: a weight of the linear op (may stay F16).
  // `quantizable`: a decoder-layer linear weight (int8 when asked for).
  StatusOr<DeviceWeight> Stacked(const std::vector<std::string>& names,
                                 bool linear, bool quantizable = false) {
    std::vector<TensorRef> parts;
    for (const std::string& name : names) {
      TSR_ASSIGN_OR_RETURN(TensorRef ref, checkpoint_.Get(name));
      parts.push_back(ref);
    }
    if (quantizable &&
        options_.quantization == WeightQuantization::kInt8 &&
        parts[0].shape().size() == 2) {
      return QuantizedStack(names, parts);
    }
    DeviceWeight weight;
    weight.shape = parts[0].shape();
    weight.shape[0] = 0;
    bool all_f16 = true;
    for (const TensorRef& part : parts) {
      weight.shape[0] += part.shape()[0];
      all_f16 = all_f16 && part.dtype() == TSR_DTYPE_F16;
    }
    weight.dtype = linear && options_.keep_f16_linear && all_f16
                       ? TSR_DTYPE_F16
                       : options_.activation_dtype;
    const uint64_t bytes = static_cast<uint64_t>(NumElements(weight.shape)) *
                           DTypeSize(weight.dtype);
    auto buffer = device_.AllocateUncached(bytes);
    if (!buffer.ok()) {
      return buffer.status().WithContext(fmt::format(
          "cannot hold weight {} ({} bytes) on {}", names[0], bytes,
          device_.Label()));
    }
    weight.buffer = std::move(buffer).value();
    uint64_t offset = 0;
    for (const TensorRef& part : parts) {
      TSR_RETURN_IF_ERROR(Upload(*weight.buffer, offset, part, weight.dtype));
      offset += static_cast<uint64_t>(part.num_elements()) *
                DTypeSize(weight.dtype);
    }
    weights_.device_bytes_ += bytes;
    return weight;
  }

  StatusOr<DeviceWeight> Single(const std::string& name, bool linear,
                                bool quantizable = false) {
    return Stacked({name}, linear, quantizable);
  }

 private:
  // `parts` ([N_i, K] each) stacked into one I8 [sum N_i, K] weight with
  // F32 scales [sum N_i, K / G], quantised row block by row block.
  StatusOr<DeviceWeight> QuantizedStack(const std::vector<std::string>& names,
                                        const std::vector<TensorRef>& parts) {
    DeviceWeight weight;
    weight.dtype = TSR_DTYPE_I8;
    weight.shape = parts[0].shape();
    weight.shape[0] = 0;
    for (const TensorRef& part : parts) weight.shape[0] += part.shape()[0];
    const int64_t n = weight.shape[0], k = weight.shape[1];
    weight.group_size = Int8GroupFor(k, options_.int8_group_size);
    const int64_t groups = k / weight.group_size;
    const uint64_t q_bytes = static_cast<uint64_t>(n * k);
    const uint64_t s_bytes = static_cast<uint64_t>(n * groups) * sizeof(float);
    for (bool scales : {false, true}) {
      auto buffer = device_.AllocateUncached(scales ? s_bytes : q_bytes);
      if (!buffer.ok()) {
        return buffer.status().WithContext(fmt::format(
            "cannot hold int8 weight {} ({} + {} bytes of scales) on {}",
            names[0], q_bytes, s_bytes, device_.Label()));
      }
      (scales ? weight.scale : weight.buffer) = std::move(buffer).value();
    }
    // Rows per block: about kChunkElements floats of staging.
    const int64_t block = std::max<int64_t>(1, kChunkElements / std::max<int64_t>(k, 1));
    std::vector<float> rows_f32;
    std::vector<int8_t> rows_q;
    std::vector<float> rows_s;
    int64_t row0 = 0;
    for (const TensorRef& part : parts) {
      const int64_t part_rows = part.shape()[0];
      const size_t src_size = DTypeSize(part.dtype());
      for (int64_t r = 0; r < part_rows; r += block) {
        const int64_t nr = std::min(block, part_rows - r);
        rows_f32.resize(static_cast<size_t>(nr * k));
        rows_q.resize(static_cast<size_t>(nr * k));
        rows_s.resize(static_cast<size_t>(nr * groups));
        ConvertFloatElements(part.data() + r * k * src_size, part.dtype(),
                             rows_f32.data(), TSR_DTYPE_F32, nr * k);
        QuantizeInt8Rows(rows_f32.data(), nr, k, weight.group_size,
                         rows_q.data(), rows_s.data());
        Status status = weight.buffer->CopyFromHost(
            static_cast<uint64_t>((row0 + r) * k), rows_q.data(), nr * k);
        if (status.ok()) {
          status = weight.scale->CopyFromHost(
              static_cast<uint64_t>((row0 + r) * groups) * sizeof(float),
              rows_s.data(), nr * groups * sizeof(float));
        }
        if (!status.ok()) {
          return status.WithContext(fmt::format(
              "uploading int8 {} from {}", part.name(), part.path()));
        }
      }
      row0 += part_rows;
      done_bytes_ += part.size_bytes();
      if (options_.progress) options_.progress(done_bytes_, total_bytes_);
    }
    weights_.device_bytes_ += q_bytes + s_bytes;
    return weight;
  }

  Status Upload(runtime::Buffer& dst, uint64_t dst_offset,
                const TensorRef& src, DType dst_dtype) {
    const int64_t count = src.num_elements();
    Status status;
    if (src.dtype() == dst_dtype) {
      status = dst.CopyFromHost(dst_offset, src.data(), src.size_bytes());
    } else {
      const size_t dst_size = DTypeSize(dst_dtype);
      const size_t src_size = DTypeSize(src.dtype());
      staging_.resize(static_cast<size_t>(std::min(count, kChunkElements)) *
                      dst_size);
      for (int64_t begin = 0; begin < count && status.ok();
           begin += kChunkElements) {
        const int64_t n = std::min(kChunkElements, count - begin);
        ConvertFloatElements(src.data() + begin * src_size, src.dtype(),
                             staging_.data(), dst_dtype, n);
        status = dst.CopyFromHost(dst_offset + begin * dst_size,
                                  staging_.data(), n * dst_size);
      }
    }
    if (!status.ok()) {
      return status.WithContext(
          fmt::format("uploading {} from {}", src.name(), src.path()));
    }
    done_bytes_ += src.size_bytes();
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

  TSR_ASSIGN_OR_RETURN(w->embed_,
                       load.Single(std::string(kEmbedTokensName), false));
  w->layers_.resize(static_cast<size_t>(config.num_hidden_layers));
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    LayerWeights& lw = w->layers_[l];
    auto name = [l](std::string_view suffix) {
      return LayerTensorName(l, suffix);
    };
    TSR_ASSIGN_OR_RETURN(lw.input_norm,
                         load.Single(name("input_layernorm.weight"), false));
    TSR_ASSIGN_OR_RETURN(
        lw.qkv, load.Stacked({name("self_attn.q_proj.weight"),
                              name("self_attn.k_proj.weight"),
                              name("self_attn.v_proj.weight")},
                             true, true));
    if (arch.HasQkvBias(config)) {
      TSR_ASSIGN_OR_RETURN(
          lw.qkv_bias, load.Stacked({name("self_attn.q_proj.bias"),
                                     name("self_attn.k_proj.bias"),
                                     name("self_attn.v_proj.bias")},
                                    false));
    }
    if (arch.qk_norm) {
      TSR_ASSIGN_OR_RETURN(lw.q_norm,
                           load.Single(name("self_attn.q_norm.weight"), false));
      TSR_ASSIGN_OR_RETURN(lw.k_norm,
                           load.Single(name("self_attn.k_norm.weight"), false));
    }
    TSR_ASSIGN_OR_RETURN(lw.o_proj,
                         load.Single(name("self_attn.o_proj.weight"), true, true));
    if (arch.HasOBias(config)) {
      TSR_ASSIGN_OR_RETURN(lw.o_bias,
                           load.Single(name("self_attn.o_proj.bias"), false));
    }
    TSR_ASSIGN_OR_RETURN(
        lw.post_norm, load.Single(name("post_attention_layernorm.weight"), false));
    TSR_ASSIGN_OR_RETURN(lw.gate_up,
                         load.Stacked({name("mlp.gate_proj.weight"),
                                       name("mlp.up_proj.weight")},
                                      true, true));
    TSR_ASSIGN_OR_RETURN(lw.down,
                         load.Single(name("mlp.down_proj.weight"), true, true));
  }
  TSR_ASSIGN_OR_RETURN(w->final_norm_,
                       load.Single(std::string(kFinalNormName), false));
  if (!config.tie_word_embeddings) {
    TSR_ASSIGN_OR_RETURN(w->lm_head_,
                         load.Single(std::string(kLmHeadName), true));
  }
  return w;
}

}  // namespace tessera::model
