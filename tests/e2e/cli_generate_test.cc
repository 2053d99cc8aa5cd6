// `tessera generate` end to end: the built binary on the real stories260k
// Llama against its float64 golden greedy continuations (token ids up to
// stable_prefix, text, finish_reason), streaming output, seeded sampling
// reproducibility, --chat on a make-model checkpoint, and the documented
// errors. Prints decode tokens/s.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testing/fixtures.h"
#include "testing/goldens.h"
#include "testing/platforms.h"
#include "testing/subprocess.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

using tessera::testing::ReadFile;
using tessera::testing::ShellQuote;
using Result = tessera::testing::CommandResult;

std::string ScratchPath(const std::string& what) {
  static int counter = 0;
  return (fs::temp_directory_path() /
          ("tessera_cli_generate_" + what + "_" + std::to_string(::getpid()) +
           "_" + std::to_string(counter++)))
      .string();
}

// Runs `tessera <args>` (args already quoted), capturing stdout and stderr.
Result Tessera(const std::string& args) {
  return tessera::testing::RunShell(std::string(TSR_TESSERA_BIN) + " " + args);
}

// `tessera generate --json <args>`: the one JSON object on stdout.
Json GenerateJson(const std::string& model, const std::string& prompt,
                  const std::string& args) {
  const Result r = Tessera("generate --json --model-path " + ShellQuote(model) +
                           " --prompt " + ShellQuote(prompt) + " " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto parsed = Json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(parsed.is_object()) << "stdout is not one JSON object:\n"
                                  << r.out << "\nstderr:\n"
                                  << r.err;
  return parsed.is_object() ? parsed : Json::object();
}

std::string Detokenize(const std::string& model, const Json& ids) {
  const Result r =
      Tessera("detokenize --model-path " + ShellQuote(model) + " --request " +
              ShellQuote(Json{{"tokens", ids}}.dump()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Json::parse(r.out)["text"].get<std::string>();
}

constexpr int32_t kStoriesEos = 2;

// The goldens on every platform (testing/platforms.h).
class CliGenerateOnPlatformTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { TSR_REQUIRE_PLATFORM(TSR_TESSERA_BIN, GetParam()); }
};
INSTANTIATE_TEST_SUITE_P(Platforms, CliGenerateOnPlatformTest,
                         ::testing::ValuesIn(tessera::testing::TestPlatforms()),
                         tessera::testing::PlatformParamName);

TEST_P(CliGenerateOnPlatformTest, GreedyMatchesStories260kGolden) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  const std::vector<Json> cases = tessera::testing::ReadJsonLines<Json>(golden);
  ASSERT_FALSE(cases.empty());
  double decode_tps_sum = 0;
  for (const Json& c : cases) {
    const std::string prompt = c["prompt"].get<std::string>();
    SCOPED_TRACE(prompt);
    const Json out =
        GenerateJson(dir, prompt,
                     "--temperature 0 --max-new-tokens 64 --platform " + GetParam());
    ASSERT_FALSE(out.empty());
    for (const char* key : {"prompt_ids", "output_ids", "text", "finish_reason",
                            "prefill_tokens_per_s", "decode_tokens_per_s"}) {
      EXPECT_TRUE(out.contains(key)) << key;
    }
    EXPECT_EQ(out["prompt"], prompt);
    EXPECT_EQ(out["prompt_ids"], c["prompt_ids"]);
    const auto output = out["output_ids"].get<std::vector<int32_t>>();
    const auto expected = c["greedy_output_ids"].get<std::vector<int32_t>>();
    const size_t stable = c["stable_prefix"].get<size_t>();
    ASSERT_GE(output.size(), std::min<size_t>(stable, 1));
    for (size_t i = 0; i < stable && i < expected.size(); ++i) {
      ASSERT_LT(i, output.size()) << "stopped early at " << i;
      EXPECT_EQ(output[i], expected[i]) << "step " << i;
    }
    // finish_reason: "length" after 64 tokens, else "stop" on EOS.
    if (output.size() == 64 && output.back() != kStoriesEos) {
      EXPECT_EQ(out["finish_reason"], "length");
    } else {
      EXPECT_EQ(out["finish_reason"], "stop");
      EXPECT_EQ(output.back(), kStoriesEos);
    }
    // prompt + text is the decoded whole; with the golden tokens, the
    // golden text.
    Json all = c["prompt_ids"];
    for (int32_t id : output) all.push_back(id);
    const std::string whole = prompt + out["text"].get<std::string>();
    EXPECT_EQ(whole, Detokenize(dir, all));
    if (output == expected) {
      EXPECT_EQ(whole, c["full_text"]);
    }
    EXPECT_GT(out["prefill_tokens_per_s"].get<double>(), 0);
    EXPECT_GT(out["decode_tokens_per_s"].get<double>(), 0);
    decode_tps_sum += out["decode_tokens_per_s"].get<double>();
  }
  const double tps = decode_tps_sum / double(cases.size());
  RecordProperty("decode_tokens_per_second", std::to_string(tps));
  std::printf("tessera generate stories260k on %s: mean decode %.0f tok/s\n",
              GetParam().c_str(), tps);
}

TEST(CliGenerateTest, ChunkedPrefillGivesTheSameTokens) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  const std::vector<Json> cases = tessera::testing::ReadJsonLines<Json>(golden);
  ASSERT_GE(cases.size(), 2u);
  // Prompt of 12 tokens in chunks of 5: three forward passes over a growing
  // cached prefix before the first token.
  const Json& c = cases[1];
  const size_t stable = c["stable_prefix"].get<size_t>();
  const Json out = GenerateJson(
      dir, c["prompt"].get<std::string>(),
      "--temperature 0 --max-new-tokens 64 --chunked-prefill-size 5");
  ASSERT_GE(out["output_ids"].size(), stable);
  for (size_t i = 0; i < stable; ++i) {
    EXPECT_EQ(out["output_ids"][i], c["greedy_output_ids"][i]) << "step " << i;
  }
}

