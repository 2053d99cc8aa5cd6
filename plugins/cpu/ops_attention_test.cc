// rope, kv_store and paged_attention against naive computations written
// here: neox and interleaved with partial rotary and aliasing; kv_store
// with skipped slots and strided pools; paged attention over a ragged batch
// (a prefill over a cached prefix plus a decode) with GQA, non-trivial
// page tables, a sliding window and a logit softcap.
#include <cmath>
#include <random>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

class AttentionTest : public CpuPluginTest, public ::testing::WithParamInterface<tsr_dtype> {
 protected:
  void SetUp() override {
    CpuPluginTest::SetUp();
    Init();
  }
  double Tol() const { return GetParam() == TSR_DTYPE_F32 ? 1e-5 : 2e-2; }

  // Shuts the plugin down and inits it again with isa=`isa` (2 threads);
  // false when this CPU lacks the path.
  bool Reinit(const std::string& isa) {
    Shutdown();
    tsr_status status = InitWith({{"threads", "2"}, {"isa", isa}});
    if (status != TSR_OK) {
      EXPECT_EQ(status, TSR_ERR_UNSUPPORTED) << api_->last_error();
      return false;
    }
    EXPECT_EQ(api_->stream_create(0, &stream_), TSR_OK) << api_->last_error();
    return true;
  }

  std::vector<double> Random(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(-1, 1);
    std::vector<double> v(n);
    for (double& x : v) x = RoundTo(GetParam(), static_cast<float>(dist(rng)));
    return v;
  }
};

// Naive rope of one (T, H, D) tensor.
std::vector<double> NaiveRope(const std::vector<double>& x, const std::vector<int>& pos,
                              const std::vector<double>& inv, int64_t h, int64_t d, bool neox) {
  std::vector<double> y = x;
  const int64_t half = static_cast<int64_t>(inv.size());
  for (size_t t = 0; t < pos.size(); ++t) {
    for (int64_t head = 0; head < h; ++head) {
      const double* in = &x[(t * h + head) * d];
      double* out = &y[(t * h + head) * d];
      for (int64_t i = 0; i < half; ++i) {
        double angle = pos[t] * static_cast<double>(static_cast<float>(inv[i]));
        int64_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
        out[a] = in[a] * std::cos(angle) - in[b] * std::sin(angle);
        out[b] = in[b] * std::cos(angle) + in[a] * std::sin(angle);
      }
    }
  }
  return y;
}

TEST_P(AttentionTest, RopeNeoxAndInterleavedWithPartialRotary) {
  const tsr_dtype dt = GetParam();
  const int64_t t = 2, hq = 2, hk = 1, d = 6;
  std::vector<int> pos = {0, 3};
  std::vector<double> inv = {1.0, 0.1};  // R = 4 of D = 6
  for (tsr_rope_style style : {TSR_ROPE_NEOX, TSR_ROPE_INTERLEAVED}) {
    std::vector<double> qs = Random(t * hq * d, 1), ks = Random(t * hk * d, 2);
    DeviceTensor positions = Make(TSR_DTYPE_I32, {t}, {0, 3});
    DeviceTensor inv_freq = Make(TSR_DTYPE_F32, {2}, inv);
    DeviceTensor q = Make(dt, {t, hq, d}, qs);
    DeviceTensor k = Make(dt, {t, hk, d}, ks, {2 * d, d, 1});  // padded token stride
    DeviceTensor k_out = Zeros(dt, {t, hk, d});
    tsr_rope_params params{sizeof(params), style};
    // q_out aliases q; k_out is separate.
    ASSERT_EQ(Run(TSR_OP_ROPE, {positions, inv_freq, q, k}, {q, k_out}, &params, sizeof(params)),
              TSR_OK)
        << api_->last_error();
    const bool neox = style == TSR_ROPE_NEOX;
    ExpectNear(Read(q), NaiveRope(qs, pos, inv, hq, d, neox), Tol(), Tol());
    ExpectNear(Read(k_out), NaiveRope(ks, pos, inv, hk, d, neox), Tol(), Tol());
  }
}

