// linear v2 (int8 weights, ABI 1.1) on every kernel path (cpu_isa.h) this
// machine supports, each against f64 math on the exactly dequantised
// weights: group sizes 32, K (per channel) and one no SIMD path handles
// (G = 3, the scalar block), T across the decode (int8 block) and prefill
// (dequantised panel) sides, K tails, N past one work item, bias, bf16 and
// f32 activations, strided x / y / w_scale. Also: the op is listed as
// version 2 only, and bad group sizes / scale shapes fail the launch.
// linear v3 (w8a8, ABI 1.5) runs the same cases through the plugin against
// f64 math on the contract's quantised x (the AVX-512BW kernels, which a
// VNNI machine does not pick, are called directly in
// ops_linear_w8a8_kernels_test.cc); it and decoder_layer v3 are listed for
// int8 weights only.
#include <cmath>
#include <random>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

struct W8Case {
  tsr_dtype a;
  int64_t t, k, n, group;
  bool bias, strided;
};

class LinearW8Test : public CpuPluginTest {
 protected:
  tsr_status Launch(const std::vector<DeviceTensor>& in, const DeviceTensor& out,
                    int32_t group) {
    tsr_op_signature sig{};
    sig.struct_size = sizeof(sig);
    sig.op = TSR_OP_LINEAR;
    sig.version = version_;
    std::vector<tsr_tensor> ins;
    for (const auto& t : in) {
      sig.dtypes[sig.num_args++] = t.desc.dtype;
      ins.push_back(t.desc);
    }
    sig.dtypes[sig.num_args++] = out.desc.dtype;
    tsr_kernel kernel = nullptr;
    tsr_status status = api_->resolve_op(0, &sig, &kernel);
    if (status != TSR_OK) return status;
    const tsr_linear_w8_params params{sizeof(tsr_linear_w8_params), group};
    status = api_->launch(kernel, stream_, ins.data(), ins.size(), &out.desc, 1, &params,
                          sizeof(params));
    if (status != TSR_OK) return status;
    return api_->stream_synchronize(stream_);
  }

