// The AVX-512 F/BW/VL (vpmaddubsw + vpmaddwd) kernels of linear v3: the
// shared body (ops_linear_w8a8_avx512_body.h) compiled for this target.
// Only called when cpuid reports it (LinearW8A8KernelsFor).
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "ops_linear_int8_rows.h"
#include "ops_linear_w8a8_kernels.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")

#define TSR_W8A8_VNNI 0

namespace tessera::cpu {
namespace {
#include "ops_linear_w8a8_avx512_body.h"
}  // namespace
}  // namespace tessera::cpu

#undef TSR_W8A8_VNNI

#pragma GCC pop_options
#pragma GCC diagnostic pop

namespace tessera::cpu {

const LinearW8A8Kernels& Avx512LinearW8A8Kernels() {
  static const LinearW8A8Kernels kernels{"avx512", &Quantize, &Block, 32, &BlockW4,
                                         &PermuteW4Rows, &Avx512LinearW6A8Block, 32};
  return kernels;
}

}  // namespace tessera::cpu

#endif  // x86-64