TEST_P(AttentionTest, RopeRejectsTooManyRotaryDims) {
  const tsr_dtype dt = GetParam();
  DeviceTensor positions = Make(TSR_DTYPE_I32, {1}, {0});
  DeviceTensor inv_freq = Make(TSR_DTYPE_F32, {3}, {1, 1, 1});
  DeviceTensor q = Zeros(dt, {1, 1, 4});
  tsr_rope_params params{sizeof(params), TSR_ROPE_NEOX};
  EXPECT_EQ(Run(TSR_OP_ROPE, {positions, inv_freq, q, q}, {q, q}, &params, sizeof(params)),
            TSR_ERR_INVALID_ARGUMENT);
  params.style = 7;
  DeviceTensor inv1 = Make(TSR_DTYPE_F32, {1}, {1});
  EXPECT_EQ(Run(TSR_OP_ROPE, {positions, inv1, q, q}, {q, q}, &params, sizeof(params)),
            TSR_ERR_INVALID_ARGUMENT);
}

TEST_P(AttentionTest, KvStoreWritesNamedSlotsAndSkipsPadding) {
  const tsr_dtype dt = GetParam();
  DeviceTensor k = Make(dt, {3, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  DeviceTensor v = Make(dt, {3, 2, 2}, {-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12});
  DeviceTensor slots = Make(TSR_DTYPE_I32, {3}, {4, -1, 1});
  DeviceTensor kc = Zeros(dt, {5, 2, 2});
  DeviceTensor vc = Zeros(dt, {5, 2, 2}, {8, 4, 1});  // padded slot stride
  ASSERT_EQ(Run(TSR_OP_KV_STORE, {k, v, slots}, {kc, vc}), TSR_OK) << api_->last_error();
  std::vector<double> ek(20, 0.0), ev(20, 0.0);
  for (int i = 0; i < 4; ++i) {
    ek[4 * 4 + i] = 1 + i;
    ev[4 * 4 + i] = -(1 + i);
    ek[1 * 4 + i] = 9 + i;
    ev[1 * 4 + i] = -(9 + i);
  }
  ExpectNear(Read(kc), ek, 0);
  ExpectNear(Read(vc), ev, 0);
}

struct AttentionCase {
  int64_t hq = 4, hk = 2, d = 4, page_size = 2, pages_total = 8;
  float scale = 0.5f;
  int32_t window = 0;
  float softcap = 0.0f;
};

// softmax(scale * q k^T) v in f64 for every new row of a ragged batch:
// q [T, hq, d], caches [slots, hk, d], pages[b] the page ids of sequence b.
std::vector<double> NaiveAttention(const AttentionCase& c, const std::vector<double>& qs,
                                   const std::vector<double>& kcs, const std::vector<double>& vcs,
                                   const std::vector<std::vector<int>>& pages,
                                   const std::vector<int>& lens, const std::vector<int>& starts) {
  const int64_t t = starts.back();
  std::vector<double> expected(t * c.hq * c.d);
  for (size_t b = 0; b + 1 < starts.size(); ++b) {
    const int n = starts[b + 1] - starts[b];
    for (int j = 0; j < n; ++j) {
      const int row = starts[b] + j, p = lens[b] - n + j;
      for (int64_t h = 0; h < c.hq; ++h) {
        const int64_t kvh = h / (c.hq / c.hk);
        std::vector<double> scores;
        std::vector<int64_t> used;
        for (int pos = 0; pos <= p; ++pos) {
          if (c.window > 0 && pos <= p - c.window) continue;
          int64_t slot = pages[b][pos / c.page_size] * c.page_size + pos % c.page_size;
          double s = 0;
          for (int64_t i = 0; i < c.d; ++i) {
            s += qs[(row * c.hq + h) * c.d + i] * kcs[(slot * c.hk + kvh) * c.d + i];
          }
          s *= c.scale;
          if (c.softcap > 0) s = c.softcap * std::tanh(s / c.softcap);
          scores.push_back(s);
          used.push_back(slot);
        }
        double m = *std::max_element(scores.begin(), scores.end()), sum = 0;
        for (double& s : scores) sum += (s = std::exp(s - m));
        for (int64_t i = 0; i < c.d; ++i) {
          double acc = 0;
          for (size_t u = 0; u < used.size(); ++u) {
            acc += scores[u] / sum * vcs[(used[u] * c.hk + kvh) * c.d + i];
          }
          expected[(row * c.hq + h) * c.d + i] = acc;
        }
      }
    }
  }
  return expected;
}

TEST_P(AttentionTest, PagedAttentionRaggedBatchMatchesNaive) {
  const tsr_dtype dt = GetParam();
  for (int variant = 0; variant < 3; ++variant) {
    AttentionCase c;
    if (variant == 1) c.window = 2;
    if (variant == 2) c.softcap = 0.8f;
    SCOPED_TRACE("variant " + std::to_string(variant));
    const int64_t slots = c.pages_total * c.page_size;
    // Sequence 0: prefill of 3 new tokens over a cached prefix of 2 (L = 5),
    // pages {5, 2, 7}. Sequence 1: decode of 1 token at L = 4, pages {0, 3}.
    const std::vector<std::vector<int>> pages = {{5, 2, 7}, {0, 3, 0}};
    const std::vector<int> lens = {5, 4}, starts = {0, 3, 4};
    const int64_t t = 4;
    std::vector<double> qs = Random(t * c.hq * c.d, 10 + variant);
    std::vector<double> kcs = Random(slots * c.hk * c.d, 20), vcs = Random(slots * c.hk * c.d, 30);
    DeviceTensor q = Make(dt, {t, c.hq, c.d}, qs);
    DeviceTensor kc = Make(dt, {slots, c.hk, c.d}, kcs);
    DeviceTensor vc = Make(dt, {slots, c.hk, c.d}, vcs, {c.hk * c.d * 2, c.d, 1});
    DeviceTensor table = Make(TSR_DTYPE_I32, {2, 3}, {5, 2, 7, 0, 3, 0});
    DeviceTensor seq_lens = Make(TSR_DTYPE_I32, {2}, {5, 4});
    DeviceTensor query_start = Make(TSR_DTYPE_I32, {3}, {0, 3, 4});
    DeviceTensor o = Zeros(dt, {t, c.hq, c.d});
    tsr_paged_attention_params params{sizeof(params), c.scale, static_cast<int32_t>(c.page_size),
                                      c.window, c.softcap};
    ASSERT_EQ(Run(TSR_OP_PAGED_ATTENTION, {q, kc, vc, table, seq_lens, query_start},
                  {o}, &params, sizeof(params)),
              TSR_OK)
        << api_->last_error();
    ExpectNear(Read(o), NaiveAttention(c, qs, kcs, vcs, pages, lens, starts), Tol(), Tol());
  }
}

// Long contexts through the tiled kernels on every path this CPU has: many
// query tiles with partial key blocks (the K/V blocks converted once and
// shared by a sequence's tiles), a decode whose keys are split across
// threads and merged (flash-decoding), split prefill tiles, sliding windows
// that start mid-block (in a decode and in shared blocks), a softcap, and
// d = 80 (one full and one partial 64-column slice).
TEST_P(AttentionTest, PagedAttentionLongContextsOnEveryPath) {
  const tsr_dtype dt = GetParam();
  struct LongCase {
    const char* name;
    std::vector<int> lens, starts;
    int32_t window;
    float softcap;
  };
  // A decode batch of `b` sequences (lengths 33, 46, ..., over several
  // pages): one tile per sequence, enough for workers to take them four at
  // a time and prefetch their next one.
  auto DecodeBatch = [](int b) {
    LongCase lc{"decode batch, tiles in chunks", {}, {0}, 0, 0.0f};
    for (int i = 0; i < b; ++i) {
      lc.lens.push_back(33 + 13 * i);
      lc.starts.push_back(i + 1);
    }
    return lc;
  };
  const std::vector<LongCase> cases = {
      {"prefill tiles + decode", {100, 600}, {0, 70, 71}, 0, 0.0f},
      {"split decode", {1100}, {0, 1}, 0, 0.0f},
      {"split decode, window", {1100}, {0, 1}, 700, 0.0f},
      {"split prefill tiles, softcap", {700}, {0, 20}, 0, 5.0f},
      // Blocks shared by the tiles of a prefill, starting where the window
      // of its first row does (mid-block), next to a sequence that shares
      // none (one tile).
      {"shared blocks, window", {900, 40}, {0, 300, 305}, 200, 0.0f},
      DecodeBatch(40),
  };
  for (const char* isa : {"scalar", "avx2", "avx512", "avx512bf16"}) {
    if (!Reinit(isa)) continue;
    for (const LongCase& lc : cases) {
      SCOPED_TRACE(std::string(isa) + ": " + lc.name);
      AttentionCase c;
      c.hq = 4, c.hk = 1, c.d = 80, c.page_size = 16, c.scale = 0.12f;
      c.window = lc.window, c.softcap = lc.softcap;
      const int b_count = static_cast<int>(lc.lens.size());
      const int max_pages = 1100 / 16 + 1;
      c.pages_total = b_count * max_pages;
      const int64_t slots = c.pages_total * c.page_size, t = lc.starts.back();
      // Sequence b owns pages b, b + B, b + 2B, ... in reverse order.
      std::vector<std::vector<int>> pages(b_count);
      std::vector<double> table_values;
      for (int b = 0; b < b_count; ++b) {
        for (int p = 0; p < max_pages; ++p) pages[b].push_back((max_pages - 1 - p) * b_count + b);
        table_values.insert(table_values.end(), pages[b].begin(), pages[b].end());
      }
      std::vector<double> qs = Random(t * c.hq * c.d, 40);
      std::vector<double> kcs = Random(slots * c.hk * c.d, 41);
      std::vector<double> vcs = Random(slots * c.hk * c.d, 42);
      std::vector<double> lens(lc.lens.begin(), lc.lens.end());
      std::vector<double> starts(lc.starts.begin(), lc.starts.end());
      DeviceTensor q = Make(dt, {t, c.hq, c.d}, qs);
      DeviceTensor kc = Make(dt, {slots, c.hk, c.d}, kcs);
      DeviceTensor vc = Make(dt, {slots, c.hk, c.d}, vcs);
      DeviceTensor table = Make(TSR_DTYPE_I32, {b_count, max_pages}, table_values);
      DeviceTensor seq_lens = Make(TSR_DTYPE_I32, {b_count}, lens);
      DeviceTensor query_start = Make(TSR_DTYPE_I32, {b_count + 1}, starts);
      DeviceTensor o = Zeros(dt, {t, c.hq, c.d});
      tsr_paged_attention_params params{sizeof(params), c.scale, 16, c.window, c.softcap};
      ASSERT_EQ(Run(TSR_OP_PAGED_ATTENTION, {q, kc, vc, table, seq_lens, query_start}, {o},
                    &params, sizeof(params)),
                TSR_OK)
          << api_->last_error();
      ExpectNear(Read(o), NaiveAttention(c, qs, kcs, vcs, pages, lc.lens, lc.starts), Tol(),
                 Tol());
    }
  }
}

TEST_P(AttentionTest, PagedAttentionBadPageIsStickyError) {
  const tsr_dtype dt = GetParam();
  DeviceTensor q = Zeros(dt, {1, 2, 4});
  DeviceTensor kc = Zeros(dt, {4, 1, 4});
  DeviceTensor table = Make(TSR_DTYPE_I32, {1, 2}, {0, 9});
  DeviceTensor seq_lens = Make(TSR_DTYPE_I32, {1}, {3});
  DeviceTensor query_start = Make(TSR_DTYPE_I32, {2}, {0, 1});
  DeviceTensor o = Zeros(dt, {1, 2, 4});
  tsr_paged_attention_params params{sizeof(params), 0.5f, 2, 0, 0.0f};
  EXPECT_EQ(Run(TSR_OP_PAGED_ATTENTION, {q, kc, kc, table, seq_lens, query_start}, {o}, &params,
                sizeof(params)),
            TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), ::testing::HasSubstr("block_table[0][1] = 9"));
}

TEST_P(AttentionTest, PagedAttentionRejectsBadHeadsAndParams) {
  const tsr_dtype dt = GetParam();
  DeviceTensor q = Zeros(dt, {1, 3, 4});
  DeviceTensor kc = Zeros(dt, {4, 2, 4});
  DeviceTensor table = Make(TSR_DTYPE_I32, {1, 2}, {0, 1});
  DeviceTensor seq_lens = Make(TSR_DTYPE_I32, {1}, {1});
  DeviceTensor query_start = Make(TSR_DTYPE_I32, {2}, {0, 1});
  DeviceTensor o = Zeros(dt, {1, 3, 4});
  tsr_paged_attention_params params{sizeof(params), 0.5f, 2, 0, 0.0f};
  EXPECT_EQ(Run(TSR_OP_PAGED_ATTENTION, {q, kc, kc, table, seq_lens, query_start}, {o}, &params,
                sizeof(params)),
            TSR_ERR_INVALID_ARGUMENT);  // 3 query heads over 2 KV heads
  DeviceTensor q2 = Zeros(dt, {1, 2, 4});
  DeviceTensor o2 = Zeros(dt, {1, 2, 4});
  params.page_size = 0;
  EXPECT_EQ(Run(TSR_OP_PAGED_ATTENTION, {q2, kc, kc, table, seq_lens, query_start}, {o2}, &params,
                sizeof(params)),
            TSR_ERR_INVALID_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AttentionTest, ::testing::Values(TSR_DTYPE_F32, TSR_DTYPE_BF16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace tessera::cpu::testing
