// Compiled structured-output grammars for the routes: a request's
// ConstraintSpec (openai_request.h) turned into a Grammar the engine
// enforces, cached by its text so a schema sent again compiles once.
//
// --grammar-backend: "tessera" (the built-in engine, src/grammar), "none"
// (constraints refused with 400), or SGLang's names "xgrammar",
// "outlines", "llguidance", which select the built-in engine (the server
// logs a notice once at start).
// Thread-safe (one mutex around the cache; compiling runs outside it).
#ifndef TESSERA_SERVER_GRAMMAR_CACHE_H_
#define TESSERA_SERVER_GRAMMAR_CACHE_H_

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "grammar/grammar.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace tessera::server {

// Names --grammar-backend takes.
bool IsGrammarBackend(const std::string& name);

class GrammarCache {
 public:
  // Grammars kept (each with up to MaskCache::kMaxBytes of masks).
  static constexpr size_t kCapacity = 64;

  explicit GrammarCache(std::string backend) : backend_(std::move(backend)) {}

  // Compiles `s.constraint` into `s.grammar` (nothing when there is none).
  // A bad regex, grammar or schema is a 400 naming the field and what is
  // wrong in it; "none" refuses every constraint.
  MaybeApiError Compile(SamplingOptions* s);

  // Uncached compilation, for tests and benchmarks.
  static StatusOr<std::shared_ptr<const grammar::Grammar>> CompileSpec(
      const ConstraintSpec& spec);

 private:
  std::string backend_;
  std::mutex mu_;
  // Most recently used first; the map points into the list.
  std::list<std::pair<std::string, std::shared_ptr<const grammar::Grammar>>>
      lru_;  // guarded by mu_
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;  // mu_
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_GRAMMAR_CACHE_H_
