#include "model/reference_forward.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numbers>

#include "base/dtype.h"

namespace tessera::testing {
namespace {

using model::ModelConfig;
using model::RopeScaling;

double ElementAsDouble(const std::byte* data, DType dtype, int64_t i) {
  switch (dtype) {
    case TSR_DTYPE_F32: {
      float f;
      std::memcpy(&f, data + 4 * i, 4);
      return f;
    }
    case TSR_DTYPE_BF16: {
      uint16_t b;
      std::memcpy(&b, data + 2 * i, 2);
      uint32_t u = uint32_t(b) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    default: {
      uint16_t b;
      std::memcpy(&b, data + 2 * i, 2);
      return F16ToFloat(b);
    }
  }
}

// y = W x with W [n, k] row-major.
std::vector<double> MatVec(const std::vector<double>& w,
                           const std::vector<double>& x, int64_t n) {
  const int64_t k = static_cast<int64_t>(x.size());
  std::vector<double> y(n, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    double acc = 0.0;
    const double* row = w.data() + r * k;
    for (int64_t c = 0; c < k; ++c) acc += row[c] * x[c];
    y[r] = acc;
  }
  return y;
}

void AddInPlace(std::vector<double>& y, const std::vector<double>* b) {
  if (b == nullptr) return;
  for (size_t i = 0; i < y.size(); ++i) y[i] += (*b)[i];
}

// x[begin, begin + n) normalised and scaled by w [n].
void RmsNormSpan(double* x, int64_t n, const std::vector<double>& w,
                 double eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / double(n) + eps);
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * inv * w[i];
}

std::vector<double> RmsNorm(const std::vector<double>& x,
                            const std::vector<double>& w, double eps) {
  std::vector<double> y = x;
  RmsNormSpan(y.data(), static_cast<int64_t>(y.size()), w, eps);
  return y;
}

// Rotate-half rope of one head of D values at `position`.
void RotateHalf(double* head, int64_t d, int64_t position,
                const std::vector<double>& inv_freq) {
  const int64_t half = d / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double angle = double(position) * inv_freq[i];
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = head[i], b = head[i + half];
    head[i] = a * c - b * s;
    head[i + half] = b * c + a * s;
  }
}

std::vector<double> InvFreq(const ModelConfig& c) {
  const int64_t d = c.head_dim;
  std::vector<double> f(d / 2);
  for (int64_t i = 0; i < d / 2; ++i) {
    f[i] = std::pow(c.rope_theta, -double(2 * i) / double(d));
  }
  if (c.rope_scaling.type == RopeScaling::Type::kLlama3) {
    const RopeScaling& s = c.rope_scaling;
    const double orig = double(s.original_max_position_embeddings);
    for (double& x : f) {
      const double wavelen = 2.0 * std::numbers::pi / x;
      if (wavelen > orig / s.low_freq_factor) {
        x /= s.factor;
      } else if (wavelen >= orig / s.high_freq_factor) {
        const double smooth = (orig / wavelen - s.low_freq_factor) /
                              (s.high_freq_factor - s.low_freq_factor);
        x = (1.0 - smooth) * x / s.factor + smooth * x;
      }
    }
  }
  return f;
}

}  // namespace

StatusOr<std::unique_ptr<ReferenceModel>> ReferenceModel::Load(
    const model::Checkpoint& checkpoint) {
  // An embedding export has no lm_head: only ForwardHidden runs on it.
  TSR_RETURN_IF_ERROR(checkpoint.Validate(
      model::ExpectedEmbeddingWeights(checkpoint.config())));
  std::unique_ptr<ReferenceModel> m(new ReferenceModel());
  m->config_ = checkpoint.config();
  for (const model::TensorRef& t : checkpoint.tensors()) {
    std::vector<double> values(static_cast<size_t>(t.num_elements()));
    if (t.raw()) {
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        values[i] = ElementAsDouble(t.data(), t.dtype(), i);
      }
    } else {  // a GGUF tensor: decoded (and reordered) by the checkpoint
      const int64_t rows = t.shape().empty() ? 1 : t.shape()[0];
      const int64_t width = t.num_elements() / rows;
      std::vector<float> f(values.size());
      t.ReadRows(0, rows, 0, width, TSR_DTYPE_F32, f.data());
      for (size_t i = 0; i < f.size(); ++i) values[i] = f[i];
    }
    m->tensors_.emplace(t.name(), std::move(values));
  }
  m->inv_freq_ = InvFreq(m->config_);
  return m;
}

const std::vector<double>* ReferenceModel::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const std::vector<double>& ReferenceModel::Get(const std::string& name) const {
  const std::vector<double>* t = Find(name);
  if (t == nullptr) {
    fmt::print(stderr, "reference model: missing tensor {}\n", name);
    std::abort();  // a test-only oracle: a missing tensor is a test bug
  }
  return *t;
}

