#include "kit/comm_reduce.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kit/half.h"

namespace tessera::plugin_kit {
namespace {

constexpr int64_t kReduceGrain = 16384;         // elements per chunk
constexpr size_t kCopyGrain = size_t{1} << 18;  // bytes per chunk

template <typename Acc>
inline Acc Combine(Acc a, Acc b, tsr_reduce_op op) {
  switch (op) {
    case TSR_REDUCE_MAX: return a > b ? a : b;
    case TSR_REDUCE_MIN: return a < b ? a : b;
    default: return a + b;
  }
}

template <typename T>
inline auto Load(const char* base, int64_t i) {
  const T v = reinterpret_cast<const T*>(base)[i];
  if constexpr (std::is_same_v<T, int32_t>) {
    return static_cast<int64_t>(v);
  } else {
    return ToF32(v);
  }
}

template <typename T>
void ReduceRange(const std::vector<const char*>& inputs, char* out_base, tsr_reduce_op op,
                 int64_t lo, int64_t hi) {
  T* out = reinterpret_cast<T*>(out_base);
  for (int64_t i = lo; i < hi; ++i) {
    auto acc = Load<T>(inputs[0], i);
    for (size_t q = 1; q < inputs.size(); ++q) acc = Combine(acc, Load<T>(inputs[q], i), op);
    if constexpr (std::is_same_v<T, int32_t>) {
      out[i] = static_cast<int32_t>(static_cast<uint32_t>(acc));
    } else {
      out[i] = FromF32<T>(acc);
    }
  }
}

// The common case, two f32 inputs summed, in a loop GCC vectorises.
void SumTwoF32(const char* a_base, const char* b_base, char* out_base, int64_t lo, int64_t hi) {
  const float* a = reinterpret_cast<const float*>(a_base);
  const float* b = reinterpret_cast<const float*>(b_base);
  float* out = reinterpret_cast<float*>(out_base);
  for (int64_t i = lo; i < hi; ++i) out[i] = a[i] + b[i];
}

void ReduceChunk(tsr_dtype dtype, tsr_reduce_op op, const std::vector<const char*>& inputs,
                 char* out, int64_t lo, int64_t hi) {
  switch (dtype) {
    case TSR_DTYPE_F32:
      if (op == TSR_REDUCE_SUM && inputs.size() == 2) {
        SumTwoF32(inputs[0], inputs[1], out, lo, hi);
      } else {
        ReduceRange<float>(inputs, out, op, lo, hi);
      }
      break;
    case TSR_DTYPE_BF16: ReduceRange<Bf16>(inputs, out, op, lo, hi); break;
    case TSR_DTYPE_F16: ReduceRange<F16>(inputs, out, op, lo, hi); break;
    default: ReduceRange<int32_t>(inputs, out, op, lo, hi); break;
  }
}

}  // namespace

bool ReducibleDType(tsr_dtype dtype) {
  return dtype == TSR_DTYPE_F32 || dtype == TSR_DTYPE_BF16 || dtype == TSR_DTYPE_F16 ||
         dtype == TSR_DTYPE_I32;
}

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
  }
  return "?";
}

void ReduceInto(tsr_dtype dtype, tsr_reduce_op op, const std::vector<const char*>& inputs,
                char* out, int64_t count, const ParallelForFn& parallel) {
  if (count <= 0 || inputs.empty()) return;
  if (!parallel || count <= kReduceGrain) {
    ReduceChunk(dtype, op, inputs, out, 0, count);
    return;
  }
  parallel(count, kReduceGrain, [&](int64_t b, int64_t e) {
    ReduceChunk(dtype, op, inputs, out, b, e);
  });
}

void ParallelCopy(char* dst, const char* src, size_t bytes, const ParallelForFn& parallel) {
  if (bytes == 0 || dst == src) return;
  if (!parallel || bytes <= kCopyGrain) {
    std::memmove(dst, src, bytes);
    return;
  }
  const auto chunks = static_cast<int64_t>((bytes + kCopyGrain - 1) / kCopyGrain);
  parallel(chunks, 1, [&](int64_t b, int64_t e) {
    const size_t lo = static_cast<size_t>(b) * kCopyGrain;
    const size_t hi = std::min(bytes, static_cast<size_t>(e) * kCopyGrain);
    std::memcpy(dst + lo, src + lo, hi - lo);
  });
}

}  // namespace tessera::plugin_kit
