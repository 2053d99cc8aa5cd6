// Structured-output costs on the real Qwen3 vocabulary (151,936 tokens,
// ../shared/tokenizers/qwen3): building the vocabulary's bytes once,
// compiling schemas, one token mask at typical grammar states (the start
// of an object, inside a string, inside a number, after a key), and the
// masks of a whole decode: a document of the schema fed token by token as
// the engine does (mask, then accept the token), for the first request of
// a grammar (its mask cache cold) and for a second one (cache warm, a new
// matcher). Prints one JSON object (medians in µs, and the ratio to the
// issue's targets: mask <= 50 µs per token, compile <= 50 ms).
//
// Not part of ctest. Run from a Release build:
//   build/bin/grammar_bench [--shared DIR] [--smoke]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar/ebnf.h"
#include "grammar/json_schema_to_ebnf.h"
#include "grammar/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
using tessera::grammar::GrammarMatcher;

double Us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string shared = TESSERA_SHARED_DIR;
  int rounds = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--shared") && i + 1 < argc) shared = argv[++i];
    if (!std::strcmp(argv[i], "--smoke")) rounds = 2;
  }
  auto tokenizer = tessera::Tokenizer::Load(shared + "/tokenizers/qwen3");
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.status().ToString().c_str());
    return 2;
  }
  auto t0 = Clock::now();
  auto vocab = tessera::grammar::TokenVocabulary::Build(**tokenizer);
  const double vocab_ms = Us(t0, Clock::now()) / 1000;

  const char* schema_text = R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 40},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "email": {"type": "string", "format": "email"},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
      "address": {"type": "object", "properties": {
          "city": {"type": "string"}, "zip": {"type": "string",
          "pattern": "^[0-9]{5}$"}}, "required": ["city"]}},
      "required": ["name", "age"]})";
  const auto schema = nlohmann::ordered_json::parse(schema_text);
  std::vector<double> compile_us;
  std::shared_ptr<const tessera::grammar::Grammar> grammar;
  for (int r = 0; r < rounds; ++r) {
    auto a = Clock::now();
    auto ebnf = tessera::grammar::JsonSchemaToEbnf(schema);
    auto g = tessera::grammar::ParseEbnf(*ebnf);
    compile_us.push_back(Us(a, Clock::now()));
    grammar = *g;
  }
  // States: the output so far.
  const std::vector<std::pair<const char*, const char*>> states = {
      {"object_start", ""},
      {"after_key", "{\"name\": "},
      {"in_string", "{\"name\": \"Ada Lov"},
      {"in_integer", "{\"name\": \"Ada\", \"age\": 3"},
      {"in_free_string", "{\"name\": \"Ada\", \"age\": 36, \"address\": {\"city\": \"Lon"},
  };
  const std::vector<int32_t> stop = {151643, 151645};
  nlohmann::ordered_json out;
  out["cpu_note"] = "single thread; see docs/BENCHMARKS.md for the machine";
  out["vocab_tokens"] = vocab->size();
  out["vocab_build_ms"] = vocab_ms;
  out["compile_us_median"] = Median(compile_us);
  out["compile_vs_target_50ms"] = Median(compile_us) / 50000.0;
  std::vector<uint8_t> mask;
  std::vector<double> all;
  for (const auto& [name, prefix] : states) {
    GrammarMatcher m(grammar);
    if (!m.AcceptString(prefix)) {
      std::fprintf(stderr, "state %s: prefix refused\n", name);
      return 1;
    }
    std::vector<double> us;
    int64_t allowed = 0;
    for (int r = 0; r < rounds; ++r) {
      auto a = Clock::now();
      allowed = tessera::grammar::ComputeTokenMask(m, *vocab, stop, &mask);
      us.push_back(Us(a, Clock::now()));
    }
    out["mask_us_median"][name] = Median(us);
    out["allowed_tokens"][name] = allowed;
    // Tokens whose answer depends on more than the state (recomputed on
    // every mask; the rest come from the grammar's cache).
    auto entry = grammar->mask_cache->Find(vocab.get(), m.StateKey());
    out["context_dependent_tokens"][name] =
        entry ? static_cast<int64_t>(entry->dependent.size()) : -1;
    all.push_back(Median(us));
  }
  out["mask_us_median_over_states"] = Median(all);

  // A whole decode of one document, token by token.
  const std::string doc =
      R"({"name": "Ada Lovelace", "age": 36, "email": "ada@example.com", )"
      R"("tags": ["mathematics", "poetry", "engines"], "address": )"
      R"({"city": "London", "zip": "12345"}})";
  const std::vector<int32_t> ids = (*tokenizer)->Encode(doc, false);
  auto fresh = tessera::grammar::ParseEbnf(
      *tessera::grammar::JsonSchemaToEbnf(schema));
  for (const char* pass : {"first_request", "second_request"}) {
    GrammarMatcher m(*fresh);
    std::vector<double> us;
    for (int32_t id : ids) {
      auto a = Clock::now();
      tessera::grammar::ComputeTokenMask(m, *vocab, stop, &mask);
      us.push_back(Us(a, Clock::now()));
      if (!mask[static_cast<size_t>(id)] ||
          !m.AcceptString(vocab->bytes(id))) {
        std::fprintf(stderr, "decode: token %d refused\n", id);
        return 1;
      }
    }
    std::vector<double> sorted = us;
    std::sort(sorted.begin(), sorted.end());
    double sum = 0;
    for (double x : us) sum += x;
    out["decode"][pass] = {{"tokens", us.size()},
                           {"mask_us_median", Median(us)},
                           {"mask_us_p90", sorted[sorted.size() * 9 / 10]},
                           {"mask_us_mean", sum / us.size()}};
  }
  const double decode_median =
      out["decode"]["second_request"]["mask_us_median"].get<double>();
  out["mask_vs_target_50us"] = decode_median / 50.0;
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