ReferenceModel::Cache ReferenceModel::NewCache() const {
  Cache c;
  c.k.resize(config_.num_hidden_layers);
  c.v.resize(config_.num_hidden_layers);
  return c;
}

std::vector<std::vector<double>> ReferenceModel::Forward(
    Cache& cache, std::span<const int32_t> tokens) const {
  const std::vector<double>& embed = Get("model.embed_tokens.weight");
  const std::vector<double>* lm_head =
      config_.tie_word_embeddings ? &embed : &Get("lm_head.weight");
  std::vector<std::vector<double>> all_logits;
  for (const std::vector<double>& out : ForwardHidden(cache, tokens)) {
    all_logits.push_back(MatVec(*lm_head, out, config_.vocab_size));
  }
  return all_logits;
}

std::vector<std::vector<double>> ReferenceModel::ForwardHidden(
    Cache& cache, std::span<const int32_t> tokens) const {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size, d = c.head_dim, inter = c.intermediate_size;
  const int64_t hq = c.num_attention_heads, hk = c.num_key_value_heads;
  const int64_t group = hq / hk;
  const double eps = c.rms_norm_eps;
  const std::vector<double>& embed = Get("model.embed_tokens.weight");
  std::vector<std::vector<double>> all_hidden;
  for (int32_t token : tokens) {
    const int64_t pos = cache.length;
    std::vector<double> x(embed.begin() + int64_t(token) * h,
                          embed.begin() + int64_t(token + 1) * h);
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      auto w = [&](const char* suffix) -> const std::vector<double>& {
        return Get(fmt::format("model.layers.{}.{}", l, suffix));
      };
      auto opt = [&](const char* suffix) {
        return Find(fmt::format("model.layers.{}.{}", l, suffix));
      };
      std::vector<double> a = RmsNorm(x, w("input_layernorm.weight"), eps);
      std::vector<double> q = MatVec(w("self_attn.q_proj.weight"), a, hq * d);
      std::vector<double> k = MatVec(w("self_attn.k_proj.weight"), a, hk * d);
      std::vector<double> v = MatVec(w("self_attn.v_proj.weight"), a, hk * d);
      AddInPlace(q, opt("self_attn.q_proj.bias"));
      AddInPlace(k, opt("self_attn.k_proj.bias"));
      AddInPlace(v, opt("self_attn.v_proj.bias"));
      if (const auto* qn = opt("self_attn.q_norm.weight")) {
        for (int64_t i = 0; i < hq; ++i) RmsNormSpan(&q[i * d], d, *qn, eps);
      }
      if (const auto* kn = opt("self_attn.k_norm.weight")) {
        for (int64_t i = 0; i < hk; ++i) RmsNormSpan(&k[i * d], d, *kn, eps);
      }
      for (int64_t i = 0; i < hq; ++i) RotateHalf(&q[i * d], d, pos, inv_freq_);
      for (int64_t i = 0; i < hk; ++i) RotateHalf(&k[i * d], d, pos, inv_freq_);
      cache.k[l].push_back(k);
      cache.v[l].push_back(v);

      const double scale = 1.0 / std::sqrt(double(d));
      std::vector<double> attn(hq * d, 0.0);
      for (int64_t head = 0; head < hq; ++head) {
        const int64_t kvh = head / group;
        std::vector<double> scores(pos + 1);
        double max_score = -INFINITY;
        for (int64_t p = 0; p <= pos; ++p) {
          double s = 0.0;
          for (int64_t i = 0; i < d; ++i) {
            s += q[head * d + i] * cache.k[l][p][kvh * d + i];
          }
          scores[p] = s * scale;
          max_score = std::max(max_score, scores[p]);
        }
        double total = 0.0;
        for (double& s : scores) {
          s = std::exp(s - max_score);
          total += s;
        }
        for (int64_t p = 0; p <= pos; ++p) {
          for (int64_t i = 0; i < d; ++i) {
            attn[head * d + i] +=
                scores[p] / total * cache.v[l][p][kvh * d + i];
          }
        }
      }
      std::vector<double> o = MatVec(w("self_attn.o_proj.weight"), attn, h);
      AddInPlace(o, opt("self_attn.o_proj.bias"));
      for (int64_t i = 0; i < h; ++i) x[i] += o[i];

      std::vector<double> b =
          RmsNorm(x, w("post_attention_layernorm.weight"), eps);
      std::vector<double> gate = MatVec(w("mlp.gate_proj.weight"), b, inter);
      std::vector<double> up = MatVec(w("mlp.up_proj.weight"), b, inter);
      for (int64_t i = 0; i < inter; ++i) {
        gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
      }
      std::vector<double> down = MatVec(w("mlp.down_proj.weight"), gate, h);
      for (int64_t i = 0; i < h; ++i) x[i] += down[i];
    }
    all_hidden.push_back(RmsNorm(x, Get("model.norm.weight"), eps));
    ++cache.length;
  }
  return all_hidden;
}

}  // namespace tessera::testing
