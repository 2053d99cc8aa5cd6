// Template: a parsed Jinja template, the engine's entry point.
//
//   TSR_ASSIGN_OR_RETURN(auto t, jinja::Template::Parse(source));
//   TSR_ASSIGN_OR_RETURN(std::string text, t.Render(variables));
//
// The engine implements the subset of Jinja 3 that chat templates use (see
// parser.h for the statements, builtins.h for filters, tests and methods),
// with the settings of Hugging Face's chat template environment by default:
// trim_blocks and lstrip_blocks on, Hugging Face's tojson, raise_exception
// and strftime_now. A construct outside the subset is an error naming it and
// its line (at parse time for tags, at render time for filters, tests and
// methods, as Jinja reports unknown ones inside conditionals), never silently
// different output.
//
// A Template is immutable after Parse and cheap to copy (the tree is shared);
// Render may run from several threads at once.
#ifndef TESSERA_TOKENIZER_JINJA_TEMPLATE_H_
#define TESSERA_TOKENIZER_JINJA_TEMPLATE_H_

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/value.h"

namespace tessera::jinja {

class Template {
 public:
  // Errors are INVALID_ARGUMENT ("line N: ...") for malformed templates and
  // UNIMPLEMENTED for Jinja features outside the engine's subset.
  static StatusOr<Template> Parse(std::string_view source,
                                  const LexerOptions& options = {});

  // Renders with `variables` (name -> value) visible to the template.
  StatusOr<std::string> Render(const ValueDict& variables) const;
  // Same, from a JSON object (key order is kept for tojson).
  StatusOr<std::string> RenderJson(
      const nlohmann::ordered_json& variables) const;

 private:
  explicit Template(std::shared_ptr<const Body> body)
      : body_(std::move(body)) {}

  std::shared_ptr<const Body> body_;
};

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_TEMPLATE_H_
