// GGUF checkpoints end to end (`--model-path FILE.gguf`), with files made
// here by the repo's writer (`tessera convert-gguf`) and by llama.cpp's own
// quantizer (llamacpp_runner --quantize, the prebuilt library of the pinned
// npm package):
//   - stories260k as an F32 GGUF generates its golden greedy continuations
//     (the tokenizer from the GGUF metadata reproduces the prompt ids);
//     as F16 / Q8_0 GGUFs Tessera's greedy tokens equal llama.cpp's on the
//     same file;
//   - every llama.cpp quantization (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K_M,
//     Q5_K_M, Q6_K) of a model with 256-wide rows decodes to the F32
//     weights it was made from within that format's rounding error — so
//     each block layout is read as llama.cpp wrote it — and generates;
//   - `tessera serve` on a GGUF answers a chat rendered by the file's own
//     template, exactly as the Hugging Face folder it came from;
//   - a Q4_0 file runs 4-bit (--quantization auto = int4): its blocks are
//     loaded as they are (and are what the 4-bit quantiser makes of the
//     decoded rows), and `serve` answers a chat on it;
//   - truncated and unsupported files are refused with exit 2 and a
//     message naming the problem;
//   - accuracy: for each llama.cpp quantization of stories260k (and the
//     K-quants of a Qwen3-shaped preset with 256-wide rows), the
//     teacher-forced top-1 agreement with the F32 file over greedy
//     continuations, Tessera's (--quantization auto, F32 activations as
//     llama.cpp computes) next to llama.cpp's own on the same files;
//     Tessera's must be >= llama.cpp's - 1 point. The tables are printed
//     (docs/BENCHMARKS.md quotes them).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/model_runner.h"
#include "model/quantize.h"
#include "model/runner_test_util.h"
#include "testing/fixtures.h"
#include "testing/goldens.h"
#include "testing/server_process.h"
#include "testing/subprocess.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using testing::ShellQuote;

constexpr const char* kBin = TSR_TESSERA_BIN;

testing::CommandResult Tessera(const std::string& args) {
  return testing::RunShell(std::string(kBin) + " " + args);
}

class GgufTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("tessera_gguf_e2e_" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string Path(const std::string& name) {
    return (*dir_ / name).string();
  }

  // `tessera convert-gguf` of `model_dir` as `type` (cached per name).
  static std::string Convert(const std::string& model_dir,
                             const std::string& type, const std::string& name) {
    const std::string out = Path(name);
    if (fs::exists(out)) return out;
    auto r = Tessera("convert-gguf --model-path " + ShellQuote(model_dir) +
                     " --out " + ShellQuote(out) + " --type " + type);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }

  // llama.cpp's quantizer, or "" (the test then skips, or fails under CI).
  static std::string Runner() {
#ifdef TSR_LLAMACPP_RUNNER
    return TSR_LLAMACPP_RUNNER;
#else
    return "";
#endif
  }

  static std::string Quantize(const std::string& f32, const std::string& type) {
    const std::string out = Path(fs::path(f32).stem().string() + "-" + type + ".gguf");
    if (fs::exists(out)) return out;
    auto r = testing::RunShell(ShellQuote(Runner()) + " --threads 2 --model " +
                               ShellQuote(f32) + " --quantize " + type +
                               " --out " + ShellQuote(out));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }

  // make-model's `small` Qwen3 preset (256-wide rows: real K-quant
  // super-blocks) in F32, as an F32 GGUF; "" on failure.
  static std::string SmallF32Gguf() {
    const std::string hf = Path("small");
    if (!fs::exists(hf)) {
      auto r = Tessera("make-model --preset small --arch qwen3 --dtype f32 --out " +
                       ShellQuote(hf));
      EXPECT_EQ(r.exit_code, 0) << r.err;
      if (r.exit_code != 0) return "";
    }
    return Convert(hf, "f32", "small.gguf");
  }

  static Json GenerateJson(const std::string& model, const std::string& args) {
    auto r = Tessera("generate --json --model-path " + ShellQuote(model) + " " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = Json::parse(r.out, nullptr, false);
    return j.is_object() ? j : Json::object();
  }

  inline static fs::path* dir_ = nullptr;
};

#define REQUIRE_LLAMACPP()                                                 \
  do {                                                                     \
    if (Runner().empty()) {                                                \
      if (testing::RunningUnderCi()) {                                     \
        FAIL() << "llamacpp_runner was not built (needs node_modules from " \
                  "scripts/setup.sh)";                                     \
      }                                                                    \
      GTEST_SKIP() << "llamacpp_runner not built";                         \
    }                                                                      \
  } while (0)

TEST_F(GgufTest, StoriesF32GgufGeneratesTheGolden) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  const std::string gguf = Convert(dir, "f32", "stories-f32.gguf");
  for (const Json& c : testing::ReadJsonLines<Json>(golden)) {
    SCOPED_TRACE(c["prompt"].get<std::string>());
    const Json out = GenerateJson(gguf, "--prompt " + ShellQuote(c["prompt"]) +
                                            " --temperature 0 --max-new-tokens 64");
    ASSERT_TRUE(out.contains("output_ids"));
    EXPECT_EQ(out["prompt_ids"], c["prompt_ids"]);
    const size_t stable = c["stable_prefix"].get<size_t>();
    for (size_t i = 0; i < stable && i < out["output_ids"].size(); ++i) {
      EXPECT_EQ(out["output_ids"][i], c["greedy_output_ids"][i]) << "step " << i;
    }
  }
}

