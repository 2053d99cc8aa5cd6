#include "tokenizer/jinja/template.h"

#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/parser.h"

namespace tessera::jinja {

StatusOr<Template> Template::Parse(std::string_view source,
                                   const LexerOptions& options) {
  TSR_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source, options));
  TSR_ASSIGN_OR_RETURN(Body body, jinja::Parse(tokens));
  return Template(std::make_shared<const Body>(std::move(body)));
}

StatusOr<std::string> Template::Render(const ValueDict& variables) const {
  return RenderBody(*body_, variables);
}

StatusOr<std::string> Template::RenderJson(
    const nlohmann::ordered_json& variables) const {
  if (!variables.is_object() && !variables.is_null()) {
    return InvalidArgumentError("template variables must be a JSON object");
  }
  ValueDict vars;
  if (variables.is_object()) {
    for (const auto& [key, value] : variables.items()) {
      TSR_ASSIGN_OR_RETURN(Value v, Value::FromJson(value));
      vars.Set(key, std::move(v));
    }
  }
  return Render(vars);
}

}  // namespace tessera::jinja
