#include "server/grammar_cache.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "grammar/ebnf.h"
#include "grammar/json_schema_to_ebnf.h"
#include "grammar/regex_to_ebnf.h"

namespace tessera::server {

bool IsGrammarBackend(const std::string& name) {
  return name == "tessera" || name == "none" || name == "xgrammar" ||
         name == "outlines" || name == "llguidance";
}

StatusOr<std::shared_ptr<const grammar::Grammar>> GrammarCache::CompileSpec(
    const ConstraintSpec& spec) {
  switch (spec.kind) {
    case ConstraintSpec::Kind::kJsonObject:
      return grammar::ParseEbnf(grammar::AnyJsonObjectEbnf());
    case ConstraintSpec::Kind::kEbnf:
      return grammar::ParseEbnf(spec.text);
    case ConstraintSpec::Kind::kRegex: {
      TSR_ASSIGN_OR_RETURN(std::string expr, grammar::RegexToEbnf(spec.text));
      return grammar::ParseEbnf("root ::= " + expr + "\n");
    }
    case ConstraintSpec::Kind::kJsonSchema: {
      const auto schema = nlohmann::ordered_json::parse(
          spec.text, nullptr, /*allow_exceptions=*/false);
      if (schema.is_discarded()) {
        return InvalidArgumentError("the JSON Schema is not valid JSON");
      }
      TSR_ASSIGN_OR_RETURN(std::string ebnf, grammar::JsonSchemaToEbnf(schema));
      return grammar::ParseEbnf(ebnf);
    }
  }
  return InvalidArgumentError("unknown constraint");
}

MaybeApiError GrammarCache::Compile(SamplingOptions* s) {
  if (!s->constraint) return std::nullopt;
  const ConstraintSpec& spec = *s->constraint;
  if (backend_ == "none") {
    return UnsupportedParameter(
        spec.param,
        "structured output is off on this server (--grammar-backend none)");
  }
  const std::string key =
      fmt::format("{}\n{}", static_cast<int>(spec.kind), spec.text);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      s->grammar = it->second->second;
      return std::nullopt;
    }
  }
  auto compiled = CompileSpec(spec);
  if (!compiled.ok()) {
    return BadRequest(fmt::format("'{}': {}", spec.param,
                                  compiled.status().message()),
                      spec.param);
  }
  s->grammar = *compiled;
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.count(key) == 0) {
    lru_.emplace_front(key, *compiled);
    index_[key] = lru_.begin();
    if (lru_.size() > kCapacity) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }
  return std::nullopt;
}

}  // namespace tessera::server
