// Rotary position embedding frequencies (the host side of the rope op).
//
// The rope op (TSR_OP_ROPE) takes inv_freq F32 [R/2] and rotates dims
// (i, i + R/2) of every head by angle position * inv_freq[i]; the scaling
// policy lives here, computed the way Hugging Face's rope initialisers do:
//   default: inv_freq[i] = theta ^ (-2i / R),  i in [0, R/2)
//   llama3:  with wavelen = 2*pi / inv_freq[i],
//            low_wl  = original_max_position_embeddings / low_freq_factor,
//            high_wl = original_max_position_embeddings / high_freq_factor:
//            wavelen > low_wl   -> inv_freq / factor        (low frequency)
//            wavelen < high_wl  -> inv_freq                 (high frequency)
//            otherwise, s = (orig_max / wavelen - low_freq_factor) /
//                           (high_freq_factor - low_freq_factor),
//                       (1 - s) * inv_freq / factor + s * inv_freq.
// Neither type scales the attention (attention factor 1). Computed in
// double and rounded to float once at the end. Pure functions, thread-safe.
#ifndef TESSERA_MODEL_ROPE_H_
#define TESSERA_MODEL_ROPE_H_

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace tessera::model {

// inv_freq [rotary_dim / 2] in double. rotary_dim must be positive and even.
std::vector<double> ComputeRopeInvFreq(int64_t rotary_dim, double theta,
                                       const RopeScaling& scaling);

// The model's inv_freq F32 [head_dim / 2] (all architectures here rotate
// the whole head: R = head_dim), ready to upload for the rope op.
std::vector<float> RopeInvFreq(const ModelConfig& config);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_ROPE_H_
