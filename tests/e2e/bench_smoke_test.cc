// `tessera bench --one-batch --smoke` and `tessera doctor --bandwidth` end
// to end: the built binary on a make-model tiny checkpoint. Checks the
// JSON's shape and that every figure is positive and consistent (token
// counts, bytes per step = weights + KV); no timing thresholds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/subprocess.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using tessera::testing::ReadFile;
using tessera::testing::ShellQuote;
using Result = tessera::testing::CommandResult;

std::string ScratchPath(const std::string& what) {
  return (fs::temp_directory_path() /
          ("tessera_bench_smoke_" + what + "_" + std::to_string(::getpid())))
      .string();
}

Result Tessera(const std::string& args) {
  return tessera::testing::RunShell(std::string(TSR_TESSERA_BIN) + " " + args);
}

Json ParseObject(const std::string& text, const std::string& err) {
  auto parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(parsed.is_object()) << "not one JSON object:\n"
                                  << text << "\nstderr:\n"
                                  << err;
  return parsed.is_object() ? parsed : Json::object();
}

void ExpectPositive(const Json& object, const char* key) {
  ASSERT_TRUE(object.contains(key)) << key << " missing in " << object.dump();
  ASSERT_TRUE(object[key].is_number()) << key << " in " << object.dump();
  EXPECT_GT(object[key].get<double>(), 0.0) << key;
}

