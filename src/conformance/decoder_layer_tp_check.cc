// collectives.decoder_layer_tp (ABI 1.4, when the plugin lists decoder_layer
// v2 for f32 and exposes two devices): one whole layer
// (MakeDecoderLayerTpCase) split Megatron-style over the two ranks of an
// in-process communicator — rank r holds query heads [2r, 2r+2), KV head r,
// the matching columns of w_o, gate and up rows [12r, 12r+12) and the
// matching columns of w_down, o_bias on rank 0 only — and launched as
// decoder_layer v2 on both ranks at once (one thread each). Each rank's
// residual_out must match the reference's whole layer, and its KV cache the
// reference cache's head r: a missing or doubled all-reduce, or one in the
// wrong place, is far outside the tolerance.
#include <fmt/format.h>

#include <cmath>
#include <thread>
#include <vector>

#include "conformance/checks.h"
#include "conformance/op_cases.h"
#include "conformance/op_harness.h"

namespace tessera::conformance {
namespace {

constexpr int64_t kHq = 4, kHk = 2, kD = 16, kInter = 24;

// A contiguous spec holding `src`'s values at the given logical rows (of a
// 2-D [R, C] or 1-D [R] tensor) and columns [col0, col0 + cols) (2-D).
TensorSpec Select(const TensorSpec& src, const std::vector<int64_t>& rows, int64_t col0 = 0,
                  int64_t cols = -1) {
  TensorSpec out;
  out.dtype = src.dtype;
  const int64_t c_all = src.shape.size() == 2 ? src.shape[1] : 1;
  if (cols < 0) cols = c_all;
  out.shape = src.shape.size() == 2 ? std::vector<int64_t>{static_cast<int64_t>(rows.size()), cols}
                                    : std::vector<int64_t>{static_cast<int64_t>(rows.size())};
  for (int64_t r : rows) {
    for (int64_t c = 0; c < cols; ++c) out.values.push_back(src.values[r * c_all + col0 + c]);
  }
  return out;
}

std::vector<int64_t> Range(int64_t begin, int64_t count) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < count; ++i) v.push_back(begin + i);
  return v;
}

// KV head `head` of a [S, Hk, D] cache spec, as [S, 1, D].
TensorSpec CacheHead(const TensorSpec& cache, int64_t head) {
  TensorSpec out;
  out.dtype = cache.dtype;
  const int64_t s = cache.shape[0], hk = cache.shape[1], d = cache.shape[2];
  out.shape = {s, 1, d};
  for (int64_t i = 0; i < s; ++i) {
    for (int64_t j = 0; j < d; ++j) out.values.push_back(cache.values[(i * hk + head) * d + j]);
  }
  return out;
}

// Rank r's case of the whole layer `full`.
OpCase Shard(const OpCase& full, int r, tsr_comm comm) {
  OpCase c = full;
  c.version = 2;
  const int64_t hq = kHq / 2, hk = kHk / 2, inter = kInter / 2;
  std::vector<int64_t> qkv_rows = Range(r * hq * kD, hq * kD);
  for (int64_t i : Range(kHq * kD + r * hk * kD, hk * kD)) qkv_rows.push_back(i);
  for (int64_t i : Range((kHq + kHk) * kD + r * hk * kD, hk * kD)) qkv_rows.push_back(i);
  std::vector<int64_t> gate_up_rows = Range(r * inter, inter);
  for (int64_t i : Range(kInter + r * inter, inter)) gate_up_rows.push_back(i);
  const TensorSpec& w_o = full.args[13];
  const TensorSpec& w_down = full.args[19];
  c.args[8] = Select(full.args[8], qkv_rows);
  c.args[10] = Select(full.args[10], qkv_rows);
  c.args[13] = Select(w_o, Range(0, w_o.shape[0]), r * hq * kD, hq * kD);
  if (r != 0) c.args[15].dtype = TSR_DTYPE_INVALID;  // o_bias: one rank adds it
  c.args[17] = Select(full.args[17], gate_up_rows);
  c.args[19] = Select(w_down, Range(0, w_down.shape[0]), r * inter, inter);
  // residual_out into its own buffer (the whole case aliases residual).
  TensorSpec out;
  out.dtype = full.args[0].dtype;
  out.shape = full.args[0].shape;
  c.args[21] = out;
  c.args[22] = CacheHead(full.args[22], r);
  c.args[23] = CacheHead(full.args[23], r);
  tsr_decoder_layer_params p{};
  std::memcpy(&p, full.params.data(), sizeof(p));
  p.num_q_heads = static_cast<int32_t>(hq);
  p.num_kv_heads = static_cast<int32_t>(hk);
  p.comm = comm;
  c.SetParams(p);
  return c;
}

// The largest |got - want| / (1 + |want|) between two views of one shape.
double MaxError(const reference::HostTensor& got, const reference::HostTensor& want,
                int64_t* where) {
  double worst = 0;
  const int64_t n = want.NumElements();
  std::vector<int64_t> index(want.ndim(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const double a = got.Load(got.Offset(index)), b = want.Load(want.Offset(index));
    const double e = std::isfinite(a) ? std::fabs(a - b) / (1 + std::fabs(b)) : 1e30;
    if (e > worst) worst = e, *where = i;
    for (int k = want.ndim() - 1; k >= 0; --k) {
      if (++index[k] < want.shape[k]) break;
      index[k] = 0;
    }
  }
  return worst;
}

// `whole`'s KV head `head` as a [S, 1, D] view.
reference::HostTensor HeadView(reference::HostTensor whole, int64_t head) {
  whole.data = static_cast<char*>(whole.data) +
               head * whole.strides[1] * static_cast<int64_t>(DTypeSize(whole.dtype));
  whole.shape[1] = 1;
  return whole;
}

}  // namespace

