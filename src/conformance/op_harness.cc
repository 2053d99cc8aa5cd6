#include "conformance/op_harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "conformance/tolerance.h"
#include "reference/op_contracts.h"
#include "reference/reference_ops.h"
#include "reference/sampling.h"

namespace tessera::conformance {
namespace {

using reference::HostTensor;

constexpr uint64_t kTailBytes = 64;  // slack after the last view of a buffer

int64_t Extent(const std::vector<int64_t>& shape,
               const std::vector<int64_t>& strides) {
  int64_t last = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return 0;
    last += (shape[i] - 1) * strides[i];
  }
  return last + 1;
}

// "[1, 4]" for logical element `flat` of `shape`.
std::string MultiIndex(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    int64_t d = std::max<int64_t>(shape[i], 1);
    index[i] = flat % d;
    flat /= d;
  }
  return reference::ShapeString(index);
}

double LoadAny(const HostTensor& t, int64_t off) {
  return IsFloatDType(t.dtype) ? t.Load(off)
                               : static_cast<double>(t.LoadInt(off));
}

bool SameValue(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

// RMS of the finite values of `t`; 1 when there are none or all are zero.
double RmsScale(const HostTensor& t) {
  double sum = 0;
  int64_t n = 0;
  for (int64_t off : reference::ElementOffsets(t)) {
    double v = t.Load(off);
    if (std::isfinite(v)) {
      sum += v * v;
      ++n;
    }
  }
  double rms = n ? std::sqrt(sum / n) : 0;
  return rms > 0 ? rms : 1;
}

// Numeric comparison of one output; "" when it passes.
std::string CompareNumeric(const std::string& name, const HostTensor& want,
                           const HostTensor& got, double tolerance_scale) {
  Tolerance tol = ToleranceFor(want.dtype);
  tol.rtol *= tolerance_scale;
  tol.atol *= tolerance_scale;
  const double scale = RmsScale(want);
  std::vector<int64_t> offsets = reference::ElementOffsets(want);
  double worst_ratio = 0, worst_err = 0, worst_allowed = 0, max_err = 0;
  double worst_got = 0, worst_want = 0;
  int64_t worst_index = -1, bad = 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    double w = want.Load(offsets[i]), g = got.Load(offsets[i]);
    double err, allowed = tol.atol * scale + tol.rtol * std::abs(w);
    if (std::isnan(w) || std::isinf(w)) {
      err = SameValue(w, g) ? 0 : INFINITY;
    } else if (!std::isfinite(g)) {
      err = INFINITY;
    } else {
      err = std::abs(g - w);
    }
    double ratio = err == 0 ? 0 : (allowed > 0 ? err / allowed : INFINITY);
    if (ratio > 1) ++bad;
    if (std::isfinite(err)) max_err = std::max(max_err, err);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst_err = err;
      worst_allowed = allowed;
      worst_index = static_cast<int64_t>(i);
      worst_got = g;
      worst_want = w;
    }
  }
  if (worst_ratio <= 1) return "";
  return fmt::format(
      "{}: abs err {:.3g} > tol {:.3g} at index {} {} (got {:.7g}, want "
      "{:.7g}); {} of {} elements out of tolerance, max abs err {:.3g}",
      name, worst_err, worst_allowed, worst_index,
      MultiIndex(want.shape, worst_index), worst_got, worst_want, bad,
      offsets.size(), max_err);
}

std::string CompareExact(const std::string& name, const HostTensor& want,
                         const HostTensor& got) {
  std::vector<int64_t> offsets = reference::ElementOffsets(want);
  int64_t first = -1, bad = 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (!SameValue(LoadAny(want, offsets[i]), LoadAny(got, offsets[i]))) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++bad;
    }
  }
  if (first < 0) return "";
  return fmt::format(
      "{}: element {} {} is {:.9g}, want {:.9g}; {} of {} differ", name, first,
      MultiIndex(want.shape, first), LoadAny(got, offsets[first]),
      LoadAny(want, offsets[first]), bad, offsets.size());
}

std::vector<double> Row(const HostTensor& t, int64_t row) {
  std::vector<double> out(t.shape[1]);
  for (int64_t i = 0; i < t.shape[1]; ++i) {
    out[i] = t.Load(row * t.strides[0] + i * t.strides[1]);
  }
  return out;
}

