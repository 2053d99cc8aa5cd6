// Internal to reference/: the per-op entry points behind RunReferenceOp and
// the validation helpers they share. Not a public header.
//
// Every op function validates first, returns when `execute` is false, and
// otherwise computes. Argument counts and the dtype signature were already
// checked by the dispatcher (reference_ops.cc).
#ifndef TESSERA_REFERENCE_OPS_INTERNAL_H_
#define TESSERA_REFERENCE_OPS_INTERNAL_H_

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string_view>

#include "base/status.h"
#include "reference/host_tensor.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::reference::internal {

// One call: the tensors (already checked for rank <= 6, non-negative
// strides and signature dtypes) and the raw params pointer.
struct OpCall {
  std::string_view op_name;
  std::span<const HostTensor> in;
  std::span<const HostTensor> out;
  const void* params = nullptr;
  bool execute = true;
};

using OpFn = Status (*)(const OpCall& call);

Status Embedding(const OpCall& call);
Status EmbeddingShard(const OpCall& call);  // embedding v2 (ABI 1.4)
Status RmsNorm(const OpCall& call);
Status AddRmsNorm(const OpCall& call);
Status Linear(const OpCall& call);
Status LinearW8(const OpCall& call);    // linear v2 (ABI 1.1)
Status LinearW8A8(const OpCall& call);  // linear v3 (ABI 1.5)
Status LinearW4A8(const OpCall& call);  // linear v4 (ABI 1.6)
Status LinearW6A8(const OpCall& call);  // linear v5 (ABI 1.8)
Status Rope(const OpCall& call);
Status KvStore(const OpCall& call);
Status PagedAttention(const OpCall& call);
Status SiluAndMul(const OpCall& call);
Status Add(const OpCall& call);
Status Cast(const OpCall& call);
Status Argmax(const OpCall& call);
Status Sample(const OpCall& call);
Status Logprobs(const OpCall& call);
Status DecoderLayer(const OpCall& call);      // fused, ABI 1.2 (v1, v2)
Status DecoderLayerW8A8(const OpCall& call);  // decoder_layer v3, ABI 1.5
Status DecoderLayerW4A8(const OpCall& call);  // decoder_layer v4, ABI 1.6

// "rms_norm: w has rank 2, expected 1 ([H])".
Status ExpectRank(const OpCall& call, const HostTensor& t,
                  std::string_view what, int rank, std::string_view layout);
// Shape equality, with the expected shape explained by `why`.
Status ExpectShape(const OpCall& call, const HostTensor& t,
                   std::string_view what, std::span<const int64_t> want,
                   std::string_view why);
Status ExpectShape(const OpCall& call, const HostTensor& t,
                   std::string_view what, std::initializer_list<int64_t> want,
                   std::string_view why);

// Reads the op's params struct, checking it is present and large enough
// to hold the fields up to `needed` bytes.
template <typename P>
StatusOr<P> ReadParams(const OpCall& call, size_t needed) {
  if (call.params == nullptr) {
    return InvalidArgumentError(fmt::format(
        "{}: params is NULL; this op needs its params struct", call.op_name));
  }
  P p{};
  uint32_t size = *static_cast<const uint32_t*>(call.params);
  if (size < needed) {
    return InvalidArgumentError(fmt::format(
        "{}: params.struct_size is {}, smaller than the {} bytes of the v1 "
        "fields; set struct_size = sizeof(params)",
        call.op_name, size, needed));
  }
  std::memcpy(&p, call.params, std::min<size_t>(size, sizeof(P)));
  return p;
}

// Rounds `value` to `dtype` (F32/F16/BF16) and returns it as double.
double RoundTo(DType dtype, double value);

}  // namespace tessera::reference::internal

#endif  // TESSERA_REFERENCE_OPS_INTERNAL_H_
