#include "model/sampler.h"

#include <fmt/format.h>

#include <cstring>

namespace tessera::model {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

uint64_t SamplerRng::NextU64() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float SamplerRng::Uniform() {
  return static_cast<float>(NextU64() >> 40) * (1.0f / 16777216.0f);
}

StatusOr<std::vector<int32_t>> Sampler::Sample(
    const tsr_tensor& logits, std::span<const SampleRow> rows) {
  if (logits.ndim != 2 || logits.dtype != TSR_DTYPE_F32) {
    return InvalidArgumentError("Sampler::Sample needs F32 logits [B, V]");
  }
  const int64_t b = logits.shape[0];
  if (b != static_cast<int64_t>(rows.size()) || b == 0) {
    return InvalidArgumentError(fmt::format(
        "Sampler::Sample got {} logits rows and {} sampling rows", b,
        rows.size()));
  }
  bool all_greedy = true;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].params.greedy()) continue;
    all_greedy = false;
    if (rows[i].rng == nullptr) {
      return InvalidArgumentError(fmt::format(
          "sampling row {} has temperature {} but no generator", i,
          rows[i].params.temperature));
    }
  }
  // Layout (4-byte words): temperature F32 [B], top_k I32 [B], top_p F32
  // [B], min_p F32 [B], uniform F32 [B], ids I32 [B] (out).
  const uint64_t bytes = 6 * static_cast<uint64_t>(b) * 4;
  if (params_ == nullptr || params_->size() < bytes) {
    params_.reset();
    TSR_ASSIGN_OR_RETURN(params_, device_.Allocate(bytes));
  }
  const uint64_t row_bytes = static_cast<uint64_t>(b) * 4;
  auto view = [&](int slot, DType dtype) {
    return params_->View(dtype, {b}, slot * row_bytes);
  };
  const tsr_tensor ids = view(5, TSR_DTYPE_I32);
  if (all_greedy) {
    tsr_tensor in[] = {logits};
    tsr_tensor out[] = {ids};
    TSR_RETURN_IF_ERROR(
        runtime_.dispatcher().Launch(stream_, TSR_OP_ARGMAX, in, out));
  } else {
    host_params_.assign(static_cast<size_t>(5 * b), 0);
    for (int64_t i = 0; i < b; ++i) {
      const SampleRow& row = rows[i];
      const float uniform = row.params.greedy() ? 0.0f : row.rng->Uniform();
      host_params_[0 * b + i] = Bits(row.params.temperature);
      host_params_[1 * b + i] = static_cast<uint32_t>(row.params.top_k);
      host_params_[2 * b + i] = Bits(row.params.top_p);
      host_params_[3 * b + i] = Bits(row.params.min_p);
      host_params_[4 * b + i] = Bits(uniform);
    }
    TSR_RETURN_IF_ERROR(stream_.CopyHostToDevice(
        *params_, 0, host_params_.data(), host_params_.size() * 4));
    tsr_tensor in[] = {logits,
                       view(0, TSR_DTYPE_F32),
                       view(1, TSR_DTYPE_I32),
                       view(2, TSR_DTYPE_F32),
                       view(3, TSR_DTYPE_F32),
                       view(4, TSR_DTYPE_F32)};
    tsr_tensor out[] = {ids};
    Status launched =
        runtime_.dispatcher().Launch(stream_, TSR_OP_SAMPLE, in, out);
    if (!launched.ok()) {
      // The queued copy still reads host_params_: let it finish first.
      (void)stream_.Synchronize();
      return launched;
    }
  }
  host_ids_.assign(static_cast<size_t>(b), 0);
  TSR_RETURN_IF_ERROR(
      stream_.CopyDeviceToHost(host_ids_.data(), *params_, 5 * row_bytes,
                               row_bytes));
  TSR_RETURN_IF_ERROR(stream_.Synchronize());
  return host_ids_;
}

}  // namespace tessera::model