TEST(CliGenerateTest, StreamsTheSameTextWithTimingOnStderr) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const std::string prompt = "Once upon a time";
  const Json out =
      GenerateJson(dir, prompt, "--temperature 0 --max-new-tokens 40");
  const Result streamed =
      Tessera("generate --model-path " + ShellQuote(dir) + " --prompt " +
              ShellQuote(prompt) + " --temperature 0 --max-new-tokens 40");
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_EQ(streamed.out, out["text"].get<std::string>() + "\n");
  EXPECT_NE(streamed.err.find("prefill: "), std::string::npos) << streamed.err;
  EXPECT_NE(streamed.err.find("decode: "), std::string::npos) << streamed.err;
  EXPECT_NE(streamed.err.find("tok/s"), std::string::npos) << streamed.err;
}

TEST(CliGenerateTest, SeededSamplingIsReproducible) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const std::string prompt = "Tom had a big red ball.";
  const std::string args =
      "--temperature 1.0 --top-p 0.95 --top-k 40 --max-new-tokens 48";
  const Json a = GenerateJson(dir, prompt, args + " --seed 1234");
  const Json b = GenerateJson(dir, prompt, args + " --seed 1234");
  ASSERT_FALSE(a["output_ids"].empty());
  EXPECT_EQ(a["output_ids"], b["output_ids"]);
  EXPECT_EQ(a["text"], b["text"]);
  EXPECT_EQ(a["sampling"]["seed"], 1234);
  EXPECT_FLOAT_EQ(a["sampling"]["temperature"].get<float>(), 1.0f);
  EXPECT_EQ(a["sampling"]["top_k"], 40);
  // Other seeds sample other continuations (at least one of three differs).
  std::set<Json> distinct = {a["output_ids"]};
  for (int seed : {1, 2, 3}) {
    distinct.insert(GenerateJson(
        dir, prompt, args + " --seed " + std::to_string(seed))["output_ids"]);
  }
  EXPECT_GT(distinct.size(), 1u);
}