TEST_F(GgufTest, StoriesGreedyAgreesWithLlamaCppOnTheSameFile) {
  REQUIRE_LLAMACPP();
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  const Json c = testing::ReadJsonLines<Json>(golden).front();
  std::string ids;
  for (const Json& id : c["prompt_ids"]) ids += (ids.empty() ? "" : ",") + id.dump();
  for (const std::string type : {"f32", "f16", "q8_0"}) {
    SCOPED_TRACE(type);
    const std::string gguf = Convert(dir, type, "stories-" + type + ".gguf");
    auto r = testing::RunShell(ShellQuote(Runner()) + " --threads 1 --model " +
                               ShellQuote(gguf) + " --prompt-ids " + ids +
                               " --decode-steps 24");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json peer = Json::parse(r.out);
    // Default flags, as a user runs it (Q8_0 loads as int8 weights, run
    // w8a8 as llama.cpp runs them).
    const Json out = GenerateJson(
        gguf, "--prompt " + ShellQuote(c["prompt"]) +
                  " --temperature 0 --ignore-eos --max-new-tokens 25");
    ASSERT_TRUE(out.contains("output_ids"));
    EXPECT_EQ(out["prompt_ids"], c["prompt_ids"]);
    // The runner's first greedy token comes from the prefill.
    const auto ours = out["output_ids"].get<std::vector<int>>();
    const auto theirs = peer["output_ids"].get<std::vector<int>>();
    const size_t n = std::min(ours.size(), theirs.size());
    ASSERT_GE(n, 20u);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(ours[i], theirs[i]) << "step " << i;
  }
}

