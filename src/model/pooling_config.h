// PoolingConfig: how an embedding model turns a prompt's final hidden
// states [T, H] into one vector, as sentence-transformers describes it next
// to the checkpoint:
//   modules.json            [{"type": "sentence_transformers.models.Transformer", ...},
//                            {"type": "...models.Pooling", "path": "1_Pooling"},
//                            {"type": "...models.Normalize", "path": "2_Normalize"}]
//   1_Pooling/config.json   {"pooling_mode_lasttoken": true, ...}
// Modes: last token (Qwen3-Embedding, gte-Qwen2, e5-mistral), mean over the
// prompt's tokens, or the first token ("cls"). Normalize: L2 normalisation
// of the pooled vector (a Normalize module).
//
// Without modules.json the default is what SGLang and vLLM do for a
// decoder-only model: last token, normalized. A Pooling module asking for
// max / weighted-mean / mean-sqrt-len pooling, or a module Tessera does not
// run (Dense, LayerNorm, ...), is refused naming it: silently skipping a
// module would return vectors the model was not trained to produce.
//
// Thread-safety: plain value type and pure functions.
#ifndef TESSERA_MODEL_POOLING_CONFIG_H_
#define TESSERA_MODEL_POOLING_CONFIG_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tessera::model {

enum class PoolingMode { kLast, kMean, kCls };

struct PoolingConfig {
  PoolingMode mode = PoolingMode::kLast;
  bool normalize = true;
};

// "last", "mean", "cls".
std::string_view PoolingModeName(PoolingMode mode);

// Reads `dir`/modules.json (and the Pooling module's config.json) when
// present; for a GGUF file its <arch>.pooling_type (mean, cls, last;
// normalized, as llama.cpp's embeddings are by default); the default above
// otherwise. InvalidArgument (malformed files)
// or Unimplemented (a mode or module not supported), naming the file.
StatusOr<PoolingConfig> LoadPoolingConfig(const std::string& dir);

// Which of a step's rows of one prompt chunk the pooler needs: for a chunk
// of `n` tokens at positions [first, first + n) of a prompt of `prompt_len`
// tokens, the range [begin, end) of its rows (empty when none).
struct RowRange {
  int64_t begin = 0, end = 0;
};
RowRange PoolingRows(PoolingMode mode, int64_t first, int64_t n,
                     int64_t prompt_len);

// Pools one prompt's final hidden states chunk by chunk (a chunked prefill
// brings them in pieces): Add() each chunk's PoolingRows as they come,
// Finish() once the prompt is done.
class HiddenPooler {
 public:
  HiddenPooler(const PoolingConfig& config, int64_t hidden);
  // `rows` [k, H] row-major.
  void Add(std::span<const float> rows);
  // The pooled vector [H] (kMean: sum / rows added), normalized when the
  // config says so. Empty when no row was added.
  std::vector<float> Finish() const;

 private:
  PoolingConfig config_;
  int64_t hidden_;
  std::vector<double> sum_;  // kMean: running sum; else the row kept
  int64_t rows_ = 0;
};

// In place: v / ||v||_2 (unchanged when ||v|| is 0).
void NormalizeL2(std::span<float> v);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_POOLING_CONFIG_H_
