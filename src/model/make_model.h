// make-model: writes a Hugging Face model directory with seeded random
// weights for a named preset and architecture flavour, for tests,
// benchmarks and the built-in demo model.
//
// Presets (shape only; the architecture flavour is chosen separately):
//   tiny        H 64,   L 2,  Hq 4,  Hk 2, D 16,  I 128,  V 1024,
//               untied lm_head, rope_theta 1e4   (tests; 0.2M params, 0.8 MiB f32)
//   small       H 256,  L 4,  Hq 8,  Hk 4, D 32,  I 768,  V 8192,
//               tied, rope_theta 1e6             (CPU benchmarks; 5.2M params)
//   qwen3-0.6b  H 1024, L 28, Hq 16, Hk 8, D 128, I 3072, V 151936,
//               tied, rope_theta 1e6, rms_norm_eps 1e-6, max positions
//               40960 (exactly Qwen3-0.6B's shape; ~1.2 GB in bf16)
// Flavours: qwen3 (q_norm/k_norm), qwen2 (q/k/v biases), llama (neither).
//
// Files written into `out_dir`: config.json, generation_config.json
// (Qwen3-like sampling defaults), tokenizer.json + tokenizer_config.json
// (synthetic_tokenizer.h; eos <|im_end|>), and model.safetensors — or, with
// max_shard_bytes, model-0000i-of-0000n.safetensors shards plus
// model.safetensors.index.json. Weights follow random_weights.h, so the
// output is byte-identical for the same (preset, arch, dtype, seed).
//
// An existing, non-empty out_dir is refused (FailedPrecondition) unless
// `force`; with force the files above are overwritten, old weight files
// (model.safetensors, the index, model-*-of-*.safetensors) removed, and
// other files left alone.
//
// Thread-safety: MakeModel may run concurrently for different out_dirs.
#ifndef TESSERA_MODEL_MAKE_MODEL_H_
#define TESSERA_MODEL_MAKE_MODEL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "model/model_config.h"

namespace tessera::model {

// Preset names, in the order above.
std::vector<std::string> MakeModelPresetNames();

// The config a preset has for `arch` with weights in `dtype`. The token ids
// (bos <|endoftext|>, eos <|im_end|>) are those of the generated
// tokenizer. InvalidArgument naming the presets for an unknown name.
StatusOr<ModelConfig> MakeModelPresetConfig(std::string_view preset,
                                            Architecture arch, DType dtype);

struct MakeModelOptions {
  std::string preset = "tiny";
  Architecture arch = Architecture::kQwen3;
  std::string out_dir;
  uint64_t seed = 0;
  DType dtype = TSR_DTYPE_BF16;  // F32, F16 or BF16
  bool force = false;
  // 0: one model.safetensors; otherwise start a new shard before a tensor
  // that would take the current one past this many bytes.
  uint64_t max_shard_bytes = 0;
  // An embedding model laid out as Qwen3-Embedding's sentence-transformers
  // export: base-model tensor names (no "model." prefix) and no lm_head,
  // modules.json with 1_Pooling (last token) and 2_Normalize, and a
  // tokenizer whose post-processor appends <|endoftext|> (the pooled token).
  // Served with --is-embedding.
  bool embedding = false;
  // Called as weight bytes are written: (bytes done, bytes total).
  std::function<void(uint64_t, uint64_t)> progress;
};

// What MakeModel wrote.
struct MakeModelResult {
  ModelConfig config;
  std::vector<std::string> files;  // paths written
  uint64_t weight_bytes = 0;       // tensor data bytes
  int64_t num_parameters = 0;      // elements of all tensors
};

// Writes the directory. InvalidArgument for a bad preset/dtype,
// FailedPrecondition for a non-empty out_dir without force, Internal for
// I/O errors (messages name the file).
StatusOr<MakeModelResult> MakeModel(const MakeModelOptions& options);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_MAKE_MODEL_H_