  // Runs `c` with isa=`isa` and checks it against f64; false when the path
  // is not supported here.
  bool Check(const std::string& isa, const W8Case& c) {
    tsr_status init = InitWith({{"threads", "3"}, {"isa", isa}});
    if (init != TSR_OK) {
      EXPECT_EQ(init, TSR_ERR_UNSUPPORTED) << api_->last_error();
      return false;
    }
    initialised_ = true;
    EXPECT_EQ(api_->stream_create(0, &stream_), TSR_OK) << api_->last_error();
    std::mt19937 rng(static_cast<uint32_t>(c.t * 131 + c.k * 7 + c.n + c.group));
    std::uniform_real_distribution<double> dist(-1, 1);
    std::uniform_int_distribution<int> qdist(-127, 127);
    const int64_t groups = c.k / c.group;
    std::vector<double> xs(c.t * c.k), ws(c.n * c.k), ss(c.n * groups), bs(c.n);
    for (double& v : xs) v = RoundTo(c.a, static_cast<float>(dist(rng)));
    for (double& v : ws) v = qdist(rng);
    for (double& v : ss) v = static_cast<float>((dist(rng) + 1.5) / 127.0);
    for (double& v : bs) v = RoundTo(c.a, static_cast<float>(dist(rng)));
    const uint64_t off = 40;
    DeviceTensor x =
        c.strided ? Make(c.a, {c.t, c.k}, xs, {1, c.t}, off) : Make(c.a, {c.t, c.k}, xs);
    DeviceTensor w = c.strided ? Make(TSR_DTYPE_I8, {c.n, c.k}, ws, {c.k + 3, 1}, 5)
                               : Make(TSR_DTYPE_I8, {c.n, c.k}, ws);
    DeviceTensor s = c.strided ? Make(TSR_DTYPE_F32, {c.n, groups}, ss, {1, c.n}, off)
                               : Make(TSR_DTYPE_F32, {c.n, groups}, ss);
    DeviceTensor y = c.strided ? Zeros(c.a, {c.t, c.n}, {1, c.t + 2}) : Zeros(c.a, {c.t, c.n});
    std::vector<DeviceTensor> in = {x, w, s};
    if (c.bias) in.push_back(Make(c.a, {c.n}, bs, {1}, off));
    EXPECT_EQ(Launch(in, y, static_cast<int32_t>(c.group)), TSR_OK) << api_->last_error();
    // v3: x as the contract quantises it (q * s per block of G).
    std::vector<double> xe = xs;
    for (int64_t i = 0; version_ == 3 && i < c.t; ++i) {
      for (int64_t b0 = 0; b0 < c.k; b0 += c.group) {
        float amax = 0.0f;
        for (int64_t q = b0; q < b0 + c.group; ++q) {
          amax = std::max(amax, std::fabs(static_cast<float>(xs[i * c.k + q])));
        }
        const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        for (int64_t q = b0; q < b0 + c.group; ++q) {
          xe[i * c.k + q] = std::nearbyint(static_cast<float>(xs[i * c.k + q]) * inv) *
                            static_cast<double>(amax / 127.0f);
        }
      }
    }
    std::vector<double> expected(c.t * c.n);
    for (int64_t i = 0; i < c.t; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = c.bias ? bs[j] : 0.0;
        for (int64_t q = 0; q < c.k; ++q) {
          sum += xe[i * c.k + q] * ws[j * c.k + q] * ss[j * groups + q / c.group];
        }
        expected[i * c.n + j] = sum;
      }
    }
    const bool f32 = c.a == TSR_DTYPE_F32;
    const double k_scale = std::sqrt(static_cast<double>(c.k) + 1.0);
    ExpectNear(Read(y), expected, (f32 ? 1e-5 : 1e-3) * k_scale, f32 ? 1e-5 : 1.6e-2);
    for (DeviceTensor& t : owned_) api_->buffer_free(t.buffer);
    owned_.clear();
    api_->stream_destroy(stream_);
    stream_ = nullptr;
    EXPECT_EQ(api_->shutdown(), TSR_OK) << api_->last_error();
    initialised_ = false;
    return true;
  }

  int CheckAllPaths(const W8Case& c) {
    SCOPED_TRACE(::testing::Message()
                 << DTypeName(c.a) << " T=" << c.t << " K=" << c.k << " N=" << c.n
                 << " G=" << c.group << " bias=" << c.bias << " strided=" << c.strided);
    int ran = 0;
    for (const char* isa : {"scalar", "avx2", "avx512", "avx512bf16"}) {
      SCOPED_TRACE(isa);
      ran += Check(isa, c) ? 1 : 0;
    }
    return ran;
  }

  uint32_t version_ = 2;  // the linear version under test (2, or 3: w8a8)
};

TEST_F(LinearW8Test, EveryPathMatchesF64) {
  int ran = 0;
  for (tsr_dtype a : {TSR_DTYPE_F32, TSR_DTYPE_BF16}) {
    for (int64_t t : {1, 3, 5, 9, 17}) {  // >= 16 rows: the dequantised-panel path
      ran += CheckAllPaths({a, t, 128, 67, 32, true, false});   // groups of 32
      ran += CheckAllPaths({a, t, 100, 70, 100, false, false}); // per channel, K % 16 = 4
      ran += CheckAllPaths({a, t, 37, 5, 37, true, true});      // strided, offset views
      ran += CheckAllPaths({a, t, 99, 9, 3, true, false});      // G = 3: scalar block
    }
    ran += CheckAllPaths({a, 2, 0, 3, 1, true, false});  // K = 0: y = bias
    ran += CheckAllPaths({a, 300, 320, 131, 32, true, false});  // row blocks, prefill
  }
  EXPECT_GT(ran, 0);
}

