// Helpers for the model runner tests: a runtime as the engine would pick it
// (honouring TESSERA_* variables), a scoped environment variable, make-model
// checkpoints in scratch directories, and logits comparisons. Test-only.
#ifndef TESSERA_MODEL_RUNNER_TEST_UTIL_H_
#define TESSERA_MODEL_RUNNER_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/make_model.h"
#include "model/random_weights.h"
#include "model/safetensors_writer.h"
#include "model/weight_spec.h"
#include "model/test_util.h"
#include "runtime/runtime.h"

namespace tessera::model::testing {

// Sets (or unsets, with nullopt) a variable for one scope.
class ScopedEnvVar {
 public:
  ScopedEnvVar(const char* name, std::optional<std::string> value)
      : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnvVar() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

inline StatusOr<std::unique_ptr<runtime::Runtime>> CreateRuntime() {
  auto config = runtime::RuntimeConfig::FromEnvironment();
  if (!config.ok()) return config.status();
  return runtime::Runtime::Create(*config);
}

// make-model `preset` for `arch` in `dtype` into `dir`.
inline StatusOr<std::unique_ptr<Checkpoint>> MakeCheckpoint(
    const std::string& dir, Architecture arch, DType dtype,
    const std::string& preset = "tiny", uint64_t seed = 7) {
  MakeModelOptions options;
  options.preset = preset;
  options.arch = arch;
  options.out_dir = dir;
  options.seed = seed;
  options.dtype = dtype;
  options.force = true;
  auto made = MakeModel(options);
  if (!made.ok()) return made.status();
  return Checkpoint::Open(dir);
}

// A checkpoint with shapes no make-model preset has, for `arch`: H 48,
// Hq 4 x D 16 (so Hq * D != H), one kv head (GQA 4:1), I 96, V 300, tied
// embeddings, attention biases, llama3 rope scaling with a short original
// context (so the scaling changes the frequencies). F32 weights with a
// larger spread than make-model's (std 0.15, norms 1 +- 0.1) so attention
// is far from uniform.
inline StatusOr<std::unique_ptr<Checkpoint>> MakeCustomCheckpoint(
    const std::string& dir, Architecture arch, uint64_t seed = 11) {
  ModelConfig c;
  c.architecture = arch;
  c.hidden_size = 48;
  c.intermediate_size = 96;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 1;
  c.head_dim = 16;
  c.vocab_size = 300;
  c.max_position_embeddings = 1024;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 500000.0;
  c.rope_scaling.type = RopeScaling::Type::kLlama3;
  c.rope_scaling.factor = 8.0;
  c.rope_scaling.low_freq_factor = 1.0;
  c.rope_scaling.high_freq_factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 64;
  c.tie_word_embeddings = true;
  c.attention_bias = true;
  c.torch_dtype = "float32";
  {
    std::ofstream out(dir + "/config.json");
    out << ModelConfigToJson(c);
    if (!out) return InternalError("cannot write " + dir + "/config.json");
  }
  std::vector<TensorDecl> decls;
  for (const WeightSpec& spec : ExpectedWeights(c)) {
    if (spec.optional) continue;  // the tied lm_head
    decls.push_back({spec.name, TSR_DTYPE_F32, spec.shape});
  }
  auto writer = SafetensorsWriter::Create(dir + "/model.safetensors", decls);
  if (!writer.ok()) return writer.status();
  for (const TensorDecl& d : decls) {
    const bool norm = d.name.size() > 11 &&
                      d.name.substr(d.name.size() - 11) == "norm.weight";
    std::vector<float> values(static_cast<size_t>(NumElements(d.shape)));
    FillNormalLike(TensorStreamKey(seed, d.name), 0, norm ? 1.0f : 0.0f,
                   norm ? 0.1f : 0.15f, values);
    Status s = (*writer)->Append(std::as_bytes(std::span<const float>(values)));
    if (!s.ok()) return s;
  }
  Status s = (*writer)->Finish();
  if (!s.ok()) return s;
  return Checkpoint::Open(dir);
}

// max |a - b| / max(1e-6, max |b|): the error relative to the logit scale.
inline double RelativeError(std::span<const float> a,
                            const std::vector<double>& b) {
  double max_diff = 0.0, scale = 1e-6;
  for (size_t i = 0; i < b.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return max_diff / scale;
}

inline int32_t ArgmaxRow(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) -
                              row.begin());
}

}  // namespace tessera::model::testing

#endif  // TESSERA_MODEL_RUNNER_TEST_UTIL_H_
