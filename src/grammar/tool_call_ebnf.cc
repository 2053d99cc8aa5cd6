#include "grammar/tool_call_ebnf.h"

#include <fmt/format.h>

#include "grammar/json_schema_to_ebnf.h"
#include "grammar/regex_to_ebnf.h"

namespace tessera::grammar {

StatusOr<std::string> ForcedToolCallEbnf(const nlohmann::ordered_json& tools,
                                         const std::string& only,
                                         bool parallel) {
  std::string rules;
  std::string calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    const auto& f = tools[i]["function"];
    const std::string name = f["name"].get<std::string>();
    if (!only.empty() && name != only) continue;
    std::string args = "json-object";
    if (f.contains("parameters") && f["parameters"].is_object()) {
      const std::string prefix = fmt::format("t{}-", i);
      auto schema_rules = JsonSchemaRulesEbnf(f["parameters"], prefix);
      if (!schema_rules.ok()) {
        return schema_rules.status().WithContext(
            fmt::format("tools[{}].function.parameters ({})", i, name));
      }
      rules += *schema_rules;
      args = prefix + "root";
    }
    const std::string key = EbnfLiteral(nlohmann::ordered_json(name).dump());
    calls += fmt::format(
        "{}( \"<tool_call>\\n{{\" ws \"\\\"name\\\"\" ws \":\" ws {} ws \",\" "
        "ws \"\\\"arguments\\\"\" ws \":\" ws {} ws \"}}\\n</tool_call>\" )",
        calls.empty() ? "" : " | ", key, args);
  }
  if (calls.empty()) {
    return InvalidArgumentError(
        fmt::format("no tool named '{}' to call", only));
  }
  std::string out = "call ::= " + calls + "\n";
  out += parallel ? "root ::= call ( \"\\n\" call )*\n" : "root ::= call\n";
  return out + rules + JsonBaseEbnf();
}

}  // namespace tessera::grammar