TEST_F(GgufTest, LlamaCppQuantizationsDecodeToTheirWeights) {
  REQUIRE_LLAMACPP();
  const std::string f32 = SmallF32Gguf();
  ASSERT_FALSE(f32.empty());
  auto reference = model::Checkpoint::Open(f32);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  // Largest relative RMS error per stored type (random normal weights; a
  // misread layout is off by ~100%).
  const std::map<std::string, double> kMaxError = {
      {"q8_0", 0.01}, {"q6_k", 0.03}, {"q5_0", 0.06}, {"q5_1", 0.06},
      {"q5_k", 0.06}, {"q4_0", 0.12}, {"q4_1", 0.12}, {"q4_k", 0.12}};
  std::set<std::string> seen;
  for (const std::string type : {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                                 "q4_k_m", "q5_k_m", "q6_k"}) {
    SCOPED_TRACE(type);
    const std::string path = Quantize(f32, type);
    auto quantized = model::Checkpoint::Open(path);
    ASSERT_TRUE(quantized.ok()) << quantized.status().ToString();
    ASSERT_TRUE((*quantized)->Validate().ok());
    for (const model::TensorRef& t : (*reference)->tensors()) {
      if (t.shape().size() != 2) continue;
      auto q = (*quantized)->Get(t.name());
      ASSERT_TRUE(q.ok());
      const int64_t rows = t.shape()[0], cols = t.shape()[1];
      std::vector<float> want(size_t(rows * cols)), got(want.size());
      t.ReadRows(0, rows, 0, cols, TSR_DTYPE_F32, want.data());
      q->ReadRows(0, rows, 0, cols, TSR_DTYPE_F32, got.data());
      double err = 0, norm = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        err += (got[i] - want[i]) * double(got[i] - want[i]);
        norm += double(want[i]) * want[i];
      }
      const double rel = std::sqrt(err / norm);
      const std::string stored = q->StorageName();
      seen.insert(stored);
      const double limit = kMaxError.count(stored) ? kMaxError.at(stored) : 1e-3;
      EXPECT_LT(rel, limit) << t.name() << " stored as " << stored;
    }
    const Json out = GenerateJson(path, "--prompt hello --temperature 0 --max-new-tokens 4");
    EXPECT_TRUE(out.contains("output_ids")) << path;
  }
  for (const char* type : {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k",
                           "q5_k", "q6_k"}) {
    EXPECT_TRUE(seen.count(type)) << "no tensor was stored as " << type;
  }
}

// Top-1 id after every position of `tokens`, fed in one prefill.
// --quantization int4 on a llama.cpp Q4_0 file: the 4-bit weights are the
// file's blocks as they are (nibbles and f16 scales split, nothing decoded),
// and the same bytes the quantiser makes from the decoded weights (Q4_0's
// numbers come back exactly), so a Q4_0 file is not re-rounded either way.
TEST_F(GgufTest, Q4_0WeightsLoadAsTheFilesBlocks) {
  REQUIRE_LLAMACPP();
  const std::string f32 = SmallF32Gguf();
  ASSERT_FALSE(f32.empty());
  auto checkpoint = model::Checkpoint::Open(Quantize(f32, "q4_0"));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  auto runtime = model::testing::CreateRuntime();
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  model::ModelRunnerOptions options;
  options.kv_capacity_tokens = 64;
  options.show_progress = false;
  options.quantization = model::WeightQuantization::kInt4;
  options.int8_activations = true;
  auto runner = model::ModelRunner::Create(**runtime, **checkpoint, options);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  const model::DeviceWeight& o = (*runner)->weights().layer(0).o_proj;
  ASSERT_TRUE(o.packed4);
  auto ref = (*checkpoint)->Get("model.layers.0.self_attn.o_proj.weight");
  ASSERT_TRUE(ref.ok());
  ASSERT_EQ(ref->StorageName(), "q4_0");
  const int64_t n = o.shape[0], k = o.shape[1], groups = k / 32;
  std::vector<uint8_t> nibbles(size_t(n * k / 2));
  std::vector<uint16_t> scales(size_t(n * groups));
  ASSERT_TRUE(o.buffer->CopyToHost(nibbles.data(), 0, nibbles.size()).ok());
  ASSERT_TRUE(o.scale->CopyToHost(scales.data(), 0, scales.size() * 2).ok());
  const std::byte* blocks = ref->data();
  for (int64_t b = 0; b < n * groups; ++b) {
    ASSERT_EQ(std::memcmp(&scales[b], blocks + b * 18, 2), 0) << "block " << b;
    ASSERT_EQ(std::memcmp(&nibbles[b * 16], blocks + b * 18 + 2, 16), 0) << "block " << b;
  }
  std::vector<float> decoded(size_t(n * k));
  ref->ReadRows(0, n, 0, k, TSR_DTYPE_F32, decoded.data());
  std::vector<uint8_t> again(nibbles.size());
  std::vector<uint16_t> again_scales(scales.size());
  model::QuantizeInt4Rows(decoded.data(), n, k, again.data(), again_scales.data());
  EXPECT_EQ(again, nibbles);
  EXPECT_EQ(again_scales, scales);
}

