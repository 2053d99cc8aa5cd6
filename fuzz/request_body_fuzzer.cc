// libFuzzer harness: a client's HTTP request body, as every JSON route
// parses it — bounded JSON, then the OpenAI chat, completions and
// embeddings parsers,
// /generate's, /tokenize's and /detokenize's, and the conversion the chat
// template gets (jinja::Value::FromJson), which recursed without bound once.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/bounded_json.h"
#include "prompt/prompt_tools.h"
#include "server/embeddings_protocol.h"
#include "server/http_util.h"
#include "server/native_protocol.h"
#include "server/openai_request.h"
#include "tokenizer/jinja/value.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseBoundedOrderedJson(text, server::kRequestJsonLimits);
  if (!parsed.ok() || !parsed->is_object()) return 0;
  const server::ProtocolLimits limits;
  server::ChatRequest chat;
  (void)server::ParseChatRequest(*parsed, limits, &chat);
  server::CompletionRequest completion;
  (void)server::ParseCompletionRequest(*parsed, limits, &completion);
  server::EmbeddingRequest embedding;
  (void)server::ParseEmbeddingRequest(*parsed, limits, &embedding);
  server::GenerateRequest generate;
  (void)server::ParseGenerateRequest(*parsed, limits, &generate);
  (void)prompt::ParseTokenizeRequest(*parsed);
  (void)prompt::ParseDetokenizeRequest(*parsed);
  (void)jinja::Value::FromJson(*parsed);
  (void)parsed->dump();
  return 0;
}