TEST(CliGenerateTest, DefaultsComeFromGenerationConfig) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  // stories260k's generation_config.json sets no sampling keys: temperature
  // 1.0, all tokens; 128 new tokens unless EOS comes first.
  const Json out = GenerateJson(dir, "Sue and her mom", "--seed 5");
  EXPECT_FLOAT_EQ(out["sampling"]["temperature"].get<float>(), 1.0f);
  EXPECT_EQ(out["sampling"]["top_k"], 0);
  EXPECT_EQ(out["sampling"]["max_new_tokens"], 128);
  const size_t n = out["output_ids"].size();
  ASSERT_GE(n, 1u);
  EXPECT_LE(n, 128u);
  if (out["finish_reason"] == "length") {
    EXPECT_EQ(n, 128u);
  } else {
    EXPECT_EQ(out["output_ids"].back(), kStoriesEos);
  }
  // --ignore-eos always generates the maximum.
  const Json full = GenerateJson(dir, "Sue and her mom",
                                 "--seed 5 --ignore-eos --max-new-tokens 100");
  EXPECT_EQ(full["output_ids"].size(), 100u);
  EXPECT_EQ(full["finish_reason"], "length");
}

TEST(CliGenerateTest, ChatOnAMakeModelCheckpoint) {
  const std::string model = ScratchPath("tiny");
  const Result made = Tessera(
      "make-model --preset tiny --arch qwen3 --seed 3 "
      "--out " +
      ShellQuote(model));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const Json out =
      GenerateJson(model, "Hello there", "--chat --max-new-tokens 12 --seed 9");
  const Json greedy = GenerateJson(
      model, "Hello there",
      "--chat --max-new-tokens 12 --temperature 0 --top-k 5 --ignore-eos");
  fs::remove_all(model);
  ASSERT_FALSE(out.empty());
  const std::string rendered = out["prompt"].get<std::string>();
  EXPECT_NE(rendered.find("<|im_start|>user\nHello there<|im_end|>"),
            std::string::npos)
      << rendered;
  EXPECT_NE(rendered.find("<|im_start|>assistant\n"), std::string::npos)
      << rendered;
  const size_t n = out["output_ids"].size();
  EXPECT_GE(n, 1u);
  EXPECT_LE(n, 12u);
  EXPECT_TRUE(out["finish_reason"] == "stop" ||
              out["finish_reason"] == "length")
      << out["finish_reason"];
  EXPECT_TRUE(out["text"].is_string());
  EXPECT_GT(out["prompt_ids"].size(), 5u);
  // make-model's generation_config.json: temperature 0.6, top_p 0.95,
  // top_k 20 (flags beat it).
  EXPECT_EQ(out["sampling"]["temperature"], 0.6);
  EXPECT_EQ(out["sampling"]["top_p"], 0.95);
  EXPECT_EQ(out["sampling"]["top_k"], 20);
  EXPECT_EQ(out["sampling"]["seed"], 9);
  EXPECT_EQ(greedy["sampling"]["temperature"], 0.0);
  EXPECT_EQ(greedy["sampling"]["top_k"], 5);
  EXPECT_EQ(greedy["output_ids"].size(), 12u);
  EXPECT_EQ(greedy["finish_reason"], "length");
}

TEST(CliGenerateTest, BadInputsAreOneLineErrorsWithExit2) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(tokenizer_only, "tokenizers/qwen3");
  struct Case {
    std::string args;
    std::string message;
  };
  const std::string model = " --model-path " + ShellQuote(dir);
  const std::vector<Case> cases = {
      {"--model-path /nonexistent/model --prompt hi", "does not exist"},
      {"--model-path " + ShellQuote(tokenizer_only) + " --prompt hi",
       "config.json"},
      {model + " --prompt hi --max-new-tokens 0", "--max-new-tokens"},
      {model + " --prompt hi --temperature -1", "--temperature"},
      {model + " --prompt hi --top-p 0", "--top-p"},
      {model + " --prompt hi --chat", "no chat_template"},
      {model + " --prompt hi --platform no-such-platform", "no-such-platform"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const Result r = Tessera("generate --json " + c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    // The last stderr line is the one-line error.
    std::string last = r.err;
    if (!last.empty() && last.back() == '\n') last.pop_back();
    last = last.substr(
        last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
    EXPECT_EQ(last.rfind("error: ", 0), 0u) << r.err;
    EXPECT_NE(last.find(c.message), std::string::npos) << r.err;
  }
  // Usage errors caught by the flag parser are exit 2 as well.
  for (const std::string& args :
       {std::string("--model-path ") + ShellQuote(dir),
        model + " --prompt hi --max-new-tokens many"}) {
    SCOPED_TRACE(args);
    const Result r = Tessera("generate " + args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_FALSE(r.err.empty());
  }
}

}  // namespace