// A Q6_K output tensor (llama.cpp's choice for the head of its Q4_0 and
// K-quant files) loads as linear v5's blocks — each 210-byte block split
// into its 208 bytes and its d, byte for byte — and its logits match the
// head re-quantised to int8 (the path before v5) within quantisation noise.
TEST_F(GgufTest, Q6KHeadLoadsAsTheFilesBlocksAndRunsAsW6A8) {
  REQUIRE_LLAMACPP();
  const std::string f32 = SmallF32Gguf();
  ASSERT_FALSE(f32.empty());
  auto checkpoint = model::Checkpoint::Open(Quantize(f32, "q4_0"));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  auto runtime = model::testing::CreateRuntime();
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  auto make = [&](bool q6_k_head) {
    model::ModelRunnerOptions options;
    options.kv_capacity_tokens = 64;
    options.show_progress = false;
    options.quantization = model::WeightQuantization::kInt4;
    options.int8_activations = true;
    options.q6_k_head = q6_k_head;
    auto runner = model::ModelRunner::Create(**runtime, **checkpoint, options);
    EXPECT_TRUE(runner.ok()) << runner.status().ToString();
    return runner.ok() ? std::move(runner).value() : nullptr;
  };
  auto native = make(true), int8 = make(false);
  ASSERT_NE(native, nullptr);
  ASSERT_NE(int8, nullptr);
  const model::DeviceWeight& head = native->weights().lm_head();
  ASSERT_TRUE(head.q6_k);
  EXPECT_FALSE(int8->weights().lm_head().q6_k);
  auto ref = (*checkpoint)->Get(native->weights().tied() ? "model.embed_tokens.weight"
                                                         : "lm_head.weight");
  if (!ref.ok()) ref = (*checkpoint)->Get("model.embed_tokens.weight");
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  ASSERT_EQ(ref->StorageName(), "q6_k");
  const int64_t n = head.shape[0], supers = head.shape[1] / 256;
  std::vector<uint8_t> body(size_t(n * supers * 208));
  std::vector<uint16_t> d(size_t(n * supers));
  ASSERT_TRUE(head.buffer->CopyToHost(body.data(), 0, body.size()).ok());
  ASSERT_TRUE(head.scale->CopyToHost(d.data(), 0, d.size() * 2).ok());
  for (int64_t b = 0; b < n * supers; ++b) {
    ASSERT_EQ(std::memcmp(&body[b * 208], ref->data() + b * 210, 208), 0) << "block " << b;
    ASSERT_EQ(std::memcmp(&d[b], ref->data() + b * 210 + 208, 2), 0) << "block " << b;
  }
  EXPECT_LT(native->weights().device_bytes(), int8->weights().device_bytes());
  // Same tokens through both heads: the logits agree to int8 noise.
  const std::vector<int32_t> tokens = {1, 17, 230, 5, 99, 1000, 42, 7};
  auto logits_of = [&](model::ModelRunner& runner) {
    std::vector<int32_t> pages;
    EXPECT_TRUE(runner.kv_pool().EnsureCapacity(pages, tokens.size()).ok());
    auto logits = runner.Forward(model::Batch{{{tokens, 0, pages}}, /*all_logits=*/true});
    EXPECT_TRUE(logits.ok()) << logits.status().ToString();
    std::vector<std::vector<float>> rows;
    for (int64_t r = 0; logits.ok() && r < logits->rows; ++r) {
      auto row = logits->Row(r);
      rows.emplace_back(row.begin(), row.end());
    }
    EXPECT_TRUE(runner.kv_pool().Release(pages).ok());
    return rows;
  };
  const auto a = logits_of(*native), b = logits_of(*int8);
  ASSERT_EQ(a.size(), tokens.size());
  ASSERT_EQ(b.size(), a.size());
  for (size_t r = 0; r < a.size(); ++r) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < a[r].size(); ++i) {
      diff += (a[r][i] - b[r][i]) * double(a[r][i] - b[r][i]);
      norm += double(b[r][i]) * b[r][i];
    }
    EXPECT_LT(std::sqrt(diff / norm), 0.02) << "position " << r;
  }
}

