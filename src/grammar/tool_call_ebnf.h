// The grammar of a forced tool call (OpenAI's tool_choice "required" or a
// named function) in the format the "qwen" / "hermes" tool-call parser
// reads (parsers/tool_call_parser.h):
//   <tool_call>\n{"name": "fn", "arguments": {...}}\n</tool_call>
// where "arguments" follows the function's `parameters` JSON Schema
// (json_schema_to_ebnf.h; none: any JSON object). With `parallel`, one or
// more calls separated by newlines; otherwise exactly one.
//
// `tools`: the request's validated OpenAI tools array. `only`: the named
// function, or empty for any of them. Errors: a `parameters` schema the
// engine does not support, naming the tool (INVALID_ARGUMENT).
#ifndef TESSERA_GRAMMAR_TOOL_CALL_EBNF_H_
#define TESSERA_GRAMMAR_TOOL_CALL_EBNF_H_

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace tessera::grammar {

StatusOr<std::string> ForcedToolCallEbnf(const nlohmann::ordered_json& tools,
                                         const std::string& only,
                                         bool parallel);

}  // namespace tessera::grammar

#endif  // TESSERA_GRAMMAR_TOOL_CALL_EBNF_H_
