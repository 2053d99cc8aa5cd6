// POST /v1/embeddings (OpenAI's embeddings API): the request parsed and
// checked, and the response built.
//
// Request: {"model", "input": a string, an array of token ids, or a list of
// either (at most ProtocolLimits::max_prompts), "encoding_format": "float"
// (default) | "base64" (each vector as the base64 of its little-endian
// float32 bytes, what the official clients ask for by default),
// "dimensions": keep the first k components (Matryoshka models such as
// Qwen3-Embedding), renormalized when the model normalizes, "user"}. Any
// other field is a 400 naming it.
// Response: {"object": "list", "data": [{"object": "embedding", "index": i,
// "embedding": [...] | "..."}], "model", "usage": {"prompt_tokens",
// "total_tokens"}}.
//
// Stateless; thread-safe.
#ifndef TESSERA_SERVER_EMBEDDINGS_PROTOCOL_H_
#define TESSERA_SERVER_EMBEDDINGS_PROTOCOL_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace tessera::server {

struct EmbeddingRequest {
  std::optional<std::string> model;
  std::vector<CompletionPrompt> inputs;
  bool base64 = false;
  std::optional<int64_t> dimensions;
};

MaybeApiError ParseEmbeddingRequest(const Json& body,
                                    const ProtocolLimits& limits,
                                    EmbeddingRequest* out);

// The first `dimensions` components of `v` (all when nullopt), L2
// renormalized when `normalize`. InvalidArgument-style 400 when dimensions
// exceeds the model's width.
MaybeApiError ReduceDimensions(std::optional<int64_t> dimensions,
                               bool normalize, std::vector<float>* v);

// Base64 of the vector's float32 bytes, little-endian (OpenAI's format).
std::string EmbeddingBase64(std::span<const float> v);

Json EmbeddingResponseJson(const std::string& model,
                           const std::vector<std::vector<float>>& vectors,
                           bool base64, int64_t prompt_tokens);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_EMBEDDINGS_PROTOCOL_H_