Outcome DecoderLayerTpCheck(const PluginEnv& env, const std::vector<tsr_comm>& comms,
                            const std::vector<tsr_stream>& streams) {
  const tsr_plugin_api& api = env.api();
  tsr_op_signature sig{};
  bool listed = false;
  const tsr_op_signature* ops = nullptr;
  size_t count = 0;
  if (api.list_ops != nullptr && api.list_ops(&ops, &count) == TSR_OK) {
    for (size_t i = 0; i < count && !listed; ++i) {
      const tsr_op_signature& s = ops[i];
      listed = s.op == TSR_OP_DECODER_LAYER && s.version == 2 && s.num_args == 3 &&
               s.dtypes[0] == TSR_DTYPE_F32 && s.dtypes[1] == TSR_DTYPE_F32 &&
               s.dtypes[2] == TSR_DTYPE_F32;
      if (listed) sig = s;
    }
  }
  if (!listed) return Skip("the plugin does not list decoder_layer v2 for (f32, f32, f32)");
  if (comms.size() != 2) {
    return Skip(fmt::format("needs exactly two devices (has {}; the cpu plugin: --options "
                            "devices=2)",
                            comms.size()));
  }
  const uint64_t seed = 0x7e9a11e5ull;
  CaseBuilder builder(seed);
  OpCase full = MakeDecoderLayerTpCase(builder);
  KIT_ASSIGN_OR_FAIL(CaseLayout full_layout, LayOut(full, seed));
  auto reference = RunReference(TSR_OP_DECODER_LAYER, full, full_layout);
  if (!reference.ok()) {
    return Fail("the reference rejected the whole layer, a bug in the kit: " +
                reference.status().message());
  }
  const std::vector<reference::HostTensor> want = HostViews(full, full_layout, *reference);

  std::vector<OpCase> cases;
  std::vector<CaseLayout> layouts;
  std::vector<DeviceCase> uploaded;
  std::vector<tsr_kernel> kernels(2, nullptr);
  for (int r = 0; r < 2; ++r) {
    cases.push_back(Shard(full, r, comms[r]));
    KIT_ASSIGN_OR_FAIL(CaseLayout layout, LayOut(cases[r], seed + 1 + r));
    KIT_ASSIGN_OR_FAIL(DeviceCase dc, UploadCase(env, r, cases[r], layout));
    layouts.push_back(std::move(layout));
    uploaded.push_back(std::move(dc));
    KIT_CHECK_CALL(env, api.resolve_op(r, &sig, &kernels[r]),
                   fmt::format("resolve_op decoder_layer v2 on device {}", r));
  }
  // Both ranks launch at once: a plugin may complete the all-reduces at the
  // call, which needs the other rank's launch to be under way.
  std::vector<tsr_status> launched(2, TSR_OK);
  std::vector<std::string> why(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      const OpCase& c = cases[r];
      DeviceCase& dc = uploaded[r];
      launched[r] = api.launch(kernels[r], streams[r], dc.tensors.data(), c.num_inputs,
                               dc.tensors.data() + c.num_inputs, c.args.size() - c.num_inputs,
                               c.params.data(), c.params.size());
      if (launched[r] == TSR_OK) launched[r] = api.stream_synchronize(streams[r]);
      if (launched[r] != TSR_OK) why[r] = env.LastError();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    if (launched[r] != TSR_OK) {
      return Fail(fmt::format("rank {}: decoder_layer v2 returned {}: {}", r,
                              TsrStatusName(launched[r]), why[r]));
    }
  }
  for (int r = 0; r < 2; ++r) {
    std::vector<Image> got;
    for (size_t b = 0; b < uploaded[r].buffers.size(); ++b) {
      Image image(layouts[r].buffer_sizes[b]);
      KIT_RETURN_IF_ERROR(
          env.Download(uploaded[r].buffers[b].get(), 0, image.data(), image.size()));
      got.push_back(std::move(image));
    }
    const std::vector<reference::HostTensor> mine = HostViews(cases[r], layouts[r], got);
    int64_t where = 0;
    const double out_err = MaxError(mine[21], want[21], &where);
    if (out_err > 1e-3) {
      return Fail(fmt::format("rank {}: residual_out element {} is off by {:.3g} (relative) "
                              "from the whole layer's: the two all-reduces must sum the "
                              "ranks' o and down projections before the residual adds",
                              r, where, out_err));
    }
    for (int cache : {22, 23}) {
      const double err = MaxError(mine[cache], HeadView(want[cache], r), &where);
      if (err > 1e-3) {
        return Fail(fmt::format("rank {}: {} element {} is off by {:.3g} from the whole "
                                "layer's KV head {}",
                                r, cache == 22 ? "k_cache" : "v_cache", where, err, r));
      }
    }
  }
  return Pass("a layer split over 2 ranks equals the whole layer");
}

}  // namespace tessera::conformance
