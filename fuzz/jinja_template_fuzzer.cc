// libFuzzer harness: a chat template through the Jinja lexer, parser and
// interpreter, rendered with a conversation and tools. The render budget
// (steps, string sizes, output) must stop whatever the template does.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "tokenizer/jinja/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto parsed = tessera::jinja::Template::Parse(source);
  if (!parsed.ok()) return 0;
  static const nlohmann::ordered_json vars = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "What's the weather in Paris?"},
      {"role": "assistant", "content": "",
       "tool_calls": [{"type": "function", "function":
         {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "sunny"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"
  })");
  (void)parsed->RenderJson(vars);
  return 0;
}