TEST(BenchSmokeTest, OneBatchSmokeJson) {
  const std::string model = ScratchPath("model");
  const std::string file = ScratchPath("out.json");
  const Result made = Tessera(
      "make-model --preset tiny --arch qwen3 --seed 1 "
      "--out " +
      ShellQuote(model));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const Result r = Tessera(
      "bench --one-batch --smoke --json --platform cpu "
      "--model-path " +
      ShellQuote(model) + " --output-file " + ShellQuote(file));
  const std::string written = ReadFile(file);
  fs::remove_all(model);
  fs::remove(file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json out = ParseObject(r.out, r.err);
  EXPECT_EQ(ParseObject(written, "--output-file"), out);
  ASSERT_TRUE(out["bandwidth"].is_object()) << out.dump();
  ExpectPositive(out["bandwidth"], "read_gbps");
  ExpectPositive(out["bandwidth"], "bytes");
  ExpectPositive(out["bandwidth"], "threads");
  // The cpu plugin offers the fused decoder_layer.
  EXPECT_EQ(out["fused_decoder_layer"], true) << out.dump();
  ASSERT_TRUE(out["results"].is_array());
  // --smoke: batch sizes 1 and 2, each serial then overlapped.
  ASSERT_EQ(out["results"].size(), 4u);
  size_t index = 0;
  for (const Json& row : out["results"]) {
    EXPECT_EQ(row["batch_size"], int64_t(1 + index / 2));
    EXPECT_EQ(row["overlap"], index % 2 == 1);
    ++index;
    ExpectPositive(row, "host_ms_mean");
    ExpectPositive(row, "device_busy_ms_mean");
    ASSERT_TRUE(row["device_idle_fraction"].is_number()) << row.dump();
    EXPECT_GE(row["device_idle_fraction"].get<double>(), 0.0);
    EXPECT_LE(row["device_idle_fraction"].get<double>(), 1.0);
    EXPECT_EQ(row["input_len"], 16);
    EXPECT_EQ(row["output_len"], 4);
    for (const char* key :
         {"prefill_seconds", "prefill_tokens_per_s", "decode_seconds",
          "decode_tokens_per_s", "mean_context", "weight_bytes",
          "kv_bytes_per_step", "bytes_per_step", "roofline_tokens_per_s",
          "roofline_fraction"}) {
      ExpectPositive(row, key);
    }
    for (const char* key : {"mean", "p50", "p99"}) {
      ExpectPositive(row["step_ms"], key);
    }
    EXPECT_LE(row["step_ms"]["p50"].get<double>(),
              row["step_ms"]["p99"].get<double>());
    // The cpu plugin reports stream busy time: the host's share of a step
    // is in [0, the mean step].
    ASSERT_TRUE(row["outside_kernels_ms_mean"].is_number()) << row.dump();
    EXPECT_GE(row["outside_kernels_ms_mean"].get<double>(), 0.0);
    EXPECT_LE(row["outside_kernels_ms_mean"].get<double>(),
              row["step_ms"]["mean"].get<double>());
    EXPECT_EQ(row["bytes_per_step"].get<uint64_t>(),
              row["weight_bytes"].get<uint64_t>() +
                  row["kv_bytes_per_step"].get<uint64_t>());
    EXPECT_DOUBLE_EQ(row["mean_context"].get<double>(), 16 + 2.5);
  }
  // KV bytes grow with the batch; the weights do not.
  EXPECT_EQ(out["results"][2]["kv_bytes_per_step"].get<uint64_t>(),
            2 * out["results"][0]["kv_bytes_per_step"].get<uint64_t>());
  EXPECT_EQ(out["results"][0]["weight_bytes"],
            out["results"][2]["weight_bytes"]);
}

// Every --quantization runs end to end with the fused layer (int8 weights:
// decoder_layer v1 with linear v2, w8a8: decoder_layer v3 with linear v3),
// and reports what it loaded: w8a8_int8 holds the same weights as int8,
// per channel fewer scales, both less than the unquantised model.
TEST(BenchSmokeTest, QuantizationsRunFusedAndShrinkTheWeights) {
  const std::string model = ScratchPath("qmodel");
  const Result made =
      Tessera("make-model --preset tiny --arch qwen3 --seed 2 --out " + ShellQuote(model));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::map<std::string, uint64_t> weight_bytes;
  for (const char* q : {"none", "int8", "w8a8_int8", "w8a8_int8-per-channel", "int4", "q4_0"}) {
    SCOPED_TRACE(q);
    const Result r = Tessera("bench --one-batch --smoke --json --no-bandwidth --platform cpu "
                             "--quantization " +
                             std::string(q) + " --model-path " + ShellQuote(model));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json out = ParseObject(r.out, r.err);
    EXPECT_EQ(out["quantization"], q);
    EXPECT_EQ(out["fused_decoder_layer"], true) << out.dump();
    ASSERT_EQ(out["results"].size(), 4u);
    for (const Json& row : out["results"]) ExpectPositive(row, "decode_tokens_per_s");
    weight_bytes[q] = out["results"][0]["weight_bytes"].get<uint64_t>();
  }
  fs::remove_all(model);
  EXPECT_EQ(weight_bytes["w8a8_int8"], weight_bytes["int8"]);
  EXPECT_LT(weight_bytes["w8a8_int8-per-channel"], weight_bytes["w8a8_int8"]);
  EXPECT_LT(weight_bytes["int8"], weight_bytes["none"]);
  // 4-bit layers (the head stays int8, the f32 embedding as it is).
  EXPECT_LT(weight_bytes["int4"], weight_bytes["w8a8_int8"]);
  EXPECT_EQ(weight_bytes["q4_0"], weight_bytes["int4"]);
  // A name that is not a scheme is refused with the list.
  const Result bad = Tessera("bench --one-batch --smoke --quantization w4a4 --model-path x");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("w8a8_int8"), std::string::npos) << bad.err;
}

TEST(BenchSmokeTest, DoctorBandwidthJson) {
  const Result r = Tessera(
      "doctor --bandwidth --bandwidth-bytes 16777216 --cpu-threads 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json out = ParseObject(r.out, r.err);
  ASSERT_TRUE(out["bandwidth"].is_object()) << r.out;
  ExpectPositive(out["bandwidth"], "read_gbps");
  EXPECT_EQ(out["bandwidth"]["bytes"], 16777216);
  EXPECT_EQ(out["bandwidth"]["threads"], 2);
}

TEST(BenchSmokeTest, TooSmallProbeBufferIsBadInput) {
  const Result r = Tessera(
      "doctor --bandwidth --bandwidth-bytes 100 --cpu-threads 2 --json");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--bandwidth-bytes"), std::string::npos) << r.err;
}

TEST(BenchSmokeTest, BenchWithoutOneBatchIsBadInput) {
  const Result r = Tessera("bench --model-path /nonexistent");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--one-batch"), std::string::npos) << r.err;
}

}  // namespace