std::vector<int32_t> TesseraArgmax(model::ModelRunner& runner,
                                   const std::vector<int32_t>& tokens) {
  std::vector<int32_t> pages;
  EXPECT_TRUE(runner.kv_pool().EnsureCapacity(pages, tokens.size()).ok());
  auto logits = runner.Forward(model::Batch{{{tokens, 0, pages}}, /*all_logits=*/true});
  EXPECT_TRUE(logits.ok()) << logits.status().ToString();
  std::vector<int32_t> ids;
  for (int64_t r = 0; logits.ok() && r < logits->rows; ++r) {
    ids.push_back(model::testing::ArgmaxRow(logits->Row(r)));
  }
  EXPECT_TRUE(runner.kv_pool().Release(pages).ok());
  return ids;
}

double Agreement(const std::vector<std::vector<int32_t>>& a,
                 const std::vector<std::vector<int32_t>>& b) {
  int64_t same = 0, total = 0;
  for (size_t s = 0; s < a.size(); ++s) {
    EXPECT_EQ(a[s].size(), b[s].size());
    for (size_t i = 0; i < a[s].size() && i < b[s].size(); ++i) {
      same += a[s][i] == b[s][i] ? 1 : 0;
      ++total;
    }
  }
  return total > 0 ? double(same) / double(total) : 0.0;
}

// Prints and checks the agreement table for the llama.cpp quantizations
// `types` of the F32 GGUF `f32`, teacher-forced over `sequences`.
void CheckAccuracy(const std::string& f32, const std::vector<std::string>& types,
                   const std::vector<std::vector<int32_t>>& sequences,
                   const std::function<std::string(const std::string&)>& quantize,
                   const std::string& runner_binary) {
  auto runtime = model::testing::CreateRuntime();
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  // --quantization auto (as `serve` runs the file: int4 — w4a8 — for a
  // file whose decoder weights are all Q4_0, w8a8_int8 for another
  // quantized file, activations quantised per 32 as llama.cpp's Q8_0 dot
  // does) with F32 activations, as llama.cpp computes.
  auto tessera = [&](const std::string& path, std::string* stored_types) {
    auto checkpoint = model::Checkpoint::Open(path);
    EXPECT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
    std::set<std::string> stored;
    for (const model::TensorRef& t : (*checkpoint)->tensors()) {
      if (t.shape().size() == 2) stored.insert(t.StorageName());
    }
    for (const std::string& t : stored) {
      *stored_types += (stored_types->empty() ? "" : "+") + t;
    }
    model::ModelRunnerOptions options;
    options.kv_capacity_tokens = 256;
    options.max_batch_tokens = 256;
    options.show_progress = false;
    options.activation_dtype = TSR_DTYPE_F32;
    const std::vector<std::string> quantized = (*checkpoint)->QuantizedLinearTypes();
    if (!quantized.empty()) {
      options.quantization = quantized == std::vector<std::string>{"q4_0"}
                                 ? model::WeightQuantization::kInt4
                                 : model::WeightQuantization::kInt8;
      options.int8_activations = true;  // auto's w8a8_int8 / int4, as llama.cpp
    }
    auto runner = model::ModelRunner::Create(**runtime, **checkpoint, options);
    EXPECT_TRUE(runner.ok()) << runner.status().ToString();
    std::vector<std::vector<int32_t>> out;
    for (const auto& s : sequences) out.push_back(TesseraArgmax(**runner, s));
    return out;
  };
  auto llamacpp = [&](const std::string& path) {
    std::vector<std::vector<int32_t>> out;
    for (const auto& s : sequences) {
      std::string ids;
      for (int32_t id : s) ids += (ids.empty() ? "" : ",") + std::to_string(id);
      auto r = testing::RunShell(ShellQuote(runner_binary) + " --threads 2 --model " +
                                 ShellQuote(path) + " --teacher-forced " + ids);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      out.push_back(Json::parse(r.out)["argmax"].get<std::vector<int32_t>>());
    }
    return out;
  };
  std::string f32_types;
  const auto ours_f32 = tessera(f32, &f32_types);
  const auto theirs_f32 = llamacpp(f32);
  std::printf("%s\n%-8s %-24s %9s %9s\n", f32.c_str(), "format", "stored types",
              "tessera", "llama.cpp");
  for (const std::string& type : types) {
    SCOPED_TRACE(type);
    const std::string path = quantize(type);
    std::string stored;
    const double ours = Agreement(ours_f32, tessera(path, &stored));
    const double theirs = Agreement(theirs_f32, llamacpp(path));
    std::printf("%-8s %-24s %8.1f%% %8.1f%%\n", type.c_str(), stored.c_str(),
                100 * ours, 100 * theirs);
    EXPECT_GE(ours, theirs - 0.01) << stored;
  }
}

