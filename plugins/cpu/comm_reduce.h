// Element-wise reductions for the collectives (in-process and shared
// memory): out[i] = inputs[0][i] (op) inputs[1][i] (op) ... in input order,
// so every rank that reduces the same inputs gets bit-identical results.
// f32, bf16 and f16 accumulate in f32 and round once; i32 accumulates in
// int64 and wraps to 32 bits. out may be one of the inputs (same index).
#ifndef TESSERA_PLUGINS_CPU_COMM_REDUCE_H_
#define TESSERA_PLUGINS_CPU_COMM_REDUCE_H_

#include <cstdint>
#include <vector>

#include "kit_names.h"
#include "thread_pool.h"

namespace tessera::cpu {

// True for the dtypes the reductions accept (f32, bf16, f16, i32).
bool ReducibleDType(tsr_dtype dtype);

// Reduces elements [0, count) of every input into out, split over `pool`
// (NULL: on the calling thread). Each pointer is the element-0 address.
void ReduceInto(tsr_dtype dtype, tsr_reduce_op op, const std::vector<const char*>& inputs,
                char* out, int64_t count, ThreadPool* pool);

// A copy split over `pool` for large sizes (NULL: on the calling thread).
void ParallelCopy(char* dst, const char* src, size_t bytes, ThreadPool* pool);

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_COMM_REDUCE_H_
