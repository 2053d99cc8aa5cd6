// linear on every kernel path (cpu_isa.h) this machine supports, compared
// with the scalar path on odd shapes: T = 1, 3, 6, 9, 17 (register-tile tails
// of the 4x4 and 8x2 tiles),
// K not a multiple of 8/16/32 (masked and scalar K tails), N odd and past
// one 64-row work item, bias, and strided views at byte offsets (x and y
// column-major, w rows padded). The scalar path itself is checked against
// f64 math; prefill shapes (32+ rows per block) cover the packed-panel
// GEMMs (avx512bf16's bf16 pairs; the f32 one of avx512, avx2 and the
// scalar path's SSE2) and their tails. Also: the path is chosen by the isa
// option / TESSERA_CPU_ISA, reported in the device name, and an unknown
// path fails init.
#include <cmath>
#include <cstdlib>
#include <random>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

struct LinearCase {
  tsr_dtype a, w;
  int64_t t, k, n;
  bool bias, strided;
};

class LinearIsaTest : public CpuPluginTest {
 protected:
  // Inits with isa=`isa`, runs `c` on seeded data, reads y, shuts down.
  // Returns false (and leaves `y` empty) when init refuses the path.
  // `bf16_gemm`: the option of that name, or empty for its default.
  bool RunOnce(const std::string& isa, const LinearCase& c, std::vector<double>* y,
               std::vector<double>* expected = nullptr, const std::string& bf16_gemm = "") {
    y->clear();
    std::vector<std::pair<std::string, std::string>> options = {{"threads", "2"}, {"isa", isa}};
    if (!bf16_gemm.empty()) options.push_back({"bf16_gemm", bf16_gemm});
    tsr_status status = InitWith(options);
    if (status != TSR_OK) {
      EXPECT_EQ(status, TSR_ERR_UNSUPPORTED) << api_->last_error();
      return false;
    }
    EXPECT_EQ(api_->stream_create(0, &stream_), TSR_OK) << api_->last_error();
    std::mt19937 rng(static_cast<uint32_t>(c.t * 131 + c.k * 7 + c.n));
    std::uniform_real_distribution<double> dist(-1, 1);
    std::vector<double> xs(c.t * c.k), ws(c.n * c.k), bs(c.n);
    for (double& v : xs) v = RoundTo(c.a, static_cast<float>(dist(rng)));
    for (double& v : ws) v = RoundTo(c.w, static_cast<float>(dist(rng)));
    for (double& v : bs) v = RoundTo(c.a, static_cast<float>(dist(rng)));
    const uint64_t off = 72;  // a byte offset that is not 64-aligned
    DeviceTensor x =
        c.strided ? Make(c.a, {c.t, c.k}, xs, {1, c.t}, off) : Make(c.a, {c.t, c.k}, xs);
    DeviceTensor w =
        c.strided ? Make(c.w, {c.n, c.k}, ws, {c.k + 5, 1}, off) : Make(c.w, {c.n, c.k}, ws);
    DeviceTensor out = c.strided ? Zeros(c.a, {c.t, c.n}, {1, c.t + 1}) : Zeros(c.a, {c.t, c.n});
    std::vector<DeviceTensor> in = {x, w};
    if (c.bias) in.push_back(Make(c.a, {c.n}, bs, {1}, off));
    EXPECT_EQ(Run(TSR_OP_LINEAR, in, {out}), TSR_OK) << api_->last_error();
    *y = Read(out);
    if (expected != nullptr) {
      expected->assign(c.t * c.n, 0.0);
      for (int64_t i = 0; i < c.t; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          double s = c.bias ? bs[j] : 0.0;
          for (int64_t q = 0; q < c.k; ++q) s += xs[i * c.k + q] * ws[j * c.k + q];
          (*expected)[i * c.n + j] = s;
        }
      }
    }
    Shutdown();
    return true;
  }

  // Runs `c` on scalar (checked against f64) and on every other supported
  // path (checked against scalar); returns how many other paths ran.
  int CheckAllPaths(const LinearCase& c) {
    SCOPED_TRACE(::testing::Message()
                 << DTypeName(c.a) << " x " << DTypeName(c.w) << " T=" << c.t << " K=" << c.k
                 << " N=" << c.n << " bias=" << c.bias << " strided=" << c.strided);
    std::vector<double> ref, expected;
    EXPECT_TRUE(RunOnce("scalar", c, &ref, &expected));
    const bool f32 = c.a == TSR_DTYPE_F32;
    const double k_scale = std::sqrt(static_cast<double>(c.k) + 1.0);
    ExpectNear(ref, expected, (f32 ? 1e-5 : 1e-3) * k_scale, f32 ? 1e-5 : 1e-2);
    int ran = 0;
    // avx512bf16 with each of its prefill GEMMs forced (bf16_gemm_choice.h)
    // as well as with the one this chip picks.
    const std::pair<const char*, const char*> paths[] = {{"avx2", ""},
                                                         {"avx512", ""},
                                                         {"avx512bf16", ""},
                                                         {"avx512bf16", "dpbf16"},
                                                         {"avx512bf16", "f32"}};
    for (auto [isa, bf16_gemm] : paths) {
      SCOPED_TRACE(::testing::Message() << isa << " bf16_gemm=" << bf16_gemm);
      std::vector<double> y;
      if (!RunOnce(isa, c, &y, nullptr, bf16_gemm)) continue;
      ++ran;
      // Sums in another order, rounded once more to bf16 for bf16 outputs.
      ExpectNear(y, ref, (f32 ? 1e-5 : 1e-3) * k_scale, f32 ? 1e-5 : 1.6e-2);
    }
    return ran;
  }
};

