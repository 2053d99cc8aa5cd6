// The reference op implementations: every v1 op of tessera_plugin.h on host
// memory, accumulating in double, following the header's contracts to the
// letter. This is the oracle of `tessera plugin-check`; it is deliberately
// simple (plain loops, no blocking, no threads) and never used for serving.
//
// Arguments follow the ABI: inputs then outputs in the order of the op's
// contract, optional arguments by count (linear with bias has 3 inputs;
// logprobs with top-K has 3 outputs). `params` is the op's POD parameter
// struct (tsr_rms_norm_params, ...) or NULL for ops without parameters.
//
// Validation happens before any output is written: a bad rank, shape,
// dtype, stride, alias or parameter is INVALID_ARGUMENT naming the argument;
// data errors (an embedding id outside [0, V), a kv_store slot outside
// [0, S), a paged_attention page outside the pool) are INVALID_ARGUMENT too,
// detected before writing. Outputs may alias inputs only where the contract
// says so, and then exactly (same data, shape and strides).
//
// Thread-safe: no shared state.
#ifndef TESSERA_REFERENCE_REFERENCE_OPS_H_
#define TESSERA_REFERENCE_REFERENCE_OPS_H_

#include <cstdint>
#include <span>

#include "base/status.h"
#include "reference/host_tensor.h"
#include "reference/op_contracts.h"
#include "reference/sampling.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::reference {

// Runs op `op` version `version` on host tensors.
Status RunReferenceOp(tsr_op_id op, uint32_t version,
                      std::span<const HostTensor> inputs,
                      std::span<HostTensor> outputs, const void* params);

// Checks everything RunReferenceOp checks that does not need tensor data
// (ranks, shapes, dtypes, strides, aliasing, params), without running.
Status ValidateOpLaunch(tsr_op_id op, uint32_t version,
                        std::span<const HostTensor> inputs,
                        std::span<const HostTensor> outputs,
                        const void* params);

}  // namespace tessera::reference

#endif  // TESSERA_REFERENCE_REFERENCE_OPS_H_