TEST_F(GgufTest, AccuracyOfEachQuantizationNextToLlamaCpp) {
  REQUIRE_LLAMACPP();
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  std::vector<std::vector<int32_t>> sequences;
  for (const Json& c : testing::ReadJsonLines<Json>(golden)) {
    auto ids = c["prompt_ids"].get<std::vector<int32_t>>();
    for (const Json& id : c["greedy_output_ids"]) ids.push_back(id.get<int32_t>());
    sequences.push_back(std::move(ids));
  }
  // stories260k's 64-wide rows are not 256-element super-blocks: llama.cpp
  // substitutes other types for the K-quants (the table names them).
  const std::string f32 = Convert(dir, "f32", "stories-f32.gguf");
  CheckAccuracy(f32, {"q8_0", "q6_k", "q5_k_m", "q5_0", "q5_1", "q4_k_m", "q4_0", "q4_1"},
                sequences, [&](const std::string& t) { return Quantize(f32, t); },
                Runner());
}

TEST_F(GgufTest, KQuantAccuracyOnAQwen3PresetNextToLlamaCpp) {
  REQUIRE_LLAMACPP();
  const std::string f32 = SmallF32Gguf();
  ASSERT_FALSE(f32.empty());
  // The F32 model's own greedy continuations of seeded random prompts.
  std::vector<std::vector<int32_t>> sequences;
  for (int seed = 1; seed <= 8; ++seed) {
    const Json out = GenerateJson(
        f32, "--prompt " + ShellQuote("story number " + std::to_string(seed)) +
                 " --temperature 0 --ignore-eos --max-new-tokens 64");
    ASSERT_TRUE(out.contains("output_ids"));
    auto ids = out["prompt_ids"].get<std::vector<int32_t>>();
    for (const Json& id : out["output_ids"]) ids.push_back(id.get<int32_t>());
    sequences.push_back(std::move(ids));
  }
  CheckAccuracy(f32, {"q8_0", "q6_k", "q5_k_m", "q4_k_m"}, sequences,
                [&](const std::string& t) { return Quantize(f32, t); }, Runner());
}

TEST_F(GgufTest, ServesAChatWithTheFilesOwnTemplate) {
  const std::string hf = Path("tiny");
  if (!fs::exists(hf)) {
    auto r = Tessera("make-model --preset tiny --arch qwen3 --out " + ShellQuote(hf));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string gguf = Convert(hf, "q8_0", "tiny-q8_0.gguf");
  const Json request = {
      {"messages", {{{"role", "system"}, {"content", "Be brief."}},
                    {{"role", "user"}, {"content", "Name a colour."}}}}};
  auto tokenize = [&](const std::string& model) {
    auto r = Tessera("tokenize --model-path " + ShellQuote(model) + " --request " +
                     ShellQuote(request.dump()));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out, nullptr, false);
  };
  const Json from_dir = tokenize(hf), from_gguf = tokenize(gguf);
  ASSERT_TRUE(from_gguf.is_object());
  EXPECT_EQ(from_gguf["prompt"], from_dir["prompt"]);
  EXPECT_EQ(from_gguf["tokens"], from_dir["tokens"]);

  testing::ServerProcess server;
  ASSERT_TRUE(server.Start(kBin, {"--model-path", gguf, "--log-interval", "0"}))
      << server.log();
  Json chat = request;
  chat["max_tokens"] = 8;
  chat["temperature"] = 0;
  const auto r = server.Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const Json body = Json::parse(r.body);
  EXPECT_TRUE(body["choices"][0]["message"]["content"].is_string());
  EXPECT_EQ(body["usage"]["prompt_tokens"], from_dir["count"]);
  const auto info = server.Get("/server_info");
  ASSERT_EQ(info.status, 200);
  EXPECT_NE(info.body.find(".gguf"), std::string::npos);
}

