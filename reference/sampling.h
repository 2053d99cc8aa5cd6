// The sampling rules of the sample op (tessera_plugin.h, TSR_OP_SAMPLE) for
// one row of logits, in double precision, with a trace of the decision so a
// checker can tell how close a row was to picking another id.
//
// Pure functions, thread-safe.
#ifndef TESSERA_REFERENCE_SAMPLING_H_
#define TESSERA_REFERENCE_SAMPLING_H_

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::reference {

struct SampleRowParams {
  double temperature = 1.0;  // <= 0: argmax
  int64_t top_k = 0;         // <= 0 or >= V: all
  double top_p = 1.0;        // >= 1: all
  double min_p = 0.0;        // <= 0: none
  double uniform = 0.0;      // the host's draw in [0, 1)
};

// What SampleRow decided, for a temperature > 0 row.
struct SampleTrace {
  std::vector<int64_t> kept;  // kept ids, by p descending, ties to lower id
  // cdf[j]: cumulative renormalised probability of kept[0..j]; the id kept[j]
  // is chosen when cdf[j-1] <= uniform < cdf[j].
  std::vector<double> cdf;
};

// Index of the largest value; ties go to the lowest index. -1 when empty.
int64_t ArgmaxRow(std::span<const double> values);

// The id the sample op returns for one row (see the op's contract).
// `trace` (optional) is filled when temperature > 0. Returns -1 for V == 0.
int64_t SampleRow(std::span<const double> logits, const SampleRowParams& params,
                  SampleTrace* trace = nullptr);

}  // namespace tessera::reference

#endif  // TESSERA_REFERENCE_SAMPLING_H_