// sample: each row's id must be the reference's, or one the reference
// could pick under tiny perturbations (tolerance.h).
std::string CompareSample(const std::vector<HostTensor>& in,
                          const HostTensor& got) {
  const HostTensor& logits = in[0];
  for (int64_t b = 0; b < logits.shape[0]; ++b) {
    auto at = [&](int i) { return b * in[i].strides[0]; };
    reference::SampleRowParams p;
    p.temperature = in[1].Load(at(1));
    p.top_k = in[2].LoadInt(at(2));
    p.top_p = in[3].Load(at(3));
    p.min_p = in[4].Load(at(4));
    p.uniform = in[5].Load(at(5));
    std::vector<double> row = Row(logits, b);
    std::set<int64_t> ok;
    int64_t want = reference::SampleRow(row, p);
    ok.insert(want);
    if (p.temperature > 0) {
      for (double tp_f :
           {1.0, 1 - kSampleParamTolerance, 1 + kSampleParamTolerance}) {
        for (double mp_f :
             {1.0, 1 - kSampleParamTolerance, 1 + kSampleParamTolerance}) {
          reference::SampleRowParams q = p;
          q.top_p = p.top_p * tp_f;
          q.min_p = p.min_p * mp_f;
          reference::SampleTrace trace;
          ok.insert(reference::SampleRow(row, q, &trace));
          for (size_t j = 0; j + 1 < trace.cdf.size(); ++j) {
            if (std::abs(q.uniform - trace.cdf[j]) <=
                kSampleBoundaryTolerance) {
              ok.insert(trace.kept[j]);
              ok.insert(trace.kept[j + 1]);
            }
          }
        }
      }
    }
    int64_t id = got.LoadInt(b * got.strides[0]);
    if (ok.count(id) == 0) {
      return fmt::format(
          "ids: row {} sampled id {}, want {} (temperature {:g}, top_k {}, "
          "top_p {:g}, min_p {:g}, uniform {:.9g}, V {})",
          b, id, want, p.temperature, p.top_k, p.top_p, p.min_p, p.uniform,
          logits.shape[1]);
    }
  }
  return "";
}

// logprobs with top-K: ids are judged by their log-probability, so exact
// ties (and float-level near-ties) may come in either order.
std::string CompareTopIds(const HostTensor& logits, const HostTensor& want_lp,
                          const HostTensor& got_ids) {
  Tolerance tol = ToleranceFor(TSR_DTYPE_F32);
  const double scale = RmsScale(want_lp);
  const int64_t vocab = logits.shape[1];
  for (int64_t b = 0; b < got_ids.shape[0]; ++b) {
    std::vector<double> row = Row(logits, b);
    double m = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (double v : row) sum += std::exp(v - m);
    double lse = m + std::log(sum);
    std::set<int64_t> seen;
    for (int64_t k = 0; k < got_ids.shape[1]; ++k) {
      int64_t id =
          got_ids.LoadInt(b * got_ids.strides[0] + k * got_ids.strides[1]);
      if (id < 0 || id >= vocab) {
        return fmt::format("top_ids[{}][{}] = {} is outside [0, {})", b, k, id,
                           vocab);
      }
      if (!seen.insert(id).second) {
        return fmt::format("top_ids row {} lists id {} twice", b, id);
      }
      double want =
          want_lp.Load(b * want_lp.strides[0] + k * want_lp.strides[1]);
      double have = row[id] - lse;
      if (std::abs(have - want) >
          tol.atol * scale + tol.rtol * std::abs(want)) {
        return fmt::format(
            "top_ids[{}][{}] = {} has log-probability {:.7g}, but the {}-th "
            "largest is {:.7g}",
            b, k, id, have, k + 1, want);
      }
    }
  }
  return "";
}

}  // namespace

StatusOr<CaseLayout> LayOut(const OpCase& c, uint64_t seed) {
  CaseLayout layout;
  const int n = static_cast<int>(c.args.size());
  layout.buffer_of_arg.resize(n);
  layout.strides.resize(n);
  std::vector<uint64_t> ends;
  for (int i = 0; i < n; ++i) {
    const TensorSpec& t = c.args[i];
    layout.strides[i] = t.strides.empty() ? PackedStrides(t.shape) : t.strides;
    if (layout.strides[i].size() != t.shape.size()) {
      return InternalError(
          fmt::format("case {}: arg {} has {} strides for {} dims", c.name, i,
                      layout.strides[i].size(), t.shape.size()));
    }
    int buffer;
    if (t.buffer_of < 0) {
      buffer = static_cast<int>(ends.size());
      ends.push_back(0);
    } else {
      if (t.buffer_of >= i) {
        return InternalError(fmt::format(
            "case {}: arg {} shares the buffer of a later arg", c.name, i));
      }
      buffer = layout.buffer_of_arg[t.buffer_of];
    }
    layout.buffer_of_arg[i] = buffer;
    uint64_t end =
        static_cast<uint64_t>(t.offset + Extent(t.shape, layout.strides[i])) *
        DTypeSize(t.dtype);
    ends[buffer] = std::max(ends[buffer], end);
  }
  Rng rng(seed);
  for (uint64_t end : ends) {
    layout.buffer_sizes.push_back(end + kTailBytes);
    Image image(end + kTailBytes);
    rng.Bytes(image.data(), image.size());
    layout.initial.push_back(std::move(image));
  }
  std::vector<HostTensor> views = HostViews(c, layout, layout.initial);
  for (int i = 0; i < n; ++i) {
    const TensorSpec& t = c.args[i];
    if (t.values.empty()) continue;
    std::vector<int64_t> offsets = reference::ElementOffsets(views[i]);
    if (offsets.size() != t.values.size()) {
      return InternalError(
          fmt::format("case {}: arg {} has {} values for {} elements", c.name,
                      i, t.values.size(), offsets.size()));
    }
    for (size_t e = 0; e < offsets.size(); ++e) {
      if (IsFloatDType(t.dtype)) {
        views[i].Store(offsets[e], t.values[e]);
      } else {
        views[i].StoreInt(offsets[e], static_cast<int64_t>(t.values[e]));
      }
    }
  }
  return layout;
}