// A llama.cpp Q4_0 file served as it is: --quantization auto runs it 4-bit
// (the log says so) and a chat completes.
TEST_F(GgufTest, ServesAQ4_0FileWithItsBlocksAs4Bit) {
  REQUIRE_LLAMACPP();
  const std::string hf = Path("tiny");
  if (!fs::exists(hf)) {
    auto r = Tessera("make-model --preset tiny --arch qwen3 --out " + ShellQuote(hf));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string gguf = Quantize(Convert(hf, "f16", "tiny-f16.gguf"), "q4_0");
  testing::ServerProcess server;
  ASSERT_TRUE(server.Start(kBin, {"--model-path", gguf, "--log-interval", "0"}))
      << server.log();
  const Json chat = {{"messages", {{{"role", "user"}, {"content", "Name a colour."}}}},
                     {"max_tokens", 8},
                     {"temperature", 0}};
  const auto r = server.Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_GE(Json::parse(r.body)["usage"]["completion_tokens"].get<int>(), 1);
  EXPECT_NE(server.log().find("q4_0 decoder weights load as 4-bit"), std::string::npos)
      << server.log();
}

TEST_F(GgufTest, AnEmbeddingModelConvertsAndServesTheSameVectors) {
  const std::string hf = Path("embedding");
  if (!fs::exists(hf)) {
    auto r = Tessera("make-model --preset tiny --arch qwen3 --embedding --dtype f32 --out " +
                     ShellQuote(hf));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string gguf = Convert(hf, "f32", "embedding.gguf");
  const std::string body = R"({"input": [11, 22, 33, 44, 55, 66]})";
  std::vector<Json> vectors;
  for (const std::string& model : {hf, gguf}) {
    testing::ServerProcess server;
    ASSERT_TRUE(server.Start(kBin, {"--model-path", model, "--is-embedding",
                                    "--log-interval", "0"}))
        << server.log();
    const auto r = server.Post("/v1/embeddings", body);
    ASSERT_EQ(r.status, 200) << r.body;
    vectors.push_back(Json::parse(r.body)["data"][0]["embedding"]);
  }
  ASSERT_EQ(vectors[0].size(), vectors[1].size());
  ASSERT_FALSE(vectors[0].empty());
  for (size_t i = 0; i < vectors[0].size(); ++i) {
    EXPECT_NEAR(vectors[0][i].get<double>(), vectors[1][i].get<double>(), 1e-5) << i;
  }
}

TEST_F(GgufTest, BrokenFilesAreRefusedWithTheReason) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const std::string gguf = Convert(dir, "f32", "stories-f32.gguf");
  std::ifstream in(gguf, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});

  const std::string cut = Path("cut.gguf");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto r = Tessera("generate --model-path " + ShellQuote(cut) + " --prompt hi");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;

  // general.architecture "llama" -> "gemma": a known file, an architecture
  // Tessera does not run.
  std::string other = bytes;
  const std::string key = "general.architecture";
  const size_t at = other.find(key);
  ASSERT_NE(at, std::string::npos);
  const size_t value = at + key.size() + 4 + 8;  // type, string length
  ASSERT_EQ(other.substr(value, 5), "llama");
  other.replace(value, 5, "gemma");
  const std::string gemma = Path("gemma.gguf");
  std::ofstream(gemma, std::ios::binary) << other;
  r = Tessera("generate --model-path " + ShellQuote(gemma) + " --prompt hi");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("architecture 'gemma'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tessera