TEST_F(LinearW8Test, W8A8EveryPathMatchesF64OnQuantisedX) {
  version_ = 3;
  int ran = 0;
  for (tsr_dtype a : {TSR_DTYPE_F32, TSR_DTYPE_BF16}) {
    for (int64_t t : {1, 3, 5, 9, 17}) {
      ran += CheckAllPaths({a, t, 128, 67, 32, true, false});    // groups of 32
      ran += CheckAllPaths({a, t, 96, 70, 96, false, false});    // per channel, K % 64 = 32
      ran += CheckAllPaths({a, t, 64, 9, 32, true, true});       // strided, offset views
      ran += CheckAllPaths({a, t, 99, 9, 3, true, false});       // G = 3: scalar block
    }
    ran += CheckAllPaths({a, 2, 0, 3, 1, true, false});          // K = 0: y = bias
    ran += CheckAllPaths({a, 300, 320, 131, 32, true, false});   // row blocks, prefill
  }
  EXPECT_GT(ran, 0);
}

TEST_F(LinearW8Test, W8A8ListedAsVersionThreeForInt8WeightsOnly) {
  Init();
  const tsr_op_signature* ops = nullptr;
  size_t count = 0;
  ASSERT_EQ(api_->list_ops(&ops, &count), TSR_OK);
  int linear_v3 = 0, layer_v3 = 0;
  for (size_t i = 0; i < count; ++i) {
    if (ops[i].version != 3) continue;
    EXPECT_EQ(ops[i].dtypes[1], TSR_DTYPE_I8);  // linear's w, decoder_layer's W class
    if (ops[i].op == TSR_OP_LINEAR) ++linear_v3;
    if (ops[i].op == TSR_OP_DECODER_LAYER) ++layer_v3;
  }
  EXPECT_EQ(linear_v3, 4);  // {f32, bf16} x {no bias, bias}
  EXPECT_EQ(layer_v3, 4);   // X {f32, bf16} x KV {f32, bf16}
  EXPECT_GE(lib_->api().manifest->abi_minor, 5u);
}

TEST_F(LinearW8Test, ListedAsVersionTwo) {
  Init();
  const tsr_op_signature* ops = nullptr;
  size_t count = 0;
  ASSERT_EQ(api_->list_ops(&ops, &count), TSR_OK);
  int v2 = 0;
  for (size_t i = 0; i < count; ++i) {
    if (ops[i].op == TSR_OP_LINEAR && ops[i].version == 2) {
      ++v2;
      EXPECT_EQ(ops[i].dtypes[1], TSR_DTYPE_I8);
      EXPECT_EQ(ops[i].dtypes[2], TSR_DTYPE_F32);
    }
    // No v1 op takes int8 (decoder_layer's W class may be I8).
    if (ops[i].version == 1 && ops[i].op < TSR_OP_FUSED_BASE) {
      for (uint32_t a = 0; a < ops[i].num_args; ++a) EXPECT_NE(ops[i].dtypes[a], TSR_DTYPE_I8);
    }
  }
  EXPECT_EQ(v2, 4);  // {f32, bf16} x {no bias, bias}
  EXPECT_GE(lib_->api().manifest->abi_minor, 1u);  // linear v2 arrived in 1.1
}

TEST_F(LinearW8Test, BadGroupOrScaleShapeFailsLaunch) {
  Init();
  DeviceTensor x = Zeros(TSR_DTYPE_F32, {2, 64});
  DeviceTensor w = Zeros(TSR_DTYPE_I8, {3, 64});
  DeviceTensor s = Zeros(TSR_DTYPE_F32, {3, 2});
  DeviceTensor y = Zeros(TSR_DTYPE_F32, {2, 3});
  EXPECT_EQ(Launch({x, w, s}, y, 32), TSR_OK) << api_->last_error();
  EXPECT_EQ(Launch({x, w, s}, y, 24), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), ::testing::HasSubstr("group_size = 24"));
  EXPECT_EQ(Launch({x, w, s}, y, 0), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Launch({x, w, s}, y, 16), TSR_ERR_INVALID_ARGUMENT);  // scale needs [3, 4]
  EXPECT_THAT(api_->last_error(), ::testing::HasSubstr("w_scale"));
}

}  // namespace
}  // namespace tessera::cpu::testing