std::vector<HostTensor> HostViews(const OpCase& c, const CaseLayout& layout,
                                  std::vector<Image>& images) {
  std::vector<HostTensor> views;
  for (size_t i = 0; i < c.args.size(); ++i) {
    const TensorSpec& t = c.args[i];
    HostTensor h;
    h.data =
        images[layout.buffer_of_arg[i]].data() + t.offset * DTypeSize(t.dtype);
    h.dtype = t.dtype;
    h.shape = t.shape;
    h.strides = layout.strides[i];
    views.push_back(std::move(h));
  }
  return views;
}

StatusOr<DeviceCase> UploadCase(const PluginEnv& env, int device,
                                const OpCase& c, const CaseLayout& layout) {
  DeviceCase dc;
  for (size_t b = 0; b < layout.buffer_sizes.size(); ++b) {
    TSR_ASSIGN_OR_RETURN(Buffer buffer,
                         env.Alloc(device, layout.buffer_sizes[b]));
    TSR_RETURN_IF_ERROR(env.Upload(buffer.get(), 0, layout.initial[b].data(),
                                   layout.initial[b].size()));
    dc.buffers.push_back(std::move(buffer));
  }
  for (size_t i = 0; i < c.args.size(); ++i) {
    const TensorSpec& t = c.args[i];
    tsr_tensor tensor{};
    tensor.struct_size = sizeof(tensor);
    tensor.dtype = t.dtype;
    tensor.buffer = dc.buffers[layout.buffer_of_arg[i]].get();
    tensor.offset = static_cast<uint64_t>(t.offset) * DTypeSize(t.dtype);
    tensor.ndim = static_cast<int32_t>(t.shape.size());
    for (size_t d = 0; d < t.shape.size(); ++d) {
      tensor.shape[d] = t.shape[d];
      tensor.strides[d] = layout.strides[i][d];
    }
    dc.tensors.push_back(tensor);
  }
  return dc;
}

StatusOr<std::vector<Image>> RunReference(tsr_op_id op, const OpCase& c,
                                          const CaseLayout& layout) {
  std::vector<Image> images = layout.initial;
  std::vector<HostTensor> views = HostViews(c, layout, images);
  std::span<const HostTensor> in(views.data(), c.num_inputs);
  std::span<HostTensor> out(views.data() + c.num_inputs,
                            views.size() - c.num_inputs);
  TSR_RETURN_IF_ERROR(reference::RunReferenceOp(
      op, c.version, in, out, c.params.empty() ? nullptr : c.params.data()));
  return images;
}