TEST_F(LinearIsaTest, EveryPathMatchesScalarOnOddShapes) {
  const std::pair<tsr_dtype, tsr_dtype> pairs[] = {{TSR_DTYPE_BF16, TSR_DTYPE_BF16},
                                                   {TSR_DTYPE_BF16, TSR_DTYPE_F16},
                                                   {TSR_DTYPE_F32, TSR_DTYPE_F32},
                                                   {TSR_DTYPE_F32, TSR_DTYPE_F16}};
  int ran = 0;
  for (auto [a, w] : pairs) {
    for (int64_t t : {1, 3, 6, 9, 17}) {
      ran += CheckAllPaths({a, w, t, 100, 67, true, false});  // K % 32 = 4, two N items
      ran += CheckAllPaths({a, w, t, 37, 5, false, true});    // strided, offset views
      ran += CheckAllPaths({a, w, t, 1, 3, true, true});      // K = 1
    }
    ran += CheckAllPaths({a, w, 2, 0, 3, true, false});  // K = 0: y = bias
  }
  if (ran == 0) GTEST_SKIP() << "this machine supports only the scalar path";
}

TEST_F(LinearIsaTest, ManyRowBlocksPrefillShape) {
  // 300 rows of K = 1031 cross the ~1 MiB row-block boundary on every path.
  CheckAllPaths({TSR_DTYPE_BF16, TSR_DTYPE_BF16, 300, 1031, 131, true, false});
  // Prefill-sized blocks (the avx512bf16 packed-panel GEMM): rows past
  // one 96-row chunk and not a multiple of the 6-row tile, K past one
  // 256-input slice with an even and an odd tail, N with a partial
  // 64-column panel, strided views (x packed, w rows padded and unaligned).
  CheckAllPaths({TSR_DTYPE_BF16, TSR_DTYPE_BF16, 200, 600, 200, true, false});
  CheckAllPaths({TSR_DTYPE_BF16, TSR_DTYPE_BF16, 103, 517, 70, false, true});
  CheckAllPaths({TSR_DTYPE_BF16, TSR_DTYPE_BF16, 256, 32, 64, false, false});
  CheckAllPaths({TSR_DTYPE_F32, TSR_DTYPE_F32, 300, 1031, 70, false, false});
  // The f32 packed-panel GEMM of the avx512 and avx2 paths (bf16 x on
  // those paths is widened to f32): rows from its 32-row threshold up, not
  // multiples of the 6-row tile; K past one 128-input slice with a tail
  // that is not a multiple of 8 or 16; N with partial panels and a partial
  // 16-column tile; every weight type; strided views.
  for (auto [a, w] : {std::pair{TSR_DTYPE_BF16, TSR_DTYPE_BF16}, std::pair{TSR_DTYPE_BF16, TSR_DTYPE_F16},
                      std::pair{TSR_DTYPE_F32, TSR_DTYPE_F32}, std::pair{TSR_DTYPE_F32, TSR_DTYPE_F16}}) {
    CheckAllPaths({a, w, 32, 131, 77, true, false});
    CheckAllPaths({a, w, 97, 300, 130, false, true});
    CheckAllPaths({a, w, 65, 8, 9, true, false});
  }
}

