// Element-wise reductions for the collectives (in-process and shared
// memory): out[i] = inputs[0][i] (op) inputs[1][i] (op) ... in input order,
// so every rank that reduces the same inputs gets bit-identical results.
// f32, bf16 and f16 accumulate in f32 and round once; i32 accumulates in
// int64 and wraps to 32 bits. out may be one of the inputs (same index).
#ifndef TESSERA_PLUGINS_KIT_COMM_REDUCE_H_
#define TESSERA_PLUGINS_KIT_COMM_REDUCE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "tessera/plugin/tessera_plugin.h"

namespace tessera::plugin_kit {

// Splits [0, n) into chunks of at least `grain` and runs fn(begin, end) on
// each, returning when all ran (a plugin's thread pool). Empty: serial.
using ParallelForFn = std::function<void(int64_t n, int64_t grain,
                                         const std::function<void(int64_t, int64_t)>& fn)>;

// What one kind of collective is (the in-process and shared-memory
// transports share it).
enum class CollectiveKind { kAllReduce, kAllGather, kBroadcast, kReduceScatter };

// One rank's arguments to a collective (element counts, host addresses).
struct CollectiveArgs {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  tsr_dtype dtype = TSR_DTYPE_INVALID;
  int64_t count = 0;  // elements in `send` (broadcast: the buffer; reduce_scatter: `recv`)
  const char* send = nullptr;
  char* recv = nullptr;  // all_gather: num_ranks * count elements
  tsr_reduce_op op = TSR_REDUCE_SUM;
  int root = 0;
};

const char* CollectiveKindName(CollectiveKind kind);

// True for the dtypes the reductions accept (f32, bf16, f16, i32).
bool ReducibleDType(tsr_dtype dtype);

// Reduces elements [0, count) of every input into out, split over
// `parallel` (empty: on the calling thread). Each pointer is the element-0
// address.
void ReduceInto(tsr_dtype dtype, tsr_reduce_op op, const std::vector<const char*>& inputs,
                char* out, int64_t count, const ParallelForFn& parallel);

// A copy split over `parallel` for large sizes (dst and src do not
// overlap unless equal).
void ParallelCopy(char* dst, const char* src, size_t bytes, const ParallelForFn& parallel);

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_COMM_REDUCE_H_
