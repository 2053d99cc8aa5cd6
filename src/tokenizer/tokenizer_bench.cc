// Encoding speed on ~10,000 tokens of English text, for the Qwen3 tokenizer
// (byte-level BPE, regex pre-tokenizer, word cache) and stories260k
// (SentencePiece-style, no pre-tokenizer: the whole text is one BPE word).
// Targets: Qwen3 <= 20 ms, stories260k <= 50 ms per encode.
//
// Not part of ctest. Run from a Release build:
//   build/bin/tokenizer_bench [--benchmark_filter=...]
// The fixtures come from TESSERA_SHARED_DIR (override with --shared=DIR).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

std::string g_shared_dir = TESSERA_SHARED_DIR;

// Deterministic English-like text: sentences built from fixed word lists
// with a linear congruential generator (no randomness between runs).
std::string MakeEnglishText(size_t approx_words) {
  static const char* kSubjects[] = {"The little girl",   "A brave knight",
                                    "The old fisherman", "My best friend",
                                    "The curious cat",   "Our teacher",
                                    "The tall giraffe",  "A quiet boy",
                                    "The busy baker",    "Her grandmother"};
  static const char* kVerbs[] = {
      "walked to",  "looked at",    "dreamed about", "carefully painted",
      "ran across", "talked about", "quickly found", "slowly opened",
      "laughed at", "remembered"};
  static const char* kObjects[] = {
      "the shiny red ball",    "a garden full of flowers",
      "the wooden bridge",     "an enormous chocolate cake",
      "the sleepy village",    "a blue umbrella",
      "the mysterious letter", "the noisy market",
      "a tiny yellow bird",    "the distant mountains"};
  static const char* kEndings[] = {
      "before the sun went down.",   "because it was a sunny day.",
      "and everyone smiled.",        "while the wind was blowing.",
      "after lunch on Tuesday.",     "with great excitement!",
      "even though it was raining.", "and then went home.",
      "in the middle of the night.", "without saying a word."};
  uint32_t state = 12345;
  auto next = [&state](uint32_t n) {
    state = state * 1664525u + 1013904223u;
    return (state >> 16) % n;
  };
  std::string text;
  size_t words = 0;
  while (words < approx_words) {
    std::string sentence = std::string(kSubjects[next(10)]) + " " +
                           kVerbs[next(10)] + " " + kObjects[next(10)] + " " +
                           kEndings[next(10)];
    for (char c : sentence) words += c == ' ';
    ++words;
    text += sentence;
    text += next(6) == 0 ? "\n" : " ";
  }
  return text;
}

std::unique_ptr<Tokenizer> LoadOrSkip(benchmark::State& state,
                                      const std::string& relative) {
  auto t = Tokenizer::Load(g_shared_dir + "/" + relative);
  if (!t.ok()) {
    state.SkipWithError(t.status().ToString().c_str());
    return nullptr;
  }
  return std::move(t).value();
}

// Steady state: the word cache is warm after the first encode.
void EncodeBenchmark(benchmark::State& state, const char* relative,
                     size_t words) {
  auto tok = LoadOrSkip(state, relative);
  if (!tok) return;
  const std::string text = MakeEnglishText(words);
  size_t tokens = tok->Encode(text, false).size();
  for (auto _ : state) {
    auto ids = tok->Encode(text, false);
    benchmark::DoNotOptimize(ids.data());
  }
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["bytes"] = static_cast<double>(text.size());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * tokens));
}

void BM_Qwen3Encode10kTokens(benchmark::State& state) {
  EncodeBenchmark(state, "tokenizers/qwen3", 9200);
}
BENCHMARK(BM_Qwen3Encode10kTokens)->Unit(benchmark::kMillisecond);

// First encode on a fresh tokenizer: every word misses the cache.
void BM_Qwen3Encode10kTokensColdCache(benchmark::State& state) {
  const std::string text = MakeEnglishText(9200);
  size_t tokens = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto tok = LoadOrSkip(state, "tokenizers/qwen3");
    if (!tok) return;
    state.ResumeTiming();
    auto ids = tok->Encode(text, false);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
    state.PauseTiming();
    tok.reset();
    state.ResumeTiming();
  }
  state.counters["tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_Qwen3Encode10kTokensColdCache)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

void BM_Stories260kEncode10kTokens(benchmark::State& state) {
  EncodeBenchmark(state, "models/stories260k", 3300);
}
BENCHMARK(BM_Stories260kEncode10kTokens)->Unit(benchmark::kMillisecond);

void BM_Qwen3Decode10kTokens(benchmark::State& state) {
  auto tok = LoadOrSkip(state, "tokenizers/qwen3");
  if (!tok) return;
  const auto ids = tok->Encode(MakeEnglishText(9200), false);
  for (auto _ : state) {
    std::string text = tok->Decode(ids, true);
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["tokens"] = static_cast<double>(ids.size());
}
BENCHMARK(BM_Qwen3Decode10kTokens)->Unit(benchmark::kMillisecond);

void BM_Qwen3IncrementalDetokenize10kTokens(benchmark::State& state) {
  auto tok = LoadOrSkip(state, "tokenizers/qwen3");
  if (!tok) return;
  const auto ids = tok->Encode(MakeEnglishText(9200), false);
  for (auto _ : state) {
    IncrementalDetokenizer detok(*tok, true);
    size_t total = 0;
    for (int32_t id : ids) total += detok.Add(id).size();
    total += detok.Flush().size();
    benchmark::DoNotOptimize(total);
  }
  state.counters["tokens"] = static_cast<double>(ids.size());
}
BENCHMARK(BM_Qwen3IncrementalDetokenize10kTokens)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--shared=", 9) == 0) {
      tessera::g_shared_dir = argv[i] + 9;
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