Outcome CompareImages(tsr_op_id op, const OpCase& c, const CaseLayout& layout,
                      std::vector<Image>& reference, std::vector<Image>& got) {
  const int num_outputs = static_cast<int>(c.args.size()) - c.num_inputs;
  const std::vector<std::string> names =
      reference::ArgNames(op, c.num_inputs, num_outputs, c.version);
  std::vector<HostTensor> want_views = HostViews(c, layout, reference);
  std::vector<HostTensor> got_views = HostViews(c, layout, got);
  std::vector<Image> initial = layout.initial;
  std::vector<HostTensor> in_views = HostViews(c, layout, initial);

  std::vector<std::string> failures;
  for (int o = 0; o < num_outputs; ++o) {
    const int a = c.num_inputs + o;
    const HostTensor& want = want_views[a];
    const HostTensor& have = got_views[a];
    std::string msg;
    switch (c.compare) {
      case CompareMode::kExact:
        msg = CompareExact(names[a], want, have);
        break;
      case CompareMode::kSample:
        msg = CompareSample(
            std::vector<HostTensor>(in_views.begin(),
                                    in_views.begin() + c.num_inputs),
            have);
        break;
      case CompareMode::kLogprobs:
        if (o == 1) {
          msg = CompareTopIds(in_views[0], want_views[c.num_inputs + 2], have);
        } else {
          msg = CompareNumeric(names[a], want, have, c.tolerance_scale);
        }
        break;
      case CompareMode::kNumeric:
        msg = IsFloatDType(want.dtype)
                  ? CompareNumeric(names[a], want, have, c.tolerance_scale)
                  : CompareExact(names[a], want, have);
        break;
    }
    if (!msg.empty()) failures.push_back(msg);
  }

  // Every byte outside the output views must be as it was.
  for (size_t b = 0; b < got.size(); ++b) {
    std::vector<bool> covered(got[b].size(), false);
    for (int o = 0; o < num_outputs; ++o) {
      const int a = c.num_inputs + o;
      if (layout.buffer_of_arg[a] != static_cast<int>(b)) continue;
      const size_t size = DTypeSize(c.args[a].dtype);
      const size_t base = c.args[a].offset * size;
      for (int64_t off : reference::ElementOffsets(want_views[a])) {
        for (size_t k = 0; k < size; ++k) covered[base + off * size + k] = true;
      }
    }
    for (size_t i = 0; i < got[b].size(); ++i) {
      if (!covered[i] && got[b][i] != layout.initial[b][i]) {
        std::vector<std::string> owners;
        for (size_t a = 0; a < c.args.size(); ++a) {
          if (layout.buffer_of_arg[a] == static_cast<int>(b))
            owners.push_back(names[a]);
        }
        // Where the byte is relative to the nearest output view.
        std::string where;
        size_t nearest = SIZE_MAX;
        for (int o = 0; o < num_outputs; ++o) {
          const int a = c.num_inputs + o;
          if (layout.buffer_of_arg[a] != static_cast<int>(b)) continue;
          const std::vector<int64_t> offs =
              reference::ElementOffsets(want_views[a]);
          if (offs.empty()) continue;
          const size_t size = DTypeSize(c.args[a].dtype);
          const size_t base = c.args[a].offset * size;
          const auto [lo, hi] = std::minmax_element(offs.begin(), offs.end());
          const size_t first = base + static_cast<size_t>(*lo) * size;
          const size_t end = base + static_cast<size_t>(*hi + 1) * size;
          const size_t distance = i >= end ? i - end : i < first ? first - i : 0;
          if (distance >= nearest) continue;
          nearest = distance;
          where = i == end ? fmt::format("the byte just past the end of {}",
                                         names[a])
                  : i > end ? fmt::format("{} bytes past the end of {}",
                                          i - end, names[a])
                  : i < first
                      ? fmt::format("{} bytes before the start of {}",
                                    first - i, names[a])
                      : fmt::format("between elements of {} (a strided view)",
                                    names[a]);
        }
        failures.push_back(fmt::format(
            "wrote outside the output views: byte {} of the buffer holding {} "
            "changed{} (the kit surrounds and interleaves views with sentinel "
            "bytes; an op may write only its outputs' elements)",
            i, fmt::join(owners, ", "), where.empty() ? "" : ", " + where));
        break;
      }
    }
  }
  if (failures.empty()) return Pass();
  return Fail(fmt::format("{}", fmt::join(failures, "; ")));
}

Outcome RunOpCase(const PluginEnv& env, int device, tsr_kernel kernel,
                  tsr_stream stream, tsr_op_id op, const OpCase& c,
                  uint64_t seed, bool* stream_broken) {
  *stream_broken = false;
  KIT_ASSIGN_OR_FAIL(CaseLayout layout, LayOut(c, seed));
  auto reference = RunReference(op, c, layout);
  if (!reference.ok()) {
    return Fail("the reference rejected this case, a bug in the kit: " +
                reference.status().message());
  }
  KIT_ASSIGN_OR_FAIL(DeviceCase dc, UploadCase(env, device, c, layout));
  const size_t num_outputs = c.args.size() - c.num_inputs;
  KIT_CHECK_CALL(
      env,
      env.api().launch(kernel, stream, dc.tensors.data(), c.num_inputs,
                       dc.tensors.data() + c.num_inputs, num_outputs,
                       c.params.empty() ? nullptr : c.params.data(),
                       c.params.size()),
      "launch");
  tsr_status s = env.api().stream_synchronize(stream);
  if (s != TSR_OK) {
    *stream_broken = true;
    KIT_CHECK_CALL(env, s, "stream_synchronize after the launch");
  }
  std::vector<Image> got;
  for (size_t b = 0; b < dc.buffers.size(); ++b) {
    Image image(layout.buffer_sizes[b]);
    KIT_RETURN_IF_ERROR(
        env.Download(dc.buffers[b].get(), 0, image.data(), image.size()));
    got.push_back(std::move(image));
  }
  return CompareImages(op, c, layout, *reference, got);
}

}  // namespace tessera::conformance
