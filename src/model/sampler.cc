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

Sampler::Sampler(runtime::Runtime& runtime, runtime::Device& device,
                 runtime::Stream& stream, runtime::Stream* copy_stream)
    : runtime_(runtime),
      device_(device),
      stream_(stream),
      copy_stream_(copy_stream != nullptr ? *copy_stream : stream),
      params_upload_(device, stream, copy_stream_) {}

StatusOr<std::vector<int32_t>> Sampler::Sample(
    const tsr_tensor& logits, std::span<const SampleRow> rows) {
  TSR_ASSIGN_OR_RETURN(DeviceIds ids, Enqueue(logits, rows));
  if (sample_done_ == nullptr) {
    TSR_ASSIGN_OR_RETURN(sample_done_, runtime::Event::Create(
                                           copy_stream_.plugin(), copy_stream_.device()));
    TSR_ASSIGN_OR_RETURN(sample_computed_,
                         runtime::Event::Create(stream_.plugin(), stream_.device()));
  }
  TSR_RETURN_IF_ERROR(ReadBack(ids, host_ids_, *sample_done_, *sample_computed_));
  TSR_RETURN_IF_ERROR(WaitReadBack(*sample_done_, *sample_computed_));
  return host_ids_;
}

Status Sampler::ReadBack(const DeviceIds& ids, std::vector<int32_t>& host,
                         runtime::Event& done, runtime::Event& computed) {
  host.resize(static_cast<size_t>(ids.rows));
  TSR_RETURN_IF_ERROR(computed.Record(stream_));
  if (&copy_stream_ != &stream_) TSR_RETURN_IF_ERROR(copy_stream_.Wait(computed));
  TSR_RETURN_IF_ERROR(copy_stream_.CopyDeviceToHost(
      host.data(), *ids.buffer, ids.offset, static_cast<uint64_t>(ids.rows) * 4));
  TSR_RETURN_IF_ERROR(done.Record(copy_stream_));
  last_read_ = &done;
  return OkStatus();
}

Status Sampler::WaitReadBack(runtime::Event& done, runtime::Event& computed) {
  TSR_RETURN_IF_ERROR(done.Synchronize());
  // Complete by now (the copy waited for it): this only reads its status.
  Status s = computed.Synchronize();
  if (!s.ok()) return s.WithContext("the step failed on the device");
  return OkStatus();
}

StatusOr<DeviceIds> Sampler::Enqueue(const tsr_tensor& logits,
                                     std::span<const SampleRow> rows) {
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
    if (params_ != nullptr) retired_.push_back(std::move(params_));
    // Room for twice the rows, so a growing batch reallocates rarely.
    TSR_ASSIGN_OR_RETURN(params_, device_.Allocate(2 * bytes));
  }
  const uint64_t slot_bytes = static_cast<uint64_t>(b) * 4;
  auto view = [&](int slot, DType dtype) {
    return params_->View(dtype, {b}, slot * slot_bytes);
  };
  const tsr_tensor ids = view(5, TSR_DTYPE_I32);
  if (last_read_ != nullptr && &copy_stream_ != &stream_) {
    // The last read-back (copy stream) must have taken the ids before this
    // sampling overwrites them; in steady state it is long done.
    TSR_RETURN_IF_ERROR(stream_.Wait(*last_read_));
  }
  last_read_ = nullptr;
  if (all_greedy) {
    tsr_tensor in[] = {logits};
    tsr_tensor out[] = {ids};
    TSR_RETURN_IF_ERROR(
        runtime_.dispatcher().Launch(stream_, TSR_OP_ARGMAX, in, out));
  } else {
    TSR_ASSIGN_OR_RETURN(std::span<uint32_t> host,
                         params_upload_.Host<uint32_t>(static_cast<size_t>(5 * b)));
    for (int64_t i = 0; i < b; ++i) {
      const SampleRow& row = rows[i];
      const float uniform = row.params.greedy() ? 0.0f : row.rng->Uniform();
      host[0 * b + i] = Bits(row.params.temperature);
      host[1 * b + i] = static_cast<uint32_t>(row.params.top_k);
      host[2 * b + i] = Bits(row.params.top_p);
      host[3 * b + i] = Bits(row.params.min_p);
      host[4 * b + i] = Bits(uniform);
    }
    TSR_RETURN_IF_ERROR(params_upload_.Commit(*params_, 0));
    tsr_tensor in[] = {logits,
                       view(0, TSR_DTYPE_F32),
                       view(1, TSR_DTYPE_I32),
                       view(2, TSR_DTYPE_F32),
                       view(3, TSR_DTYPE_F32),
                       view(4, TSR_DTYPE_F32)};
    tsr_tensor out[] = {ids};
    TSR_RETURN_IF_ERROR(
        runtime_.dispatcher().Launch(stream_, TSR_OP_SAMPLE, in, out));
  }
  return DeviceIds{params_.get(), 5 * slot_bytes, b};
}

}  // namespace tessera::model