TEST_F(LinearIsaTest, ChosenPathIsInTheDeviceName) {
  ASSERT_EQ(InitWith({{"isa", "scalar"}}), TSR_OK) << api_->last_error();
  tsr_device_properties props{};
  props.struct_size = sizeof(props);
  ASSERT_EQ(api_->device_properties(0, &props), TSR_OK) << api_->last_error();
  EXPECT_THAT(std::string(props.name), ::testing::HasSubstr("[scalar]"));
  Shutdown();

  ::setenv("TESSERA_CPU_ISA", "scalar", 1);
  tsr_status status = InitWith({});
  ::unsetenv("TESSERA_CPU_ISA");
  ASSERT_EQ(status, TSR_OK) << api_->last_error();
  ASSERT_EQ(api_->device_properties(0, &props), TSR_OK) << api_->last_error();
  EXPECT_THAT(std::string(props.name), ::testing::HasSubstr("[scalar]"));
}

TEST_F(LinearIsaTest, Bf16GemmChoiceIsInTheDeviceName) {
  const std::pair<const char*, const char*> cases[] = {
      {"dpbf16", "[avx512bf16]"}, {"f32", "[avx512bf16, f32 prefill GEMM]"}};
  for (auto [value, expected] : cases) {
    const tsr_status status = InitWith({{"isa", "avx512bf16"}, {"bf16_gemm", value}});
    if (status == TSR_ERR_UNSUPPORTED) GTEST_SKIP() << "this CPU has no AVX512_BF16";
    ASSERT_EQ(status, TSR_OK) << api_->last_error();
    tsr_device_properties props{};
    props.struct_size = sizeof(props);
    ASSERT_EQ(api_->device_properties(0, &props), TSR_OK) << api_->last_error();
    EXPECT_THAT(std::string(props.name), ::testing::HasSubstr(expected)) << value;
    Shutdown();
  }
}

TEST_F(LinearIsaTest, Bf16GemmOptionIsChecked) {
  EXPECT_EQ(InitWith({{"bf16_gemm", "amx"}}), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), ::testing::HasSubstr("use auto, dpbf16 or f32"));
  // vdpbf16ps panels exist only on the avx512bf16 path; f32 and auto are
  // valid on every path (they change nothing where there is no bf16 kernel).
  EXPECT_EQ(InitWith({{"isa", "scalar"}, {"bf16_gemm", "dpbf16"}}), TSR_ERR_UNSUPPORTED);
  EXPECT_THAT(api_->last_error(), ::testing::HasSubstr("needs the avx512bf16 kernel path"));
  for (const char* value : {"auto", "f32"}) {
    ASSERT_EQ(InitWith({{"isa", "scalar"}, {"bf16_gemm", value}}), TSR_OK) << api_->last_error();
    Shutdown();
  }
}

TEST_F(LinearIsaTest, UnknownPathFailsInit) {
  EXPECT_EQ(InitWith({{"isa", "sse9"}}), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), ::testing::HasSubstr("scalar, avx2, avx512, avx512bf16"));
  ::setenv("TESSERA_CPU_ISA", "neon", 1);
  tsr_status status = InitWith({});
  ::unsetenv("TESSERA_CPU_ISA");
  EXPECT_EQ(status, TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), ::testing::HasSubstr("TESSERA_CPU_ISA='neon'"));
}

}  // namespace
}  // namespace tessera::cpu::testing
